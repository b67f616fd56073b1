//! The crate's one error type.

use std::fmt;

/// An error building a bubblewrap plan. [`Error::kind`] says which.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The policy forbids creating files by name (`.env`, `*.key`, `*.pem`)
    /// inside a writable mount, which bubblewrap cannot enforce.
    #[error(
        "refusing to launch: the policy forbids creating {globs:?} inside writable mounts {roots:?}, \
         and bubblewrap can only shadow existing paths, not refuse new names (R-DISPATCH-3); \
         enable a name-guard backend, make the mounts read-only, or opt out explicitly with \
         FilenameRules::DropFilenameGlobDenies (agent-run --no-filename-rules)"
    )]
    FilenameRulesUnenforceable {
        /// The globs that would be dropped.
        globs: Vec<String>,
        /// The writable roots they apply to.
        roots: Vec<String>,
    },
    /// The plan needs the name guard but no launcher was given.
    #[error(
        "the name guard must enforce filename rules for this launch, but no launcher was set \
         (BwrapBuilder::name_guard_launcher)"
    )]
    NameGuardLauncherMissing,
    /// More creation-time rules than one guard accepts.
    #[error("{count} creation-time rules for the name guard, over its limit of {limit}")]
    TooManyNameGuardRules {
        /// How many rules the plan has.
        count: usize,
        /// The guard's limit.
        limit: usize,
    },
    /// The spec or a path set is invalid.
    #[error("invalid sandbox spec: {0}")]
    Spec(#[from] sandbox_core::Error),
    /// The argv is longer than bubblewrap and the kernel accept in one exec.
    #[error(
        "bubblewrap argv has {count} arguments and {bytes} bytes, over the limit of {limit} bytes; \
         pass it through --args FD (BwrapPlan::args_fd_payload)"
    )]
    TooManyArguments {
        /// Number of arguments.
        count: usize,
        /// Total bytes including NUL terminators.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A path cannot be passed to bubblewrap.
    #[error("path {path:?} cannot be used in the sandbox: {reason}")]
    BadPath {
        /// The path.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// Creating or removing a placeholder on the host failed.
    #[error("placeholder {path:?}: {source}")]
    Placeholder {
        /// The placeholder path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl From<sandbox_core::Error> for Error {
    fn from(e: sandbox_core::Error) -> Error {
        Error {
            kind: ErrorKind::Spec(e),
        }
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
