//! The crate's one error type.

use std::fmt;

/// An error from `seatbelt-profile`: an input that cannot be rendered safely,
/// a profile over one of Seatbelt's limits, or SBPL text the reader refuses.
/// [`Error::kind`] says which, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A path or pattern could not be resolved or is not a usable path
    /// (relative, `..`, `~user`, a symlink that widens a rule).
    #[error("{0}")]
    Path(#[from] sandbox_core::Error),
    /// A value that would reach the profile or its parameters holds a NUL
    /// byte, which no SBPL string can carry.
    #[error("{what} {value:?} contains a NUL byte; remove it")]
    NulByte {
        /// Which kind of value (path, glob, comment, ...).
        what: &'static str,
        /// The value, with the NUL shown escaped.
        value: String,
    },
    /// A string literal (a parameter value or a regex) is longer than
    /// Seatbelt accepts.
    #[error(
        "{what} is {len} bytes, over Seatbelt's string limit of {limit} bytes: {value:?}; \
         use a shorter path"
    )]
    StringTooLong {
        /// Which kind of value.
        what: &'static str,
        /// The first 64 characters of the value.
        value: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The profile has more rule entries than the budget allows.
    #[error(
        "the profile has {rules} rule entries, over the budget of {budget}; \
         list fewer paths or raise the budget"
    )]
    RuleBudget {
        /// Rule entries (operations times filters) in the profile.
        rules: usize,
        /// The budget it was checked against.
        budget: usize,
    },
    /// A path filter holds a path that is empty or not absolute.
    #[error("path {path:?} cannot go into a profile: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A glob uses syntax the converter does not accept.
    #[error("glob {glob:?} is not supported: {reason}")]
    InvalidGlob {
        /// The glob as given.
        glob: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A regex is outside the small subset this crate emits and reads.
    #[error("regex {regex:?} is outside the supported subset: {reason}")]
    UnsupportedRegex {
        /// The regex text.
        regex: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A regex that had to approximate a character (`"`, `\` or a control
    /// character) was used in an allow rule, where that would widen access.
    #[error(
        "regex {regex:?} approximates characters it cannot spell and may only be used in deny rules"
    )]
    WidenedAllow {
        /// The regex text.
        regex: String,
    },
    /// A comment holds a line break or a control character.
    #[error("comment {text:?} holds a line break or control character")]
    InvalidComment {
        /// The comment text.
        text: String,
    },
    /// A denial tag that is not 1 to 64 letters, digits, `-` or `_`.
    #[error(
        "the denial tag {tag:?} is not usable: it must be 1 to 64 ASCII letters, digits, '-' or '_' (it is matched in the system log)"
    )]
    InvalidTag {
        /// The tag (its first 64 characters).
        tag: String,
    },
    /// A port of 0 where a real port is needed.
    #[error("port 0 is not a usable {what} port; pass the port the proxy listens on")]
    InvalidPort {
        /// Which port.
        what: &'static str,
    },
    /// A builder input that is required was not given.
    #[error("{what} is required; set it on the builder before build()")]
    Missing {
        /// What is missing.
        what: &'static str,
    },
    /// The launcher was given no command to run.
    #[error("no command to run under sandbox-exec; pass at least the program")]
    EmptyCommand,
    /// The SBPL reader refused its input.
    #[error("SBPL text refused at byte {offset}: {reason}")]
    Parse {
        /// Byte offset in the text where the problem was found.
        offset: usize,
        /// What was wrong.
        reason: String,
    },
    /// The SBPL text names a parameter that was not supplied.
    #[error("the profile uses parameter {name:?}, which was not supplied")]
    UnknownParam {
        /// The parameter name.
        name: String,
    },
    /// The reader's input is over one of its limits.
    #[error("SBPL input is over the reader's limit: {what} exceeds {limit}")]
    ReaderLimit {
        /// Which limit.
        what: &'static str,
        /// The limit.
        limit: usize,
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

impl From<sandbox_core::Error> for Error {
    fn from(e: sandbox_core::Error) -> Error {
        Error {
            kind: ErrorKind::Path(e),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl std::error::Error for Error {}

/// The first 64 characters of `s`, for error messages.
pub(crate) fn excerpt(s: &str) -> String {
    s.chars().take(64).collect()
}
