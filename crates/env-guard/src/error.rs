//! The crate's one error type.

use std::fmt;

/// An error from `env-guard`: a builder setting that cannot be honoured or
/// NUL-separated records that cannot be read. [`Error::kind`] says which,
/// with the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A name given to `set` or `include` is not `[A-Za-z_][A-Za-z0-9_]*`
    /// or is longer than [`crate::MAX_NAME_LEN`].
    #[error(
        "variable name {name:?} is invalid: names must match [A-Za-z_][A-Za-z0-9_]* \
         and be at most 1024 bytes"
    )]
    InvalidName {
        /// The name as given (lossy).
        name: String,
    },
    /// A name given to `set` or `include` is one the pipeline always deletes
    /// (a loader or injection variable).
    #[error("variable {name:?} is always deleted ({rule}); it cannot be set or included")]
    AlwaysDeleted {
        /// The name as given.
        name: String,
        /// The rule that deletes it.
        rule: crate::Rule,
    },
    /// A value given to `set` contains a NUL byte or is longer than
    /// [`crate::MAX_VALUE_LEN`].
    #[error("value of {name:?} cannot be used: {reason}")]
    InvalidValue {
        /// The variable's name (the value is never echoed).
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// `set` names a variable that the proxy or CA stage also writes.
    #[error(
        "variable {name:?} is written by the {stage} stage; remove the `set` or the {stage} setting"
    )]
    Conflict {
        /// The name given to `set`.
        name: String,
        /// `proxy` or `ca`.
        stage: &'static str,
    },
    /// The CA bundle path is relative, empty, contains NUL, or is too long.
    #[error("CA bundle path {path:?} cannot be used: {reason}; give an absolute path")]
    InvalidCaPath {
        /// The path as given (lossy).
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// Proxy credentials with [`crate::SshProxyTool::Netcat`], which cannot
    /// authenticate to a SOCKS5 proxy.
    #[error(
        "OpenBSD nc cannot authenticate to a SOCKS5 proxy: with proxy credentials choose \
         SshProxyTool::Ncat (ncat --proxy-auth) or SshProxyTool::Omit"
    )]
    SshToolCannotAuthenticate,
    /// NUL-separated input is larger than [`crate::MAX_INPUT_BYTES`].
    #[error("environment input is {len} bytes, over the limit of {limit}")]
    InputTooLarge {
        /// Size of the input.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// NUL-separated input has more than [`crate::MAX_RECORDS`] records.
    #[error("environment input has more than {limit} records")]
    TooManyRecords {
        /// The limit.
        limit: usize,
    },
    /// A record is not UTF-8 on a platform whose variables are not byte
    /// strings (not Unix).
    #[error("record {index} (0-based) is not UTF-8, which variables here must be")]
    NotUtf8 {
        /// Index of the record.
        index: usize,
    },
    /// A record has no `=`, so it is not `NAME=VALUE`.
    #[error("record {index} (0-based) has no `=`; every record must be NAME=VALUE")]
    MissingEquals {
        /// Index of the record.
        index: usize,
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
