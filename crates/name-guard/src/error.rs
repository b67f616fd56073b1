//! The crate's error type.

/// An error from the guard.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(#[from] Box<ErrorKind>);

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(kind))
    }
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The command line is malformed or over a limit; the problem is a
    /// [`sandbox_core::ErrorKind::NameGuardInvocation`].
    #[error("{0}")]
    Usage(sandbox_core::Error),
    /// A rule cannot be used.
    #[error("invalid rule {rule:?}: {reason}")]
    InvalidRule {
        /// The rule (at most 256 characters of it).
        rule: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// More rules than the limit.
    #[error("more than {limit} rules")]
    TooManyRules {
        /// The limit.
        limit: usize,
    },
    /// The guard runs on Linux on x86-64 and aarch64 only (the
    /// architectures it has a system call table for).
    #[error("the name guard runs on Linux on x86-64 and aarch64 only")]
    UnsupportedPlatform,
    /// Starting the guarded command failed (fork, filter, listener).
    #[error("cannot start the guarded command (errno {errno})")]
    Spawn {
        /// The `errno` value.
        errno: i32,
    },
    /// The descriptor given with `--report-fd` cannot be used (not open,
    /// or its flags cannot be set).
    #[error("the report descriptor {fd} cannot be used (errno {errno})")]
    ReportFd {
        /// The descriptor.
        fd: i32,
        /// The `errno` value.
        errno: i32,
    },
    /// The descriptor given with `--updates-fd` or `--notify-fd` cannot be
    /// used (not open, or its flags cannot be set).
    #[error("the rules' update or notes descriptor {fd} cannot be used (errno {errno})")]
    UpdatesFd {
        /// The descriptor.
        fd: i32,
        /// The `errno` value.
        errno: i32,
    },
    /// A denial report line is malformed.
    #[error("malformed denial report line: {reason}")]
    BadReport {
        /// Why it is refused.
        reason: &'static str,
    },
    /// A host confinement path cannot be used (`--landlock`).
    #[error("invalid path {path:?} for {option}: {reason}")]
    InvalidHostPath {
        /// The option.
        option: &'static str,
        /// The path (at most 256 characters of it, lossy).
        path: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The Landlock rules cannot be enforced by this kernel, or applying
    /// them failed: the command does not run.
    #[error("cannot confine with Landlock: {reason}")]
    Landlock {
        /// What the kernel or the ruleset said.
        reason: String,
    },
    /// The supervisor failed.
    #[error("the supervisor failed (errno {errno})")]
    Supervise {
        /// The `errno` value.
        errno: i32,
    },
}
