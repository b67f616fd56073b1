//! macOS Seatbelt profiles for agent runs, checkable without macOS.
//!
//! A [`SandboxSpec`](sandbox_core::SandboxSpec) becomes a typed
//! [`Profile`] (rules of an [`Action`] on [`Operation`]s limited by
//! [`Filter`]s), which renders to SBPL text plus `-DKEY=VALUE` parameters
//! for `sandbox-exec`. Host paths only ever travel as parameter values;
//! the profile text names them as `(param "KEY")`.
//!
//! - [`DispatchProfileBuilder`]: the profile of an agent run
//!   (R-SEATBELT-1..7): allow by default, secrets unreadable, writes reset
//!   and reopened for the writable directories, mandatory and protected
//!   denies after them, no rename of a denied path's ancestors, exec blocked
//!   from writable directories, network limited to the session's proxies on
//!   localhost and DNS. A denied path is a `literal` where the host shows
//!   a regular file, a `subpath` where it shows a directory and where it
//!   does not exist (it may be created as a directory later), a `regex`
//!   for a glob, each in its written and its resolved spelling; the
//!   ancestor rules are always `literal`.
//! - [`TerminalProfileBuilder`]: the fixed terminal profile (R-SEATBELT-8).
//! - [`glob_to_regex`]: the one glob conversion (`*`, `**`, `?`, classes).
//! - [`parse_violation_line`]: sandbox log lines into
//!   [`SandboxViolation`](sandbox_core::SandboxViolation)s (R-SEATBELT-9),
//!   `deny(N)` lines and the older `deny` lines without a count alike;
//!   [`parse_tagged_violation_line`] for a profile whose denials carry a
//!   tag ([`Profile::tag_denials`]), so one session's lines are told from
//!   every other process's; [`parse_log_stream_line`] for one line of
//!   `log stream --style ndjson`.
//! - [`launcher_argv`] and [`launcher_command`]: the `sandbox-exec` argv and
//!   an unstarted command for it, on every platform; `spawn` on macOS.
//! - [`read_profile`] and [`Evaluator`] (feature `evaluator`): read the
//!   SBPL back and answer "is this operation on this target allowed?" with
//!   Seatbelt's rule order (the last matching rule wins), so tests assert
//!   what a profile means rather than how it looks.
//!
//! By design the agent can still read most of the host: a deny-default
//! profile makes an interactive shell unusable, so registered checkouts
//! are protected by explicit write and rename denials, not by invisibility.
//!
//! # Example
//!
//! ```
//! use sandbox_core::{FakeHost, Os, SandboxSpec};
//! use seatbelt_profile::{Decision, DispatchProfileBuilder, Evaluator, Operation, Target};
//!
//! let spec: SandboxSpec = serde_json::from_str(r#"{
//!     "sessionId": "s1", "workspaceId": "w1",
//!     "bindMounts": [{"hostPath": "/tmp/wt"}],
//!     "protectedPaths": ["/Users/dev/src/app"]
//! }"#).unwrap();
//! let mut host = FakeHost::new(Os::MacOs);
//! host.symlink("/tmp", "/private/tmp").file("/private/tmp/wt");
//! let mut builder = DispatchProfileBuilder::new(&spec);
//! builder.home("/Users/dev").http_proxy_port(8080).socks_proxy_port(1080);
//! let rendered = builder.build(&host).unwrap().render().unwrap();
//! // The protected checkout travels as a parameter, not as profile text.
//! assert!(!rendered.text().contains("/Users/dev/src/app"));
//! assert!(rendered.params().iter().any(|(_, v)| v == "/Users/dev/src/app"));
//!
//! let ev = Evaluator::from_sbpl(rendered.text(), &rendered.params_map()).unwrap();
//! let write = |p| ev.decide(Operation::FileWriteData, Target::Path(p));
//! assert_eq!(write("/private/tmp/wt/src/main.rs"), Decision::Allow);
//! assert_eq!(write("/private/tmp/wt/.git/hooks/pre-commit"), Decision::Deny);
//! assert_eq!(write("/Users/dev/src/app/README.md"), Decision::Deny);
//! let read = |p| ev.decide(Operation::FileReadData, Target::Path(p));
//! assert_eq!(read("/Users/dev/.ssh/id_ed25519"), Decision::Deny);
//! ```
//!
//! # Input safety
//!
//! - Host paths become parameter values, never profile text, so quotes,
//!   parentheses, backslashes and newlines in a path cannot add a rule. A
//!   NUL byte anywhere is [`ErrorKind::NulByte`].
//! - Every string literal (parameter value or regex) is limited to
//!   [`MAX_STRING_LEN`] (1,025) bytes, Seatbelt's own limit
//!   ([`ErrorKind::StringTooLong`]); a profile is limited to
//!   [`DEFAULT_RULE_BUDGET`] rule entries (operations times filters) unless
//!   another budget is given ([`ErrorKind::RuleBudget`]).
//! - Regexes are the only spliced text besides ports and our own comments.
//!   They use a small subset (see [`SbplRegex`]), validated on the way out
//!   and on the way back in; groups nest at most [`MAX_REGEX_DEPTH`] deep.
//!   A character a `#"..."` literal cannot hold (`"`, `\`, control
//!   characters) becomes `.`, which only widens a deny rule; an allow rule
//!   with such a regex is [`ErrorKind::WidenedAllow`].
//! - Paths are checked by `sandbox-core` (absolute, no `..`, at most
//!   4,096 bytes before the SBPL limit applies); a symlink that would widen
//!   a deny rule to an ancestor is an error.
//! - The reader accepts at most [`MAX_SBPL_BYTES`] bytes and
//!   [`MAX_SBPL_DEPTH`] levels of nesting, symbols of 256 bytes, and refuses
//!   what it does not know, with a byte offset. The log parser ignores lines
//!   over [`MAX_LOG_LINE`] bytes and lines whose count has more than ten
//!   digits. Neither panics on any input.
//!
//! # Crate features
//!
//! - `evaluator` (default): the SBPL reader ([`read_profile`]) and the
//!   [`Evaluator`]; pulls in `regex`. Rendering needs neither.

mod dispatch;
mod error;
#[cfg(feature = "evaluator")]
mod evaluator;
#[doc(hidden)]
pub mod fuzzing;
mod launcher;
mod model;
mod policy;
#[cfg(feature = "evaluator")]
mod reader;
mod regex;
mod render;
mod target_host;
mod terminal;
mod violation;

pub use dispatch::{DNS_SOCKET, DispatchProfileBuilder};
pub use error::{Error, ErrorKind};
#[cfg(feature = "evaluator")]
pub use evaluator::{Decision, Evaluator, Target};
#[cfg(target_os = "macos")]
pub use launcher::spawn;
pub use launcher::{SANDBOX_EXEC, launcher_argv, launcher_command};
pub use model::{
    Action, Filter, Item, MAX_DENIAL_TAG, Operation, Profile, RemoteHost, RemotePort, Rule,
};
pub use policy::{DEVICE_WRITE_LITERALS, DEVICE_WRITE_REGEXES};
#[cfg(feature = "evaluator")]
pub use reader::{MAX_SBPL_BYTES, MAX_SBPL_DEPTH, read_profile};
pub use regex::{MAX_REGEX_DEPTH, MAX_STRING_LEN, SbplRegex, glob_to_regex};
pub use render::{DEFAULT_RULE_BUDGET, RenderedProfile};
pub use target_host::FIRMLINKS;
pub use terminal::{TERMINAL_SECRET_DIRS, TerminalProfileBuilder};
pub use violation::{
    MAX_LOG_LINE, MAX_LOG_STREAM_LINE, parse_log_stream_line, parse_tagged_violation_line,
    parse_violation_line,
};
