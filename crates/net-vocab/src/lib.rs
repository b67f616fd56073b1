//! The network vocabulary of agent-sandbox: what a host, a host pattern, a
//! connect target and an HTTP/1 request head are, defined once for the
//! egress proxies (`connect-proxy`) and the credential broker
//! (`cred-broker`), so that both read the same bytes the same way.
//!
//! - [`Host`]: the one canonical host form used for matching and dialing. A
//!   name is lower-case ASCII without a trailing dot; configuration entries
//!   go through UTS #46 ([`Host::parse_config`]), names from the wire must
//!   already be A-labels ([`Host::parse_wire`]); every numeric spelling the
//!   C library's `inet_aton` accepts is read as the IPv4 literal it stands
//!   for, so it is never handed to a resolver.
//! - [`Target`]: a canonical host and a port, what a client asked to reach
//!   (`CONNECT host:port`, a SOCKS5 request, an absolute URI).
//! - [`HostPattern`]: the wildcard pattern of R-EGRESS-2. Exactly one `*`,
//!   a whole label: leading `*.example.com` matches any subdomain depth but
//!   not the apex, a middle `bedrock.*.amazonaws.com` exactly one label;
//!   an optional `:port`. Checked once when loaded, then matched against
//!   canonical hosts ([`HostPattern::matches`]).
//! - [`HeadReader`]: a strict, bounded HTTP/1 request-head reader that
//!   refuses every ambiguous framing, giving a [`RequestHead`]. Its field
//!   grammar is [`HeaderField::parse_line`] (for field lines read
//!   elsewhere, such as a chunked body's trailers) and [`is_token`].
//!
//! # Example
//!
//! ```
//! use net_vocab::{HeadLimits, HeadReader, Host, HostPattern, Target};
//!
//! // A configuration entry, and what a client sent.
//! let allowed = HostPattern::parse("*.Bücher.example:443").unwrap();
//! assert_eq!(allowed.to_string(), "*.xn--bcher-kva.example:443");
//!
//! let raw = b"CONNECT API.xn--bcher-kva.example.:443 HTTP/1.1\r\n\r\n";
//! let (head, used) = HeadReader::new(HeadLimits::default())
//!     .read(raw)
//!     .unwrap()
//!     .expect("a complete head");
//! assert_eq!(used, raw.len());
//! let target = Target::parse_authority(head.target()).unwrap();
//! assert_eq!(target.to_string(), "api.xn--bcher-kva.example:443");
//! assert!(allowed.matches_target(&target));
//!
//! // `0xa9fea9fe` is the metadata address, not a name.
//! assert_eq!(Host::parse_wire("0xa9fea9fe").unwrap().to_string(), "169.254.169.254");
//! ```
//!
//! # Input safety
//!
//! Every parser here takes untrusted bytes, never panics on them (each has
//! a fuzz target and property tests) and bounds its work:
//!
//! - Host names: input over [`MAX_INPUT_LEN`] (1024) bytes is refused
//!   before any work; at most [`MAX_HOST_LEN`] (253) bytes canonical and
//!   [`MAX_LABEL_LEN`] (63) per label; labels of letters, digits, `-`
//!   (not first or last) and `_`. `%`, `@`, `[name]`, empty labels,
//!   non-ASCII on the wire and an all-numeric last label that is not an
//!   IPv4 address are refused ([`HostProblem`] says which).
//! - Internationalised names: only configuration entries go through UTS #46
//!   _ToASCII_ (the `idna` crate; non-transitional, with the hyphen, bidi
//!   and joiner checks): full-width forms, case and NFC are mapped,
//!   disallowed code points refused, and an `xn--` label must be a valid
//!   A-label that re-encodes to itself. The result then passes the same
//!   grammar as the wire. On the wire, non-ASCII is refused and `xn--`
//!   labels are compared as bytes (after lower-casing), never decoded.
//!   Conformance is checked against the Unicode consortium's
//!   `IdnaTestV2.txt`.
//! - Ports: decimal, at most 5 digits, 1..=65535.
//! - Host patterns: at most [`MAX_ENTRY_LEN`] (512) bytes; exactly one
//!   whole-label `*` at most, never over a top-level domain or an IP
//!   literal; IPv6 literals in brackets only (`fd00::1:443` would be
//!   ambiguous); the shortest host a pattern matches must fit in 253 bytes.
//! - Request heads, within [`HeadLimits`] (defaults: [`DEFAULT_MAX_HEAD`]
//!   16 KiB for the head, [`DEFAULT_MAX_LINE`] 8 KiB per line,
//!   [`DEFAULT_MAX_HEADERS`] 100 fields), each checked as the bytes
//!   arrive. Refused: a bare CR or LF, an empty line before the request
//!   line, any version but HTTP/1.0 and HTTP/1.1, obsolete line folding,
//!   whitespace before a colon, control bytes in a value, more than one
//!   `Host` or a `Host` that is not a host with an optional port, more than
//!   one `Content-Length` (even with equal values) or a length that is not
//!   plain digits, more than one `Transfer-Encoding` or any coding but a
//!   single `chunked`, `Content-Length` with `Transfer-Encoding`,
//!   `Transfer-Encoding` in HTTP/1.0, and a body on `CONNECT`.
//!   [`Error::is_too_large`] marks the refusals a server answers with 431.
//!
//! # Crate features
//!
//! This crate has no optional features and no I/O: callers read the bytes
//! and hand them over.

mod error;
mod field;
mod head;
mod host;
mod idna;
mod pattern;
mod reader;
mod target;

/// Entry points for the fuzz targets; not a stable API.
#[doc(hidden)]
pub mod fuzzing;

pub use error::{Error, ErrorKind, HostProblem};
pub use field::{HeaderField, is_token};
pub use head::{
    BodyFraming, DEFAULT_MAX_HEAD, DEFAULT_MAX_HEADERS, DEFAULT_MAX_LINE, HeadLimits, RequestHead,
    Version,
};
pub use host::{Host, MAX_HOST_LEN, MAX_INPUT_LEN, MAX_LABEL_LEN};
pub use pattern::{HostPattern, MAX_ENTRY_LEN, PatternShape};
pub use reader::HeadReader;
pub use target::Target;
