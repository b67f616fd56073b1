//! The crate's one error type.

use std::fmt;

/// An error from `cred-broker`: a request refused by the parser, a request
/// refused at injection time, or configuration (limits, rules, credentials)
/// that cannot be used. [`Error::kind`] says which, with the offending value
/// or byte offset; [`Error::response`] says how a broker answers it.
///
/// Offsets in head errors count from the first byte of the request; offsets
/// in chunked-body errors count from the first byte of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// How a broker answers a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Response {
    /// `400 Bad Request`, then close the connection: the framing cannot be
    /// trusted, so nothing after this request can be read safely.
    BadRequestAndClose,
    /// `403 Forbidden`; the framing was sound, so the connection may stay
    /// open for the next request.
    Forbidden,
    /// Not a request error: a configuration value was refused when it was
    /// loaded. Fix the configuration.
    NotARequest,
    /// `502 Bad Gateway`, then close the connection: the upstream could not
    /// be reached, did not prove its identity, or answered unreadably.
    BadGatewayAndClose,
}

impl Response {
    /// The HTTP status code to send, if this is a request error.
    pub fn status(self) -> Option<u16> {
        match self {
            Response::BadRequestAndClose => Some(400),
            Response::Forbidden => Some(403),
            Response::NotARequest => None,
            Response::BadGatewayAndClose => Some(502),
        }
    }
}

/// What went wrong, with the offending value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
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
    #[error("empty line before the request line at byte {offset}: send the request line first")]
    LeadingEmptyLine {
        /// Byte offset of the empty line.
        offset: usize,
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
    /// A request line that is not `METHOD SP target SP HTTP/1.x`.
    #[error("malformed request line at byte {offset}: {reason}")]
    InvalidRequestLine {
        /// Byte offset of the problem.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A request target in the wrong form for its method, or with bad bytes.
    #[error("request target {target:?} is refused: {reason}")]
    InvalidTarget {
        /// The target (truncated to 256 characters).
        target: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// An HTTP version other than 1.0 and 1.1.
    #[error("HTTP version {version:?} is not supported; use HTTP/1.1")]
    UnsupportedVersion {
        /// The version text (truncated).
        version: String,
    },
    /// No `Host` header.
    #[error("the request has no Host header")]
    MissingHost,
    /// More than one `Host` header.
    #[error("the request has more than one Host header")]
    RepeatedHost,
    /// A `Host` value that is empty or not a host with an optional port.
    #[error("Host value {value:?} is not a host with an optional port")]
    InvalidHost {
        /// The value (truncated).
        value: String,
    },
    /// An absolute-form target whose authority differs from `Host`.
    #[error("the request target names {target_host:?} but Host says {host:?}")]
    HostMismatch {
        /// The authority of the request target.
        target_host: String,
        /// The `Host` header value.
        host: String,
    },
    /// Both `Content-Length` and `Transfer-Encoding`.
    #[error("Content-Length and Transfer-Encoding together: send only one")]
    LengthAndChunked,
    /// More than one `Content-Length` header.
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
    /// A chunk size that is not plain hexadecimal digits.
    #[error("chunk size {value:?} at body byte {offset} is not plain hexadecimal digits")]
    InvalidChunkSize {
        /// Body offset of the chunk-size line.
        offset: usize,
        /// The size text (truncated).
        value: String,
    },
    /// A chunk extension outside `;name` or `;name=value` with tokens.
    #[error("chunk extension at body byte {offset} is refused: use `;name=value` tokens only")]
    InvalidChunkExtension {
        /// Body offset of the chunk-size line.
        offset: usize,
    },
    /// Chunk data not followed by CR LF.
    #[error("chunk data not followed by CR LF at body byte {offset}")]
    BadChunkTerminator {
        /// Body offset where CR LF was expected.
        offset: usize,
    },
    /// A framing or routing header in the chunked trailer section.
    #[error("header {name:?} is not allowed in a trailer")]
    ForbiddenTrailer {
        /// The header name.
        name: String,
    },
    /// A `CONNECT` request with `Content-Length` or `Transfer-Encoding`.
    #[error("a CONNECT request carries no body: remove Content-Length and Transfer-Encoding")]
    BodyOnConnect,
    /// The head is larger than the limit.
    #[error("request head exceeds {limit} bytes")]
    HeadTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// More header (or trailer) lines than the limit.
    #[error("more than {limit} header lines")]
    TooManyHeaders {
        /// The limit.
        limit: usize,
    },
    /// A single line longer than the limit.
    #[error("line at byte {offset} exceeds {limit} bytes")]
    LineTooLong {
        /// Byte offset of the line.
        offset: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A body larger than the limit.
    #[error("request body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The stream ended inside a request.
    #[error("the connection ended inside a request")]
    Truncated,
    /// The lease was revoked.
    #[error("the lease of session {session:?} was revoked")]
    Revoked {
        /// The session the lease was bound to.
        session: String,
    },
    /// The lease is past its expiry.
    #[error("the lease of session {session:?} has expired")]
    LeaseExpired {
        /// The session the lease was bound to.
        session: String,
    },
    /// The lease was granted for a different credential.
    #[error("the lease is for credential {lease:?}, not {credential:?}")]
    CredentialMismatch {
        /// The credential named by the lease.
        lease: String,
        /// The credential offered.
        credential: String,
    },
    /// The credential may not be sent to this host.
    #[error("credential {credential:?} may not be sent to {host:?}")]
    HostNotAllowed {
        /// The credential's name.
        credential: String,
        /// The host.
        host: String,
    },
    /// The request's `Host` disagrees with the connection's target.
    #[error("Host {host:?} disagrees with the connection target {target:?}")]
    TargetMismatch {
        /// The `Host` header value (truncated).
        host: String,
        /// The connection target.
        target: String,
    },
    /// A configuration value out of its accepted range.
    #[error("configuration value {name} = {value} is refused: {reason}")]
    InvalidConfig {
        /// The setting's name.
        name: &'static str,
        /// The value given (never a secret).
        value: String,
        /// The accepted range or form.
        reason: &'static str,
    },
    /// A rule file that does not deserialize.
    #[error("rule file does not load: {message}")]
    RuleSyntax {
        /// The deserializer's message.
        message: String,
    },
    /// A rule with a value that cannot be compiled.
    #[error("rule {rule:?}: {field} {value:?} is refused: {reason}")]
    InvalidRule {
        /// The rule's name.
        rule: String,
        /// Which field.
        field: &'static str,
        /// The value (truncated).
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// A host a leaf certificate cannot be minted for.
    #[error("cannot mint a certificate for {host:?}: give a DNS name or an IP address")]
    InvalidLeafHost {
        /// The host (truncated).
        host: String,
    },
    /// Certificate generation failed.
    #[error("certificate generation failed: {message}")]
    Certificate {
        /// The generator's message.
        message: String,
    },
    /// The TLS server name the client sent disagrees with the connection
    /// target.
    #[error("TLS server name {sni:?} disagrees with the connection target {target:?}")]
    SniMismatch {
        /// The server name (truncated).
        sni: String,
        /// The connection target.
        target: String,
    },
    /// The rule engine denied the request.
    #[error("request {method} {path:?} {decision}")]
    RuleDenied {
        /// The method (truncated).
        method: String,
        /// The path (truncated).
        path: String,
        /// The decision, as text (`denied by rule "name"`, ...).
        decision: String,
    },
    /// No credential is granted for the connection's target.
    #[error("no credential is granted for {host:?}")]
    NoCredential {
        /// The target host.
        host: String,
    },
    /// The client side of a brokered connection failed (TLS handshake or
    /// I/O).
    #[error("client connection failed: {message}")]
    Client {
        /// What failed.
        message: String,
    },
    /// The upstream could not be reached, did not prove its identity, or
    /// answered unreadably.
    #[error("upstream {target} failed: {message}")]
    Upstream {
        /// The connection target.
        target: String,
        /// What failed.
        message: String,
    },
    /// A host pattern that cannot be compiled.
    #[error("host pattern {pattern:?} is refused: {reason}")]
    InvalidHostPattern {
        /// The pattern (truncated).
        pattern: String,
        /// Why.
        reason: &'static str,
    },
    /// A git pkt-line that a strict reader refuses.
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
    /// Spooling a pushed pack failed.
    #[error("spooling the pushed pack failed: {message}")]
    Spool {
        /// The I/O error's message.
        message: String,
    },
    /// A `git-receive-pack` request reached a broker without a push rule.
    #[error("git pushes are refused: no push rule is configured")]
    NoPushRule,
    /// The push rule refused a push (answered in git's report format).
    #[error("push refused by the push rule: {refs}")]
    PushRefused {
        /// Each refused ref and why (truncated).
        refs: String,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// How a broker answers this error.
    pub fn response(&self) -> Response {
        use ErrorKind as K;
        match &self.kind {
            K::Revoked { .. }
            | K::LeaseExpired { .. }
            | K::CredentialMismatch { .. }
            | K::HostNotAllowed { .. }
            | K::TargetMismatch { .. }
            | K::SniMismatch { .. }
            | K::RuleDenied { .. }
            | K::NoPushRule
            | K::PushRefused { .. }
            | K::NoCredential { .. } => Response::Forbidden,
            K::Upstream { .. } => Response::BadGatewayAndClose,
            K::InvalidConfig { .. }
            | K::RuleSyntax { .. }
            | K::InvalidRule { .. }
            | K::InvalidHostPattern { .. }
            | K::InvalidLeafHost { .. }
            | K::Certificate { .. } => Response::NotARequest,
            _ => Response::BadRequestAndClose,
        }
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
