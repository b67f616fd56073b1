//! A built plan: the bubblewrap options, the placeholders and the
//! creation-time rules, and how the options reach bubblewrap.

use crate::Placeholder;
use crate::name_guard_launcher::{GuardFds, NameGuardLauncher, guarded_argv};
use std::ffi::OsString;
use std::path::Path;

/// What to do about filename-glob write denies (`.env`, `*.key`, `*.pem`),
/// which bubblewrap cannot enforce (R-DISPATCH-3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilenameRules {
    /// Refuse to build a plan whose policy needs them (the default).
    #[default]
    Refuse,
    /// A creation-time guard enforces them inside the sandbox: the plan
    /// binds the launcher set with [`crate::BwrapBuilder::name_guard_launcher`]
    /// read-only into the sandbox and runs every command under it (see
    /// [`BwrapPlan::guarded_command`]).
    EnforcedByNameGuard,
    /// Explicit, logged opt-out: drop only the filename-glob denies and keep
    /// every other denial.
    DropFilenameGlobDenies,
}

/// Which fixed profile a plan follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Profile {
    /// An agent dispatch: network only through the proxies, the full deny
    /// sets, mounts per mode (the default).
    #[default]
    Dispatch,
    /// A server-driven terminal (R-TERMINAL-1, the Linux form of
    /// R-SEATBELT-8): the home directory and the working directory writable,
    /// the host network shared, the five secret directories unreadable,
    /// protected paths read-only. No filename-glob rules apply.
    Terminal,
}

/// The longest argv passed on the command line; longer plans use `--args FD`.
pub const MAX_ARGV_BYTES: usize = 128 * 1024;
/// The longest plan built at all, with [`ArgvDelivery::ArgsFd`].
pub const MAX_ARGS_FD_BYTES: usize = 16 * 1024 * 1024;

/// How the caller passes the options to bubblewrap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgvDelivery {
    /// On the command line: a plan over [`MAX_ARGV_BYTES`] is refused
    /// ([`crate::ErrorKind::TooManyArguments`]). The default.
    #[default]
    CommandLine,
    /// The caller passes a plan that does not
    /// [fit the command line](BwrapPlan::fits_command_line) through
    /// `bwrap --args FD` ([`BwrapPlan::args_fd_payload`]); plans up to
    /// [`MAX_ARGS_FD_BYTES`] are built.
    ArgsFd,
}

/// A built plan: the argv for bubblewrap (everything between `bwrap` and the
/// command), the placeholders to create before the launch and remove after,
/// and what was dropped by an opt-out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BwrapPlan {
    pub(crate) args: Vec<OsString>,
    pub(crate) placeholders: Vec<Placeholder>,
    pub(crate) dropped_filename_globs: Vec<String>,
    pub(crate) name_guard_globs: Vec<String>,
    /// The runner state directories, where the name rules do not hold.
    pub(crate) state_dirs: Vec<String>,
    pub(crate) tool_dirs: Vec<String>,
    pub(crate) launcher: Option<NameGuardLauncher>,
    /// The launcher bound inside, guarded or not.
    pub(crate) bound_launcher: Option<NameGuardLauncher>,
    /// The granted Unix sockets (paths inside, the same as on the host).
    pub(crate) unix_sockets: Vec<String>,
}

impl BwrapPlan {
    /// The bubblewrap options, ending with `--`.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The full argv: `bwrap_path`, the options, then `command` (under the
    /// name guard when the plan has one, see [`BwrapPlan::guarded_command`]).
    pub fn command_line<I, S>(&self, bwrap_path: &Path, command: I) -> Vec<OsString>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut out = Vec::with_capacity(self.args.len() + 4);
        out.push(bwrap_path.as_os_str().to_owned());
        out.extend(self.args.iter().cloned());
        out.extend(self.guarded_command(command, None));
        out
    }

    /// What to run after the options so that `command` runs under the plan's
    /// creation-time rules and socket supervision: `command` itself when
    /// the plan has no launcher, else the launcher (at [`crate::NAME_GUARD_GUEST_PATH`]) with one `--deny`
    /// per rule and, with `report_fd`, `--report-fd N` so that each refusal
    /// is reported on that descriptor (which must then be open in
    /// bubblewrap).
    pub fn guarded_command<I, S>(&self, command: I, report_fd: Option<i32>) -> Vec<OsString>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.guarded_command_with(
            command,
            GuardFds {
                report: report_fd,
                updates: None,
                notify: None,
            },
        )
    }

    /// [`BwrapPlan::guarded_command`] with both of the guard's descriptors.
    pub fn guarded_command_with<I, S>(&self, command: I, fds: GuardFds) -> Vec<OsString>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        match &self.launcher {
            Some(l) => guarded_argv(
                l,
                &self.name_guard_globs,
                (&self.state_dirs, &self.tool_dirs),
                &self.unix_sockets,
                fds,
                command,
            ),
            None => command.into_iter().map(Into::into).collect(),
        }
    }

    /// The launcher bound at [`crate::NAME_GUARD_GUEST_PATH`], when one is
    /// (the guard's, or [`crate::BwrapBuilder::bind_launcher_always`]'s).
    pub fn bound_launcher(&self) -> Option<&NameGuardLauncher> {
        self.bound_launcher.as_ref()
    }

    /// Whether commands run under the name guard.
    pub fn is_guarded(&self) -> bool {
        self.launcher.is_some()
    }

    /// Whether the options fit on the command line ([`MAX_ARGV_BYTES`]);
    /// when they do not, pass [`BwrapPlan::args_fd_payload`] with
    /// `bwrap --args FD --`.
    pub fn fits_command_line(&self) -> bool {
        self.args.iter().map(|s| s.len() + 1).sum::<usize>() <= MAX_ARGV_BYTES
    }

    /// The options as the NUL-separated payload of `bwrap --args FD`
    /// (without the final `--`, which must follow `--args FD` on the command
    /// line).
    pub fn args_fd_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for a in self.args.iter().take(self.args.len().saturating_sub(1)) {
            out.extend_from_slice(a.as_encoded_bytes());
            out.push(0);
        }
        out
    }

    /// Paths that must exist on the host before launch (created by
    /// [`crate::PlaceholderFiles::create_on_host`]) so that a missing denied
    /// file can be mounted read-only instead of created by the agent.
    pub fn placeholders(&self) -> &[Placeholder] {
        &self.placeholders
    }

    /// The creation-time rules dropped by
    /// [`FilenameRules::DropFilenameGlobDenies`]: the filename globs, then the
    /// not-yet-existing mandatory denies in worktrees that bubblewrap could
    /// only enforce by leaving a placeholder file there. The caller must log
    /// them.
    pub fn dropped_filename_globs(&self) -> &[String] {
        &self.dropped_filename_globs
    }

    /// The creation-time rules a name guard must enforce
    /// ([`FilenameRules::EnforcedByNameGuard`]): globs, then absolute paths.
    pub fn name_guard_globs(&self) -> &[String] {
        &self.name_guard_globs
    }

    /// The runner state directories (each in its literal and resolved
    /// spelling) given to the name guard: its name rules (`.env`, `*.key`,
    /// `*.pem`) keep to the workspace and do not hold inside these.
    pub fn name_guard_state_dirs(&self) -> &[String] {
        &self.state_dirs
    }
}
