//! The parser's size limits, checked once when built.

use crate::error::{Error, ErrorKind};

/// Default limit on the whole request head (request line and headers).
pub const DEFAULT_MAX_HEAD: usize = 64 * 1024;
/// Default limit on one line (request line, header line, chunk-size line).
pub const DEFAULT_MAX_LINE: usize = 8 * 1024;
/// Default limit on the number of header lines (trailers count too).
pub const DEFAULT_MAX_HEADERS: usize = 100;
/// Default limit on a decoded request body.
pub const DEFAULT_MAX_BODY: u64 = 8 * 1024 * 1024;

/// Size limits for [`RequestParser`](crate::RequestParser). Build with
/// [`Limits::builder`], or take [`Limits::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub(crate) max_head: usize,
    pub(crate) max_line: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_body: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_head: DEFAULT_MAX_HEAD,
            max_line: DEFAULT_MAX_LINE,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

impl Limits {
    /// A builder starting from the defaults.
    pub fn builder() -> LimitsBuilder {
        LimitsBuilder {
            limits: Limits::default(),
        }
    }

    /// The limit on the request head, in bytes.
    pub fn max_head(&self) -> usize {
        self.max_head
    }

    /// The limit on one line, in bytes (without its CR LF).
    pub fn max_line(&self) -> usize {
        self.max_line
    }

    /// The limit on header lines (and, separately, trailer lines).
    pub fn max_headers(&self) -> usize {
        self.max_headers
    }

    /// The limit on a decoded body, in bytes.
    pub fn max_body(&self) -> u64 {
        self.max_body
    }
}

/// Builds [`Limits`]; [`LimitsBuilder::build`] checks them.
#[derive(Debug, Clone)]
pub struct LimitsBuilder {
    limits: Limits,
}

impl LimitsBuilder {
    /// Sets the head limit (at least 16 bytes, at most 1 MiB).
    pub fn max_head(&mut self, bytes: usize) -> &mut LimitsBuilder {
        self.limits.max_head = bytes;
        self
    }

    /// Sets the line limit (at least 16 bytes, at most the head limit).
    pub fn max_line(&mut self, bytes: usize) -> &mut LimitsBuilder {
        self.limits.max_line = bytes;
        self
    }

    /// Sets the header-count limit (1 to 10 000).
    pub fn max_headers(&mut self, count: usize) -> &mut LimitsBuilder {
        self.limits.max_headers = count;
        self
    }

    /// Sets the body limit (at most 1 GiB; 0 refuses every body).
    pub fn max_body(&mut self, bytes: u64) -> &mut LimitsBuilder {
        self.limits.max_body = bytes;
        self
    }

    /// Checks the limits.
    pub fn build(&self) -> Result<Limits, Error> {
        let l = self.limits;
        let bad = |name, value: String, reason| {
            Err(Error::from(ErrorKind::InvalidConfig {
                name,
                value,
                reason,
            }))
        };
        if !(16..=1024 * 1024).contains(&l.max_head) {
            return bad(
                "max_head",
                l.max_head.to_string(),
                "give 16 to 1048576 bytes",
            );
        }
        if l.max_line < 16 || l.max_line > l.max_head {
            return bad(
                "max_line",
                l.max_line.to_string(),
                "give at least 16 bytes and no more than max_head",
            );
        }
        if !(1..=10_000).contains(&l.max_headers) {
            return bad("max_headers", l.max_headers.to_string(), "give 1 to 10000");
        }
        if l.max_body > 1024 * 1024 * 1024 {
            return bad("max_body", l.max_body.to_string(), "give at most 1 GiB");
        }
        Ok(l)
    }
}
