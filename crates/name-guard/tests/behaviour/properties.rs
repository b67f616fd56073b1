//! Properties of the pure parts: rule matching against a reference matcher,
//! and denial reports read back as written.

use name_guard::{
    DeniedCall, Invocation, MAX_REPORT_LINE, Rules, format_denial_line, parse_denial_line,
};
use proptest::prelude::*;
use std::os::unix::ffi::OsStringExt;

/// The obvious recursive matcher: `*` any run without `/`, `?` one byte
/// other than `/`, the rest ASCII case-insensitive.
fn reference(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            reference(&p[1..], s) || (!s.is_empty() && s[0] != b'/' && reference(p, &s[1..]))
        }
        (Some(b'?'), Some(&c)) => c != b'/' && reference(&p[1..], &s[1..]),
        (Some(&a), Some(&c)) => a.eq_ignore_ascii_case(&c) && reference(&p[1..], &s[1..]),
        _ => false,
    }
}

fn glob() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('*'),
            Just('?'),
            Just('.'),
            Just('a'),
            Just('B'),
            Just('k')
        ],
        1..8,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            Just(b'.'),
            Just(b'a'),
            Just(b'A'),
            Just(b'b'),
            Just(b'K'),
            Just(b'/'),
            Just(0xC3u8)
        ],
        0..12,
    )
}

const CALLS: [DeniedCall; 8] = [
    DeniedCall::Open,
    DeniedCall::Creat,
    DeniedCall::Mknod,
    DeniedCall::Rename,
    DeniedCall::Link,
    DeniedCall::Symlink,
    DeniedCall::Mkdir,
    DeniedCall::Bind,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A glob rule decides exactly as the reference matcher.
    #[test]
    fn glob_rules_match_like_the_reference(g in glob(), n in name()) {
        let rules = Rules::new([g.as_str()]).unwrap();
        prop_assert_eq!(rules.denies_name(&n), reference(g.as_bytes(), &n), "{:?} vs {:?}", g, n);
    }

    /// An absolute-path rule with or without wildcards decides like the
    /// reference on the whole path (the literal ones go through a set).
    #[test]
    fn path_rules_match_like_the_reference(g in glob(), n in name()) {
        let rule = format!("/w/{g}");
        let mut path = b"/w/".to_vec();
        path.extend_from_slice(&n);
        let rules = Rules::new([rule.as_str()]).unwrap();
        prop_assert_eq!(rules.denies_path(&path), reference(rule.as_bytes(), &path));
    }

    /// Every report line parses back to the call and the (lossily decoded)
    /// path, is one line, and stays within the limit.
    #[test]
    fn report_lines_round_trip(call in 0usize..8, path in proptest::collection::vec(any::<u8>(), 0..300)) {
        let call = CALLS[call];
        let line = format_denial_line(call, &path);
        prop_assert!(line.len() <= MAX_REPORT_LINE);
        prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        match parse_denial_line(&line) {
            Ok(d) => {
                prop_assert_eq!(d.call, call);
                prop_assert_eq!(d.path, String::from_utf8_lossy(&path).into_owned());
            }
            // Only an empty path is refused.
            Err(_) => prop_assert!(path.is_empty()),
        }
    }

    /// Arbitrary bytes never panic the report parser or the argument parser.
    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_denial_line(&bytes);
        let args: Vec<std::ffi::OsString> = bytes
            .split(|&b| b == b' ')
            .map(|a| std::ffi::OsString::from_vec(a.to_vec()))
            .collect();
        let _ = Invocation::parse(args);
    }
}

/// A process name as the kernel shows it: up to 16 bytes of anything but
/// NUL, parentheses, spaces and newlines included.
fn comm() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            Just(b')'),
            Just(b'('),
            Just(b' '),
            Just(b'\n'),
            Just(b'Z'),
            1u8..=255
        ],
        0..16,
    )
}

proptest! {
    /// Whatever a process names itself, its stat line gives its real
    /// parent and state.
    #[test]
    fn a_stat_line_reads_the_same_whatever_the_name(
        name in comm(),
        ppid in 0i32..i32::MAX,
        zombie in any::<bool>(),
    ) {
        let mut line = b"7 (".to_vec();
        line.extend_from_slice(&name);
        let state = if zombie { "Z" } else { "S" };
        line.extend_from_slice(format!(") {state} {ppid} 7 7 0 -1 4194560 0").as_bytes());
        prop_assert_eq!(name_guard::fuzzing::proc_stat(&line), Some((ppid, zombie)));
    }

    /// Arbitrary bytes never panic either reader.
    #[test]
    fn proc_text_readers_take_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = name_guard::fuzzing::proc_stat(&data);
        let _ = name_guard::fuzzing::proc_status(&data);
    }

    /// A status file whose name line holds a forged `Tgid:` reads the
    /// real one: only whole lines that start with it count.
    #[test]
    fn a_status_file_is_not_fooled_by_the_name(name in comm(), tgid in 1u32..4_000_000) {
        let name: Vec<u8> = name.into_iter().filter(|&b| b != b'\n').collect();
        let mut text = b"Name:\t".to_vec();
        text.extend_from_slice(&name);
        text.extend_from_slice(format!("\nUmask:\t0027\nState:\tS (sleeping)\nTgid:\t{tgid}\n").as_bytes());
        prop_assert_eq!(name_guard::fuzzing::proc_status(&text), Some((tgid, 0o027)));
    }
}
