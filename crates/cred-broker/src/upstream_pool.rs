//! Verified upstream connections kept between client connections of one
//! broker (one session): a client that opens a new connection for each
//! request then costs one TLS handshake per request, not two.
//!
//! A connection is kept only when its last response ended cleanly with
//! both sides keeping it alive, no request in flight and no byte left
//! over; it is reused only for the same `CONNECT` target and the same
//! vetted address, only within [`MAX_IDLE`], and only if it is still open
//! and silent when taken. A request is never retried: one sent on a
//! connection the origin closed at that moment fails as any broken
//! upstream does (502), so nothing is ever sent twice.

use net_vocab::Target;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How long an idle connection is kept: shorter than the keep-alive
/// timeout of common servers (5 s and up), so an origin rarely closes one
/// just as it is reused.
pub(crate) const MAX_IDLE: Duration = Duration::from_secs(2);

/// At most this many idle connections are kept, over all targets.
const KEEP: usize = 32;

struct Idle {
    target: Target,
    addr: SocketAddr,
    since: Instant,
    stream: TlsStream<TcpStream>,
}

/// The idle upstream connections of one broker.
#[derive(Default)]
pub(crate) struct UpstreamPool {
    idle: Mutex<Vec<Idle>>,
}

impl std::fmt::Debug for UpstreamPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle = self.idle.lock().map_or(0, |i| i.len());
        f.debug_struct("UpstreamPool").field("idle", &idle).finish()
    }
}

impl UpstreamPool {
    /// A kept connection to `addr` for `target`, still open and with
    /// nothing unread, if there is one.
    pub(crate) fn take(&self, target: &Target, addr: SocketAddr) -> Option<TlsStream<TcpStream>> {
        let mut idle = self.idle.lock().ok()?;
        drop_expired(&mut idle, Instant::now());
        while let Some(at) = idle
            .iter()
            .rposition(|i| i.addr == addr && &i.target == target)
        {
            let mut kept = idle.swap_remove(at);
            if open_and_silent(&mut kept.stream) {
                return Some(kept.stream);
            }
        }
        None
    }

    /// Keeps a connection whose last response ended cleanly (the caller's
    /// promise); the oldest goes when the pool is full.
    pub(crate) fn give(&self, target: &Target, addr: SocketAddr, stream: TlsStream<TcpStream>) {
        let Ok(mut idle) = self.idle.lock() else {
            return;
        };
        let now = Instant::now();
        drop_expired(&mut idle, now);
        if idle.len() >= KEEP {
            idle.remove(0);
        }
        idle.push(Idle {
            target: target.clone(),
            addr,
            since: now,
            stream,
        });
    }
}

/// Closes the connections idle for [`MAX_IDLE`] or longer.
fn drop_expired(idle: &mut Vec<Idle>, now: Instant) {
    idle.retain(|i| now.duration_since(i.since) < MAX_IDLE);
}

/// True when a read would wait: the peer neither closed nor sent anything
/// (a TLS message that carries no data, a session ticket, is taken in).
fn open_and_silent(stream: &mut TlsStream<TcpStream>) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let mut byte = [0u8; 1];
    let mut buf = ReadBuf::new(&mut byte);
    matches!(Pin::new(stream).poll_read(&mut cx, &mut buf), Poll::Pending)
}
