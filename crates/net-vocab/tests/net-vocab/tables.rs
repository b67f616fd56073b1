//! The canonical hosts, host patterns and request heads of `testdata/`,
//! and the inputs that once crashed a fuzz target.

use crate::{load, variant};
use net_vocab::{BodyFraming, ErrorKind, HeadLimits, HeadReader, Host, HostPattern, Target};
use serde::Deserialize;

#[derive(Deserialize)]
struct Canonical {
    intent: String,
    input: String,
    #[serde(default)]
    mode: Option<String>,
    expect: Option<String>,
    error: Option<String>,
}

#[test]
fn canonical_hosts() {
    for c in load::<Canonical>("canonical.toml") {
        let got = match c.mode.as_deref() {
            Some("config") => Host::parse_config(&c.input),
            _ => Host::parse_wire(&c.input),
        };
        match (&c.expect, &c.error, got) {
            (Some(want), None, Ok(h)) => assert_eq!(&h.to_string(), want, "{}", c.intent),
            (None, Some(want), Err(e)) => match e.kind() {
                ErrorKind::InvalidHost { problem, .. } => {
                    assert_eq!(&variant(problem), want, "{}", c.intent)
                }
                other => panic!("{}: unexpected error {other:?}", c.intent),
            },
            (_, _, got) => panic!("{}: got {got:?}", c.intent),
        }
    }
}

/// One row of `patterns.toml` or `pattern_differences.toml`.
#[derive(Deserialize)]
pub(crate) struct PatternCase {
    pub(crate) intent: String,
    pub(crate) entry: String,
    pub(crate) error: Option<String>,
    pub(crate) ok: Option<String>,
    #[serde(default)]
    pub(crate) matches: Vec<String>,
    #[serde(default)]
    pub(crate) misses: Vec<String>,
    #[serde(default)]
    pub(crate) targets: Vec<String>,
    #[serde(default)]
    pub(crate) other_targets: Vec<String>,
}

/// Checks one pattern row: the load outcome, then every host and target.
pub(crate) fn check_pattern(c: &PatternCase) {
    let p = match (&c.ok, &c.error, HostPattern::parse(&c.entry)) {
        (Some(want), None, Ok(p)) => {
            assert_eq!(&p.to_string(), want, "{}", c.intent);
            p
        }
        (None, Some(want), Err(e)) => {
            assert_eq!(&variant(e.kind()), want, "{}: {e}", c.intent);
            assert!(c.matches.is_empty() && c.targets.is_empty(), "{}", c.intent);
            return;
        }
        (_, _, got) => panic!("{}: got {got:?}", c.intent),
    };
    let host = |h: &str| Host::parse_wire(h).ok();
    for h in &c.matches {
        assert!(
            host(h).is_some_and(|h| p.matches(&h)),
            "{}: {h} should match",
            c.intent
        );
    }
    for h in &c.misses {
        assert!(
            !host(h).is_some_and(|h| p.matches(&h)),
            "{}: {h} should not match",
            c.intent
        );
    }
    let target = |t: &str| Target::parse_authority(t).unwrap();
    for t in &c.targets {
        assert!(
            p.matches_target(&target(t)),
            "{}: {t} should match",
            c.intent
        );
    }
    for t in &c.other_targets {
        assert!(
            !p.matches_target(&target(t)),
            "{}: {t} should not match",
            c.intent
        );
    }
}

#[test]
fn host_patterns() {
    for c in load::<PatternCase>("patterns.toml") {
        check_pattern(&c);
    }
}

/// One row of `heads.toml` or `head_differences.toml`.
#[derive(Deserialize)]
pub(crate) struct HeadCase {
    pub(crate) intent: String,
    pub(crate) raw: String,
    pub(crate) limits: Option<[usize; 3]>,
    pub(crate) expect: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) framing: Option<String>,
    pub(crate) host: Option<String>,
    pub(crate) used: Option<usize>,
}

/// Checks one head row, reading the bytes whole and one byte at a time.
pub(crate) fn check_head(c: &HeadCase) {
    let limits = match c.limits {
        Some([head, line, fields]) => HeadLimits::new(head, line, fields).unwrap(),
        None => HeadLimits::default(),
    };
    let raw = c.raw.as_bytes();
    let got = HeadReader::new(limits).read(raw);
    let stepped = net_vocab::fuzzing::read_byte_at_a_time(limits, raw);
    assert_eq!(stepped, got, "{}: byte at a time", c.intent);
    match (c.expect.as_deref(), &c.error, got) {
        (Some("ok"), None, Ok(Some((head, used)))) => {
            if let Some(want) = &c.framing {
                let framing = match head.framing() {
                    BodyFraming::None => "none".to_owned(),
                    BodyFraming::Length(n) => format!("length:{n}"),
                    BodyFraming::Chunked => "chunked".to_owned(),
                };
                assert_eq!(&framing, want, "{}", c.intent);
            }
            if c.host.is_some() {
                assert_eq!(head.host(), c.host.as_deref(), "{}", c.intent);
            }
            assert_eq!(used, c.used.unwrap_or(raw.len()), "{}", c.intent);
        }
        (Some("incomplete"), None, Ok(None)) => {}
        (None, Some(want), Err(e)) => assert_eq!(&variant(e.kind()), want, "{}: {e}", c.intent),
        (_, _, got) => panic!("{}: got {got:?}", c.intent),
    }
}

#[test]
fn request_heads() {
    for c in load::<HeadCase>("heads.toml") {
        check_head(&c);
    }
}

#[test]
fn too_large_is_marked_for_431() {
    let limits = HeadLimits::new(64, 32, 10).unwrap();
    let long_line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(40));
    let e = HeadReader::new(limits)
        .read(long_line.as_bytes())
        .unwrap_err();
    assert!(e.is_too_large(), "{e}");
    let long_head = format!("GET / HTTP/1.1\r\n{}", "A: b\r\n".repeat(10));
    let e = HeadReader::new(limits)
        .read(long_head.as_bytes())
        .unwrap_err();
    assert!(e.is_too_large(), "{e}");
    let folded = b"GET / HTTP/1.1\r\n folded\r\n\r\n";
    let e = HeadReader::new(limits).read(folded).unwrap_err();
    assert!(!e.is_too_large(), "{e}");
}

#[test]
fn limits_are_checked_when_made() {
    for (head, line, fields) in [(15, 15, 1), (2 << 20, 16, 1), (64, 65, 1), (64, 16, 0)] {
        let e = HeadLimits::new(head, line, fields).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::InvalidLimit { .. }), "{e}");
    }
    assert!(HeadLimits::new(16, 16, 1).is_ok());
}

/// Inputs that once crashed a fuzz target stay fixed.
#[test]
fn fuzz_regressions() {
    let replayed = test_support::cases::replay_fuzz_regressions(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("request_head", net_vocab::fuzzing::request_head),
            ("host", net_vocab::fuzzing::host),
        ],
    );
    assert!(replayed > 0, "no fuzz regressions replayed");
}
