//! The host side of the bridges: a private (0700) directory per session and
//! a Unix socket per proxy in it, served by the session's proxies
//! themselves (no loopback port, no relay in between).

use crate::Error;
use connect_proxy::ProxyKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::net::UnixListener;

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

/// The proxies behind the session's two bridges, in the order the bridge
/// plan adds them (`http`, then `socks`).
pub(crate) const BRIDGED: [ProxyKind; 2] = [ProxyKind::Http, ProxyKind::Socks5];

/// Binds a Unix socket (in the session's 0700 directory) that only this
/// user may connect to: mode 0600 besides the directory's 0700, and the
/// proxies check each peer's uid.
pub(crate) fn bind_private_socket(socket: &Path) -> Result<UnixListener, Error> {
    let listener = UnixListener::bind(socket)
        .map_err(|e| Error::io(format!("binding {}", socket.display()), e))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::io(format!("chmod 0600 {}", socket.display()), e))?;
    Ok(listener)
}
