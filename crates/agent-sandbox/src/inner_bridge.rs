//! How a Linux sandbox reaches its proxies on 127.0.0.1 inside: the
//! ports and the bridge choice. Part of the API on every platform (a host
//! program builds the same way everywhere); only the bubblewrap backend
//! (Linux) acts on it.

/// The loopback port inside the sandbox where the HTTP proxy answers.
pub const GUEST_HTTP_PORT: u16 = 3128;
/// The loopback port inside the sandbox where the SOCKS5 proxy answers.
pub const GUEST_SOCKS_PORT: u16 = 1080;

/// How the sandbox reaches its proxies on 127.0.0.1 inside (R-BWRAP-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum InnerBridge {
    /// Bind the listeners inside the sandbox's network namespace from the
    /// host side before the command starts (no process inside); falls back
    /// to [`InnerBridge::Socat`] when the namespaces cannot be joined. The
    /// default.
    #[default]
    HostSideListeners,
    /// `socat` listeners started inside the sandbox, forwarding to Unix
    /// sockets bound into it.
    Socat,
}
