//! Byte relay between a client and its upstream: half-close passed both
//! ways, an abort (a reset or any other error on either side) passed on as a
//! reset of the other, an idle timeout over both directions.
//!
//! Copying goes through a user-space buffer that starts at 8 KiB (kept
//! between tunnels in [`SpareBuffers`]) and grows to
//! [`crate::Limits::copy_buffer_bytes`]. On the 2-core loopback bench a
//! 256 KiB buffer beat 64 KiB, 8 KiB and `splice(2)` through a pipe
//! (`benches/README.md` has the figures), so that is the default.

use crate::client::ClientStream;
use crate::spare_buffers::{FIRST_BUFFER, SpareBuffers};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// How a tunnel copies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Copying<'a> {
    pub(crate) buffer: usize,
    pub(crate) idle: Duration,
    pub(crate) spare: &'a SpareBuffers,
}

/// Activity clock shared by both directions.
struct Clock {
    start: Instant,
    last: AtomicU64,
}

impl Clock {
    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }

    async fn idle_for(&self, idle: Duration) {
        loop {
            let seen = Duration::from_millis(self.last.load(Ordering::Relaxed));
            let quiet = self.start.elapsed().saturating_sub(seen);
            if quiet >= idle {
                return;
            }
            tokio::time::sleep(idle - quiet).await;
        }
    }
}

/// Relays until both directions saw end-of-stream, one side failed, or
/// neither side moved a byte for the idle timeout.
///
/// When a side fails (the origin resets the connection, the client goes
/// away mid-transfer), both sockets are closed with a reset rather than a
/// FIN, so that the other peer sees an aborted stream, never a clean end of
/// a truncated one.
pub(crate) async fn relay(
    client: &mut ClientStream,
    upstream: &mut TcpStream,
    copying: Copying<'_>,
) -> io::Result<()> {
    let clock = Clock {
        start: Instant::now(),
        last: AtomicU64::new(0),
    };
    let (mut cr, mut cw) = client.split();
    let (mut ur, mut uw) = upstream.split();
    let both = async {
        tokio::try_join!(
            pump(&mut cr, &mut uw, copying, &clock),
            pump(&mut ur, &mut cw, copying, &clock),
        )
    };
    // Biased: the copying first, and no random draw for the branch order
    // at each wake-up (four per short tunnel).
    let result = tokio::select! {
        biased;
        r = both => r.map(|_| ()),
        () = clock.idle_for(copying.idle) => {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "tunnel idle"));
        }
    };
    if result.is_err() {
        // Zero linger: close sends RST. Best effort; the sockets are
        // dropped by the caller right after.
        client.abort_on_close();
        let _ = upstream.set_zero_linger();
    }
    result
}

async fn pump<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    r: &mut R,
    w: &mut W,
    copying: Copying<'_>,
    clock: &Clock,
) -> io::Result<()> {
    let mut buf = copying.spare.take(copying.buffer.min(FIRST_BUFFER));
    let copied = copy(r, w, copying.buffer, clock, &mut buf).await;
    copying.spare.give(buf);
    copied
}

async fn copy<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    r: &mut R,
    w: &mut W,
    size: usize,
    clock: &Clock,
    buf: &mut Vec<u8>,
) -> io::Result<()> {
    // Start small so short connections stay cheap; grow to the configured
    // size once a read fills the buffer. `read_buf` reads into spare
    // capacity, so the buffer is never zero-filled.
    loop {
        buf.clear();
        let n = r.read_buf(buf).await?;
        if n == 0 {
            // Pass the half-close on; the other direction keeps going.
            w.shutdown().await?;
            return Ok(());
        }
        w.write_all(&buf[..n]).await?;
        clock.touch();
        if n == buf.capacity() && n < size {
            buf.reserve_exact(size - n);
        }
    }
}
