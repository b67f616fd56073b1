//! The proxy stage's settings and the variables it writes.

use std::ffi::OsString;
use std::net::SocketAddr;

/// The session's proxy pair, as the sandboxed process reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProxyEnv {
    /// The HTTP/HTTPS (CONNECT) proxy: `HTTP_PROXY`, `HTTPS_PROXY` and their
    /// lower-case forms become `http://ADDR`.
    pub http: SocketAddr,
    /// The SOCKS5 proxy: `ALL_PROXY` and `all_proxy` become
    /// `socks5h://ADDR` (names resolved by the proxy), and
    /// `GIT_SSH_COMMAND` routes ssh through it.
    pub socks: SocketAddr,
}

/// What `NO_PROXY` and `no_proxy` say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoProxy {
    /// Empty: every connection goes through the proxy (the default).
    #[default]
    Empty,
    /// `localhost,127.0.0.1,::1`: loopback is reached directly.
    Loopback,
}

/// The program `GIT_SSH_COMMAND`'s `ProxyCommand` uses to reach the SOCKS5
/// proxy. It must exist where the sandboxed process runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SshProxyTool {
    /// OpenBSD netcat: `nc -X 5 -x ADDR %h %p` (the default).
    #[default]
    Netcat,
    /// Nmap's ncat: `ncat --proxy-type socks5 --proxy ADDR %h %p`.
    Ncat,
    /// Do not write `GIT_SSH_COMMAND` (an inherited one is still deleted).
    Omit,
}

/// The `(name, value)` pairs the proxy stage writes.
pub(crate) fn proxy_vars(
    proxy: &ProxyEnv,
    no_proxy: NoProxy,
    ssh: SshProxyTool,
) -> Vec<(&'static str, OsString)> {
    let http = OsString::from(format!("http://{}", proxy.http));
    let socks = OsString::from(format!("socks5h://{}", proxy.socks));
    let none = OsString::from(match no_proxy {
        NoProxy::Empty => "",
        NoProxy::Loopback => "localhost,127.0.0.1,::1",
    });
    let mut out = vec![
        ("HTTP_PROXY", http.clone()),
        ("http_proxy", http.clone()),
        ("HTTPS_PROXY", http.clone()),
        ("https_proxy", http),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", none.clone()),
        ("no_proxy", none),
    ];
    // The address comes from a SocketAddr, so it holds no shell or ssh
    // metacharacters; the whole ProxyCommand is one quoted ssh option.
    let command = match ssh {
        SshProxyTool::Netcat => Some(format!("nc -X 5 -x {} %h %p", proxy.socks)),
        SshProxyTool::Ncat => Some(format!(
            "ncat --proxy-type socks5 --proxy {} %h %p",
            proxy.socks
        )),
        SshProxyTool::Omit => None,
    };
    if let Some(command) = command {
        out.push((
            "GIT_SSH_COMMAND",
            OsString::from(format!("ssh -o \"ProxyCommand={command}\"")),
        ));
    }
    out
}
