//! The parser's size limits, checked once when built: those of the head
//! (net-vocab's [`HeadLimits`], with the broker's own head size) and the
//! body's.

use crate::error::{Error, ErrorKind};
use net_vocab::{DEFAULT_MAX_HEADERS, DEFAULT_MAX_LINE, HeadLimits};

/// Default limit on the whole request head (request line and headers):
/// the broker's own, larger than net-vocab's default.
pub const DEFAULT_MAX_HEAD: usize = 64 * 1024;
/// Default limit on a decoded request body.
pub const DEFAULT_MAX_BODY: u64 = 8 * 1024 * 1024;

/// Size limits for [`RequestParser`](crate::RequestParser). Build with
/// [`Limits::builder`], or take [`Limits::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub(crate) head: HeadLimits,
    pub(crate) max_body: u64,
}

/// The default head limits: [`DEFAULT_MAX_HEAD`], [`DEFAULT_MAX_LINE`],
/// [`DEFAULT_MAX_HEADERS`] (all in range, so the fallback is never taken;
/// `tests/cred-broker/testdata.rs` checks it).
fn default_head() -> HeadLimits {
    HeadLimits::new(DEFAULT_MAX_HEAD, DEFAULT_MAX_LINE, DEFAULT_MAX_HEADERS).unwrap_or_default()
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            head: default_head(),
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

impl Limits {
    /// A builder starting from the defaults.
    pub fn builder() -> LimitsBuilder {
        LimitsBuilder {
            max_head: DEFAULT_MAX_HEAD,
            max_line: DEFAULT_MAX_LINE,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body: DEFAULT_MAX_BODY,
        }
    }

    /// The limits the request head is read with.
    pub fn head(&self) -> HeadLimits {
        self.head
    }

    /// The limit on the request head, in bytes.
    pub fn max_head(&self) -> usize {
        self.head.max_head()
    }

    /// The limit on one line, in bytes (without its CR LF): request line,
    /// field line, chunk-size line, trailer line.
    pub fn max_line(&self) -> usize {
        self.head.max_line()
    }

    /// The limit on header lines (and, separately, trailer lines).
    pub fn max_headers(&self) -> usize {
        self.head.max_headers()
    }

    /// The limit on a decoded body, in bytes.
    pub fn max_body(&self) -> u64 {
        self.max_body
    }
}

/// Builds [`Limits`]; [`LimitsBuilder::build`] checks them.
#[derive(Debug, Clone)]
pub struct LimitsBuilder {
    max_head: usize,
    max_line: usize,
    max_headers: usize,
    max_body: u64,
}

impl LimitsBuilder {
    /// Sets the head limit (at least 16 bytes, at most 1 MiB).
    pub fn max_head(&mut self, bytes: usize) -> &mut LimitsBuilder {
        self.max_head = bytes;
        self
    }

    /// Sets the line limit (at least 16 bytes, at most the head limit).
    pub fn max_line(&mut self, bytes: usize) -> &mut LimitsBuilder {
        self.max_line = bytes;
        self
    }

    /// Sets the header-count limit (1 to 10 000).
    pub fn max_headers(&mut self, count: usize) -> &mut LimitsBuilder {
        self.max_headers = count;
        self
    }

    /// Sets the body limit (at most 1 GiB; 0 refuses every body).
    pub fn max_body(&mut self, bytes: u64) -> &mut LimitsBuilder {
        self.max_body = bytes;
        self
    }

    /// Checks the limits (the head's as net-vocab's [`HeadLimits::new`]
    /// does).
    pub fn build(&self) -> Result<Limits, Error> {
        let head =
            HeadLimits::new(self.max_head, self.max_line, self.max_headers).map_err(|e| {
                let (name, value, reason) = match e.kind() {
                    net_vocab::ErrorKind::InvalidLimit {
                        name,
                        value,
                        reason,
                    } => (*name, *value, *reason),
                    _ => ("head limits", self.max_head, "out of range"),
                };
                Error::from(ErrorKind::InvalidConfig {
                    name,
                    value: value.to_string(),
                    reason,
                })
            })?;
        if self.max_body > 1024 * 1024 * 1024 {
            return Err(ErrorKind::InvalidConfig {
                name: "max_body",
                value: self.max_body.to_string(),
                reason: "give at most 1 GiB",
            }
            .into());
        }
        Ok(Limits {
            head,
            max_body: self.max_body,
        })
    }
}
