//! Entry points for the fuzz targets under `fuzz/`. Each one drives a
//! parser of untrusted bytes and checks the properties it promises; any
//! panic is a bug. The host and head parsers themselves are fuzzed in
//! `net_vocab::fuzzing`; these drive what this crate does with them.

use crate::allowlist::{AllowList, Baseline};
use crate::baseline::DENYLIST;
use crate::policy::{DenyReason, Verdict};
use crate::socks_wire::{Methods, parse_greeting, parse_request, parse_userpass};
use net_vocab::{HeadLimits, HeadReader, Host, HostPattern, Target};

/// The HTTP request head: read, then target handling.
pub fn request_head(data: &[u8]) {
    let Ok(Some((head, _))) = HeadReader::new(HeadLimits::default()).read(data) else {
        return;
    };
    if head.method() == "CONNECT" {
        let _ = Target::parse_authority(head.target());
    } else if let Ok((target, path)) = crate::http_proxy::forward_target(&head) {
        assert!(path.starts_with('/'), "origin-form path {path:?}");
        assert!(target.port != 0);
    }
}

/// The SOCKS5 greeting, the username/password request and the request,
/// whole and one prefix at a time.
pub fn socks_handshake(data: &[u8]) {
    let data = &data[..data.len().min(600)];
    for i in 0..=data.len() {
        if let Ok(Some((u, p, used))) = parse_userpass(&data[..i]) {
            assert!(
                used <= i && used == 3 + u.len() + p.len(),
                "bad userpass split"
            );
        }
    }
    let _ = parse_greeting(data, Methods::UserPassOnly);
    if let Ok(Some((_, used))) = parse_greeting(data, Methods::NoAuth) {
        let rest = &data[used..];
        let whole = parse_request(rest);
        for i in 0..rest.len() {
            if let Ok(Some((_, n))) = parse_request(&rest[..i]) {
                assert!(n <= i, "consumed more than was given");
            }
        }
        if let Ok(Some((target, n))) = whole {
            assert!(n <= rest.len());
            assert!(target.port != 0);
        }
    }
}

/// The allowlist over one entry: its label index answers as the entry's
/// own matcher does for the hosts the entry is written for and for the
/// input read as a host, and an exact entry matches its own host (unless
/// the denylist takes it).
pub fn allowlist(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let denylist: Vec<HostPattern> = DENYLIST
        .iter()
        .filter_map(|e| HostPattern::parse(e).ok())
        .collect();
    if let Ok(p) = HostPattern::parse(text)
        && let Ok(list) = AllowList::builder()
            .baseline(Baseline::Exclude)
            .allow(text)
            .build()
    {
        let hosts = net_vocab::fuzzing::examples(&p)
            .iter()
            .chain([text.to_owned()].iter())
            .filter_map(|h| Host::parse_wire(h).ok())
            .collect::<Vec<_>>();
        for h in hosts {
            for port in [443, p.port().unwrap_or(80)] {
                let target = Target::new(h.clone(), port);
                let listed = p.matches_target(&target);
                let denied = denylist.iter().any(|d| d.matches_target(&target));
                let want = match (denied, listed) {
                    (true, _) => Verdict::Deny(DenyReason::Denylisted),
                    (false, true) => Verdict::Allow,
                    (false, false) => Verdict::Deny(DenyReason::NotAllowed),
                };
                assert_eq!(list.decide(&h, port), want, "{p} on {h}:{port}");
            }
        }
    }
    if let Ok(h) = Host::parse_wire(text)
        && let Ok(list) = AllowList::builder().baseline(Baseline::Include).build()
    {
        let _ = list.decide(&h, 443);
    }
}
