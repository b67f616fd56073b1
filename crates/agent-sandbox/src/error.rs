//! The facade's one error type.

use std::fmt;

/// An error from the [`crate::SandboxManager`]. [`Error::kind`] says which.
///
/// Its `Debug` form leads with the `Display` text (what happened and what
/// to do), so that a `main` returning `Result<(), Box<dyn Error>>` prints
/// it, then the kind for a program's logs.
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A spec, switch, selection or state error from sandbox-core.
    #[error(transparent)]
    Core(#[from] sandbox_core::Error),
    /// The bubblewrap plan could not be built (including the fail-closed
    /// refusal of filename-glob denies).
    #[error(transparent)]
    Bwrap(#[from] bwrap_spec::Error),
    /// The session's proxies could not be configured or started.
    #[error("egress proxy: {0}")]
    Proxy(#[from] connect_proxy::Error),
    /// The credential broker could not be set up.
    #[error("credential broker: {0}")]
    Broker(#[from] cred_broker::Error),
    /// A host given to [`crate::BrokerSettings::host`] that is not a host.
    #[error("brokered host {host:?} is refused: {reason}")]
    InvalidBrokerHost {
        /// The host as given (truncated).
        host: String,
        /// Why it was refused.
        reason: net_vocab::Error,
    },
    /// The Seatbelt profile could not be built or rendered.
    #[error("seatbelt profile: {0}")]
    Seatbelt(seatbelt_profile::Error),
    /// The environment policy could not be built.
    #[error("environment: {0}")]
    Env(#[from] env_guard::Error),
    /// [`bwrap_spec::FilenameRules::EnforcedByNameGuard`] was asked for
    /// explicitly, but the guard cannot run here.
    #[error(
        "filename rules were asked to be enforced by the name guard, but {reason}; \
         without it a launch with writable mounts is refused (R-DISPATCH-3)"
    )]
    NameGuardUnavailable {
        /// Why the guard cannot run.
        reason: String,
    },
    /// A native mechanism was asked for explicitly
    /// ([`crate::ManagerBuilder::native_mechanism`]) and cannot run here: an
    /// error, never another mechanism.
    #[error("the {mechanism} mechanism was asked for but cannot run here: {reason}")]
    MechanismUnavailable {
        /// The mechanism asked for.
        mechanism: &'static str,
        /// Why it cannot run.
        reason: String,
    },
    /// The command cannot be run as given (sandbox-core's checks).
    #[error("command: {0}")]
    Command(#[from] sandbox_core::CommandError),
    /// The command asks for something this manager cannot do yet; refused
    /// rather than run without it.
    #[error("{what} is not supported by this sandbox manager yet; the command was not run")]
    NotSupported {
        /// What was asked for.
        what: &'static str,
    },
    /// The command asks for something this platform does not have (a
    /// terminal on Windows); refused before anything runs.
    #[error("{what} is not available on this platform; the command was not run")]
    NotOnThisPlatform {
        /// What was asked for.
        what: &'static str,
    },
    /// A resource limit was asked for that no cgroup here can enforce.
    #[error("the {limit} limit cannot be enforced here: {reason}; the command was not run")]
    LimitUnavailable {
        /// Which limit.
        limit: &'static str,
        /// Why.
        reason: String,
    },
    /// A Unix socket grant that cannot be made as asked.
    #[error("the Unix socket {path} cannot be granted: {reason}")]
    BadSocketGrant {
        /// The socket's path.
        path: String,
        /// Why not, and what to do instead.
        reason: &'static str,
    },
    /// A credential broker was set ([`crate::ManagerBuilder::broker`]) but
    /// the selected backend runs commands on the host with its own network
    /// (`none`), where nothing routes their requests through the broker:
    /// refused rather than run without it.
    #[error(
        "the credential broker needs a sandbox whose only way out is the session's proxies, but \
         the {backend} backend was selected ({why}); use a native backend, or leave the broker \
         out to run unconfined without it"
    )]
    BrokerNeedsSandbox {
        /// The backend selected.
        backend: sandbox_core::SandboxBackend,
        /// How it came to be selected.
        why: String,
    },
    /// The builder lacks a setting the chosen backend needs.
    #[error("the sandbox manager needs {setting}: {why}")]
    MissingSetting {
        /// The builder setting.
        setting: &'static str,
        /// Why this backend needs it.
        why: &'static str,
    },
    /// A tool the backend needs is missing.
    #[error("{tool} is needed for the native sandbox but was not found; {hint}")]
    ToolMissing {
        /// The tool.
        tool: &'static str,
        /// How to get it.
        hint: String,
    },
    /// The handle names no live session of this manager.
    #[error("no live sandbox session {session_id:?} (destroyed, or launched by another manager)")]
    UnknownSession {
        /// The session id.
        session_id: String,
    },
    /// A session with this id is already live.
    #[error("a sandbox session {session_id:?} is already live; destroy it first")]
    DuplicateSession {
        /// The session id.
        session_id: String,
    },
    /// The launch needs creation-time filename rules (no new `.env`,
    /// `*.key`, `*.pem` inside writable mounts) that only the name guard
    /// can enforce under bubblewrap, and no launcher was set (R-DISPATCH-3).
    #[error(
        "refusing to launch: the policy forbids creating {globs:?} inside the writable mounts \
         {roots:?}, which bubblewrap cannot refuse by itself (R-DISPATCH-3), and no name-guard \
         launcher was set; call ManagerBuilder::inner_roles_from_current_exe (with \
         agent_sandbox::run_inner_role_if_launched() first in main) or \
         ManagerBuilder::name_guard_launcher, make the mounts read-only, or opt out explicitly \
         with ManagerBuilder::filename_rules(FilenameRules::DropFilenameGlobDenies) \
         (agent-run --no-filename-rules)"
    )]
    NameGuardLauncherNeeded {
        /// The name rules the launch needs.
        globs: Vec<String>,
        /// The writable roots they apply to.
        roots: Vec<String>,
    },
    /// The session is already running a command.
    #[error("sandbox session {session_id:?} is already running a command")]
    Busy {
        /// The session id.
        session_id: String,
    },
    /// A hardware VM was required ([`crate::ManagerBuilder::require_hardware_vm`])
    /// and the microvm runtime here is not one (gVisor is a user-space
    /// kernel): refused, never run on the weaker runtime.
    #[error(
        "a hardware VM was required, but the microvm runtime here is {found}; it is not a hardware VM"
    )]
    HardwareVmRequired {
        /// The runtime the probe found, as its note says.
        found: String,
    },
    /// A microvm runtime was asked for by name
    /// ([`crate::ManagerBuilder::microvm_runtime`]) that this host does not
    /// have working.
    #[error("the microvm runtime {runtime} was asked for but is not available here: {reason}")]
    MicrovmRuntimeUnavailable {
        /// The runtime asked for.
        runtime: &'static str,
        /// Why not.
        reason: String,
    },
    /// A warm session's sandbox has ended (its init exited or stopped
    /// answering): no command can start in it any more.
    #[error("the session's sandbox has ended ({reason}); destroy the session and launch a new one")]
    SessionSandboxEnded {
        /// What was seen.
        reason: String,
    },
    /// The session is suspended: resume it before running a command.
    #[error("sandbox session {session_id:?} is suspended; resume it first")]
    Suspended {
        /// The session id.
        session_id: String,
    },
    /// The session is not suspended, so there is nothing to resume.
    #[error("sandbox session {session_id:?} is not suspended; there is nothing to resume")]
    NotSuspended {
        /// The session id.
        session_id: String,
    },
    /// The policy forbids creating files by name (`.env`, `*.key`, `*.pem`)
    /// inside writable mounts, and nothing enforces that in the microvm
    /// runtime.
    #[error(
        "refusing to launch: the policy forbids creating {globs:?} inside writable mounts {roots:?}, \
         and {why} (R-DISPATCH-3); make the mounts read-only or opt out \
         explicitly with FilenameRules::DropFilenameGlobDenies (agent-run --no-filename-rules)"
    )]
    MicrovmFilenameRules {
        /// The globs that would be dropped.
        globs: Vec<String>,
        /// The writable roots they apply to.
        roots: Vec<String>,
        /// Why nothing refuses new names in this runtime.
        why: &'static str,
    },
    /// The VM runtime's guest could not be started or reached; nothing of
    /// the session is left running.
    #[error("the microvm guest could not be started: {reason}")]
    GuestUnavailable {
        /// What QEMU, the file server or the guest's agent said.
        reason: String,
    },
    /// The sandbox plan holds something the gVisor bundle cannot express;
    /// nothing was started (a rule is never dropped).
    #[error("the gVisor bundle cannot express the sandbox plan: {reason}; nothing was started")]
    Bundle {
        /// What could not be expressed.
        reason: String,
    },
    /// The gVisor runtime refused or failed a step; what it said.
    #[error("gVisor runsc {step} failed: {said}")]
    Runtime {
        /// The runsc step (`run`, `exec`, `checkpoint`, `restore`, ...).
        step: &'static str,
        /// What runsc said (its last lines, truncated).
        said: String,
    },
    /// A writable mount is a git directory, or lies inside one: the refs
    /// and objects every checkout of that repository shares.
    #[error(
        "{path} is (or lies inside) a git directory and cannot be mounted writable: a session \
         could move the repository's branches and tags or prune its objects; mount it \
         read-only, or give the session a workspace of its own (launch_in_workspace), whose \
         work comes back by collecting"
    )]
    WritableGitDirectory {
        /// The mount's host path.
        path: String,
    },
    /// The path given as a workspace's registered checkout is not one.
    #[error("{path} cannot be a workspace's checkout: {reason}")]
    NotACheckout {
        /// The path as given.
        path: String,
        /// Why not.
        reason: &'static str,
    },
    /// A workspace's branch or session id cannot be used.
    #[error("the workspace's {what} {name:?} is refused: {reason}")]
    BadWorkspaceName {
        /// `branch` or `session id`.
        what: &'static str,
        /// The name (truncated).
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// A workspace could not be made or forked.
    #[error("the workspace at {path} could not be made: {reason}")]
    WorkspaceSetup {
        /// The view being made.
        path: String,
        /// What failed.
        reason: String,
    },
    /// A git run on the host for a workspace failed.
    #[error("git {command} failed for a workspace: {said}")]
    WorkspaceGit {
        /// The git command (its first words).
        command: String,
        /// What git said (truncated).
        said: String,
    },
    /// The session has no workspace (it was launched without one).
    #[error("sandbox session {session_id:?} has no workspace; launch it with launch_in_workspace")]
    NoWorkspace {
        /// The session.
        session_id: String,
    },
    /// A collection was refused: nothing of the checkout changed.
    #[error("collecting into {reference} was refused: {reason}")]
    CollectRefused {
        /// The ref the collection would have written.
        reference: String,
        /// Why (the push rule's reason, the checkout's, or what was wrong
        /// in the layer).
        reason: String,
    },
    /// An I/O error while setting up or running the sandbox.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        ErrorKind::Io {
            context: context.into(),
            source,
        }
        .into()
    }
}

impl<T: Into<ErrorKind>> From<T> for Error {
    fn from(kind: T) -> Error {
        Error { kind: kind.into() }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}\n\nkind: {:?}", self.kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_leads_with_what_to_do() {
        let e = Error::from(ErrorKind::NoWorkspace {
            session_id: "s1".into(),
        });
        let shown = format!("{e:?}");
        assert!(shown.starts_with(&e.to_string()), "{shown}");
        assert!(shown.contains("launch_in_workspace"), "{shown}");
        assert!(shown.contains("kind: NoWorkspace"), "{shown}");
    }
}
