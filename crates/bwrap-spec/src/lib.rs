//! Bubblewrap argv for a [`SandboxSpec`](sandbox_core::SandboxSpec) on Linux
//! and WSL2 (R-BWRAP).
//!
//! [`BwrapBuilder`] turns a spec, the run's home directory and the host's
//! facts (read through a [`HostView`](sandbox_core::HostView)) into a
//! [`BwrapPlan`]: the options for `bwrap`, in an order where later mounts
//! cannot undo earlier denials:
//!
//! 1. `--new-session --die-with-parent`, new user, pid, net, ipc, uts (and,
//!    where possible, cgroup) namespaces, no nested user namespaces, every
//!    capability dropped;
//! 2. an empty root with the system directories read-only (`/usr`, `/etc`,
//!    ...; usrmerge symlinks recreated), a fresh `/proc`, `/dev`, `/tmp`,
//!    `/var/tmp` and a private home; no host `/run` or `/tmp`, so no host
//!    Unix socket is reachable;
//! 3. the spec's bind mounts (writable only in `chat` mode), runner state
//!    dirs (writable in every mode) and the bridge socket directory;
//! 4. write denies (protected checkouts and the mandatory set, anchored at
//!    every writable root and every repository found inside one by
//!    [`search_git_repos_on_host`], which says when its directory limit
//!    left some unread; [`record_git_repos_on_host`] and
//!    [`search_git_repos_on_host_since`] make the same search again at the
//!    end of a run, reading only the directories that changed; where
//!    `.git` is a file, as in a linked worktree or a submodule, that file
//!    and the hooks and config of the git directory it names): every
//!    ancestor inside a writable root is pinned by a self-bind so that it
//!    cannot be renamed away, then the path is re-bound read-only;
//! 5. read denies last: secret directories become an empty read-only tmpfs,
//!    secret files `/dev/null`;
//! 6. `--chdir`.
//!
//! Filename-glob denies (`.env`, `*.key`, `*.pem` for new files) cannot be
//! enforced by bubblewrap, so by default a spec with any writable root is
//! refused ([`ErrorKind::FilenameRulesUnenforceable`], R-DISPATCH-3), unless
//! a creation-time guard enforces them
//! ([`FilenameRules::EnforcedByNameGuard`] with a [`NameGuardLauncher`]: the
//! launcher is bound read-only at [`NAME_GUARD_GUEST_PATH`] and
//! [`BwrapPlan::guarded_command`] puts it in front of every command, with
//! one `--deny` per rule: the launcher's command line is a
//! [`sandbox_core::NameGuardInvocation`], which the launcher parses back);
//! the opt-out
//! [`FilenameRules::DropFilenameGlobDenies`] drops only those and reports
//! what it dropped. The filename globs keep to the workspace: the runner
//! state directories are given to the guard as `--state-dir`, where they do
//! not hold (the runner creates its own keys there; a state directory that
//! holds a writable mount is refused, see
//! [`BwrapPlan::name_guard_state_dirs`]), and so are the names of the
//! directories package managers own, as `--tool-dir`
//! ([`BwrapBuilder::tool_owned_dirs`]: a virtualenv's `site-packages`,
//! `node_modules`), below which they do not hold either. A read-deny glob
//! ([`BwrapBuilder::read_deny`]) hides the matches that exist when the plan
//! is built and joins the guard's rules as an absolute-path rule, so a new
//! match cannot be created either.
//!
//! ```
//! use bwrap_spec::{BwrapBuilder, ErrorKind, FilenameRules, NameGuardLauncher};
//! use sandbox_core::{FakeHost, Mode, Os, SandboxBindMount, Access, SandboxSpec};
//!
//! let mut host = FakeHost::new(Os::Linux);
//! host.dir("/usr").dir("/etc").dir("/work/repo/.git/hooks").file("/work/repo/.git/config");
//! let mut spec = SandboxSpec::new("s1", "w1");
//! spec.bind_mounts.push(SandboxBindMount::new("/work/repo", Access::ReadWrite).unwrap());
//!
//! // The default policy needs filename-glob denies: refused on Linux.
//! let err = BwrapBuilder::new(&spec, "/home/agent").build(&host).unwrap_err();
//! assert!(matches!(err.kind(), ErrorKind::FilenameRulesUnenforceable { .. }));
//!
//! // The named opt-out keeps every other denial.
//! let plan = BwrapBuilder::new(&spec, "/home/agent")
//!     .filename_rules(FilenameRules::DropFilenameGlobDenies)
//!     .build(&host)
//!     .unwrap();
//! let args: Vec<String> = plan.args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
//! assert!(args.windows(3).any(|w| w == ["--ro-bind", "/work/repo/.git/hooks", "/work/repo/.git/hooks"]));
//! assert_eq!(plan.dropped_filename_globs()[..3], [".env", "*.key", "*.pem"]);
//!
//! // With a name guard the full policy runs: the launcher goes in front.
//! let plan = BwrapBuilder::new(&spec, "/home/agent")
//!     .filename_rules(FilenameRules::EnforcedByNameGuard)
//!     .name_guard_launcher(NameGuardLauncher::new("/opt/bin/name-guard-exec"))
//!     .build(&host)
//!     .unwrap();
//! let cmd = plan.guarded_command(["make"], None);
//! assert_eq!(cmd[0], bwrap_spec::NAME_GUARD_GUEST_PATH);
//! // Below the directories package managers own the globs do not hold.
//! assert_eq!(cmd[1..3], ["--tool-dir", "site-packages"]);
//! assert_eq!(cmd[7..13], ["--deny", ".env", "--deny", "*.key", "--deny", "*.pem"]);
//! assert_eq!(cmd.last().unwrap(), "make");
//!
//! // Review mode: nothing writable, nothing to drop.
//! spec.mode = Mode::Review;
//! assert!(BwrapBuilder::new(&spec, "/home/agent").build(&host).is_ok());
//! ```
//!
//! # Input safety
//!
//! - Every path goes through sandbox-core's checks (absolute, no NUL, no
//!   `..`, at most 4096 bytes) and is passed as its own argv element: no
//!   shell ever sees a spec path. The only shell script is the bridge
//!   wrapper, built from validated names, ports and a fixed socket directory.
//! - The argv is capped at [`MAX_ARGV_BYTES`]; longer plans are
//!   [`ErrorKind::TooManyArguments`] unless the caller passes them with
//!   `--args FD` ([`ArgvDelivery::ArgsFd`], [`BwrapPlan::args_fd_payload`]),
//!   which is capped at [`MAX_ARGS_FD_BYTES`].
//! - Bridge directories are limited to `[A-Za-z0-9/._-]` because socat gives
//!   `:` and `,` meaning.
//!
//! # Crate features
//!
//! This crate has no optional features.

mod args;
mod bridge;
mod builder;
mod denies;
mod error;
mod name_guard_launcher;
mod placeholder;
mod plan;
mod repos;

pub use bridge::{BRIDGE_GUEST_DIR, Bridge, BridgePlan};
pub use builder::{
    BwrapBuilder, DEFAULT_SYSTEM_PATHS, HostPlan, SYSTEM_SECRETS, TERMINAL_SECRET_DIRS,
};
pub use error::{Error, ErrorKind};
pub use name_guard_launcher::{
    GuardFds, MAX_NAME_GUARD_RULES, NAME_GUARD_GUEST_PATH, NameGuardLauncher,
};
pub use placeholder::{Placeholder, PlaceholderFiles, PlaceholderKind};
pub use plan::{
    ArgvDelivery, BwrapPlan, FilenameRules, MAX_ARGS_FD_BYTES, MAX_ARGV_BYTES, Profile,
};
pub use repos::{
    REPO_SEARCH_MAX_DEPTH, REPO_SEARCH_MAX_DIRS, RepoSearch, RepoSearchEnd, RepoSearchRecord,
    discover_git_repos_on_host, record_git_repos_on_host, search_git_repos_on_host,
    search_git_repos_on_host_since,
};
