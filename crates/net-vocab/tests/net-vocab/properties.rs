//! Properties next to the tables: no parser panics, canonical forms are
//! fixed points, displays re-parse, a pattern matches the hosts it is
//! written for, and the head reader does not depend on how bytes arrive.

use net_vocab::fuzzing::examples;
use net_vocab::{HeadLimits, HeadReader, HeaderField, Host, HostPattern, PatternShape, Target};
use proptest::prelude::*;
use std::net::Ipv4Addr;

/// Authorities of every shape: names in any case, IPv4 in its spellings,
/// IPv6 bracketed or not, with a port, without, or a bad one.
fn authority() -> impl Strategy<Value = String> {
    let host = prop_oneof![
        "[A-Za-z0-9-]{1,8}(\\.[A-Za-z0-9-]{1,8}){0,2}\\.?",
        "(0x)?[0-9]{1,3}(\\.[0-9]{1,4}){0,3}",
        Just("[::1]".to_owned()),
        Just("[2001:db8::1]".to_owned()),
        Just("::1".to_owned()),
        "[ -~]{0,6}",
    ];
    let port = prop_oneof![
        Just(String::new()),
        (1u32..=65535).prop_map(|p| format!(":{p}")),
        Just(":0".to_owned()),
        Just(":".to_owned()),
        Just(":99999".to_owned()),
    ];
    (host, port).prop_map(|(h, p)| format!("{h}{p}"))
}

/// Bytes that look like request heads often enough to reach the checks.
fn head_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"GET / HTTP/1.1\r\n".to_vec()),
        Just(b"CONNECT a.example:443 HTTP/1.1\r\n".to_vec()),
        Just(b"Host: a.example\r\n".to_vec()),
        Just(b"Content-Length: 5\r\n".to_vec()),
        Just(b"Transfer-Encoding: chunked\r\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just(b" ".to_vec()),
        Just(b":".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn hosts_never_panic_and_are_idempotent(s in ".{0,80}") {
        for h in [Host::parse_wire(&s), Host::parse_config(&s)].into_iter().flatten() {
            let again = Host::parse_wire(&h.to_string()).unwrap();
            prop_assert_eq!(again, h);
        }
    }

    #[test]
    // No label holds two hyphens in a row: `xn--` and `ab--` labels are
    // IDNA's, checked by the conformance tests, not plain names.
    fn names_round_trip(s in "[a-zA-Z][a-zA-Z0-9]{0,10}(\\.[a-zA-Z](-?[a-zA-Z0-9]){0,10}[a-z]){1,4}\\.?") {
        let h = Host::parse_wire(&s).unwrap();
        let expected = s.to_ascii_lowercase();
        prop_assert_eq!(h.to_string(), expected.strip_suffix('.').unwrap_or(&expected));
    }

    #[test]
    fn ipv4_dotted_is_literal(a: u8, b: u8, c: u8, d: u8) {
        let s = format!("{a}.{b}.{c}.{d}");
        prop_assert_eq!(Host::parse_wire(&s).unwrap(), Host::Ip(Ipv4Addr::new(a, b, c, d).into()));
    }

    #[test]
    fn targets_never_panic_and_re_parse(s in "[\\[\\]:0-9a-f.]{0,40}") {
        if let Ok(t) = Target::parse_authority(&s) {
            prop_assert_eq!(Target::parse_authority(&t.to_string()).unwrap(), t);
        }
    }

    #[test]
    fn pattern_display_reparses(s in "[*a-zA-Z0-9.:\\[\\]-]{0,24}") {
        if let Ok(p) = HostPattern::parse(&s) {
            prop_assert_eq!(HostPattern::parse(&p.to_string()).unwrap(), p);
        }
    }

    #[test]
    fn a_pattern_matches_its_own_examples(
        left in "([a-z0-9]{1,6}\\.){0,2}",
        star in 0..3u8,
        // No two hyphens in a row (an `xn--` label must be valid Punycode).
        right in "[a-z](-?[a-z0-9]){0,6}[a-z]\\.[a-z]{2,5}",
    ) {
        let entry = match star {
            0 => format!("{left}{right}"),
            1 => format!("*.{right}"),
            _ => format!("{left}*.{right}"),
        };
        let p = HostPattern::parse(&entry).unwrap();
        let examples = examples(&p);
        prop_assert!(!examples.is_empty());
        for e in examples {
            let h = Host::parse_wire(&e).unwrap();
            prop_assert!(p.matches(&h), "{} does not match {}", p, e);
        }
        // A leading wildcard never matches its apex; a middle one never
        // matches two labels in place of its `*`.
        match p.shape() {
            PatternShape::Suffix(s) => {
                prop_assert!(!p.matches(&Host::parse_wire(s).unwrap()));
            }
            PatternShape::Middle { left, right } => {
                let two = Host::parse_wire(&format!("{left}.a.b.{right}")).unwrap();
                prop_assert!(!p.matches(&two));
            }
            PatternShape::Exact(_) => {}
        }
    }

    #[test]
    fn heads_never_panic_and_arrive_in_any_pieces(bytes in head_bytes(), cut in any::<prop::sample::Index>()) {
        let limits = HeadLimits::new(512, 128, 8).unwrap();
        let whole = HeadReader::new(limits).read(&bytes);
        let at = cut.index(bytes.len() + 1);
        let mut reader = HeadReader::new(limits);
        let pieces = match reader.read(&bytes[..at]) {
            Ok(None) => reader.read(&bytes),
            done => done,
        };
        prop_assert_eq!(pieces, whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        net_vocab::fuzzing::request_head(&bytes);
        net_vocab::fuzzing::host(&bytes);
    }

    /// A field line gives back its name as spelled and its value without
    /// the whitespace around it, whatever bytes the value holds; equal
    /// lines give equal fields, and the same bytes split at another colon
    /// give another field.
    #[test]
    fn a_field_line_splits_into_its_name_and_trimmed_value(
        name in "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}",
        pad in "[ \t]{0,3}",
        value in proptest::collection::vec(
            prop_oneof![Just(b'\t'), 0x20u8..0x7f, 0x80u8..=0xff], 0..24),
    ) {
        let mut line = format!("{name}:{pad}").into_bytes();
        line.extend_from_slice(&value);
        line.extend_from_slice(pad.as_bytes());
        let f = HeaderField::parse_line(&line, 0).unwrap();
        let trimmed: &[u8] = {
            let start = value.iter().position(|b| !matches!(b, b' ' | b'\t')).unwrap_or(value.len());
            let end = value.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(start, |e| e + 1);
            &value[start..end]
        };
        prop_assert_eq!(f.name(), name.as_str());
        prop_assert_eq!(f.value(), trimmed);
        prop_assert!(f.is(&name.to_ascii_uppercase()) && f.is(&name.to_ascii_lowercase()));
        prop_assert_eq!(f.value_str().is_some(), trimmed.is_ascii());
        prop_assert_eq!(&HeaderField::parse_line(&line, 0).unwrap(), &f);
        // The same bytes with the colon moved into the name give another
        // field.
        if name.len() > 1 {
            let mut moved = format!("{}:{}", &name[..1], &name[1..]).into_bytes();
            moved.extend_from_slice(trimmed);
            let g = HeaderField::parse_line(&moved, 0).unwrap();
            prop_assert_ne!(&g, &f);
            prop_assert!(!g.is(&name));
        }
    }

    /// A CONNECT head's target read as an authority is what
    /// `Target::parse_authority` makes of it, whether the `Host` field
    /// spells the same text (its reading is reused), another authority or
    /// none; and the reuse never changes which heads are refused.
    #[test]
    fn the_authority_target_is_the_parse_of_the_request_target(
        target in authority(),
        host in prop_oneof![Just(None), Just(Some(String::new())), authority().prop_map(Some)],
    ) {
        let host = host.map(|h| if h.is_empty() { target.clone() } else { h });
        let mut wire = format!("CONNECT {target} HTTP/1.1\r\n");
        if let Some(h) = &host {
            wire.push_str(&format!("Host: {h}\r\n"));
        }
        wire.push_str("\r\n");
        let read = HeadReader::new(HeadLimits::default()).read(wire.as_bytes());
        if let Ok(Some((head, _))) = read {
            let parsed = Target::parse_authority(head.target());
            match head.authority_target() {
                Ok(t) => prop_assert_eq!(Some(t), parsed.ok()),
                Err(e) => prop_assert_eq!(Some(e.to_string()), parsed.err().map(|e| e.to_string())),
            }
        }
    }
}
