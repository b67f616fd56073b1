//! What every backend of a manager shares ([`Settings`], decided once at
//! build), and the log sink: below the backends and the manager, which
//! both read it.

use crate::BrokerSettings;
use crate::Cgroups;
use connect_proxy::{IpPolicy, Resolver};
use sandbox_core::{HostView, Surface};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

/// A sink for the manager's log lines (the probe line, downgrades, opt-outs,
/// warnings). Unset, lines go to stderr ([`log_to_stderr`]).
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// `sink`, each line also a `tracing` event (level info, target
/// `agent_sandbox`) in the span it is logged from (the build, a launch, a
/// command), so that a host's subscriber sees it with the session's fields.
pub(crate) fn traced(sink: LogSink) -> LogSink {
    Arc::new(move |line: &str| {
        tracing::info!(target: "agent_sandbox", "{line}");
        sink(line);
    })
}

/// The default [`LogSink`]: each line on stderr, prefixed `agent-sandbox: `
/// (unless it already is), so warnings and refusals are seen without any
/// setup. A host with its own logging passes its sink to
/// [`ManagerBuilder::log`](crate::ManagerBuilder::log); one that wants silence passes a sink that
/// drops lines, explicitly.
pub fn log_to_stderr() -> LogSink {
    Arc::new(|line: &str| {
        if line.starts_with("agent-sandbox: ") {
            eprintln!("{line}");
        } else {
            eprintln!("agent-sandbox: {line}");
        }
    })
}

/// The host as the manager reads it at launch: path resolution for the
/// bubblewrap plan and the Seatbelt profile.
pub type SharedHostView = Arc<dyn HostView + Send + Sync>;

/// How a native session (bubblewrap or Landlock) runs its commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandIsolation {
    /// One sandbox per session, built at launch, with a small init of ours
    /// inside that starts each command: a command costs a fork and an exec
    /// in the sandbox. Processes a command leaves running stay for the
    /// next one (as in a shell) and end at destroy. Needs a name-guard
    /// launcher (the init is that program); without one, sessions fall
    /// back to [`CommandIsolation::FreshSandboxPerCommand`] and say so in
    /// the handle's `isolation` detail. The default.
    #[default]
    SessionSandbox,
    /// A new sandbox for every command, torn down at its end: nothing a
    /// command leaves behind (other than files) reaches the next. Slower
    /// by the cost of a sandbox per command.
    FreshSandboxPerCommand,
}

/// What every backend of a manager shares (a session in a workspace gets a
/// copy with its reads amended: see [`crate::workspace`]).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) surface: Surface,
    /// How native sessions run their commands.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "warm sessions are the Linux mechanisms'")
    )]
    pub(crate) isolation: CommandIsolation,
    pub(crate) home: PathBuf,
    pub(crate) base_env: Vec<(OsString, OsString)>,
    pub(crate) host: SharedHostView,
    pub(crate) log: LogSink,
    /// Where audit records go ([`crate::ManagerBuilder::audit`]).
    pub(crate) audit: Option<crate::audit::AuditSink>,
    pub(crate) egress: EgressSettings,
    pub(crate) cgroups: Cgroups,
    /// The granted Unix sockets (checked at build).
    pub(crate) unix_sockets: Vec<String>,
    /// Paths hidden from reading besides the secret set, and the paths
    /// read again inside them.
    pub(crate) reads: ExtraReads,
    /// The probe's start-up line (R-PROBE-1), as logged at build.
    pub(crate) startup_line: String,
    /// Where session directories and workspace layers are made.
    pub(crate) temp_dir: Option<PathBuf>,
    /// The names of the directories package managers own, below which the
    /// filename globs do not hold (the name guard's; Seatbelt's profile
    /// holds the globs everywhere).
    #[cfg_attr(
        not(target_os = "linux"),
        allow(
            dead_code,
            reason = "only the name guard (Linux) takes tool directories"
        )
    )]
    pub(crate) tool_dirs: Vec<String>,
    /// The latest search for nested repositories of each set of writable
    /// roots (searched on Linux only).
    #[cfg(target_os = "linux")]
    pub(crate) repo_records: crate::repo_records::RepoRecords,
}

/// The host's own read denies ([`ManagerBuilder::read_deny`](crate::ManagerBuilder::read_deny)) and the paths
/// read again inside them ([`ManagerBuilder::allow_read_within_denies`](crate::ManagerBuilder::allow_read_within_denies)).
#[derive(Clone, Debug, Default)]
pub(crate) struct ExtraReads {
    pub(crate) deny: Vec<String>,
    pub(crate) again: Vec<String>,
}

impl ExtraReads {
    pub(crate) fn is_empty(&self) -> bool {
        self.deny.is_empty() && self.again.is_empty()
    }
}

/// The manager's egress settings, shared by its sessions.
#[derive(Clone)]
pub(crate) struct EgressSettings {
    pub(crate) ip_policy: IpPolicy,
    pub(crate) extra_allow: Vec<String>,
    pub(crate) deny: Vec<String>,
    pub(crate) baseline: connect_proxy::Baseline,
    pub(crate) resolver: Option<Arc<dyn Resolver>>,
    pub(crate) broker: Option<BrokerSettings>,
    /// Where each connection the proxies allow is recorded
    /// ([`crate::ManagerBuilder::audit`]), with the backend's label.
    pub(crate) audit: Option<(crate::audit::AuditSink, String)>,
}
