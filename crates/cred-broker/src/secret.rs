//! A credential value that never shows itself and is wiped when dropped.

use crate::error::{Error, ErrorKind};
use std::fmt;
use std::sync::atomic::{Ordering, compiler_fence};

/// The longest secret accepted, in bytes.
pub const MAX_SECRET_LEN: usize = 4096;

/// A secret value (a token) given by the host program.
///
/// `Debug` and `Display` print `<redacted>`; the bytes are overwritten with
/// zeros when the value is dropped. The bytes live in one allocation of
/// exactly their size that never grows, so no stale copy is left behind
/// by reallocation; the input buffer given to [`Secret::new`] is wiped too.
/// Copies the operating system makes (swap, core dumps) are outside this
/// type's reach.
///
/// ```
/// use cred_broker::Secret;
/// let s = Secret::new(b"ghs_example".to_vec()).unwrap();
/// assert_eq!(format!("{s:?} {s}"), "Secret(<redacted>) <redacted>");
/// ```
#[derive(Clone)]
pub struct Secret {
    bytes: Box<[u8]>,
}

impl Secret {
    /// Takes a value: 1 to [`MAX_SECRET_LEN`] bytes of visible ASCII (it is
    /// sent in a header). The given buffer is wiped whether or not the
    /// value is accepted.
    pub fn new(mut value: Vec<u8>) -> Result<Secret, Error> {
        let ok = !value.is_empty()
            && value.len() <= MAX_SECRET_LEN
            && value.iter().all(|b| (0x21..0x7f).contains(b));
        let result = if ok {
            Ok(Secret {
                bytes: value.as_slice().into(),
            })
        } else {
            Err(ErrorKind::InvalidConfig {
                name: "secret",
                value: format!("<{} bytes, not shown>", value.len()),
                reason: "give 1 to 4096 bytes of visible ASCII",
            }
            .into())
        };
        wipe(&mut value);
        result
    }

    /// Takes a value from a `String`, wiping the string's buffer.
    pub fn from_string(value: String) -> Result<Secret, Error> {
        Secret::new(value.into_bytes())
    }

    /// The value, for writing it into an upstream header only.
    pub(crate) fn expose(&self) -> &[u8] {
        &self.bytes
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: an empty secret is refused.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Overwrites `bytes` with zeros in a way the optimiser keeps.
pub(crate) fn wipe(bytes: &mut [u8]) {
    for b in bytes.iter_mut() {
        *b = 0;
    }
    std::hint::black_box(&mut *bytes);
    compiler_fence(Ordering::SeqCst);
}

impl Drop for Secret {
    fn drop(&mut self) {
        wipe(&mut self.bytes);
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// A byte buffer that holds a secret in the making (an upstream head) and
/// is wiped when dropped. It is sized once and never grows.
pub(crate) struct WipeBuf {
    bytes: Vec<u8>,
}

impl WipeBuf {
    pub(crate) fn with_capacity(n: usize) -> WipeBuf {
        WipeBuf {
            bytes: Vec::with_capacity(n),
        }
    }

    /// Appends, refusing to grow (a growth would leave a copy behind);
    /// callers size the buffer exactly first.
    pub(crate) fn push(&mut self, data: &[u8]) -> bool {
        if self.bytes.len() + data.len() > self.bytes.capacity() {
            return false;
        }
        self.bytes.extend_from_slice(data);
        true
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for WipeBuf {
    fn drop(&mut self) {
        wipe(&mut self.bytes);
    }
}
