//! The SOCKS5 handshake (RFC 1928) as a byte parser: feed it what has
//! arrived, it says whether more is needed. Works one byte at a time.

use net_vocab::{Host, Target};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Reply codes the proxy sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Reply {
    /// 0x00: succeeded.
    Succeeded = 0x00,
    /// 0x02: connection not allowed by ruleset.
    NotAllowed = 0x02,
    /// 0x03: network unreachable.
    NetworkUnreachable = 0x03,
    /// 0x04: host unreachable (also: name not found).
    HostUnreachable = 0x04,
    /// 0x05: connection refused.
    Refused = 0x05,
    /// 0x07: command not supported.
    CommandNotSupported = 0x07,
    /// 0x08: address type not supported.
    AddressTypeNotSupported = 0x08,
}

impl Reply {
    /// The ten-byte reply, with an all-zero IPv4 bound address.
    pub(crate) fn bytes(self) -> [u8; 10] {
        [0x05, self as u8, 0x00, 0x01, 0, 0, 0, 0, 0, 0]
    }
}

/// The outcome of parsing the greeting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Greeting {
    /// The client offers "no authentication": answer `05 00`.
    NoAuth,
    /// The client offers username/password (RFC 1929) and the proxy
    /// requires it: answer `05 02`.
    UserPass,
    /// It offers nothing acceptable: answer `05 FF` and close.
    NoAcceptableMethod,
}

/// Which methods the proxy accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Methods {
    /// No authentication (the Unix socket and namespace listeners).
    NoAuth,
    /// Username/password only (a listener others could reach).
    UserPassOnly,
}

/// Why the handshake stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum SocksError {
    /// Not SOCKS version 5: close without a reply.
    Version(u8),
    /// A command other than CONNECT (answer 07).
    Command(u8),
    /// An address type other than 1, 3 and 4 (answer 08).
    AddressType(u8),
    /// A domain that is empty or outside the host grammar (answer 02, no
    /// lookup).
    BadDomain(Vec<u8>),
    /// A username/password request whose version is not 1 (answer `01 01`).
    AuthVersion(u8),
}

impl SocksError {
    /// The reply to send before closing, if any.
    pub(crate) fn reply(&self) -> Option<Reply> {
        match self {
            SocksError::Version(_) => None,
            SocksError::Command(_) => Some(Reply::CommandNotSupported),
            SocksError::AddressType(_) => Some(Reply::AddressTypeNotSupported),
            SocksError::BadDomain(_) => Some(Reply::NotAllowed),
            SocksError::AuthVersion(_) => None,
        }
    }
}

/// Parses the greeting `05 N methods...` against the accepted `methods`.
/// `Ok(None)`: more bytes needed.
pub(crate) fn parse_greeting(
    buf: &[u8],
    accepted: Methods,
) -> Result<Option<(Greeting, usize)>, SocksError> {
    let Some(&version) = buf.first() else {
        return Ok(None);
    };
    if version != 5 {
        return Err(SocksError::Version(version));
    }
    let Some(&n) = buf.get(1) else {
        return Ok(None);
    };
    let end = 2 + usize::from(n);
    let Some(methods) = buf.get(2..end) else {
        return Ok(None);
    };
    let greeting = match accepted {
        Methods::NoAuth if methods.contains(&0x00) => Greeting::NoAuth,
        Methods::UserPassOnly if methods.contains(&0x02) => Greeting::UserPass,
        _ => Greeting::NoAcceptableMethod,
    };
    Ok(Some((greeting, end)))
}

/// The user name, the password, and the bytes they took.
pub(crate) type UserPass<'a> = (&'a [u8], &'a [u8], usize);

/// Parses an RFC 1929 request `01 ULEN UNAME PLEN PASSWD` (each part at
/// most 255 bytes by its one-byte length). `Ok(None)`: more bytes needed.
/// Returns the user name, the password and the bytes used.
pub(crate) fn parse_userpass(buf: &[u8]) -> Result<Option<UserPass<'_>>, SocksError> {
    let Some(&version) = buf.first() else {
        return Ok(None);
    };
    if version != 1 {
        return Err(SocksError::AuthVersion(version));
    }
    let Some(&ulen) = buf.get(1) else {
        return Ok(None);
    };
    let user_end = 2 + usize::from(ulen);
    let (Some(user), Some(&plen)) = (buf.get(2..user_end), buf.get(user_end)) else {
        return Ok(None);
    };
    let pass_end = user_end + 1 + usize::from(plen);
    let Some(pass) = buf.get(user_end + 1..pass_end) else {
        return Ok(None);
    };
    Ok(Some((user, pass, pass_end)))
}

/// Parses the request `05 CMD 00 ATYP ADDR PORT`. `Ok(None)`: more bytes
/// needed. A domain is checked against the host grammar before anything
/// else sees it.
pub(crate) fn parse_request(buf: &[u8]) -> Result<Option<(Target, usize)>, SocksError> {
    let Some(header) = buf.get(..4) else {
        if let Some(&v) = buf.first()
            && v != 5
        {
            return Err(SocksError::Version(v));
        }
        return Ok(None);
    };
    let (version, command, atyp) = (header[0], header[1], header[3]);
    if version != 5 {
        return Err(SocksError::Version(version));
    }
    if command != 0x01 {
        return Err(SocksError::Command(command));
    }
    let (host, addr_end) = match atyp {
        0x01 => {
            let Some(b) = buf.get(4..8) else {
                return Ok(None);
            };
            let ip = Ipv4Addr::new(b[0], b[1], b[2], b[3]);
            (Host::Ip(IpAddr::V4(ip)), 8)
        }
        0x04 => {
            let Some(b) = buf.get(4..20) else {
                return Ok(None);
            };
            let mut octets = [0u8; 16];
            octets.copy_from_slice(b);
            (Host::Ip(IpAddr::V6(Ipv6Addr::from(octets))), 20)
        }
        0x03 => {
            let Some(&len) = buf.get(4) else {
                return Ok(None);
            };
            let end = 5 + usize::from(len);
            let Some(name) = buf.get(5..end) else {
                return Ok(None);
            };
            match Host::parse_wire_bytes(name) {
                Ok(host) if !name.is_empty() => (host, end),
                _ => return Err(SocksError::BadDomain(name.to_vec())),
            }
        }
        other => return Err(SocksError::AddressType(other)),
    };
    let Some(p) = buf.get(addr_end..addr_end + 2) else {
        return Ok(None);
    };
    let port = u16::from_be_bytes([p[0], p[1]]);
    if port == 0 {
        return Err(SocksError::BadDomain(b"port 0".to_vec()));
    }
    Ok(Some((Target::new(host, port), addr_end + 2)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn byte_at_a_time() {
        let req = [
            5, 1, 0, 3, 11, b'e', b'x', b'a', b'm', b'p', b'l', b'e', b'.', b'c', b'o', b'm', 1,
            187,
        ];
        for i in 0..req.len() {
            assert_eq!(parse_request(&req[..i]), Ok(None));
        }
        let (t, used) = parse_request(&req).unwrap().unwrap();
        assert_eq!(
            (t.to_string().as_str(), used),
            ("example.com:443", req.len())
        );
        assert_eq!(parse_greeting(&[5, 1], Methods::NoAuth), Ok(None));
        assert_eq!(
            parse_greeting(&[5, 1, 2], Methods::NoAuth),
            Ok(Some((Greeting::NoAcceptableMethod, 3)))
        );
        assert_eq!(
            parse_greeting(&[5, 2, 0, 2], Methods::UserPassOnly),
            Ok(Some((Greeting::UserPass, 4)))
        );
        // No authentication is never enough where credentials are required.
        assert_eq!(
            parse_greeting(&[5, 1, 0], Methods::UserPassOnly),
            Ok(Some((Greeting::NoAcceptableMethod, 3)))
        );
        let auth = [1, 2, b'u', b's', 3, b'p', b'w', b'd'];
        for i in 0..auth.len() {
            assert_eq!(parse_userpass(&auth[..i]), Ok(None), "{i}");
        }
        assert_eq!(
            parse_userpass(&auth),
            Ok(Some((&b"us"[..], &b"pwd"[..], auth.len())))
        );
        assert_eq!(parse_userpass(&[5, 0, 0]), Err(SocksError::AuthVersion(5)));
        assert_eq!(
            parse_userpass(&[1, 0, 0]),
            Ok(Some((&b""[..], &b""[..], 3)))
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 3, 3, b'a', 0, b'b', 0, 80]),
            Err(SocksError::BadDomain(vec![b'a', 0, b'b']))
        );
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_greeting(&bytes, Methods::NoAuth);
            let _ = parse_greeting(&bytes, Methods::UserPassOnly);
            let _ = parse_request(&bytes);
            if let Ok(Some((u, p, used))) = parse_userpass(&bytes) {
                prop_assert!(used <= bytes.len());
                prop_assert_eq!(used, 3 + u.len() + p.len());
            }
        }

        #[test]
        fn userpass_round_trips(user in proptest::collection::vec(any::<u8>(), 0..256),
                                pass in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut wire = vec![1, user.len() as u8];
            wire.extend(&user);
            wire.push(pass.len() as u8);
            wire.extend(&pass);
            prop_assert_eq!(parse_userpass(&wire), Ok(Some((&user[..], &pass[..], wire.len()))));
        }
    }
}
