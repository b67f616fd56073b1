//! The shared vocabulary of agent-sandbox.
//!
//! Every crate of the workspace speaks these types, and a host program's
//! first call is the probe. This crate holds:
//!
//! - the data model of a confined run: [`SandboxSpec`], [`SandboxBindMount`],
//!   [`Mode`], [`SandboxHandle`], [`SandboxState`] (with checked
//!   transitions), [`SandboxEvent`] and [`SandboxViolation`], serialised with
//!   the camelCase names of the design note;
//! - the backends ([`SandboxBackend`], with [`SandboxBackend::from_name`]
//!   for stored values), the on/off [`SandboxSwitch`], the host probe
//!   ([`ProbeReport`]) and backend selection ([`select_backend`]), which
//!   never downgrades an explicit request;
//! - path sets ([`PathSet`]): deny entries in their literal and
//!   symlink-resolved spellings, and the curated default sets in
//!   [`defaults`];
//! - the [`SandboxPort`] trait that backends implement;
//! - the name-guard launcher's command line as a value
//!   ([`NameGuardInvocation`]), built by the bubblewrap plan and parsed by
//!   the launcher, and the one kernel gate for it
//!   ([`kernel_runs_name_guard`]).
//!
//! Everything that reads the host goes through a [`HostView`]: use
//! [`AmbientHost::from_ambient`] for the real machine and [`FakeHost`] to
//! describe one in a test (a macOS host with `/tmp -> /private/tmp`, a Linux
//! host without bubblewrap, ...).
//!
//! On Linux the probe offers bubblewrap where it runs, else Landlock with
//! the name guard (a kernel with Landlock ABI 6 and Linux 5.19), else
//! nothing, with the hint; `socat` is only the bridges' fallback and never
//! required.
//!
//! # Example: probe and select
//!
//! ```
//! use sandbox_core::*;
//!
//! // A Linux host without bubblewrap whose kernel has no Landlock.
//! let mut host = FakeHost::new(Os::Linux);
//! host.env("PATH", "/usr/bin:/bin")
//!     .executable("/usr/bin/socat")
//!     .contents("/proc/sys/kernel/osrelease", "6.12.0-1-amd64");
//! let report = ProbeReport::probe(&host);
//! assert_eq!(
//!     report.startup_line(SandboxSwitch::On),
//!     "no OS-native agent sandbox on this host: \
//!      install the missing packages: sudo apt-get install bubblewrap; \
//!      nor can Landlock confine here (no Landlock on this described host)",
//! );
//!
//! // Dispatch falls back to `none` (and says so); a terminal that asks
//! // for `native` explicitly fails instead of running a host shell.
//! let dispatch = select_backend(
//!     BackendRequest::Unspecified, SandboxSwitch::On, Surface::Dispatch, &report,
//! ).unwrap();
//! assert_eq!(dispatch.backend, SandboxBackend::None);
//! assert!(select_backend(
//!     BackendRequest::Explicit(SandboxBackend::Native),
//!     SandboxSwitch::On, Surface::Terminal, &report,
//! ).is_err());
//! ```
//!
//! # Example: a spec from JSON
//!
//! ```
//! use sandbox_core::{Access, Mode, SandboxSpec};
//! let spec: SandboxSpec = serde_json::from_str(r#"{
//!   "sessionId": "s-1", "workspaceId": "w", "mode": "review",
//!   "bindMounts": [{"hostPath": "/srv/wt", "guestPath": "/srv/wt"}]
//! }"#).unwrap();
//! spec.validate().unwrap();
//! let (_, access) = spec.mount_accesses().next().unwrap();
//! assert_eq!(spec.mode, Mode::Review);
//! assert_eq!(access, Access::ReadOnly);
//! ```
//!
//! # Example: the name-guard command line
//!
//! ```
//! use sandbox_core::{ErrorKind, InvocationProblem, NameGuardInvocation};
//!
//! let mut inv = NameGuardInvocation::new([".env", "-odd"], ["make", "--", "all"]);
//! inv.report_fd = Some(3);
//! let args = inv.to_args();
//! assert_eq!(args[..4], ["--report-fd", "3", "--deny", ".env"]);
//! assert_eq!(NameGuardInvocation::parse(args)?, inv);
//!
//! let err = NameGuardInvocation::parse(["--deny", ".env"]).unwrap_err();
//! assert_eq!(err.kind(), &ErrorKind::NameGuardInvocation(InvocationProblem::NoCommand));
//! # Ok::<(), sandbox_core::Error>(())
//! ```
//!
//! # Input safety
//!
//! - Paths are limited to [`MAX_PATH_LEN`] bytes; NUL bytes and `..`
//!   components are refused with [`ErrorKind::InvalidPath`]; bind mounts
//!   must be absolute.
//! - A deny entry whose symlinks lead to `/` or to one of its own ancestors
//!   is refused ([`ErrorKind::WidensScope`]) rather than silently widened.
//! - The probe's host checks each run with a time limit
//!   ([`AmbientHost::from_ambient_with_timeout`]); small files are read up
//!   to [`host::SMALL_FILE_LIMIT`] bytes; `PATH` lookups ignore empty and
//!   relative entries.
//! - Switch values are echoed in errors truncated to 64 characters.
//! - A name-guard command line holds at most
//!   [`NameGuardInvocation::MAX_DENY_GLOBS`] rules and
//!   [`NameGuardInvocation::MAX_COMMAND_ARGS`] command arguments, each
//!   argument at most [`NameGuardInvocation::MAX_ARG_BYTES`] bytes without
//!   NUL; [`NameGuardInvocation::parse`] reads no more than that from its
//!   iterator, and echoes arguments in errors truncated to 64 characters.
//! - [`UpdateReader`] (the rules a running guard reads) keeps at most one
//!   line of [`MAX_UPDATE_LINE`] bytes and takes at most [`MAX_UPDATES`]
//!   rules; anything else is an [`UpdateProblem`], on which a guard fails
//!   closed.
//! - Nothing here panics on input; deserialisation refuses relative mounts.
//!
//! # Crate features
//!
//! This crate has no optional features.

pub mod defaults;
mod error;
pub mod git;
pub mod glob;
mod guard_updates;
mod gvisor_version;
pub mod host;
mod mode;
mod name_guard_invocation;
mod paths;
mod port;
pub mod probe;
mod process_stamp;
mod select;
pub mod session_wire;
mod spec;
pub mod srt;
mod state;
mod switch;
pub mod vm_wire;
mod wire_codec;
mod worktree_mount;

mod backend;
mod command;
mod event;
mod handle;
mod output;
mod running;
mod stdout;

pub use backend::SandboxBackend;
pub use command::{
    CommandError, Limits, MAX_COMMAND_ENV, MIN_MEMORY_LIMIT, PtySize, SandboxCommand, Stdin,
    Terminal,
};
pub use error::{Error, ErrorKind};
pub use event::{KillReason, SandboxEvent, SandboxViolation};
pub use git::linked_git_dir_entries;
pub use guard_updates::{
    GuardUpdate, MAX_UPDATE_LINE, MAX_UPDATE_PATH, MAX_UPDATES, UpdateProblem, UpdateReader,
};
pub use handle::SandboxHandle;
pub use host::{
    AmbientHost, BWRAP_TRY_ARGS, FakeHost, HostView, MAX_LISTED_NAMES, Os, RememberingHost,
    find_on_path,
};
pub use mode::{Access, Mode};
pub use name_guard_invocation::{
    HostConfinement, InvocationProblem, KEEPABLE_CAPABILITIES, NAME_GUARD_USAGE,
    NameGuardInvocation,
};
pub use output::{CommandOutput, CommandStatus, Dropped, OutputLimit};
pub use paths::{PathEntry, PathSet, expand_tilde, is_glob, reaches_into};
pub use port::{DynSandboxPort, EventStream, PortFuture, SandboxPort};
pub use probe::{
    AMBIENT_PROBE_TIMEOUT, FilenameRuleSupport, LANDLOCK_MIN_ABI, MicrovmProbe, MicrovmRuntimeKind,
    NAME_GUARD_MIN_KERNEL, NOTE_LANDLOCK, NativeMechanism, NativeProbe, Platform, ProbeCache,
    ProbeOptions, ProbeReport, kernel_runs_name_guard, kernel_version, probe_ambient,
};
pub use process_stamp::{MAX_STAMP_LEN, MAX_STAT_LEN as MAX_PROC_STAT_LEN, ProcessStamp};
pub use running::{
    CommandControl, CommandSignal, ControlError, ControlFuture, NoControl, RunningCommand,
};
pub use select::{
    BackendRequest, LABEL_GVISOR, LABEL_LANDLOCK, Selection, Surface, backend_label, microvm_label,
    select_backend,
};
pub use spec::{MAX_PATH_LEN, SandboxBindMount, SandboxSpec};
pub use state::SandboxState;
pub use stdout::{OutputSink, Stdout};
pub use switch::{SANDBOX_SWITCH_ENV, SandboxSwitch};
