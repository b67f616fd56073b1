//! What the manager and the backends pass each other, below both: a
//! launch's result, one command's request, the task that follows it, and
//! the name guard's report reader. No backend imports another, and none
//! imports the manager or the module that dispatches to them.

use std::ffi::OsString;
use std::future::Future;
use std::pin::Pin;

#[cfg(target_os = "linux")]
pub(crate) use crate::backend::common::name_guard_reports::ReportReader;

/// The name guard's reports: it runs only under bubblewrap, so elsewhere
/// there is never one to read (the type has no value).
#[cfg(not(target_os = "linux"))]
pub(crate) enum ReportReader {}

#[cfg(not(target_os = "linux"))]
impl ReportReader {
    pub(crate) fn take_ready(&mut self) -> Vec<sandbox_core::SandboxViolation> {
        match *self {}
    }

    pub(crate) async fn next(&mut self) -> Option<sandbox_core::SandboxViolation> {
        match *self {}
    }
}

/// What a launch made: the backend's session state, the environment its commands
/// start with, and the handle details the host may show.
pub(crate) struct Launched<S> {
    pub(crate) session: S,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) details: Vec<(&'static str, String)>,
}

/// One command to run in a session.
pub(crate) struct ExecRequest<'a> {
    /// The session's environment.
    pub(crate) env: &'a [(OsString, OsString)],
    /// Program and arguments.
    pub(crate) argv: Vec<OsString>,
    /// The working directory (inside the sandbox).
    pub(crate) workdir: String,
    /// Where stdin comes from (`/dev/null` on a terminal).
    pub(crate) stdin: sandbox_core::Stdin,
    /// A terminal of this size, when the command runs on one.
    pub(crate) terminal: Option<sandbox_core::PtySize>,
    /// The command's limits, for a backend that holds them inside its
    /// sandbox (the `microvm` agent); the others get `cgroup_procs`.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "the microvm backend is Linux's")
    )]
    pub(crate) limits: sandbox_core::Limits,
    /// The `cgroup.procs` files the command joins before it runs.
    #[cfg_attr(
        not(unix),
        allow(dead_code, reason = "no cgroup is ever made off Linux")
    )]
    pub(crate) cgroup_procs: Vec<std::ffi::CString>,
    /// Where the name guard's report reader goes: to the command's own
    /// events (`None`), or to a warm session that lends it to each of its
    /// commands (the request starts the session's init).
    pub(crate) guard_to_session: Option<tokio::sync::oneshot::Sender<ReportReader>>,
    /// A descriptor the command inherits (a warm session's socket to its
    /// init), at the same number.
    #[cfg_attr(not(unix), allow(dead_code, reason = "warm sessions are Linux's"))]
    pub(crate) pass_fd: Option<i32>,
    /// The descriptor a warm session's name guard reads added rules from
    /// (its `--updates-fd`), inherited at the same number.
    #[cfg_attr(not(unix), allow(dead_code, reason = "warm sessions are Linux's"))]
    pub(crate) guard_updates: Option<i32>,
    /// The descriptor the session's name guards note possible new git
    /// repositories on (their `--notify-fd`), set by the backend.
    #[cfg_attr(not(unix), allow(dead_code, reason = "the name guard runs on Linux"))]
    pub(crate) guard_notes: Option<i32>,
}

impl ExecRequest<'_> {
    /// The guard's reader for the command's own events, or `None` once it
    /// was handed to the warm session this request starts.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "the name guard runs on Linux")
    )]
    pub(crate) fn keep_guard(&mut self, reader: ReportReader) -> Option<ReportReader> {
        match self.guard_to_session.take() {
            Some(to) => {
                let _ = to.send(reader);
                None
            }
            None => Some(reader),
        }
    }
}

impl<S> Launched<S> {
    /// The same launch with its session state wrapped by `wrap`.
    pub(crate) fn map<T>(self, wrap: impl FnOnce(S) -> T) -> Launched<T> {
        Launched {
            session: wrap(self.session),
            env: self.env,
            details: self.details,
        }
    }
}

/// A started command: the task that follows it to its exit.
pub(crate) type CommandTask = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
