//! The crate's one error type.

use std::fmt;

/// An error from `net-vocab`: a host, port or host pattern that cannot be
/// used, a request head that is refused, or head limits out of range.
/// [`Error::kind`] says which, with the offending value or byte offset.
///
/// Offsets in head errors count from the first byte of the request.
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
    /// A host pattern with more than one `*`.
    #[error("entry {entry:?} has more than one '*'; use exactly one")]
    MultipleWildcards {
        /// The entry as given.
        entry: String,
    },
    /// A host pattern with `*` inside a label (`foo*.example.com`).
    #[error("entry {entry:?} has '*' inside a label; '*' must be a whole label")]
    WildcardInLabel {
        /// The entry as given.
        entry: String,
    },
    /// The entry `*` alone, which would match every host.
    #[error("entry {entry:?} is a bare '*', which would match every host")]
    BareWildcard {
        /// The entry as given.
        entry: String,
    },
    /// A wildcard whose fixed part is a single label (`*.com`, `api.*`).
    #[error(
        "entry {entry:?} puts '*' over a top-level domain; \
         give at least two labels after the '*'"
    )]
    WildcardOverTld {
        /// The entry as given.
        entry: String,
    },
    /// A wildcard over a numeric (IP literal) form.
    #[error("entry {entry:?} puts '*' on an IP literal; list the address or grant a CIDR")]
    WildcardOnIpLiteral {
        /// The entry as given.
        entry: String,
    },
    /// An IPv6 literal without brackets: `fd00::1:443` could be an address
    /// or an address and a port.
    #[error("entry {entry:?} is an IPv6 literal without brackets; write it as [address]:port")]
    UnbracketedIpv6 {
        /// The entry as given.
        entry: String,
    },
    /// An entry with a scheme (`https://...`).
    #[error("entry {entry:?} has a scheme; give the host only, e.g. api.example.com")]
    Scheme {
        /// The entry as given.
        entry: String,
    },
    /// An entry with a path, query or fragment.
    #[error("entry {entry:?} has a path; give the host only, with an optional :port")]
    Path {
        /// The entry as given.
        entry: String,
    },
    /// An entry with userinfo (`user@host`).
    #[error("entry {entry:?} has userinfo ('@'); give the host only")]
    Userinfo {
        /// The entry as given.
        entry: String,
    },
    /// Head limits out of their accepted range.
    #[error("head limit {name} = {value} is out of range: {reason}")]
    InvalidLimit {
        /// The limit's name.
        name: &'static str,
        /// The value given.
        value: usize,
        /// The accepted range.
        reason: &'static str,
    },
    /// The head is larger than the limit.
    #[error("request head exceeds {limit} bytes")]
    HeadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// A single line longer than the limit.
    #[error("the line at byte {offset} exceeds {limit} bytes")]
    LineTooLong {
        /// Byte offset of the line.
        offset: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// More header lines than the limit.
    #[error("more than {limit} header fields")]
    TooManyHeaders {
        /// The limit.
        limit: usize,
    },
    /// A line feed not preceded by a carriage return.
    #[error("bare LF at byte {offset}: every line must end with CR LF")]
    BareLf {
        /// Byte offset of the LF.
        offset: usize,
    },
    /// A carriage return not followed by a line feed.
    #[error("bare CR at byte {offset}: a CR is only allowed directly before LF")]
    BareCr {
        /// Byte offset of the CR.
        offset: usize,
    },
    /// An empty line before the request line.
    #[error("empty line before the request line: send the request line first")]
    LeadingEmptyLine,
    /// A request line that is not `METHOD SP target SP HTTP/1.x`.
    #[error("malformed request line at byte {offset}: {reason}")]
    InvalidRequestLine {
        /// Byte offset of the problem.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// An HTTP version other than 1.0 and 1.1.
    #[error("HTTP version {version:?} is not supported; use HTTP/1.1")]
    UnsupportedVersion {
        /// The version text (truncated).
        version: String,
    },
    /// A header line starting with a space or tab (obsolete line folding).
    #[error("obsolete line folding at byte {offset}: put each header on one line")]
    ObsFold {
        /// Byte offset of the folded line.
        offset: usize,
    },
    /// Space or tab between a header name and its colon.
    #[error("whitespace before the colon at byte {offset}: write `Name: value`")]
    WhitespaceBeforeColon {
        /// Byte offset of the whitespace.
        offset: usize,
    },
    /// A header line that starts with a colon.
    #[error("empty header name at byte {offset}")]
    EmptyHeaderName {
        /// Byte offset of the line.
        offset: usize,
    },
    /// A header name byte that is not a token character.
    #[error("invalid byte 0x{byte:02x} in a header name at byte {offset}")]
    InvalidHeaderName {
        /// Byte offset of the bad byte.
        offset: usize,
        /// The bad byte.
        byte: u8,
    },
    /// A header line without a colon.
    #[error("header line without a colon at byte {offset}")]
    MissingColon {
        /// Byte offset of the line.
        offset: usize,
    },
    /// A control byte in a header value.
    #[error("invalid byte 0x{byte:02x} in a header value at byte {offset}")]
    InvalidHeaderValue {
        /// Byte offset of the bad byte.
        offset: usize,
        /// The bad byte.
        byte: u8,
    },
    /// More than one `Host` header.
    #[error("the request has more than one Host header")]
    RepeatedHost,
    /// A `Host` value that is not a host with an optional port.
    #[error("Host value {value:?} is not a host with an optional port")]
    InvalidHostHeader {
        /// The value (truncated).
        value: String,
    },
    /// Both `Content-Length` and `Transfer-Encoding`.
    #[error("Content-Length and Transfer-Encoding together: send only one")]
    LengthAndChunked,
    /// More than one `Content-Length` header, even with the same value.
    #[error("more than one Content-Length header")]
    RepeatedContentLength,
    /// A `Content-Length` value that is not plain decimal digits.
    #[error("Content-Length {value:?} is not a plain decimal number")]
    InvalidContentLength {
        /// The value (truncated).
        value: String,
    },
    /// A `Transfer-Encoding` other than a single `chunked`.
    #[error("Transfer-Encoding {value:?} is refused: only a single `chunked` is accepted")]
    UnsupportedTransferEncoding {
        /// The value (truncated).
        value: String,
    },
    /// More than one `Transfer-Encoding` header.
    #[error("more than one Transfer-Encoding header")]
    RepeatedTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    #[error("Transfer-Encoding in an HTTP/1.0 request: use HTTP/1.1 or Content-Length")]
    TransferEncodingInHttp10,
    /// `Content-Length` or `Transfer-Encoding` on a `CONNECT`, whose bytes
    /// after the head belong to the tunnel.
    #[error("a CONNECT request carries no body: drop Content-Length and Transfer-Encoding")]
    BodyOnConnect,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// True for the head errors a server answers with `431 Request Header
    /// Fields Too Large` (the head or one of its lines is over the limit).
    pub fn is_too_large(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::HeadTooLarge { .. } | ErrorKind::LineTooLong { .. }
        )
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

/// At most 256 characters of `s`, for error messages.
pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(256).collect()
}

/// At most 256 bytes of `b`, lossily as text, for error messages.
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
