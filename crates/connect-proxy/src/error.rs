//! The crate's one error type.

use std::fmt;

/// An error from `connect-proxy`: an allowlist entry or CIDR that cannot be
/// used, a configuration value out of range, or a listener that
/// could not be bound. [`Error::kind`] says which, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An allowlist or denylist entry that is not a valid host pattern
    /// (`reason` names the entry and what is wrong with it).
    #[error("allowlist entry refused: {reason}")]
    InvalidEntry {
        /// Why the host pattern was refused.
        reason: net_vocab::Error,
    },
    /// A CIDR that does not parse or has host bits beyond its prefix.
    #[error("CIDR {cidr:?} is refused: {reason}")]
    InvalidCidr {
        /// The CIDR as given.
        cidr: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A configuration value out of its accepted range.
    #[error("configuration value {name} = {value} is out of range: {reason}")]
    InvalidConfig {
        /// The setting's name.
        name: &'static str,
        /// The value given.
        value: String,
        /// The accepted range.
        reason: &'static str,
    },
    /// A listener could not be bound or inspected.
    #[error("cannot bind the {which} listener on 127.0.0.1: {message}")]
    Bind {
        /// `http` or `socks`.
        which: &'static str,
        /// The operating system's message.
        message: String,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }
}

pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(256).collect()
}

impl From<net_vocab::Error> for Error {
    fn from(reason: net_vocab::Error) -> Error {
        ErrorKind::InvalidEntry { reason }.into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for Error {}
