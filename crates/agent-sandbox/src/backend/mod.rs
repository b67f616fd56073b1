//! The backends, one module each: launch a session, run a command in it,
//! destroy it. The manager holds one [`Backend`] (decided at build) and, per
//! session, exactly one [`BackendSession`]; everything else (the session
//! table, states, the event stream) is the manager's and the same for all.

#[cfg(target_os = "linux")]
pub(crate) mod bubblewrap;
#[cfg(target_os = "linux")]
pub(crate) mod common;
#[cfg(target_os = "linux")]
pub(crate) mod landlock;
#[cfg(target_os = "linux")]
pub(crate) mod microvm;
pub(crate) mod none;
pub(crate) mod seatbelt;
pub(crate) mod seatbelt_log;

use crate::running::CommandIo;
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::settings::Settings;
use crate::{Error, ErrorKind};
use sandbox_core::SandboxSpec;
use std::ffi::OsString;
#[cfg(target_os = "linux")]
use std::sync::Arc;

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
    /// A kernel-boundary runtime (Linux): gVisor or QEMU.
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
    #[cfg(target_os = "linux")]
    Qemu(Box<microvm::qemu::session::Session>),
}

/// Processes a backend runs besides the command, counted by a process
/// limit (bubblewrap's two and the name guard's supervisor).
impl BackendSession {
    /// Whether the session's sandbox holds its commands' limits itself
    /// (the `microvm` runtimes: the commands run in its own kernel).
    pub(crate) fn holds_limits_inside(&self) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            BackendSession::Gvisor(_) | BackendSession::Qemu(_) => true,
            _ => false,
        }
    }
}

pub(crate) fn process_overhead(session: &BackendSession) -> u32 {
    match session {
        // A warm session's command is alone in its cgroup.
        #[cfg(target_os = "linux")]
        BackendSession::Bubblewrap(s) if s.is_warm() => 0,
        #[cfg(target_os = "linux")]
        BackendSession::Bubblewrap(_) => 3,
        // The supervisor (a command with limits gets one of its own in a
        // warm session too).
        #[cfg(target_os = "linux")]
        BackendSession::Landlock(_) => 1,
        _ => 0,
    }
}

impl Backend {
    /// Whether this backend mounts a workspace's overlay itself (bubblewrap
    /// with its commands in one warm sandbox, where the name guard's
    /// launcher is the sandbox's init).
    #[cfg(target_os = "linux")]
    pub(crate) fn mounts_overlays(&self, settings: &Settings) -> bool {
        match self {
            Backend::Bubblewrap(config) => {
                config.name_guard.is_some()
                    && settings.isolation == crate::CommandIsolation::SessionSandbox
            }
            _ => false,
        }
    }

    /// Launches a session for `spec` (already validated), in `workspace`
    /// when there is one (its mounts are in `spec` already; an overlay
    /// view is mounted by the backends that can, and refused by the
    /// others).
    pub(crate) async fn launch(
        &self,
        settings: &Settings,
        spec: &SandboxSpec,
        workspace: Option<&crate::workspace::Workspace>,
    ) -> Result<Launched<BackendSession>, Error> {
        #[cfg(target_os = "linux")]
        let overlay = workspace.and_then(|w| w.overlay());
        #[cfg(not(target_os = "linux"))]
        let _ = workspace;
        #[cfg(target_os = "linux")]
        if overlay.is_some() && !matches!(self, Backend::Bubblewrap(_)) {
            return Err(ErrorKind::NotSupported {
                what: "an overlay workspace outside bubblewrap",
            }
            .into());
        }
        match self {
            Backend::None => none::launch(settings).map(|l| l.map(|()| BackendSession::None)),
            #[cfg(target_os = "linux")]
            Backend::Bubblewrap(config) => bubblewrap::launch(config, settings, spec, overlay)
                .await
                .map(|l| l.map(|s| BackendSession::Bubblewrap(Box::new(s)))),
            #[cfg(target_os = "linux")]
            Backend::Landlock(config) => landlock::launch(config, settings, spec)
                .await
                .map(|l| l.map(|s| BackendSession::Landlock(Box::new(s)))),
            Backend::Seatbelt(config) => seatbelt::launch(config, settings, spec)
                .await
                .map(|l| l.map(|s| BackendSession::Seatbelt(Box::new(s)))),
            #[cfg(target_os = "linux")]
            Backend::Microvm(runtime) => match &**runtime {
                microvm::Runtime::Gvisor(config) => microvm::gvisor::launch(config, settings, spec)
                    .await
                    .map(|l| l.map(|s| BackendSession::Gvisor(Box::new(s)))),
                microvm::Runtime::Qemu(config) => {
                    microvm::qemu::session::launch(config, settings, spec)
                        .await
                        .map(|l| l.map(|s| BackendSession::Qemu(Box::new(s))))
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
            BackendSession::Landlock(s) => s.exec(settings, request, io),
            BackendSession::Seatbelt(s) => s.exec(request, io),
            #[cfg(target_os = "linux")]
            BackendSession::Gvisor(s) => s.exec(request, io),
            #[cfg(target_os = "linux")]
            BackendSession::Qemu(s) => s.exec(request, io),
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
            #[cfg(target_os = "linux")]
            BackendSession::Qemu(s) => s.destroy(settings, session_id).await,
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

    /// Why this session's runtime cannot suspend, where a `microvm` one
    /// cannot (QEMU); `None` elsewhere.
    #[cfg(target_os = "linux")]
    pub(crate) fn suspend_refusal(&self) -> Option<&'static str> {
        match self {
            BackendSession::Qemu(_) => Some(microvm::qemu::session::SUSPEND_REFUSAL),
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
            BackendSession::Bubblewrap(s) => Some(s.args()),
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
