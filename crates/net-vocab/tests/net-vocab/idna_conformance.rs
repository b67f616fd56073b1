//! UTS #46 conformance of configuration entries, against the Unicode
//! consortium's `IdnaTestV2.txt` (Unicode 16.0.0, under the Unicode License
//! V3 in `testdata/idna/LICENSE-UNICODE`).
//!
//! Every line's source goes through `Host::parse_config` and is compared
//! with the non-transitional _ToASCII_ column (`toAsciiN`, the transitional
//! columns are not used):
//!
//! - `toAsciiN` without an error: the canonical host must be exactly that
//!   value, unless the value is outside the stricter host grammar (a
//!   character other than letters, digits, `-`, `_`; an empty label; a label
//!   over 63 or a name over 253 bytes; a numeric last label, which is read
//!   as an IPv4 literal or refused). Those are counted per category as
//!   "stricter, by design", and each is checked to really be outside the
//!   grammar.
//! - `toAsciiN` with an error: the entry must be refused. Three exceptions
//!   are counted, each checked narrowly: a name whose only error is the
//!   empty root label after a trailing dot (the canonical form drops the
//!   root dot, as for `example.com.`); a `_` refused only by
//!   _UseSTD3ASCIIRules_ (the host grammar accepts `_`); a plain ASCII name
//!   (no `xn--` label) refused only for `--` in the third and fourth
//!   positions (plain ASCII names are matched as DNS names, and real host
//!   names such as `r3---sn-abc.googlevideo.com` have this shape). In all
//!   three, the canonical host must still equal the `toAsciiN` value (minus
//!   the root dot).
//!
//! Everything else is a mismatch, and the test fails. Lines whose source
//! holds an unpaired surrogate (`\uD900`) cannot be a Rust `&str` and are
//! counted as skipped. For accepted names, the allowlist entry parser must
//! agree (`name` and `*.name`).

use net_vocab::{ErrorKind, Host, HostPattern, HostProblem, MAX_HOST_LEN, MAX_LABEL_LEN};
use std::collections::BTreeMap;
use std::path::Path;

/// One line of the file, with blanks resolved to the values they stand for.
struct Line {
    number: usize,
    /// `None` when the source is not representable as a `&str`.
    source: Option<String>,
    to_ascii_n: String,
    to_ascii_n_status: Vec<String>,
}

/// Unescapes `\uXXXX` and `\x{X...}`; `None` for a surrogate code point.
fn unescape(field: &str) -> Option<String> {
    if field == "\"\"" {
        return Some(String::new());
    }
    let mut out = String::new();
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let esc = &rest[at + 1..];
        let (hex, used) = if let Some(h) = esc.strip_prefix('u') {
            (&h[..4], 5)
        } else if let Some(h) = esc.strip_prefix("x{") {
            let end = h.find('}').expect("unterminated \\x{");
            (&h[..end], end + 3)
        } else {
            panic!("unknown escape in {field:?}");
        };
        let code = u32::from_str_radix(hex, 16).expect("escape is not hex");
        out.push(char::from_u32(code)?);
        rest = &esc[used..];
    }
    out.push_str(rest);
    Some(out)
}

fn status(field: &str) -> Vec<String> {
    let inner = field
        .strip_prefix('[')
        .and_then(|f| f.strip_suffix(']'))
        .unwrap_or_else(|| panic!("bad status {field:?}"));
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn load() -> Vec<Line> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/idna/IdnaTestV2.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let data = raw.split('#').next().unwrap_or("");
        if data.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = data.split(';').map(str::trim).collect();
        assert_eq!(cols.len(), 7, "line {}: {raw:?}", i + 1);
        let source = unescape(cols[0]);
        // A blank toUnicode is the source; a blank toAsciiN is toUnicode.
        let to_unicode = match (cols[1], &source) {
            ("", Some(s)) => Some(s.clone()),
            ("", None) => None,
            (c, _) => unescape(c),
        };
        let to_unicode_status = match cols[2] {
            "" => Vec::new(),
            c => status(c),
        };
        let to_ascii_n = match cols[3] {
            "" => to_unicode.clone().unwrap_or_default(),
            c => unescape(c).unwrap_or_default(),
        };
        // A blank toAsciiNStatus is toUnicodeStatus; an explicit [] is none.
        let to_ascii_n_status = match cols[4] {
            "" => to_unicode_status,
            c => status(c),
        };
        lines.push(Line {
            number: i + 1,
            source,
            to_ascii_n,
            to_ascii_n_status,
        });
    }
    lines
}

/// Why a `toAsciiN` value is outside the host grammar, if it is. Expects a
/// value without its root dot.
fn outside_grammar(value: &str) -> Option<&'static str> {
    if value.is_empty() || value.split('.').any(str::is_empty) {
        return Some("empty label");
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        return Some("character outside letters, digits, '-', '_'");
    }
    if value.split('.').any(|l| l.len() > MAX_LABEL_LEN) {
        return Some("label over 63 bytes");
    }
    if value.len() > MAX_HOST_LEN {
        return Some("name over 253 bytes");
    }
    if value
        .split('.')
        .any(|l| l.starts_with('-') || l.ends_with('-'))
    {
        return Some("leading or trailing hyphen");
    }
    let last = value.rsplit('.').next().unwrap_or(value);
    let numeric = match last.strip_prefix("0x") {
        Some(hex) => hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => last.bytes().all(|b| b.is_ascii_digit()),
    };
    if numeric {
        return Some("numeric last label (IPv4 literal or refused)");
    }
    None
}

fn has_plain_ascii_hyphen34(value: &str) -> bool {
    value
        .split('.')
        .any(|l| l.len() >= 4 && &l[2..4] == "--" && !l.starts_with("xn--"))
}

#[derive(Default)]
struct Summary {
    checked: usize,
    exact: usize,
    refused_as_expected: usize,
    stricter: BTreeMap<&'static str, usize>,
    wider: BTreeMap<&'static str, usize>,
    skipped: usize,
    entry_checks: usize,
    mismatches: Vec<String>,
}

impl Summary {
    fn mismatch(&mut self, line: &Line, source: &str, got: &Result<Host, net_vocab::Error>) {
        self.mismatches.push(format!(
            "line {}: source {source:?}: toAsciiN {:?} {:?}, got {got:?}",
            line.number, line.to_ascii_n, line.to_ascii_n_status
        ));
    }
}

fn check_entry(summary: &mut Summary, line: &Line, source: &str, host: &Host) {
    let Host::Name(name) = host else {
        return;
    };
    if source.contains('*') {
        return;
    }
    summary.entry_checks += 1;
    let exact = HostPattern::parse(source).map(|p| p.to_string());
    if exact.as_deref() != Ok(name.as_str()) {
        summary.mismatches.push(format!(
            "line {}: entry {source:?} gives {exact:?}, host gives {name:?}",
            line.number
        ));
    }
    // A wildcard's shortest match must fit in the host length too.
    if name.contains('.') && name.len() + 2 <= MAX_HOST_LEN {
        let wildcard = HostPattern::parse(&format!("*.{source}")).map(|p| p.to_string());
        if wildcard.as_deref() != Ok(format!("*.{name}").as_str()) {
            summary.mismatches.push(format!(
                "line {}: entry \"*.{source}\" gives {wildcard:?}",
                line.number
            ));
        }
    }
}

fn run(lines: &[Line]) -> Summary {
    let mut summary = Summary::default();
    for line in lines {
        let Some(source) = &line.source else {
            summary.skipped += 1;
            continue;
        };
        summary.checked += 1;
        let got = Host::parse_config(source);
        let expected = line.to_ascii_n.to_lowercase();
        let (expected_name, root_dot) = match expected.strip_suffix('.') {
            Some(e) => (e, true),
            None => (expected.as_str(), false),
        };
        let same = |h: &Host| h.to_string() == expected_name;
        if line.to_ascii_n_status.is_empty() {
            match (&got, outside_grammar(expected_name)) {
                (Ok(h), None) if same(h) => {
                    if root_dot {
                        *summary.stricter.entry("root dot removed").or_default() += 1;
                    } else {
                        summary.exact += 1;
                    }
                    check_entry(&mut summary, line, source, h);
                }
                (Ok(h), Some(why @ "numeric last label (IPv4 literal or refused)"))
                    if Host::parse_wire(expected_name).as_ref() == Ok(h) =>
                {
                    *summary.stricter.entry(why).or_default() += 1;
                }
                (Err(_), Some(why)) => *summary.stricter.entry(why).or_default() += 1,
                _ => summary.mismatch(line, source, &got),
            }
            continue;
        }
        let Ok(h) = &got else {
            summary.refused_as_expected += 1;
            continue;
        };
        let codes: Vec<&str> = line.to_ascii_n_status.iter().map(String::as_str).collect();
        let only = |allowed: &[&str]| codes.iter().all(|c| allowed.contains(c));
        let why = if !same(h) || outside_grammar(expected_name).is_some() {
            None
        } else if root_dot && only(&["A4_2"]) {
            Some("root dot removed (UTS #46 VerifyDnsLength refuses the empty root label)")
        } else if only(&["U1"]) && expected_name.contains('_') {
            Some("'_' accepted (UseSTD3ASCIIRules is not applied; the grammar allows '_')")
        } else if only(&["V2"]) && source.is_ascii() && has_plain_ascii_hyphen34(expected_name) {
            Some("'--' in positions 3-4 of a plain ASCII name (no IDNA processing)")
        } else {
            None
        };
        match why {
            Some(why) => {
                *summary.wider.entry(why).or_default() += 1;
                check_entry(&mut summary, line, source, h);
            }
            None => summary.mismatch(line, source, &got),
        }
    }
    summary
}

#[test]
fn idna_test_v2_non_transitional() {
    let lines = load();
    assert!(lines.len() > 6000, "only {} test lines", lines.len());
    let summary = run(&lines);
    println!("IdnaTestV2.txt (toAsciiN, non-transitional) through Host::parse_config:");
    println!("  lines checked:                 {}", summary.checked);
    println!("  skipped (unpaired surrogate):  {}", summary.skipped);
    println!("  exact matches:                 {}", summary.exact);
    println!(
        "  refused, as UTS #46 refuses:   {}",
        summary.refused_as_expected
    );
    println!(
        "  stricter, by design:           {}",
        summary.stricter.values().sum::<usize>()
    );
    for (why, n) in &summary.stricter {
        println!("    {n:5}  {why}");
    }
    println!(
        "  accepted where UTS #46 (all flags on) refuses, by design: {}",
        summary.wider.values().sum::<usize>()
    );
    for (why, n) in &summary.wider {
        println!("    {n:5}  {why}");
    }
    println!("  entry parser cross-checks:     {}", summary.entry_checks);
    println!(
        "  mismatches:                    {}",
        summary.mismatches.len()
    );
    for m in summary.mismatches.iter().take(50) {
        println!("    {m}");
    }
    assert!(
        summary.mismatches.is_empty(),
        "{} mismatches",
        summary.mismatches.len()
    );
    assert!(summary.exact >= 500, "too few exact matches");
}

#[test]
fn fuzz_properties_hold_on_every_source() {
    // Canonical forms are fixed points, entries re-parse from their display
    // and an exact entry matches its own host, for every source in the file.
    for line in load() {
        if let Some(source) = &line.source {
            net_vocab::fuzzing::host(source.as_bytes());
        }
    }
}

#[test]
fn refusals_are_typed() {
    // A disallowed code point, a bidi violation and a bad `xn--` label are
    // all `HostProblem::Idna`.
    for source in [
        "a\u{FFFD}b.example",
        "0à.\u{5D0}",
        "xn--zz-.example",
        "xn--abc.example",
    ] {
        match Host::parse_config(source).unwrap_err().kind() {
            ErrorKind::InvalidHost { problem, .. } => {
                assert_eq!(*problem, HostProblem::Idna, "{source}")
            }
            other => panic!("{source}: {other:?}"),
        }
    }
}
