//! The backends, one module each: launch a session, run a command in it,
//! destroy it. The manager holds one [`Backend`] (decided at build) and, per
//! session, exactly one [`BackendSession`]; everything else (the session
//! table, states, the event stream) is the manager's and the same for all.

#[cfg(target_os = "linux")]
pub(crate) mod bubblewrap;
#[cfg(target_os = "linux")]
pub(crate) mod common;
#[cfg(target_os = "linux")]
pub(crate) use common::name_guard_reports::ReportReader;
#[cfg(target_os = "linux")]
pub(crate) mod landlock;
#[cfg(target_os = "linux")]
pub(crate) mod microvm;
pub(crate) mod none;
pub(crate) mod seatbelt;
pub(crate) mod seatbelt_log;

use crate::builder::Settings;
use crate::running::CommandIo;
use crate::{Error, ErrorKind};
use sandbox_core::SandboxSpec;
use std::ffi::OsString;
use std::future::Future;
use std::pin::Pin;
#[cfg(target_os = "linux")]
use std::sync::Arc;

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

/// The backend every session of a manager gets.
pub(crate) enum Backend {
    /// Nothing confined; the sanitised environment still applies.
    None,
    /// bubblewrap (Linux, WSL2).
    #[cfg(target_os = "linux")]
    Bubblewrap(Arc<bubblewrap::Config>),
    /// Landlock and the name guard's supervisor, no namespaces (Linux).
    #[cfg(target_os = "linux")]
    Landlock(landlock::Config),
    /// Seatbelt through `sandbox-exec` (macOS).
    Seatbelt(seatbelt::Config),
    /// A kernel-boundary runtime (Linux): gVisor today.
    #[cfg(target_os = "linux")]
    Microvm(Arc<microvm::Runtime>),
    /// Not implemented here: every launch is refused with the reason.
    Unavailable(String),
}

/// One live session's backend state.
pub(crate) enum BackendSession {
    None,
    #[cfg(target_os = "linux")]
    Bubblewrap(Box<bubblewrap::Session>),
    #[cfg(target_os = "linux")]
    Landlock(Box<landlock::Session>),
    Seatbelt(Box<seatbelt::Session>),
    #[cfg(target_os = "linux")]
    Gvisor(Box<microvm::gvisor::Session>),
}

/// What a launch made: the session's state, the environment its commands
/// start with, and the handle details the host may show.
pub(crate) struct Launched {
    pub(crate) session: BackendSession,
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
    /// The `cgroup.procs` files the command joins before it runs.
    #[cfg_attr(
        not(unix),
        allow(dead_code, reason = "no cgroup is ever made off Linux")
    )]
    pub(crate) cgroup_procs: Vec<std::ffi::CString>,
}

/// Processes a backend runs besides the command, counted by a process
/// limit (bubblewrap's two and the name guard's supervisor).
pub(crate) fn process_overhead(session: &BackendSession) -> u32 {
    match session {
        #[cfg(target_os = "linux")]
        BackendSession::Bubblewrap(_) => 3,
        // The supervisor.
        #[cfg(target_os = "linux")]
        BackendSession::Landlock(_) => 1,
        _ => 0,
    }
}

/// A started command: the task that follows it to its exit.
pub(crate) type CommandTask = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

impl Backend {
    /// Launches a session for `spec` (already validated).
    pub(crate) async fn launch(
        &self,
        settings: &Settings,
        spec: &SandboxSpec,
    ) -> Result<Launched, Error> {
        match self {
            Backend::None => none::launch(settings),
            #[cfg(target_os = "linux")]
            Backend::Bubblewrap(config) => bubblewrap::launch(config, settings, spec).await,
            #[cfg(target_os = "linux")]
            Backend::Landlock(config) => landlock::launch(config, settings, spec).await,
            Backend::Seatbelt(config) => seatbelt::launch(config, settings, spec).await,
            #[cfg(target_os = "linux")]
            Backend::Microvm(runtime) => match &**runtime {
                microvm::Runtime::Gvisor(config) => {
                    microvm::gvisor::launch(config, settings, spec).await
                }
            },
            Backend::Unavailable(reason) => Err(Error::from(ErrorKind::Core(
                sandbox_core::Error::from(sandbox_core::ErrorKind::NativeUnavailable {
                    reason: reason.clone(),
                }),
            ))),
        }
    }
}

impl BackendSession {
    /// Starts `request` in this session; the returned task reports its
    /// events on `io` until it exits or is killed.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(unused_variables, reason = "only bubblewrap sessions use them")
    )]
    pub(crate) fn exec(
        &self,
        settings: &Settings,
        request: ExecRequest<'_>,
        io: CommandIo,
    ) -> Result<CommandTask, Error> {
        match self {
            BackendSession::None => none::exec(request, io),
            #[cfg(target_os = "linux")]
            BackendSession::Bubblewrap(s) => s.exec(settings, request, io),
            #[cfg(target_os = "linux")]
            BackendSession::Landlock(s) => s.exec(request, io),
            BackendSession::Seatbelt(s) => s.exec(request, io),
            #[cfg(target_os = "linux")]
            BackendSession::Gvisor(s) => s.exec(request, io),
        }
    }

    /// Ends the session once its command is gone: revokes the lease, stops
    /// the proxies and their listeners; sockets, placeholders and the
    /// session directory go when `self` is dropped.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(unused_variables, reason = "only bubblewrap sessions use them")
    )]
    pub(crate) async fn destroy(self, settings: &Settings, session_id: &str) {
        match self {
            BackendSession::None => {}
            #[cfg(target_os = "linux")]
            BackendSession::Bubblewrap(s) => s.destroy(settings, session_id).await,
            #[cfg(target_os = "linux")]
            BackendSession::Landlock(s) => s.destroy(settings, session_id).await,
            BackendSession::Seatbelt(s) => s.destroy().await,
            #[cfg(target_os = "linux")]
            BackendSession::Gvisor(s) => s.destroy(settings, session_id).await,
        }
    }

    /// What suspends and resumes this session, when its backend can
    /// (gVisor); `None` elsewhere.
    #[cfg(target_os = "linux")]
    pub(crate) fn suspender(&self) -> Option<Arc<microvm::gvisor::Shared>> {
        match self {
            BackendSession::Gvisor(s) => Some(s.shared().clone()),
            _ => None,
        }
    }

    /// Whether the session is checkpointed to disk.
    pub(crate) fn is_suspended(&self) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            BackendSession::Gvisor(s) => s.shared().is_suspended(),
            _ => false,
        }
    }

    /// The bubblewrap options of a bubblewrap session.
    pub(crate) fn bwrap_args(&self) -> Option<Vec<OsString>> {
        match self {
            #[cfg(target_os = "linux")]
            BackendSession::Bubblewrap(s) => Some(s.args().to_vec()),
            _ => None,
        }
    }

    /// The rendered profile of a Seatbelt session.
    pub(crate) fn seatbelt_profile(&self) -> Option<seatbelt_profile::RenderedProfile> {
        match self {
            BackendSession::Seatbelt(s) => Some(s.profile().clone()),
            _ => None,
        }
    }
}
