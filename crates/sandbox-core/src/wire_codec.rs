//! The pieces both framed protocols share ([`crate::session_wire`] and
//! [`crate::vm_wire`]): a frame is a 4-byte little-endian body length, then
//! the body; numbers are little-endian; a byte string is its 4-byte length,
//! then its bytes; a list is its 4-byte count, then its strings.

use std::fmt;

/// Most arguments, or most environment entries, in one request.
pub const MAX_ITEMS: usize = 1 << 16;
/// Why bytes are not a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// A body longer than the direction's limit.
    #[allow(missing_docs, reason = "the body's length and the limit")]
    TooLong { len: usize, limit: usize },
    /// The body ended inside a field.
    Truncated,
    /// Bytes left after the last field.
    Trailing,
    /// An unknown tag.
    UnknownTag(u8),
    /// More items than [`MAX_ITEMS`], or more of another counted thing
    /// than its protocol allows.
    TooMany,
    /// A NUL inside an argument, variable or path, or an empty argv.
    BadString,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::TooLong { len, limit } => {
                write!(f, "a frame of {len} bytes (at most {limit})")
            }
            WireError::Truncated => f.write_str("a frame ends inside a field"),
            WireError::Trailing => f.write_str("bytes after a frame's last field"),
            WireError::UnknownTag(t) => write!(f, "unknown frame tag {t}"),
            WireError::TooMany => f.write_str("too many items in a frame"),
            WireError::BadString => {
                f.write_str("an empty argv, or a NUL inside an argument, variable or path")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// Appends `body` as one frame to `out`.
pub(crate) fn frame(out: &mut Vec<u8>, body: &[u8]) {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(body);
}

pub(crate) fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(s);
}

pub(crate) fn put_list(b: &mut Vec<u8>, items: &[Vec<u8>]) {
    let n = u32::try_from(items.len()).unwrap_or(u32::MAX);
    b.extend_from_slice(&n.to_le_bytes());
    for i in items {
        put_bytes(b, i);
    }
}

/// A cursor over a body.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, WireError> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = usize::try_from(self.u32()?).map_err(|_| WireError::Truncated)?;
        self.take(n)
    }

    pub(crate) fn list(&mut self) -> Result<Vec<Vec<u8>>, WireError> {
        let n = usize::try_from(self.u32()?).map_err(|_| WireError::TooMany)?;
        if n > MAX_ITEMS {
            return Err(WireError::TooMany);
        }
        // Each item takes at least its 4-byte length: a count the body
        // cannot hold is refused before anything is reserved for it.
        if n > self.0.len() / 4 {
            return Err(WireError::Truncated);
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.bytes()?.to_vec());
        }
        Ok(out)
    }

    pub(crate) fn end(&self) -> Result<(), WireError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(WireError::Trailing)
        }
    }
}

/// Splits a byte stream into frame bodies, holding at most one frame of
/// at most `limit` bytes (plus what one read brought beyond it).
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    limit: usize,
}

impl FrameReader {
    /// A reader of frames whose bodies are at most `limit` bytes
    /// (each protocol's limit for the direction).
    pub fn new(limit: usize) -> FrameReader {
        FrameReader {
            buf: Vec::new(),
            limit,
        }
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next whole frame's body, `Ok(None)` until one is complete. A
    /// length above the limit is an error at once (the stream is then
    /// useless: it has no way to find the next frame).
    pub fn next_body(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        let Some(head) = self.buf.get(..4) else {
            return Ok(None);
        };
        let mut len = [0u8; 4];
        len.copy_from_slice(head);
        let len = usize::try_from(u32::from_le_bytes(len)).unwrap_or(usize::MAX);
        if len > self.limit {
            return Err(WireError::TooLong {
                len,
                limit: self.limit,
            });
        }
        let Some(body) = self.buf.get(4..4 + len) else {
            return Ok(None);
        };
        let body = body.to_vec();
        self.buf.drain(..4 + len);
        Ok(Some(body))
    }

    /// Whether bytes of an unfinished frame are held.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }
}
