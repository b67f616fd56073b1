//! The crate's one error type.

use std::fmt;

/// An error from `connect-proxy`: a host, port, allowlist entry or CIDR that
/// cannot be used, a configuration value out of range, or a listener that
/// could not be bound. [`Error::kind`] says which, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// Why a host name was refused by the canonical parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostProblem {
    /// The host is empty.
    Empty,
    /// Longer than [`crate::MAX_HOST_LEN`] bytes once canonical.
    TooLong,
    /// A label is longer than [`crate::MAX_LABEL_LEN`] bytes.
    LabelTooLong,
    /// Two dots in a row, a leading dot, or two trailing dots.
    EmptyLabel,
    /// Non-ASCII bytes where only the wire form is accepted.
    NonAscii,
    /// A `%` (percent-encoding or an IPv6 zone id).
    Percent,
    /// An `@` (userinfo).
    Userinfo,
    /// Brackets around something that is not an IPv6 address.
    BracketedName,
    /// The last label is numeric but the whole is not an IPv4 address.
    NumericLastLabel,
    /// A byte outside letters, digits, `-`, `_` and `.`.
    BadByte,
    /// A label starts or ends with `-`.
    Hyphen,
    /// A configuration entry fails UTS #46 (IDNA) processing: a disallowed
    /// code point, a bidi, joiner or hyphen rule, or an `xn--` label that is
    /// not a valid A-label.
    Idna,
}

impl fmt::Display for HostProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HostProblem::Empty => "it is empty",
            HostProblem::TooLong => "it is longer than 253 bytes",
            HostProblem::LabelTooLong => "a label is longer than 63 bytes",
            HostProblem::EmptyLabel => "it has an empty label",
            HostProblem::NonAscii => "it has non-ASCII bytes; send the IDNA A-label (xn--) form",
            HostProblem::Percent => "it contains '%'",
            HostProblem::Userinfo => "it contains '@' (userinfo is not accepted)",
            HostProblem::BracketedName => "brackets may only hold an IPv6 address",
            HostProblem::NumericLastLabel => {
                "its last label is numeric but it is not an IPv4 address"
            }
            HostProblem::BadByte => "it has a byte outside letters, digits, '-', '_' and '.'",
            HostProblem::Hyphen => "a label starts or ends with '-'",
            HostProblem::Idna => {
                "it is not a valid internationalised name (UTS #46): a disallowed \
                 character, a bidi, joiner or hyphen rule, or an invalid xn-- label"
            }
        })
    }
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A host name that is not in the accepted grammar.
    #[error("host {host:?} is refused: {problem}")]
    InvalidHost {
        /// The host as given (truncated to 256 characters).
        host: String,
        /// Why it was refused.
        problem: HostProblem,
    },
    /// A port that is missing, not a number, or outside 1..=65535.
    #[error("port {port:?} is refused: give a number from 1 to 65535")]
    InvalidPort {
        /// The port text as given (empty when missing).
        port: String,
    },
    /// An allowlist entry with more than one `*`.
    #[error("allowlist entry {entry:?} has more than one '*'; use exactly one")]
    MultipleWildcards {
        /// The entry as given.
        entry: String,
    },
    /// An allowlist entry with `*` inside a label (`foo*.example.com`).
    #[error("allowlist entry {entry:?} has '*' inside a label; '*' must be a whole label")]
    WildcardInLabel {
        /// The entry as given.
        entry: String,
    },
    /// The entry `*` alone, which would allow everything.
    #[error("allowlist entry {entry:?} is a bare '*', which would allow every host")]
    BareWildcard {
        /// The entry as given.
        entry: String,
    },
    /// A wildcard whose fixed part is a single label (`*.com`, `api.*`).
    #[error(
        "allowlist entry {entry:?} puts '*' over a top-level domain; \
         give at least two labels after the '*'"
    )]
    WildcardOverTld {
        /// The entry as given.
        entry: String,
    },
    /// A wildcard over a numeric (IP literal) form.
    #[error(
        "allowlist entry {entry:?} puts '*' on an IP literal; list the address or grant a CIDR"
    )]
    WildcardOnIpLiteral {
        /// The entry as given.
        entry: String,
    },
    /// An entry with a scheme (`https://...`).
    #[error("allowlist entry {entry:?} has a scheme; give the host only, e.g. api.example.com")]
    Scheme {
        /// The entry as given.
        entry: String,
    },
    /// An entry with a path, query or fragment.
    #[error("allowlist entry {entry:?} has a path; give the host only, with an optional :port")]
    Path {
        /// The entry as given.
        entry: String,
    },
    /// An entry with userinfo (`user@host`).
    #[error("allowlist entry {entry:?} has userinfo ('@'); give the host only")]
    Userinfo {
        /// The entry as given.
        entry: String,
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

    pub(crate) fn host(host: &str, problem: HostProblem) -> Error {
        ErrorKind::InvalidHost {
            host: truncate(host),
            problem,
        }
        .into()
    }

    pub(crate) fn port(port: &str) -> Error {
        ErrorKind::InvalidPort {
            port: truncate(port),
        }
        .into()
    }
}

pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(256).collect()
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
