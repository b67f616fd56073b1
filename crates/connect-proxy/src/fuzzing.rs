//! Entry points for the fuzz targets under `fuzz/`. Each one drives a
//! parser of untrusted bytes and checks the properties it promises; any
//! panic is a bug.

use crate::allowlist::{AllowList, Baseline};
use crate::host::{Host, Target};
use crate::http_head::{find_head_end, parse_head};
use crate::pattern::Pattern;
use crate::policy::{DenyReason, Verdict};
use crate::socks_wire::{Methods, parse_greeting, parse_request, parse_userpass};

/// The HTTP request head: framing search, parse, then target handling.
pub fn request_head(data: &[u8]) {
    let Some(end) = find_head_end(data, 0) else {
        return;
    };
    let Ok(head) = parse_head(&data[..end], 16 * 1024) else {
        return;
    };
    if head.method == "CONNECT" {
        let _ = Target::parse_authority(&head.target);
    } else {
        let _ = crate::http_proxy::forward_target(&head);
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

/// The host parsers, the allowlist entry parser and the matcher; canonical
/// forms must be fixed points, and an exact entry must match its own host.
pub fn host(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        let _ = Host::parse_wire_bytes(data);
        return;
    };
    for h in [Host::parse_wire(text), Host::parse_config(text)]
        .into_iter()
        .flatten()
    {
        let again = Host::parse_wire(&h.to_string());
        assert_eq!(
            again.as_ref().ok(),
            Some(&h),
            "canonical form is not stable"
        );
    }
    let _ = Target::parse_authority(text);
    if let Ok(p) = Pattern::parse(text) {
        let again = Pattern::parse(&p.to_string());
        assert_eq!(
            again.as_ref().ok(),
            Some(&p),
            "entry display does not re-parse"
        );
        let mut builder = AllowList::builder();
        builder.baseline(Baseline::Include).allow(text);
        if let Ok(list) = builder.build()
            && !text.contains('*')
            && p.port().is_none()
            && let Ok(h) = Host::parse_config(text)
        {
            let verdict = list.decide(&h, 443);
            assert!(
                matches!(
                    verdict,
                    Verdict::Allow | Verdict::Deny(DenyReason::Denylisted)
                ),
                "an exact entry does not match its own host: {verdict:?}"
            );
        }
    }
    if let Ok(h) = Host::parse_wire(text)
        && let Ok(list) = AllowList::builder().baseline(Baseline::Include).build()
    {
        let _ = list.decide(&h, 443);
    }
}
