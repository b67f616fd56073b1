//! Requests the parser refuses: answered 400, and the connection closed.

/// A request whose framing or head the parser refuses (RFC 9112), with
/// the offending value or byte offset. Every one is answered
/// `400 Bad Request` and the connection closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpErrorKind {
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
}
