//! The crate's one error type.

use std::fmt;

/// An error from `push-rule`: a push body refused by one of the readers
/// (pkt-lines, the command list, its encoding, the pack, the spool), or a
/// push rule that cannot be used. [`Error::kind`] says which, with the
/// offending value or byte offset.
///
/// Offsets in pkt-line and command errors count from the first byte of
/// the (inflated) request body; offsets in pack errors from the first byte
/// of the pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A pkt-line that a strict reader refuses.
    #[error("pkt-line at body byte {offset} is refused: {reason}")]
    PktLine {
        /// Body offset of the packet's length prefix.
        offset: usize,
        /// Why.
        reason: &'static str,
    },
    /// A line of a `git-receive-pack` command list that is refused.
    #[error("push command at body byte {offset} is refused: {reason} ({value:?})")]
    GitCommand {
        /// Body offset of the packet.
        offset: usize,
        /// Why.
        reason: &'static str,
        /// The offending text (truncated).
        value: String,
    },
    /// A ref name git would refuse, or one that is not UTF-8.
    #[error("ref name {refname:?} is refused: {reason}")]
    InvalidRefName {
        /// The name (lossily decoded, truncated).
        refname: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A pushed pack that cannot be read within its limits.
    #[error("pack at byte {offset} is refused: {reason}")]
    Pack {
        /// Offset in the pack.
        offset: u64,
        /// Why.
        reason: &'static str,
    },
    /// A `Content-Encoding` that is refused or does not inflate within its
    /// bound.
    #[error("request body encoding refused: {reason}")]
    ContentEncoding {
        /// Why.
        reason: &'static str,
    },
    /// A push body that inflates past
    /// [`GitLimits::max_inflated_body`](crate::GitLimits::max_inflated_body).
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// Spooling a pushed pack failed.
    #[error("spooling the pushed pack failed: {message}")]
    Spool {
        /// The I/O error's message.
        message: String,
    },
    /// A push rule that does not deserialize.
    #[error("rule file does not load: {message}")]
    RuleSyntax {
        /// The deserializer's message.
        message: String,
    },
    /// A push rule with a value that cannot be compiled.
    #[error("rule {rule:?}: {field} {value:?} is refused: {reason}")]
    InvalidRule {
        /// The rule's name (`push`).
        rule: String,
        /// Which field.
        field: &'static str,
        /// The value (truncated).
        value: String,
        /// Why.
        reason: &'static str,
    },
}

impl ErrorKind {
    /// Whether this is a refused push rule (fix the configuration) rather
    /// than a refused push body (answer the request as malformed).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            ErrorKind::RuleSyntax { .. } | ErrorKind::InvalidRule { .. }
        )
    }
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The kind, by value.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }
}

/// Truncates a value for an error message.
pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(256).collect()
}

/// Truncates raw bytes for an error message.
pub(crate) fn truncate_bytes(b: &[u8]) -> String {
    truncate(&String::from_utf8_lossy(&b[..b.len().min(256)]))
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
