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

/// The user name and secret the session's proxies require, written into
/// the proxy URLs (`http://USER:SECRET@ADDR`, `socks5h://USER:SECRET@ADDR`)
/// and into an ncat `ProxyCommand`. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyAuth {
    user: String,
    secret: String,
}

impl std::fmt::Debug for ProxyAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyAuth")
            .field("user", &self.user)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl ProxyAuth {
    /// These credentials: each 1 to 255 bytes of `[A-Za-z0-9._~-]` (no
    /// escaping in a URL, no shell or ssh metacharacters), else `None`.
    pub fn new(user: &str, secret: &str) -> Option<ProxyAuth> {
        let ok = |s: &str| {
            (1..=255).contains(&s.len())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        };
        (ok(user) && ok(secret)).then(|| ProxyAuth {
            user: user.to_owned(),
            secret: secret.to_owned(),
        })
    }

    fn userinfo(&self) -> String {
        format!("{}:{}@", self.user, self.secret)
    }
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
    /// OpenBSD netcat: `nc -X 5 -x ADDR %h %p` (the default). It cannot
    /// authenticate to a SOCKS5 proxy, so it cannot be combined with
    /// [`ProxyAuth`].
    #[default]
    Netcat,
    /// Nmap's ncat: `ncat --proxy-type socks5 --proxy ADDR %h %p`, with
    /// `--proxy-auth USER:SECRET` when the proxies require credentials.
    Ncat,
    /// Do not write `GIT_SSH_COMMAND` (an inherited one is still deleted).
    Omit,
}

/// The `(name, value)` pairs the proxy stage writes.
pub(crate) fn proxy_vars(
    proxy: &ProxyEnv,
    auth: Option<&ProxyAuth>,
    no_proxy: NoProxy,
    ssh: SshProxyTool,
) -> Vec<(&'static str, OsString)> {
    let userinfo = auth.map(ProxyAuth::userinfo).unwrap_or_default();
    let http = OsString::from(format!("http://{userinfo}{}", proxy.http));
    let socks = OsString::from(format!("socks5h://{userinfo}{}", proxy.socks));
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
        SshProxyTool::Ncat => Some(match auth {
            None => format!("ncat --proxy-type socks5 --proxy {} %h %p", proxy.socks),
            Some(a) => format!(
                "ncat --proxy-type socks5 --proxy {} --proxy-auth {}:{} %h %p",
                proxy.socks, a.user, a.secret
            ),
        }),
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

#[cfg(test)]
mod tests {
    use crate::{EnvGuard, ErrorKind, ProxyAuth, ProxyEnv, SshProxyTool};

    fn proxy() -> ProxyEnv {
        ProxyEnv {
            http: "127.0.0.1:3128".parse().unwrap(),
            socks: "127.0.0.1:1080".parse().unwrap(),
        }
    }

    #[test]
    fn credentials_go_into_every_proxy_url_and_the_ncat_command() {
        let auth = ProxyAuth::new("session", "s3cr3t").unwrap();
        assert!(!format!("{auth:?}").contains("s3cr3t"));
        let mut b = EnvGuard::builder();
        b.proxy(proxy())
            .proxy_auth(auth)
            .ssh_proxy_tool(SshProxyTool::Ncat);
        let out = b.build().unwrap().apply(Vec::<(String, String)>::new());
        let get = |n: &str| out.get(n).unwrap().to_str().unwrap().to_owned();
        for n in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"] {
            assert_eq!(get(n), "http://session:s3cr3t@127.0.0.1:3128", "{n}");
        }
        assert_eq!(get("ALL_PROXY"), "socks5h://session:s3cr3t@127.0.0.1:1080");
        assert!(
            get("GIT_SSH_COMMAND").contains("--proxy-auth session:s3cr3t %h %p"),
            "{}",
            get("GIT_SSH_COMMAND")
        );
    }

    #[test]
    fn netcat_cannot_carry_credentials_and_unsafe_ones_are_refused() {
        let mut b = EnvGuard::builder();
        b.proxy(proxy())
            .proxy_auth(ProxyAuth::new("session", "x").unwrap());
        assert_eq!(
            b.build().unwrap_err().kind(),
            &ErrorKind::SshToolCannotAuthenticate
        );
        b.ssh_proxy_tool(SshProxyTool::Omit);
        assert!(b.build().is_ok());
        for (u, s) in [
            ("", "x"),
            ("u", ""),
            ("u:v", "x"),
            ("u", "a b"),
            ("u", "x\"y"),
        ] {
            assert!(ProxyAuth::new(u, s).is_none(), "{u:?} {s:?}");
        }
    }
}
