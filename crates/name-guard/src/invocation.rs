//! The launcher's command line with its rules compiled: what [`crate::run`]
//! runs. The command line itself is [`sandbox_core::NameGuardInvocation`],
//! the value the bubblewrap plan builds.

use crate::{Error, ErrorKind, Rules};
use sandbox_core::NameGuardInvocation;
use std::ffi::OsString;

/// Most arguments of the guarded command
/// ([`NameGuardInvocation::MAX_COMMAND_ARGS`]).
pub const MAX_COMMAND_ARGS: usize = NameGuardInvocation::MAX_COMMAND_ARGS;

/// A `name-guard-exec` command line, `[--report-fd N] --deny GLOB... --
/// CMD ARGS`, with its rules compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The denied names.
    pub rules: Rules,
    /// The command and its arguments (at least one element).
    pub command: Vec<OsString>,
    /// The descriptor denial reports are written to (`--report-fd N`); see
    /// [`crate::report`].
    pub report_fd: Option<i32>,
    /// The descriptor rules are read from while the command runs
    /// (`--updates-fd N`; see [`sandbox_core::GuardUpdate`]).
    pub updates_fd: Option<i32>,
    /// The descriptor a byte is written to whenever a name `.git` is made
    /// or a directory renamed (`--notify-fd N`).
    pub notify_fd: Option<i32>,
    /// The Unix sockets the command may connect to besides those its own
    /// processes bind (`--allow-unix-socket PATH`): known by what each path
    /// names when the command starts.
    pub unix_sockets: Vec<OsString>,
    /// The capabilities the guard and the command keep
    /// (`--keep-capability`), as a mask of capability numbers; empty but
    /// for the VM runtime's file server.
    pub keep_capabilities: u64,
    /// Confinement on the host without namespaces (`--landlock`): Landlock
    /// rules the launcher applies to itself before it forks, and the
    /// supervisor's checks of protected paths and TCP connects.
    pub host: Option<crate::HostRules>,
}

impl Invocation {
    /// Parses the arguments after the program name
    /// ([`NameGuardInvocation::parse`]) and compiles the rules.
    pub fn parse<I, S>(args: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let line = NameGuardInvocation::parse(args).map_err(ErrorKind::Usage)?;
        Invocation::from_command_line(line)
    }

    /// Checks a command line ([`NameGuardInvocation::check`]) and compiles
    /// its rules ([`Rules::new`]).
    pub fn from_command_line(line: NameGuardInvocation) -> Result<Self, Error> {
        line.check().map_err(ErrorKind::Usage)?;
        Ok(Invocation {
            rules: {
                let mut rules = Rules::new(&line.deny_globs)?;
                rules.state_dirs(line.state_dirs.iter().map(|d| d.as_encoded_bytes()))?;
                rules.tool_dirs(line.tool_dirs.iter().map(|d| d.as_encoded_bytes()))?;
                rules
            },
            command: line.command,
            report_fd: line.report_fd,
            updates_fd: line.updates_fd,
            notify_fd: line.notify_fd,
            unix_sockets: line.unix_sockets,
            keep_capabilities: capability_mask(&line.keep_capabilities),
            host: line.host.as_ref().map(crate::HostRules::new).transpose()?,
        })
    }
}

/// The capability numbers of `names` (checked already against
/// [`sandbox_core::KEEPABLE_CAPABILITIES`]; an unknown name adds nothing).
fn capability_mask(names: &[String]) -> u64 {
    names
        .iter()
        .filter_map(|n| match n.as_str() {
            "chown" => Some(0),
            "fowner" => Some(3),
            "fsetid" => Some(4),
            "setgid" => Some(6),
            "setuid" => Some(7),
            "setpcap" => Some(8),
            "sys_chroot" => Some(18),
            _ => None,
        })
        .fold(0u64, |m, c| m | (1u64 << c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::InvocationProblem;

    fn problem(e: &Error) -> &InvocationProblem {
        match e.kind() {
            ErrorKind::Usage(u) => match u.kind() {
                sandbox_core::ErrorKind::NameGuardInvocation(p) => p,
                other => panic!("{other}"),
            },
            other => panic!("{other}"),
        }
    }

    #[test]
    fn report_fd_option() {
        let inv = Invocation::parse(["--report-fd", "3", "--deny", ".env", "--", "true"]).unwrap();
        assert_eq!(inv.report_fd, Some(3));
        assert!(inv.rules.denies_name(b".ENV"));
        let inv =
            Invocation::parse(["--deny", ".env", "--report-fd", "999999", "--", "x"]).unwrap();
        assert_eq!(inv.report_fd, Some(999_999));
        assert_eq!(inv.command, vec![OsString::from("x")]);
        // After `--` it belongs to the command.
        let inv = Invocation::parse(["--", "cmd", "--report-fd", "3"]).unwrap();
        assert_eq!(inv.report_fd, None);
        assert_eq!(inv.command.len(), 3);
        for bad in [
            &["--report-fd", "3", "--report-fd", "4", "--", "x"][..],
            &["--report-fd", "1000000", "--", "x"],
            &["--report-fd", "-1", "--", "x"],
            &["--report-fd", "1", "--", "x"],
            &["--report-fd"],
        ] {
            let e = Invocation::parse(bad.iter().copied()).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{bad:?}: {e}");
        }
    }

    #[test]
    fn usage_errors_are_typed_and_say_the_usage() {
        let e = Invocation::parse(["--deny", ".env"]).unwrap_err();
        assert_eq!(problem(&e), &InvocationProblem::NoCommand);
        assert!(e.to_string().contains("usage: name-guard-exec"), "{e}");
        let e = Invocation::parse(["--bogus", "--", "x"]).unwrap_err();
        assert!(matches!(
            problem(&e),
            InvocationProblem::UnexpectedArgument { argument } if argument == "--bogus"
        ));
    }

    #[test]
    fn rules_are_checked_after_the_command_line() {
        // The command line takes any argument as a rule; the rules refuse.
        for rule in ["", "a/b", "[ab]"] {
            let e = Invocation::parse(["--deny", rule, "--", "x"]).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::InvalidRule { .. }),
                "{rule:?}: {e}"
            );
        }
    }

    #[test]
    fn a_command_line_built_elsewhere_is_checked() {
        let mut line = NameGuardInvocation::new([".env"], ["true"]);
        line.report_fd = Some(2);
        let e = Invocation::from_command_line(line).unwrap_err();
        assert!(matches!(
            problem(&e),
            InvocationProblem::BadReportFd { value } if value == "2"
        ));
        let inv =
            Invocation::from_command_line(NameGuardInvocation::new(["*.pem"], ["true"])).unwrap();
        assert!(inv.rules.denies_name(b"x.pem"));
    }
}
