//! The crate's one error type.

use std::fmt;

/// An error from `sandbox-core`: a bad spec, a bad switch value, an
/// impossible backend request, an illegal state change or a path that cannot
/// be used safely. [`Error::kind`] says which, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The spec's session id is empty.
    #[error("the sandbox spec has an empty sessionId; every run needs a stable session id")]
    EmptySessionId,
    /// A bind mount's host path is empty.
    #[error("bind mount host path is empty; give an absolute host path")]
    EmptyMountPath,
    /// A bind mount path is relative.
    #[error("bind mount path {path:?} is relative; bind mounts need absolute paths")]
    RelativeMountPath {
        /// The path as given.
        path: String,
    },
    /// A path cannot be used: NUL byte, `..` component, over the length
    /// limit, or relative where an absolute path is needed.
    #[error("path {path:?} cannot be used: {reason}")]
    InvalidPath {
        /// The path as given (lossy for display).
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A `~user` form, which needs a user database lookup we do not do.
    #[error("path {path:?} uses ~user, which is not supported; write the absolute path or ~/...")]
    UnsupportedTilde {
        /// The entry as given.
        path: String,
    },
    /// Resolving a deny entry's symlinks widened it to `/` or to one of its
    /// own ancestors, which would deny (or expose) far more than asked.
    #[error(
        "path {path:?} resolves to {resolved:?}, which widens the rule to an ancestor; \
         remove the symlink or list the real path"
    )]
    WidensScope {
        /// The entry, after `~` expansion.
        path: String,
        /// Where its symlinks lead.
        resolved: String,
    },
    /// A read-deny glob this crate cannot honour ([`crate::glob::check_read_glob`]).
    #[error("read-deny glob {glob:?} cannot be used: {reason}")]
    BadGlob {
        /// The glob (at most 200 characters of it).
        glob: String,
        /// Why, and what to write instead.
        reason: &'static str,
    },
    /// A read-deny glob's matches could not all be found at launch
    /// ([`crate::glob::expand_read_glob`]); a match not found could not be
    /// hidden, so the launch is refused.
    #[error("the matches of read-deny glob {glob:?} cannot all be found: {reason}")]
    GlobExpansion {
        /// The glob (at most 200 characters of it).
        glob: String,
        /// Which directory, or which limit.
        reason: String,
    },
    /// [`crate::SandboxBindMount::linked_worktree`] was given a directory
    /// that is not a linked git worktree.
    #[error(
        "{path:?} is not a linked git worktree ({reason}); mount a plain checkout with \
         SandboxBindMount::new"
    )]
    NotALinkedWorktree {
        /// The directory as given.
        path: String,
        /// What was found instead.
        reason: &'static str,
    },
    /// The `--sandbox` / `CC_SERVER_SANDBOX` value is neither `on` nor `off`.
    #[error("invalid sandbox switch {value:?}: accepted values are \"on\" and \"off\" (any case)")]
    InvalidSwitch {
        /// The value as given.
        value: String,
    },
    /// `microvm` was asked for explicitly but this host cannot start a VM.
    #[error("backend microvm was requested but this host cannot start a microVM: {reason}")]
    MicrovmUnavailable {
        /// What the probe found.
        reason: String,
    },
    /// `native` was asked for explicitly but the host has no native sandbox,
    /// or the sandbox is switched off.
    #[error("backend native was requested but is not available here: {reason}")]
    NativeUnavailable {
        /// What the probe found, with an install hint where there is one.
        reason: String,
    },
    /// A name-guard launcher command line is malformed or over a limit
    /// ([`crate::NameGuardInvocation::parse`], [`crate::NameGuardInvocation::check`]).
    #[error("name-guard command line: {0} (usage: {usage})", usage = crate::NAME_GUARD_USAGE)]
    NameGuardInvocation(crate::InvocationProblem),
    /// `suspend` or `resume` on a backend that cannot checkpoint a
    /// sandbox (R-MICROVM-5).
    #[error(
        "{operation} is not supported by the {backend} backend; only the microvm backend checkpoints a sandbox to disk"
    )]
    SuspendUnsupported {
        /// `suspend` or `resume`.
        operation: &'static str,
        /// The backend's name or mechanism.
        backend: String,
    },
    /// A state change that the lifecycle does not allow.
    #[error("illegal sandbox state change from {from} to {to}")]
    IllegalTransition {
        /// Current state.
        from: crate::SandboxState,
        /// Requested state.
        to: crate::SandboxState,
    },
}

impl Error {
    /// The kind of error, with its context.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Consumes the error and returns its kind.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl std::error::Error for Error {}
