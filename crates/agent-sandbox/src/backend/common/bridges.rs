//! The host side of the bridges: a Unix socket per proxy in the session's
//! private directory, served by the session's proxies themselves (no
//! loopback port, no relay in between).

use crate::Error;
use connect_proxy::ProxyKind;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tokio::net::UnixListener;

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
