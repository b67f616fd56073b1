//! First copy buffers kept between tunnels: most tunnels are short, and a
//! buffer taken from here costs them no allocation.

use std::sync::Mutex;

/// The size of every buffer kept here: a tunnel direction's first buffer.
pub(crate) const FIRST_BUFFER: usize = 8 * 1024;

/// At most this many buffers are kept (512 KiB), whatever the load was.
const KEEP: usize = 64;

/// A bounded stack of empty [`FIRST_BUFFER`]-sized buffers.
#[derive(Debug, Default)]
pub(crate) struct SpareBuffers {
    spare: Mutex<Vec<Vec<u8>>>,
}

impl SpareBuffers {
    /// An empty buffer with room for `size` bytes (at most
    /// [`FIRST_BUFFER`]), kept or new.
    pub(crate) fn take(&self, size: usize) -> Vec<u8> {
        if size == FIRST_BUFFER
            && let Ok(mut spare) = self.spare.lock()
            && let Some(buf) = spare.pop()
        {
            return buf;
        }
        Vec::with_capacity(size.min(FIRST_BUFFER))
    }

    /// Keeps `buf` for a later tunnel if it is a first buffer that never
    /// grew and there is room; drops it otherwise. Its contents are
    /// cleared: only its allocation is kept.
    pub(crate) fn give(&self, mut buf: Vec<u8>) {
        if buf.capacity() != FIRST_BUFFER {
            return;
        }
        buf.clear();
        if let Ok(mut spare) = self.spare.lock()
            && spare.len() < KEEP
        {
            spare.push(buf);
        }
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.spare.lock().map_or(0, |s| s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_buffers_only_and_at_most_keep() {
        let pool = SpareBuffers::default();
        let mut grown = pool.take(FIRST_BUFFER);
        grown.reserve_exact(4 * FIRST_BUFFER);
        pool.give(grown);
        assert_eq!(pool.kept(), 0, "a grown buffer is dropped");
        for _ in 0..KEEP + 5 {
            pool.give(Vec::with_capacity(FIRST_BUFFER));
        }
        assert_eq!(pool.kept(), KEEP);
        let mut buf = pool.take(FIRST_BUFFER);
        assert_eq!((buf.len(), buf.capacity()), (0, FIRST_BUFFER));
        buf.extend_from_slice(b"secret");
        pool.give(buf);
        assert!(
            pool.take(FIRST_BUFFER).is_empty(),
            "contents never come back"
        );
        assert_eq!(
            pool.take(100).capacity(),
            100,
            "a smaller size is not taken from the pool"
        );
    }
}
