//! A sanitised environment for sandboxed processes, plus the proxy and CA
//! trust variables (R-ENV-1, R-EGRESS-5).
//!
//! An [`EnvGuard`] is compiled once from an [`EnvGuardBuilder`] and applied
//! to `(OsString, OsString)` pairs. It returns a [`Sanitized`] value: the
//! variables to pass (sorted, names unique) and every dropped name with the
//! [`Rule`] that dropped it. Values are never reported.
//!
//! The pipeline runs in this order; the first stage that drops a variable
//! names the rule:
//!
//! 1. **inherit**: [`Inherit::Core`] (the default: [`CORE_NAMES`] and
//!    `LC_*`), [`Inherit::All`] or [`Inherit::None`]; `include`d names pass.
//!    Dropped: [`Rule::NotInherited`].
//! 2. **always deleted**: names outside `[A-Za-z_][A-Za-z0-9_]*` or not
//!    UTF-8 ([`Rule::InvalidName`]); names given more than once, every
//!    occurrence ([`Rule::Duplicate`]); values with NUL or over
//!    [`MAX_VALUE_LEN`] ([`Rule::InvalidValue`]); loader variables (`LD_*`,
//!    `DYLD_*`, `GLIBC_TUNABLES`, `GCONV_PATH` and the rest of glibc's and
//!    sudo's lists, [`Rule::Loader`]; `TMPDIR`, which glibc clears only
//!    for set-user-ID programs, is left to the inherit stage and `set`); shell hooks (`BASH_ENV`, `ENV`, `IFS`,
//!    `CDPATH`, `PROMPT_COMMAND`, `PS4`, ..., [`Rule::ShellHook`]); exported
//!    functions by name (`BASH_FUNC_*`, checked before name syntax) or by a
//!    `() {` value
//!    ([`Rule::ShellFunction`]); Python, Node, Perl, Ruby, Java, .NET, PHP
//!    and Lua hooks ([`Rule::InterpreterHook`]); git and ssh program hooks,
//!    including an inherited `GIT_SSH_COMMAND` ([`Rule::ToolHook`]);
//!    terminal databases ([`Rule::TerminalDatabase`]).
//! 3. **secrets**, unless `include`d: names with a segment `KEY`, `SECRET`,
//!    `TOKEN`, `PASSWORD`, `PASSWD`, `CREDENTIAL(S)`, `AUTH`, `PAT`, ...
//!    (segments split at `_`, camel case and digits, so `KEYBOARD_LAYOUT`
//!    and `MONKEY` pass), plus credential pointers such as `SSH_AUTH_SOCK`,
//!    `AWS_*`, `GOOGLE_APPLICATION_CREDENTIALS`, `KUBECONFIG`,
//!    `DOCKER_CONFIG`, `DATABASE_URL` ([`Rule::Secret`]). See
//!    [`is_secret_name`].
//! 4. **checked values**: `LANG`, `LANGUAGE`, `LC_*`, `LINGUAS`, `TERM`,
//!    `COLORTERM` kept only as printable ASCII without `/`, `%` or `..`;
//!    `TZ` by sudo's rules (optional `:`, absolute only under
//!    `/usr/share/zoneinfo/`, no `..`) ([`Rule::UnsafeValue`]).
//! 5. **explicit `set`**: replaces an input variable of the same name
//!    ([`Rule::ReplacedBySet`]).
//! 6. **proxy** ([`ProxyEnv`]): `HTTP_PROXY`, `HTTPS_PROXY` (and lower case)
//!    to `http://ADDR`; `ALL_PROXY`/`all_proxy` to `socks5h://ADDR`;
//!    `NO_PROXY`/`no_proxy` empty or loopback only ([`NoProxy`]);
//!    `GIT_SSH_COMMAND` with a SOCKS5 `ProxyCommand` ([`SshProxyTool`]).
//!    Inherited proxy variables of any case are replaced
//!    ([`Rule::ReplacedByProxy`]).
//! 7. **CA trust**: with a CA bundle, every name in [`CA_NAMES`] points at
//!    it, and `SSL_CERT_DIR`, `GIT_SSL_CAPATH`, `GIT_SSL_NO_VERIFY` are
//!    removed ([`Rule::ReplacedByCa`]).
//!
//! Reading the real environment is explicit: [`EnvGuard::apply_from_ambient`]
//! and [`vars_from_ambient`]. Tests pass maps.
//!
//! # Example
//!
//! ```
//! use env_guard::{EnvGuard, Inherit, ProxyEnv, Rule};
//!
//! let guard = EnvGuard::builder()
//!     .inherit(Inherit::Core)
//!     .proxy(ProxyEnv {
//!         http: "127.0.0.1:3128".parse().unwrap(),
//!         socks: "127.0.0.1:1080".parse().unwrap(),
//!     })
//!     .ca_bundle("/run/session/ca.pem")
//!     .build()
//!     .unwrap();
//! let out = guard.apply([
//!     ("PATH", "/usr/bin:/bin"),
//!     ("LD_PRELOAD", "/tmp/evil.so"),
//!     ("GITHUB_TOKEN", "ghp_x"),
//!     ("LANG", "C.UTF-8"),
//! ]);
//! assert_eq!(out.get("PATH").unwrap(), "/usr/bin:/bin");
//! assert_eq!(out.get("HTTPS_PROXY").unwrap(), "http://127.0.0.1:3128");
//! assert_eq!(out.get("ALL_PROXY").unwrap(), "socks5h://127.0.0.1:1080");
//! assert_eq!(out.get("SSL_CERT_FILE").unwrap(), "/run/session/ca.pem");
//! assert_eq!(out.dropped_by("LD_PRELOAD"), Some(Rule::NotInherited));
//! assert!(out.get("GITHUB_TOKEN").is_none());
//!
//! // With everything inherited, the later stages name their rules.
//! let all = EnvGuard::builder().inherit(Inherit::All).build().unwrap();
//! let out = all.apply([("LD_PRELOAD", "x"), ("GITHUB_TOKEN", "y"), ("MONKEY", "z")]);
//! assert_eq!(out.dropped_by("LD_PRELOAD"), Some(Rule::Loader));
//! assert_eq!(out.dropped_by("GITHUB_TOKEN"), Some(Rule::Secret));
//! assert_eq!(out.get("MONKEY").unwrap(), "z");
//! ```
//!
//! # Input safety
//!
//! - Names and values are `OsString`s; nothing assumes UTF-8 and nothing
//!   panics. A non-UTF-8 name is dropped ([`Rule::InvalidName`]); a
//!   non-UTF-8 value passes unless the variable is value-checked (then
//!   [`Rule::UnsafeValue`]).
//! - Names are limited to [`MAX_NAME_LEN`] bytes and values to
//!   [`MAX_VALUE_LEN`] bytes; checked values to 256 bytes.
//! - [`parse_records`] accepts at most [`MAX_INPUT_BYTES`] bytes and
//!   [`MAX_RECORDS`] records and refuses a record without `=`.
//! - Builder input is validated in [`EnvGuardBuilder::build`]: `set` and
//!   `include` names must be valid and not always deleted, `set` values free
//!   of NUL, the CA path absolute; see [`ErrorKind`].
//!
//! # Crate features
//!
//! This crate has no optional features.

mod builder;
mod error;
mod guard;
mod lists;
mod name;
mod proxy;
mod records;
mod rule;
mod value;

pub use builder::{EnvGuardBuilder, Inherit};
pub use error::{Error, ErrorKind};
pub use guard::{Dropped, EnvGuard, MAX_VALUE_LEN, Sanitized};
pub use lists::{
    CA_NAMES, CORE_NAMES, SECRET_INFIXES, SECRET_NAMES, SECRET_PREFIXES, SECRET_SEGMENTS,
};
pub use name::{MAX_NAME_LEN, is_secret_name, is_valid_name};
pub use proxy::{NoProxy, ProxyAuth, ProxyEnv, SshProxyTool};
pub use records::{MAX_INPUT_BYTES, MAX_RECORDS, parse_records, write_records};
pub use rule::Rule;

/// The current process environment, as pairs. This reads ambient
/// authority; tests build their own pairs.
pub fn vars_from_ambient() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os().collect()
}
