//! Per-session proxy credentials: what a client must present on a listener
//! that other local processes could reach (a loopback TCP port).
//!
//! HTTP clients send `Proxy-Authorization: Basic base64(user:secret)`;
//! SOCKS5 clients use username/password authentication (RFC 1929). Both
//! come from the proxy URLs the sandbox's environment carries
//! (`http://user:secret@127.0.0.1:P`, `socks5h://user:secret@...`).

use crate::error::{Error, ErrorKind};
use std::fmt;
use std::net::SocketAddr;

/// The user name of generated credentials.
pub const SESSION_PROXY_USER: &str = "session";

/// Bytes of OS randomness in a generated secret (hex-encoded, 64 chars).
const SECRET_BYTES: usize = 32;

/// A user name and secret that every client must present. `Debug` never
/// shows the secret; [`ProxyCredentials::reveal_secret`] is the one way
/// to read it.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyCredentials {
    user: String,
    secret: String,
    /// `base64(user ":" secret)`, what a Basic header must carry.
    basic: String,
}

impl fmt::Debug for ProxyCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyCredentials")
            .field("user", &self.user)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// Characters that need no escaping in a URL's userinfo.
fn url_safe(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

impl ProxyCredentials {
    /// User [`SESSION_PROXY_USER`] and a fresh secret of 32 bytes from the
    /// operating system's random source.
    pub fn generate_from_os_rng() -> Result<ProxyCredentials, Error> {
        let mut bytes = [0u8; SECRET_BYTES];
        getrandom::fill(&mut bytes).map_err(|_| {
            Error::from(ErrorKind::InvalidConfig {
                name: "proxy credentials",
                value: String::new(),
                reason: "the operating system's random source failed",
            })
        })?;
        let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        ProxyCredentials::new(SESSION_PROXY_USER, &secret)
    }

    /// These credentials. Both parts are 1 to 255 bytes of
    /// `[A-Za-z0-9._~-]`, so the proxy URLs need no escaping and every
    /// client sends them the same way.
    pub fn new(user: &str, secret: &str) -> Result<ProxyCredentials, Error> {
        for (name, v) in [("proxy user", user), ("proxy secret", secret)] {
            if v.is_empty() || v.len() > 255 || !url_safe(v) {
                return Err(ErrorKind::InvalidConfig {
                    name,
                    value: if name == "proxy user" {
                        v.to_owned()
                    } else {
                        "<redacted>".to_owned()
                    },
                    reason: "must be 1 to 255 bytes of [A-Za-z0-9._~-]",
                }
                .into());
            }
        }
        Ok(ProxyCredentials {
            user: user.to_owned(),
            secret: secret.to_owned(),
            basic: base64(format!("{user}:{secret}").as_bytes()),
        })
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The secret itself, for building the sandbox's environment.
    pub fn reveal_secret(&self) -> &str {
        &self.secret
    }

    /// `http://user:secret@ADDR`, for `HTTP_PROXY` and `HTTPS_PROXY`.
    pub fn http_url(&self, addr: SocketAddr) -> String {
        format!("http://{}:{}@{addr}", self.user, self.secret)
    }

    /// `socks5h://user:secret@ADDR`, for `ALL_PROXY`.
    pub fn socks_url(&self, addr: SocketAddr) -> String {
        format!("socks5h://{}:{}@{addr}", self.user, self.secret)
    }

    /// Whether a `Proxy-Authorization` value is `Basic` with these
    /// credentials (scheme in any case, then spaces, then the token).
    pub(crate) fn accepts_basic(&self, value: &[u8]) -> bool {
        let Some((scheme, rest)) = value.split_at_checked(5) else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case(b"basic") || rest.first() != Some(&b' ') {
            return false;
        }
        let token = rest.trim_ascii();
        constant_time_eq(token, self.basic.as_bytes())
    }

    /// Whether an RFC 1929 user name and password are these credentials.
    pub(crate) fn accepts_userpass(&self, user: &[u8], password: &[u8]) -> bool {
        // Both compared in full, whatever the first gave.
        let u = constant_time_eq(user, self.user.as_bytes());
        let p = constant_time_eq(password, self.secret.as_bytes());
        u & p
    }
}

/// Compares without an early exit on the first differing byte (the time
/// depends on the lengths only).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff);
    }
    diff == 0
}

/// Standard base64 with padding (RFC 4648), as clients encode Basic
/// credentials.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        let sextet = |shift: u32| char::from(ALPHABET[((n >> shift) & 63) as usize]);
        out.push(sextet(18));
        out.push(sextet(12));
        out.push(if chunk.len() > 1 { sextet(6) } else { '=' });
        out.push(if chunk.len() > 2 { sextet(0) } else { '=' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn basic_values_are_checked_exactly() {
        let c = ProxyCredentials::new("session", "s3cret").unwrap();
        // base64("session:s3cret")
        assert!(c.accepts_basic(b"Basic c2Vzc2lvbjpzM2NyZXQ="));
        assert!(c.accepts_basic(b"basic   c2Vzc2lvbjpzM2NyZXQ= "));
        for bad in [
            &b"Basic c2Vzc2lvbjpzM2NyZXQ"[..],
            b"Basic c2Vzc2lvbjpzM2NyZXQ=x",
            b"Bearer c2Vzc2lvbjpzM2NyZXQ=",
            b"Basicc2Vzc2lvbjpzM2NyZXQ=",
            b"Basic",
            b"",
            b"Basic c2Vzc2lvbjpvdGhlcg==",
        ] {
            assert!(!c.accepts_basic(bad), "{}", String::from_utf8_lossy(bad));
        }
        assert!(c.accepts_userpass(b"session", b"s3cret"));
        assert!(!c.accepts_userpass(b"session", b"s3cre"));
        assert!(!c.accepts_userpass(b"other", b"s3cret"));
    }

    #[test]
    fn the_secret_never_shows_in_debug_or_errors() {
        let c = ProxyCredentials::generate_from_os_rng().unwrap();
        assert_eq!(c.reveal_secret().len(), 64);
        assert!(!format!("{c:?}").contains(c.reveal_secret()));
        let e = ProxyCredentials::new("session", "bad secret!").unwrap_err();
        assert!(!e.to_string().contains("bad secret"), "{e}");
        assert_ne!(
            ProxyCredentials::generate_from_os_rng().unwrap(),
            c,
            "fresh secrets differ"
        );
        assert_eq!(
            c.http_url("127.0.0.1:8080".parse().unwrap()),
            format!("http://session:{}@127.0.0.1:8080", c.reveal_secret())
        );
    }

    proptest! {
        #[test]
        fn only_the_exact_bytes_compare_equal(a in proptest::collection::vec(any::<u8>(), 0..80),
                                              b in proptest::collection::vec(any::<u8>(), 0..80)) {
            prop_assert_eq!(constant_time_eq(&a, &b), a == b);
        }

        #[test]
        fn a_basic_header_is_accepted_for_its_own_credentials_only(
            user in "[A-Za-z0-9._~-]{1,40}", secret in "[A-Za-z0-9._~-]{1,80}",
            other in "[A-Za-z0-9._~-]{1,80}") {
            let c = ProxyCredentials::new(&user, &secret).unwrap();
            let header = format!("Basic {}", base64(format!("{user}:{secret}").as_bytes()));
            prop_assert!(c.accepts_basic(header.as_bytes()));
            let wrong = format!("Basic {}", base64(format!("{user}:{other}").as_bytes()));
            prop_assert_eq!(c.accepts_basic(wrong.as_bytes()), other == secret);
        }
    }
}
