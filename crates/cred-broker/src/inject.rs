//! The upstream head: the client's credentials out, exactly one real
//! credential header in.

use crate::credential::Credential;
use crate::error::{Error, ErrorKind, LeaseErrorKind, RulesErrorKind, truncate};
use crate::head::RequestHead;
use crate::lease::Lease;
use crate::parser::Request;
use crate::reframe::write_head;
use crate::secret::WipeBuf;
use net_vocab::{HeaderField, Host, Target};
use std::fmt;
use std::net::IpAddr;
use std::time::SystemTime;

/// Headers that ask an upstream to treat a request as another method.
const METHOD_OVERRIDES: &[&str] = &[
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// Whether a `Host` value names the connection's target (the host and
/// port of the `CONNECT` the proxy allowed, which is authoritative): the
/// same canonical host, and the same port (a `Host` without a port means
/// 443, as the broker speaks HTTPS).
pub(crate) fn host_agrees(target: &Target, host_header: &str) -> bool {
    Target::parse_authority_or(host_header, 443).is_ok_and(|t| t == *target)
}

/// A target with its canonical spellings as a `Host` value (`host:port`,
/// and the bare host when the port is 443), made once per connection so
/// that a `Host` sent as the proxy saw the target agrees by comparing
/// bytes; any other spelling is parsed as [`host_agrees`] does. Both ways
/// give the same answer: a canonical spelling parses back to its target.
#[derive(Debug, Clone)]
pub(crate) struct SpelledTarget {
    target: Target,
    with_port: String,
    bare: Option<String>,
}

impl SpelledTarget {
    pub(crate) fn new(target: Target) -> SpelledTarget {
        let with_port = target.to_string();
        let bare = (target.port == 443).then(|| match &target.host {
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
            host => host.to_string(),
        });
        SpelledTarget {
            target,
            with_port,
            bare,
        }
    }

    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// [`host_agrees`] for this target.
    pub(crate) fn agrees(&self, host_header: &str) -> bool {
        host_header == self.with_port
            || self.bare.as_deref() == Some(host_header)
            || host_agrees(&self.target, host_header)
    }
}

/// The canonical host of a host as sent on the wire, with or without a
/// port (IPv6 with or without brackets when it has none); `None` when it
/// is not one.
pub(crate) fn wire_host(host: &str) -> Option<Host> {
    Host::parse_wire(host)
        .or_else(|_| Target::parse_authority(host).map(|t| t.host))
        .ok()
}

/// A request head ready for the upstream, holding the real credential.
/// Its buffer is wiped when dropped; `Debug` shows the request line and
/// header names only.
pub struct UpstreamHead {
    bytes: WipeBuf,
    line_end: usize,
}

impl UpstreamHead {
    /// The head bytes to write upstream (through the empty line); the
    /// request's decoded body follows them.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }
}

impl fmt::Debug for UpstreamHead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.bytes.as_slice();
        let line = String::from_utf8_lossy(&bytes[..self.line_end]);
        let names: Vec<String> = bytes[self.line_end..]
            .split(|&b| b == b'\n')
            .filter_map(|l| l.iter().position(|&b| b == b':').map(|i| &l[..i]))
            .map(|n| String::from_utf8_lossy(n).trim().to_owned())
            .collect();
        f.debug_struct("UpstreamHead")
            .field("request_line", &line)
            .field("header_names", &names)
            .finish()
    }
}

/// Builds the upstream head for `request` on a connection to `target`.
///
/// Refused (403, nothing injected) when the lease is revoked or expired at
/// `now`, was granted for another credential, when the request's `Host`
/// disagrees with `target`, or when the credential may not go to `target`.
/// Otherwise: the request line as sent, the forwarded fields without any
/// client `Authorization`, `Proxy-Authorization` or field of the
/// credential's own header name, exactly one credential header, and a
/// `Content-Length` of our own for the body. Nothing is written into the
/// target or the body.
pub fn upstream_head(
    request: &Request,
    target: &Target,
    lease: &Lease,
    credential: &Credential,
    now: SystemTime,
) -> Result<UpstreamHead, Error> {
    let body = Body {
        len: request.body().len(),
        drop_encoding: false,
    };
    let target = SpelledTarget::new(target.clone());
    upstream_head_for(request.head(), body, &target, lease, credential, now)
}

/// The body an upstream head announces: its length, and whether it was
/// read and decoded whole before forwarding (then the client's
/// `Content-Encoding` and `Expect` are dropped).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Body {
    pub(crate) len: usize,
    pub(crate) drop_encoding: bool,
}

/// [`upstream_head`] for a head whose body is held elsewhere.
pub(crate) fn upstream_head_for(
    head: &RequestHead,
    body: Body,
    spelled: &SpelledTarget,
    lease: &Lease,
    credential: &Credential,
    now: SystemTime,
) -> Result<UpstreamHead, Error> {
    lease.check(now)?;
    if lease.credential() != credential.name {
        return Err(LeaseErrorKind::CredentialMismatch {
            lease: truncate(lease.credential()),
            credential: truncate(&credential.name),
        }
        .into());
    }
    let target = spelled.target();
    if !spelled.agrees(head.host()) {
        return Err(RulesErrorKind::TargetMismatch {
            host: truncate(head.host()),
            target: target.to_string(),
        }
        .into());
    }
    if !credential.allows_host(&target.host) {
        return Err(LeaseErrorKind::HostNotAllowed {
            credential: truncate(&credential.name),
            host: target.host.to_string(),
        }
        .into());
    }
    let own = credential.template.header_name();
    // Method-override headers would make some upstreams run another method
    // than the one the rules decided on: they never go upstream.
    let skip = |f: &HeaderField| {
        f.is("authorization")
            || f.is("proxy-authorization")
            || f.is(own)
            || METHOD_OVERRIDES.iter().any(|h| f.is(h))
            || (body.drop_encoding && (f.is("content-encoding") || f.is("expect")))
    };
    // The part without the credential holds no secret; build it first to
    // size the wiped buffer exactly.
    let mut plain = Vec::with_capacity(256);
    write_head(head, body.len, Some(&skip), &mut plain);
    let secret = credential.secret.expose();
    let value_len = credential.template.value_len(secret.len());
    let total = plain.len() + own.len() + 2 + value_len + 4;
    let mut out = WipeBuf::with_capacity(total);
    let line_end = plain.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
    let ok = out.push(&plain)
        && out.push(own.as_bytes())
        && out.push(b": ")
        && credential.template.write_value(secret, &mut out)
        && out.push(b"\r\n\r\n");
    if !ok {
        return Err(ErrorKind::InvalidConfig {
            name: "upstream head",
            value: format!("{total} bytes"),
            reason: "the head did not fit its computed size",
        }
        .into());
    }
    Ok(UpstreamHead {
        bytes: out,
        line_end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn target() -> impl Strategy<Value = Target> {
        let name = "[a-z][a-z0-9-]{0,10}(\\.[a-z][a-z0-9-]{0,10}){0,2}"
            .prop_filter_map("a wire host", |n| Host::parse_wire(&n).ok());
        let v4 = any::<[u8; 4]>().prop_map(|o| Host::Ip(IpAddr::from(o)));
        let v6 = any::<[u16; 8]>().prop_map(|s| Host::Ip(IpAddr::from(s)));
        let port = prop_oneof![Just(443u16), 1u16..];
        (prop_oneof![name, v4, v6], port).prop_map(|(h, p)| Target::new(h, p))
    }

    /// Spellings close to a target's: its own, another case, another
    /// port, brackets, a trailing dot, bytes added or cut.
    fn spelling(t: &Target) -> impl Strategy<Value = String> + use<> {
        let full = t.to_string();
        let host = match &t.host {
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
            h => h.to_string(),
        };
        prop_oneof![
            Just(full.clone()),
            Just(host.clone()),
            Just(full.to_ascii_uppercase()),
            Just(format!("{host}.:{}", t.port)),
            Just(format!("{host}:443")),
            Just(format!("{host}:0{}", t.port)),
            (0..=full.len()).prop_map(move |n| full.get(..n).unwrap_or("").to_owned()),
            "[ -~]{0,3}".prop_map(move |s| format!("{host}{s}")),
        ]
    }

    proptest! {
        /// The byte comparison with a connection's spellings never
        /// answers otherwise than parsing the `Host` would.
        #[test]
        fn spelled_agreement_is_parsed_agreement(
            (t, host) in target().prop_flat_map(|t| { let s = spelling(&t); (Just(t), s) })
        ) {
            let spelled = SpelledTarget::new(t.clone());
            prop_assert_eq!(spelled.agrees(&host), host_agrees(&t, &host));
        }

        /// The canonical spellings agree (the case the comparison is for).
        #[test]
        fn canonical_spellings_agree(t in target()) {
            let spelled = SpelledTarget::new(t.clone());
            prop_assert!(host_agrees(&t, &t.to_string()));
            prop_assert!(spelled.agrees(&t.to_string()));
            if let Some(bare) = spelled.bare.as_deref() {
                prop_assert!(host_agrees(&t, bare));
            }
        }
    }
}
