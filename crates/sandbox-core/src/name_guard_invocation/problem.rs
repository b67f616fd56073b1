//! What can be wrong with a name-guard command line, and how it becomes
//! the crate's error.

use super::{KEEPABLE_CAPABILITIES, NameGuardInvocation};
use crate::{Error, ErrorKind};

/// What is wrong with a name-guard command line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvocationProblem {
    /// An option is the last argument.
    #[error("{option} needs a value")]
    MissingValue {
        /// The option (`--deny` or `--report-fd`).
        option: &'static str,
    },
    /// `--report-fd` is given more than once.
    #[error("--report-fd given twice")]
    RepeatedReportFd,
    /// `--updates-fd` is given more than once.
    #[error("--updates-fd given twice")]
    RepeatedUpdatesFd,
    /// `--notify-fd` is given more than once.
    #[error("--notify-fd given twice")]
    RepeatedNotifyFd,
    /// The `--notify-fd` value is not a descriptor the launcher may use,
    /// or is another option's descriptor.
    #[error(
        "--notify-fd needs a descriptor number from 3 to {max} (decimal digits only) other than --report-fd's and --updates-fd's, not {value:?}",
        max = NameGuardInvocation::REPORT_FD_LIMIT - 1
    )]
    BadNotifyFd {
        /// The value (at most 32 characters of it).
        value: String,
    },
    /// The `--updates-fd` value is not a descriptor the launcher may use,
    /// or is the report descriptor.
    #[error(
        "--updates-fd needs a descriptor number from 3 to {max} (decimal digits only) other than --report-fd's, not {value:?}",
        max = NameGuardInvocation::REPORT_FD_LIMIT - 1
    )]
    BadUpdatesFd {
        /// The value (at most 32 characters of it).
        value: String,
    },
    /// A `--keep-capability` name is not one the guard may keep (or is
    /// given twice).
    #[error("--keep-capability takes each of {KEEPABLE_CAPABILITIES:?} at most once, not {name:?}")]
    CapabilityNotKeepable {
        /// The name (at most 32 characters of it, lossy).
        name: String,
    },
    /// A `--state-dir` path is not absolute.
    #[error("--state-dir needs an absolute path, not {path:?}")]
    RelativeStateDir {
        /// The path (at most 64 characters of it, lossy).
        path: String,
    },
    /// A `--tool-dir` name is not one path component.
    #[error("--tool-dir needs one directory name (no '/', not . or ..), not {name:?}")]
    BadToolDir {
        /// The name (at most 64 characters of it, lossy).
        name: String,
    },
    /// More `--tool-dir` names than the limit.
    #[error("more than {limit} --tool-dir names")]
    TooManyToolDirs {
        /// The limit.
        limit: usize,
    },
    /// More `--state-dir` paths than the limit.
    #[error("more than {limit} --state-dir paths")]
    TooManyStateDirs {
        /// The limit.
        limit: usize,
    },
    /// The `--report-fd` value is not a descriptor the launcher may use.
    #[error(
        "--report-fd needs a descriptor number from 3 to {max} (decimal digits only), not {value:?}",
        max = NameGuardInvocation::REPORT_FD_LIMIT - 1
    )]
    BadReportFd {
        /// The value (at most 32 characters of it).
        value: String,
    },
    /// An `--allow-unix-socket` path is not absolute.
    #[error("--allow-unix-socket needs an absolute path, not {path:?}")]
    RelativeSocketPath {
        /// The path (at most 64 characters of it, lossy).
        path: String,
    },
    /// A path given to a `--landlock` option is not absolute.
    #[error("{option} needs an absolute path, not {path:?}")]
    RelativePath {
        /// The option.
        option: &'static str,
        /// The path (at most 64 characters of it, lossy).
        path: String,
    },
    /// A `--landlock` option is given without `--landlock` before it.
    #[error("{option} is only valid after --landlock")]
    NeedsLandlock {
        /// The option.
        option: &'static str,
    },
    /// `--landlock` is given twice.
    #[error("--landlock given twice")]
    RepeatedLandlock,
    /// More paths or ports for one `--landlock` option than the limit.
    #[error("more than {limit} {option} values")]
    TooManyValues {
        /// The option.
        option: &'static str,
        /// The limit.
        limit: usize,
    },
    /// A `--connect-tcp` value is not a port number from 1 to 65535.
    #[error("--connect-tcp needs a port number from 1 to 65535, not {value:?}")]
    BadPort {
        /// The value (at most 32 characters of it).
        value: String,
    },
    /// More `--allow-unix-socket` paths than the limit.
    #[error("more than {limit} --allow-unix-socket paths")]
    TooManySockets {
        /// The limit.
        limit: usize,
    },
    /// An argument before `--` is not an option.
    #[error("unexpected argument {argument:?} before --")]
    UnexpectedArgument {
        /// The argument (at most 64 characters of it).
        argument: String,
    },
    /// A `--deny` value is not UTF-8.
    #[error("the rule after --deny number {index} is not UTF-8")]
    GlobNotUtf8 {
        /// Its position among the rules, from 0.
        index: usize,
    },
    /// More `--deny` rules than the limit.
    #[error("more than {limit} --deny rules")]
    TooManyGlobs {
        /// The limit.
        limit: usize,
    },
    /// No command after `--`, or no `--`.
    #[error("no command after --")]
    NoCommand,
    /// More command arguments than the limit.
    #[error("more than {limit} command arguments")]
    TooManyCommandArgs {
        /// The limit.
        limit: usize,
    },
    /// One argument is longer than the limit.
    #[error("an argument of {bytes} bytes, over the limit of {limit}")]
    ArgumentTooLong {
        /// Its length.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// An argument holds a NUL byte, which no program argument can.
    #[error("argument {argument:?} contains a NUL byte")]
    NulByte {
        /// The argument (at most 64 characters of it, lossy).
        argument: String,
    },
}

impl From<InvocationProblem> for Error {
    fn from(problem: InvocationProblem) -> Error {
        ErrorKind::NameGuardInvocation(problem).into()
    }
}
