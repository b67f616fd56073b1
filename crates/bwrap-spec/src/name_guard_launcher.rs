//! The name-guard launcher: a host executable bound read-only into the
//! sandbox and run in front of the command when a plan has creation-time
//! filename rules ([`crate::FilenameRules::EnforcedByNameGuard`]).

use sandbox_core::NameGuardInvocation;
use std::ffi::OsString;
use std::path::PathBuf;

/// Where the launcher appears inside the sandbox.
pub const NAME_GUARD_GUEST_PATH: &str = "/run/name-guard-exec";

/// Most rules one guard accepts (the launcher's own limit,
/// [`NameGuardInvocation::MAX_DENY_GLOBS`]).
pub const MAX_NAME_GUARD_RULES: usize = NameGuardInvocation::MAX_DENY_GLOBS;

/// A launcher that accepts `[leading args] [--report-fd N] --deny RULE...
/// -- CMD ARGS` (the leading arguments, then the `name-guard-exec` command
/// line, [`NameGuardInvocation`]), for example the
/// `name-guard-exec` binary itself, or a host program that dispatches to
/// `name_guard::launcher_main` when called with a leading marker argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameGuardLauncher {
    host_path: PathBuf,
    leading_args: Vec<OsString>,
}

impl NameGuardLauncher {
    /// The launcher at `host_path` (absolute), called with no leading
    /// arguments.
    pub fn new(host_path: impl Into<PathBuf>) -> NameGuardLauncher {
        NameGuardLauncher {
            host_path: host_path.into(),
            leading_args: Vec::new(),
        }
    }

    /// A multi-call launcher: `host_path` is called with `leading_args`
    /// first (for example a marker such as `--name-guard-exec`).
    pub fn multi_call<I, S>(host_path: impl Into<PathBuf>, leading_args: I) -> NameGuardLauncher
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        NameGuardLauncher {
            host_path: host_path.into(),
            leading_args: leading_args.into_iter().map(Into::into).collect(),
        }
    }

    /// The executable on the host.
    pub fn host_path(&self) -> &std::path::Path {
        &self.host_path
    }

    /// The arguments placed before the guard's own.
    pub fn leading_args(&self) -> &[OsString] {
        &self.leading_args
    }
}

/// The descriptors a guarded command's launcher is given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardFds {
    /// Where each refusal is reported (`--report-fd`).
    pub report: Option<i32>,
    /// Where rules added while it runs come from (`--updates-fd`): a warm
    /// session's guard, which serves every command of the session.
    pub updates: Option<i32>,
    /// Where it notes what may have made a git repository
    /// (`--notify-fd`).
    pub notify: Option<i32>,
}

/// The argv that runs `command` under the guard inside the sandbox: the
/// launcher's guest path, its leading arguments, then the guard's command
/// line ([`NameGuardInvocation::to_args`]).
pub(crate) fn guarded_argv<I, S>(
    launcher: &NameGuardLauncher,
    rules: &[String],
    (state_dirs, tool_dirs): (&[String], &[String]),
    unix_sockets: &[String],
    fds: GuardFds,
    command: I,
) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let invocation = NameGuardInvocation {
        report_fd: fds.report,
        updates_fd: fds.updates,
        notify_fd: fds.notify,
        deny_globs: rules.to_vec(),
        unix_sockets: unix_sockets.iter().map(Into::into).collect(),
        state_dirs: state_dirs.iter().map(Into::into).collect(),
        tool_dirs: tool_dirs.iter().map(Into::into).collect(),
        keep_capabilities: Vec::new(),
        host: None,
        command: command.into_iter().map(Into::into).collect(),
    };
    let mut out: Vec<OsString> = Vec::with_capacity(rules.len() * 2 + 8);
    out.push(NAME_GUARD_GUEST_PATH.into());
    out.extend(launcher.leading_args.iter().cloned());
    out.extend(invocation.to_args());
    out
}
