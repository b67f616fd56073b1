//! The name-guard launcher's command line as a value: built by the plan that
//! puts the launcher in front of a command, parsed by the launcher.
//!
//! `[--report-fd N] [--updates-fd N] [--notify-fd N] [--allow-unix-socket PATH]...
//! [--state-dir PATH]... [--tool-dir NAME]... [--keep-capability NAME]... [--landlock [--write PATH]...
//! [--read-deny PATH]... [--read-again PATH]... [--protect PATH]...
//! [--connect-tcp PORT]...] --deny GLOB... -- CMD ARGS`: options come before
//! `--`,
//! each option's value is the next argument whatever it looks like (a glob
//! may start with `-`), and everything after `--` is the command.

mod checks;
mod host_confinement;
mod problem;

pub use host_confinement::HostConfinement;
pub use problem::InvocationProblem;

use crate::Error;
use checks::{check_arg, check_tool_dir, parse_fd, preview};
use std::ffi::{OsStr, OsString};

/// The capabilities `--keep-capability` may name: those that make files as
/// another user (ownership, set-id bits, file and group ids), enter a
/// directory as the root, and drop capabilities from the bounding set
/// (`setpcap`, which grants nothing past that set). None of them reaches
/// the guard's memory, passes by file permissions, mounts or makes devices.
pub const KEEPABLE_CAPABILITIES: [&str; 7] = [
    "chown",
    "fowner",
    "fsetid",
    "setgid",
    "setuid",
    "setpcap",
    "sys_chroot",
];

/// The usage line, for error messages.
pub const NAME_GUARD_USAGE: &str = "name-guard-exec [--report-fd N] [--updates-fd N] [--notify-fd N] [--allow-unix-socket PATH]... \
     [--state-dir PATH]... [--tool-dir NAME]... [--keep-capability NAME]... [--landlock [--write PATH]... [--read-deny PATH]... [--read-again PATH]... [--protect PATH]... \
     [--connect-tcp PORT]...] --deny GLOB... -- CMD ARGS";

/// The arguments of the name-guard launcher, after its program name (and
/// after any marker a multi-call program reads first).
///
/// [`NameGuardInvocation::to_args`] and [`NameGuardInvocation::parse`] are
/// inverse: for every value [`NameGuardInvocation::check`] accepts,
/// `parse(to_args(x)) == x`, and for every other value `parse(to_args(x))`
/// fails with the error `check` gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameGuardInvocation {
    /// The descriptor each refusal is reported on (`--report-fd N`), from 3
    /// to [`NameGuardInvocation::REPORT_FD_LIMIT`] minus one.
    pub report_fd: Option<i32>,
    /// The descriptor the guard reads rules from while it runs
    /// (`--updates-fd N`, same range as the report descriptor): lines in
    /// the form of [`crate::GuardUpdate`], so that a warm session's guard
    /// takes on the denies of a repository made after its start.
    pub updates_fd: Option<i32>,
    /// The descriptor the guard writes a byte to whenever a name `.git` is
    /// made or a directory renamed (`--notify-fd N`, same range, distinct
    /// from the other two): a session searches its writable roots for new
    /// git repositories only after one, instead of before every command.
    pub notify_fd: Option<i32>,
    /// The denied names (`--deny GLOB`, once each), in order: globs on the
    /// final component, or absolute paths. What a rule may say is the
    /// guard's to decide; here each is an argument like any other.
    pub deny_globs: Vec<String>,
    /// The Unix sockets the guarded tree may connect to besides those it
    /// binds itself (`--allow-unix-socket PATH`, once each): absolute paths,
    /// as they are inside the sandbox.
    pub unix_sockets: Vec<OsString>,
    /// The runner's state directories (`--state-dir PATH`, once each):
    /// absolute paths, as they are where the guard runs. The name rules
    /// (rules without `/`, such as `*.key`) do not hold inside them, so
    /// the runner may keep its own keys there; the path rules still do. A
    /// rename between the inside of one and anywhere else fails with
    /// `EXDEV`, so a tree made there reaches the workspace only by copying,
    /// file by file under the rules.
    pub state_dirs: Vec<OsString>,
    /// Names of the directories package managers own (`--tool-dir NAME`,
    /// once each): one path component each, such as `node_modules` or
    /// `site-packages`. The name rules do not hold for a name made below a
    /// directory of such a name (a package's `cacert.pem`); the path rules
    /// still do. A rename between the inside of one and anywhere else
    /// fails with `EXDEV`, as for a state directory, so what is made there
    /// leaves only by copying, file by file under the rules.
    pub tool_dirs: Vec<OsString>,
    /// Capabilities the guard and its command keep (`--keep-capability
    /// NAME`, once each, from [`KEEPABLE_CAPABILITIES`]); every other one
    /// is dropped as always. The guard and the command hold the same
    /// credentials still, so the guard can do nothing on the command's
    /// behalf that the command could not. For a program that must act as
    /// the users it serves (the VM runtime's file server); none by default.
    pub keep_capabilities: Vec<String>,
    /// Confinement on the host itself, without namespaces (`--landlock`
    /// and the options after it): Landlock rules that the launcher applies
    /// to itself before it forks, and the supervisor's extra checks.
    /// `None` inside bubblewrap.
    pub host: Option<HostConfinement>,
    /// The command and its arguments (at least one element).
    pub command: Vec<OsString>,
}

impl NameGuardInvocation {
    /// Most `--deny` rules.
    pub const MAX_DENY_GLOBS: usize = 4096;
    /// Most `--allow-unix-socket` paths.
    pub const MAX_UNIX_SOCKETS: usize = 64;
    /// Most `--state-dir` paths.
    pub const MAX_STATE_DIRS: usize = 64;
    /// Most `--tool-dir` names.
    pub const MAX_TOOL_DIRS: usize = 32;
    /// Longest `--tool-dir` name, in bytes (a file name's limit).
    pub const MAX_TOOL_DIR_LEN: usize = 255;
    /// Most values of each `--landlock` option (`--write`, `--read-deny`,
    /// `--read-again`, `--protect`, `--connect-tcp`).
    pub const MAX_HOST_VALUES: usize = 4096;
    /// Most arguments of the guarded command.
    pub const MAX_COMMAND_ARGS: usize = 4096;
    /// Longest single argument, in bytes (Linux passes no longer one to a
    /// program: `MAX_ARG_STRLEN` with its NUL).
    pub const MAX_ARG_BYTES: usize = 128 * 1024 - 1;
    /// Largest `--report-fd` descriptor, plus one.
    pub const REPORT_FD_LIMIT: i32 = 1_000_000;

    /// A command line running `command` under `deny_globs`, without reports.
    pub fn new<G, S, C, A>(deny_globs: G, command: C) -> NameGuardInvocation
    where
        G: IntoIterator<Item = S>,
        S: Into<String>,
        C: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        NameGuardInvocation {
            report_fd: None,
            updates_fd: None,
            notify_fd: None,
            deny_globs: deny_globs.into_iter().map(Into::into).collect(),
            unix_sockets: Vec::new(),
            state_dirs: Vec::new(),
            tool_dirs: Vec::new(),
            keep_capabilities: Vec::new(),
            host: None,
            command: command.into_iter().map(Into::into).collect(),
        }
    }

    /// The arguments, in the order `--report-fd N`, `--updates-fd N`,
    /// `--notify-fd N`, one
    /// `--allow-unix-socket PATH` per socket, one `--state-dir PATH` per
    /// state directory, one `--tool-dir NAME` per tool directory, the
    /// `--landlock` options, one `--deny GLOB` per
    /// rule, `--`, the command.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut out = Vec::with_capacity(self.deny_globs.len() * 2 + self.command.len() + 3);
        if let Some(fd) = self.report_fd {
            out.push("--report-fd".into());
            out.push(fd.to_string().into());
        }
        if let Some(fd) = self.updates_fd {
            out.push("--updates-fd".into());
            out.push(fd.to_string().into());
        }
        if let Some(fd) = self.notify_fd {
            out.push("--notify-fd".into());
            out.push(fd.to_string().into());
        }
        for s in &self.unix_sockets {
            out.push("--allow-unix-socket".into());
            out.push(s.clone());
        }
        for d in &self.state_dirs {
            out.push("--state-dir".into());
            out.push(d.clone());
        }
        for d in &self.tool_dirs {
            out.push("--tool-dir".into());
            out.push(d.clone());
        }
        for c in &self.keep_capabilities {
            out.push("--keep-capability".into());
            out.push(c.into());
        }
        if let Some(h) = &self.host {
            out.push("--landlock".into());
            for (option, paths) in h.path_lists() {
                for p in paths {
                    out.push(option.into());
                    out.push(p.clone());
                }
            }
            for port in &h.tcp_ports {
                out.push("--connect-tcp".into());
                out.push(port.to_string().into());
            }
        }
        for g in &self.deny_globs {
            out.push("--deny".into());
            out.push(g.into());
        }
        out.push("--".into());
        out.extend(self.command.iter().cloned());
        out
    }

    /// Parses the arguments after the program name. Reads at most as many
    /// arguments as the limits allow, so an endless iterator is refused
    /// rather than collected.
    pub fn parse<I, S>(args: I) -> Result<NameGuardInvocation, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut inv = NameGuardInvocation::default();
        let mut it = args.into_iter().map(Into::into);
        let mut seen_fd = false;
        let mut seen_updates = false;
        let mut seen_notify = false;
        while let Some(a) = it.next() {
            if a == "--" {
                inv.command
                    .extend(it.by_ref().take(Self::MAX_COMMAND_ARGS + 1));
                break;
            }
            if a == "--deny" {
                let v = it
                    .next()
                    .ok_or(InvocationProblem::MissingValue { option: "--deny" })?;
                if inv.deny_globs.len() >= Self::MAX_DENY_GLOBS {
                    return Err(InvocationProblem::TooManyGlobs {
                        limit: Self::MAX_DENY_GLOBS,
                    }
                    .into());
                }
                let v = v
                    .into_string()
                    .map_err(|_| InvocationProblem::GlobNotUtf8 {
                        index: inv.deny_globs.len(),
                    })?;
                inv.deny_globs.push(v);
            } else if a == "--allow-unix-socket" {
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--allow-unix-socket",
                })?;
                if inv.unix_sockets.len() >= Self::MAX_UNIX_SOCKETS {
                    return Err(InvocationProblem::TooManySockets {
                        limit: Self::MAX_UNIX_SOCKETS,
                    }
                    .into());
                }
                inv.unix_sockets.push(v);
            } else if a == "--state-dir" {
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--state-dir",
                })?;
                if inv.state_dirs.len() >= Self::MAX_STATE_DIRS {
                    return Err(InvocationProblem::TooManyStateDirs {
                        limit: Self::MAX_STATE_DIRS,
                    }
                    .into());
                }
                inv.state_dirs.push(v);
            } else if a == "--tool-dir" {
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--tool-dir",
                })?;
                if inv.tool_dirs.len() >= Self::MAX_TOOL_DIRS {
                    return Err(InvocationProblem::TooManyToolDirs {
                        limit: Self::MAX_TOOL_DIRS,
                    }
                    .into());
                }
                check_tool_dir(&v)?;
                inv.tool_dirs.push(v);
            } else if a == "--keep-capability" {
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--keep-capability",
                })?;
                let name = v.to_str().unwrap_or_default();
                if !KEEPABLE_CAPABILITIES.contains(&name)
                    || inv.keep_capabilities.iter().any(|c| c == name)
                {
                    return Err(InvocationProblem::CapabilityNotKeepable {
                        name: preview(&v, 32),
                    }
                    .into());
                }
                inv.keep_capabilities.push(name.to_owned());
            } else if a == "--landlock" {
                if inv.host.is_some() {
                    return Err(InvocationProblem::RepeatedLandlock.into());
                }
                inv.host = Some(HostConfinement::default());
            } else if let Some(option) = HostConfinement::OPTIONS.iter().find(|o| a == **o) {
                let option: &'static str = option;
                let Some(host) = inv.host.as_mut() else {
                    return Err(InvocationProblem::NeedsLandlock { option }.into());
                };
                let v = it
                    .next()
                    .ok_or(InvocationProblem::MissingValue { option })?;
                host.push(option, v)?;
            } else if a == "--report-fd" {
                if seen_fd {
                    return Err(InvocationProblem::RepeatedReportFd.into());
                }
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--report-fd",
                })?;
                inv.report_fd =
                    Some(parse_fd(&v).ok_or_else(|| InvocationProblem::BadReportFd {
                        value: preview(&v, 32),
                    })?);
                seen_fd = true;
            } else if a == "--updates-fd" {
                if seen_updates {
                    return Err(InvocationProblem::RepeatedUpdatesFd.into());
                }
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--updates-fd",
                })?;
                inv.updates_fd =
                    Some(parse_fd(&v).ok_or_else(|| InvocationProblem::BadUpdatesFd {
                        value: preview(&v, 32),
                    })?);
                seen_updates = true;
            } else if a == "--notify-fd" {
                if seen_notify {
                    return Err(InvocationProblem::RepeatedNotifyFd.into());
                }
                let v = it.next().ok_or(InvocationProblem::MissingValue {
                    option: "--notify-fd",
                })?;
                inv.notify_fd =
                    Some(parse_fd(&v).ok_or_else(|| InvocationProblem::BadNotifyFd {
                        value: preview(&v, 32),
                    })?);
                seen_notify = true;
            } else {
                return Err(InvocationProblem::UnexpectedArgument {
                    argument: preview(&a, 64),
                }
                .into());
            }
        }
        inv.check()?;
        Ok(inv)
    }

    /// Checks the limits: a report descriptor from 3 to
    /// [`NameGuardInvocation::REPORT_FD_LIMIT`] minus one, at most
    /// [`NameGuardInvocation::MAX_DENY_GLOBS`] rules, a command of 1 to
    /// [`NameGuardInvocation::MAX_COMMAND_ARGS`] arguments, and no argument
    /// over [`NameGuardInvocation::MAX_ARG_BYTES`] or holding a NUL byte.
    pub fn check(&self) -> Result<(), Error> {
        if let Some(fd) = self.report_fd
            && !(3..Self::REPORT_FD_LIMIT).contains(&fd)
        {
            return Err(InvocationProblem::BadReportFd {
                value: fd.to_string(),
            }
            .into());
        }
        if let Some(fd) = self.updates_fd
            && (!(3..Self::REPORT_FD_LIMIT).contains(&fd) || self.report_fd == Some(fd))
        {
            return Err(InvocationProblem::BadUpdatesFd {
                value: fd.to_string(),
            }
            .into());
        }
        if let Some(fd) = self.notify_fd
            && (!(3..Self::REPORT_FD_LIMIT).contains(&fd)
                || self.report_fd == Some(fd)
                || self.updates_fd == Some(fd))
        {
            return Err(InvocationProblem::BadNotifyFd {
                value: fd.to_string(),
            }
            .into());
        }
        if self.deny_globs.len() > Self::MAX_DENY_GLOBS {
            return Err(InvocationProblem::TooManyGlobs {
                limit: Self::MAX_DENY_GLOBS,
            }
            .into());
        }
        for g in &self.deny_globs {
            check_arg(OsStr::new(g))?;
        }
        if self.unix_sockets.len() > Self::MAX_UNIX_SOCKETS {
            return Err(InvocationProblem::TooManySockets {
                limit: Self::MAX_UNIX_SOCKETS,
            }
            .into());
        }
        for s in &self.unix_sockets {
            check_arg(s)?;
            if !s.as_encoded_bytes().starts_with(b"/") {
                return Err(InvocationProblem::RelativeSocketPath {
                    path: preview(s, 64),
                }
                .into());
            }
        }
        if self.state_dirs.len() > Self::MAX_STATE_DIRS {
            return Err(InvocationProblem::TooManyStateDirs {
                limit: Self::MAX_STATE_DIRS,
            }
            .into());
        }
        for d in &self.state_dirs {
            check_arg(d)?;
            if !d.as_encoded_bytes().starts_with(b"/") {
                return Err(InvocationProblem::RelativeStateDir {
                    path: preview(d, 64),
                }
                .into());
            }
        }
        if self.tool_dirs.len() > Self::MAX_TOOL_DIRS {
            return Err(InvocationProblem::TooManyToolDirs {
                limit: Self::MAX_TOOL_DIRS,
            }
            .into());
        }
        for d in &self.tool_dirs {
            check_tool_dir(d)?;
        }
        for (i, c) in self.keep_capabilities.iter().enumerate() {
            if !KEEPABLE_CAPABILITIES.contains(&c.as_str())
                || self.keep_capabilities[..i].contains(c)
            {
                return Err(InvocationProblem::CapabilityNotKeepable {
                    name: preview(OsStr::new(c), 32),
                }
                .into());
            }
        }
        if let Some(h) = &self.host {
            h.check()?;
        }
        if self.command.is_empty() {
            return Err(InvocationProblem::NoCommand.into());
        }
        if self.command.len() > Self::MAX_COMMAND_ARGS {
            return Err(InvocationProblem::TooManyCommandArgs {
                limit: Self::MAX_COMMAND_ARGS,
            }
            .into());
        }
        for a in &self.command {
            check_arg(a)?;
        }
        Ok(())
    }
}
