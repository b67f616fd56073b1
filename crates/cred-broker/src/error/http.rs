//! Requests the parser refuses: answered 400, and the connection closed.

/// A request whose framing or head the parser refuses (RFC 9112), with
/// the offending value or byte offset. Every one is answered
/// `400 Bad Request` and the connection closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpErrorKind {
    /// The request head, refused by net-vocab's reader (line endings,
    /// sizes, the request line, field lines, `Host`, the body framing);
    /// [`net_vocab::Error::kind`] says which, with offsets counted from
    /// the request's first byte.
    #[error(transparent)]
    Head(net_vocab::Error),
    /// A request target in the wrong form for its method, or with bad bytes.
    #[error("request target {target:?} is refused: {reason}")]
    InvalidTarget {
        /// The target (truncated to 256 characters).
        target: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// No `Host` header.
    #[error("the request has no Host header")]
    MissingHost,
    /// An absolute-form target whose authority differs from `Host`.
    #[error("the request target names {target_host:?} but Host says {host:?}")]
    HostMismatch {
        /// The authority of the request target.
        target_host: String,
        /// The `Host` header value.
        host: String,
    },
    /// A line feed not preceded by a carriage return, in a chunk-size or
    /// trailer line.
    #[error("bare LF at body byte {offset}: every line must end with CR LF")]
    BareLf {
        /// Body offset of the LF.
        offset: usize,
    },
    /// A carriage return not followed by a line feed, in a chunk-size or
    /// trailer line.
    #[error("bare CR at body byte {offset}: a CR is only allowed directly before LF")]
    BareCr {
        /// Body offset of the CR.
        offset: usize,
    },
    /// A chunk-size or trailer line longer than the line limit.
    #[error("line at body byte {offset} exceeds {limit} bytes")]
    LineTooLong {
        /// Body offset of the line.
        offset: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// More trailer lines than the header-count limit.
    #[error("more than {limit} trailer lines")]
    TooManyHeaders {
        /// The limit.
        limit: usize,
    },
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
    /// A trailer line the field grammar refuses (net-vocab's
    /// [`net_vocab::HeaderField::parse_line`]; offsets count from the
    /// body's first byte).
    #[error("trailer refused: {0}")]
    Trailer(net_vocab::Error),
    /// A framing or routing header in the chunked trailer section.
    #[error("header {name:?} is not allowed in a trailer")]
    ForbiddenTrailer {
        /// The header name.
        name: String,
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
