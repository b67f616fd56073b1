//! A parsed, checked HTTP/1 request head, and the limits it was read with.

use crate::error::{Error, ErrorKind};
use crate::field::HeaderField;
use crate::host::Host;
use crate::target::Target;
use std::fmt;

/// Default limit on the whole request head (request line, fields and the
/// empty line), in bytes.
pub const DEFAULT_MAX_HEAD: usize = 16 * 1024;
/// Default limit on one line (without its CR LF), in bytes.
pub const DEFAULT_MAX_LINE: usize = 8 * 1024;
/// Default limit on the number of header fields.
pub const DEFAULT_MAX_HEADERS: usize = 100;

/// The bounds a [`crate::HeadReader`] enforces, checked when made.
///
/// ```
/// use net_vocab::HeadLimits;
/// let limits = HeadLimits::new(4096, 1024, 50).unwrap();
/// assert_eq!(limits.max_line(), 1024);
/// assert!(HeadLimits::new(4096, 8192, 50).is_err()); // a line longer than the head
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HeadLimits {
    max_head: usize,
    max_line: usize,
    max_headers: usize,
}

impl Default for HeadLimits {
    fn default() -> HeadLimits {
        HeadLimits {
            max_head: DEFAULT_MAX_HEAD,
            max_line: DEFAULT_MAX_LINE,
            max_headers: DEFAULT_MAX_HEADERS,
        }
    }
}

impl HeadLimits {
    /// Limits on the head (16 bytes to 1 MiB), on one line (16 bytes to
    /// the head limit) and on the number of header fields (1 to 10 000).
    pub fn new(max_head: usize, max_line: usize, max_headers: usize) -> Result<HeadLimits, Error> {
        let bad = |name, value, reason| {
            Err(Error::from(ErrorKind::InvalidLimit {
                name,
                value,
                reason,
            }))
        };
        if !(16..=1024 * 1024).contains(&max_head) {
            return bad("max_head", max_head, "give 16 to 1048576 bytes");
        }
        if max_line < 16 || max_line > max_head {
            return bad(
                "max_line",
                max_line,
                "give at least 16 bytes and no more than max_head",
            );
        }
        if !(1..=10_000).contains(&max_headers) {
            return bad("max_headers", max_headers, "give 1 to 10000");
        }
        Ok(HeadLimits {
            max_head,
            max_line,
            max_headers,
        })
    }

    /// The limit on the request head, in bytes.
    pub fn max_head(&self) -> usize {
        self.max_head
    }

    /// The limit on one line, in bytes (without its CR LF).
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// The limit on header fields.
    pub fn max_headers(&self) -> usize {
        self.max_headers
    }
}

/// The HTTP version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Version {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

impl Version {
    /// The version as it appears on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the request's body is delimited on the wire, as the head declares it.
///
/// Not `#[non_exhaustive]`: RFC 9112 fixes these three for requests, and
/// a reader that met an unknown one would have to guess where the body
/// ends, which is what request smuggling is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyFraming {
    /// No `Content-Length` and no `Transfer-Encoding`: no body.
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A request head that passed every check of the reader.
///
/// The request target is checked for bytes only (visible ASCII); its form
/// (origin, absolute, authority) is for the caller to judge, as is whether
/// a `Host` field is required.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    /// A method of RFC 9110 is held without an allocation.
    pub(crate) method: std::borrow::Cow<'static, str>,
    pub(crate) target: String,
    pub(crate) version: Version,
    pub(crate) headers: Vec<HeaderField>,
    /// The single, checked `Host` field.
    pub(crate) host: Option<HostField>,
    pub(crate) framing: BodyFraming,
}

/// The `Host` field of a head: where it is among the fields, and its value
/// as the head reader's check read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostField {
    /// Its index in the head's fields.
    pub(crate) index: usize,
    /// The host it names.
    pub(crate) host: Host,
    /// Its port, when the value has one.
    pub(crate) port: Option<u16>,
}

impl RequestHead {
    /// The method, exactly as sent (methods are case-sensitive).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request target, exactly as sent.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The HTTP version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Every header field, in order.
    pub fn headers(&self) -> &[HeaderField] {
        &self.headers
    }

    /// The values of every field called `name` (ASCII case ignored), in
    /// order.
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |h| h.is(name))
            .map(HeaderField::value)
    }

    /// The value of the first field called `name` (ASCII case ignored).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.is(name))
            .map(HeaderField::value)
    }

    /// The single `Host` field's value, when there is one (checked: a host
    /// in the wire grammar with an optional port).
    pub fn host(&self) -> Option<&str> {
        self.headers.get(self.host.as_ref()?.index)?.value_str()
    }

    /// The request target read as an authority, `host:port` (the form of
    /// `CONNECT`; the port is required): the same result as
    /// [`Target::parse_authority`] of [`RequestHead::target`]. When the
    /// `Host` field spells the very same text, its reading by the head
    /// reader is used instead of a second one.
    ///
    /// ```
    /// use net_vocab::{HeadLimits, HeadReader, Target};
    /// let wire = b"CONNECT Example.com:443 HTTP/1.1\r\nHost: Example.com:443\r\n\r\n";
    /// let (head, _) = HeadReader::new(HeadLimits::default()).read(wire).unwrap().unwrap();
    /// assert_eq!(head.authority_target().unwrap().to_string(), "example.com:443");
    /// assert_eq!(head.authority_target().ok(), Target::parse_authority(head.target()).ok());
    /// ```
    pub fn authority_target(&self) -> Result<Target, Error> {
        if let Some(HostField {
            host,
            port: Some(port),
            ..
        }) = &self.host
            && self.host() == Some(self.target.as_str())
        {
            return Ok(Target {
                host: host.clone(),
                port: *port,
            });
        }
        Target::parse_authority(&self.target)
    }

    /// The body framing the head declares.
    pub fn framing(&self) -> BodyFraming {
        self.framing
    }
}
