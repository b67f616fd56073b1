//! The host side of the socat bridges, in process: a Unix socket per proxy
//! in a private (0700) directory, each connection forwarded to the proxy's
//! loopback port.

use crate::Error;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::task::JoinHandle;

/// A private directory for one session's sockets, removed on drop.
#[derive(Debug)]
pub(crate) struct SocketDir {
    path: PathBuf,
}

impl SocketDir {
    /// Creates `<tmp>/agent-sandbox-<pid>-<n>` with mode 0700.
    pub(crate) fn create_in(base: &Path) -> Result<SocketDir, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = base.join(format!(
            "agent-sandbox-{}-{n}-{nanos:x}",
            std::process::id()
        ));
        std::fs::create_dir(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io(format!("chmod 0700 {}", path.display()), e))?;
        Ok(SocketDir { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SocketDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Listens on `socket` and forwards each connection to `upstream`.
pub(crate) fn spawn_forwarder(
    socket: &Path,
    upstream: SocketAddr,
) -> Result<JoinHandle<()>, Error> {
    let listener = UnixListener::bind(socket)
        .map_err(|e| Error::io(format!("binding {}", socket.display()), e))?;
    Ok(tokio::spawn(async move {
        loop {
            if let Ok((inner, _)) = listener.accept().await {
                relay_to(inner, upstream);
            }
        }
    }))
}

/// Accepts on a TCP listener (one bound inside the sandbox's network
/// namespace) and forwards each connection to `upstream`.
pub(crate) fn spawn_tcp_forwarder(listener: TcpListener, upstream: SocketAddr) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if let Ok((inner, _)) = listener.accept().await {
                let _ = inner.set_nodelay(true);
                relay_to(inner, upstream);
            }
        }
    })
}

/// A forwarded stream that can be closed with a reset.
trait Abort {
    /// Makes the coming close a reset (TCP), where the stream has one.
    fn abort_on_close(&self);
}

impl Abort for TcpStream {
    fn abort_on_close(&self) {
        let _ = self.set_zero_linger();
    }
}

impl Abort for tokio::net::UnixStream {
    /// A Unix socket has no reset: the peer sees end of stream.
    fn abort_on_close(&self) {}
}

/// Connects to `upstream` and relays `inner` both ways until both close.
/// When either side fails (the proxy resets an aborted tunnel), both are
/// closed with a reset, so the command inside never mistakes a cut-off
/// stream for a complete one.
fn relay_to<S>(mut inner: S, upstream: SocketAddr)
where
    S: AsyncRead + AsyncWrite + Abort + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        if let Ok(mut outer) = TcpStream::connect(upstream).await {
            let _ = outer.set_nodelay(true);
            if tokio::io::copy_bidirectional(&mut inner, &mut outer)
                .await
                .is_err()
            {
                inner.abort_on_close();
                outer.abort_on_close();
            }
        }
    });
}
