//! sandbox-runtime settings files read as our policy, from
//! `testdata/srt.toml` (working directory `/w/proj`, home `/home/u`), and
//! the loader's properties.

use proptest::prelude::*;
use sandbox_core::srt::{SrtError, SrtPolicy};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize)]
struct Table {
    case: Vec<Case>,
}

/// One settings file and what it must become: the listed fields of the
/// policy (unlisted ones empty), or an error whose text holds `error`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    intent: String,
    settings: String,
    error: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    network: Option<bool>,
    #[serde(default)]
    writable: Vec<String>,
    read_only: Option<Vec<String>>,
    #[serde(default)]
    protect: Vec<String>,
    #[serde(default)]
    read_deny: Vec<String>,
    #[serde(default)]
    read_again: Vec<String>,
    #[serde(default)]
    unix_sockets: Vec<String>,
}

fn parse(text: &str) -> Result<SrtPolicy, SrtError> {
    SrtPolicy::parse(text, Path::new("/w/proj"), Path::new("/home/u"))
}

#[test]
fn srt_settings_table() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/srt.toml")).unwrap();
    let table: Table = toml::from_str(&text).unwrap();
    assert!(table.case.len() >= 30, "the table lost cases");
    for c in &table.case {
        let got = parse(&c.settings);
        match (&got, &c.error) {
            (Err(e), Some(part)) => {
                assert!(e.to_string().contains(part.as_str()), "{}: {e}", c.intent)
            }
            (Ok(p), None) => {
                let i = &c.intent;
                assert_eq!(p.allow, c.allow, "{i}: allow");
                assert_eq!(p.deny, c.deny, "{i}: deny");
                assert_eq!(p.network, c.network.unwrap_or(true), "{i}: network");
                assert_eq!(p.writable, c.writable, "{i}: writable");
                let ro = c
                    .read_only
                    .clone()
                    .unwrap_or_else(|| vec!["/w/proj".into()]);
                assert_eq!(p.read_only, ro, "{i}: read_only");
                assert_eq!(p.protect, c.protect, "{i}: protect");
                assert_eq!(p.read_deny, c.read_deny, "{i}: read_deny");
                assert_eq!(p.read_again, c.read_again, "{i}: read_again");
                assert_eq!(p.unix_sockets, c.unix_sockets, "{i}: unix_sockets");
                assert_eq!(p.workdir, "/w/proj", "{i}");
            }
            (got, want) => panic!("{}: {got:?} against {want:?}", c.intent),
        }
    }
}

#[test]
fn a_file_over_the_limit_is_refused_before_it_is_read() {
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(64 * 1024));
    assert!(matches!(parse(&big), Err(SrtError::TooLarge { .. })));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(parse(&deep), Err(SrtError::Invalid(_))));
}

fn settings_json() -> impl Strategy<Value = String> {
    let entry = prop_oneof![
        Just("\"example.com\"".to_owned()),
        Just("\"*.example.com:443\"".to_owned()),
        Just("\"~/x\"".to_owned()),
        Just("\".\"".to_owned()),
        Just("\"../..\"".to_owned()),
        Just("\"*\"".to_owned()),
        "\"[ -~]{0,12}\"".prop_map(|s| s.replace('\\', "")),
    ];
    let list = proptest::collection::vec(entry, 0..4).prop_map(|v| format!("[{}]", v.join(",")));
    (list.clone(), list.clone(), list.clone(), list.clone(), list).prop_map(|(a, d, r, w, dw)| {
        format!(
            "{{\"network\":{{\"allowedDomains\":{a},\"deniedDomains\":{d}}},\
                 \"filesystem\":{{\"denyRead\":{r},\"allowWrite\":{w},\"denyWrite\":{dw}}}}}"
        )
    })
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(s in ".{0,200}") {
        let _ = parse(&s);
    }

    #[test]
    fn every_path_of_a_policy_is_absolute_and_clean(s in settings_json()) {
        if let Ok(p) = parse(&s) {
            let all = p.writable.iter().chain(&p.read_only).chain(&p.protect)
                .chain(&p.read_deny).chain(&p.read_again).chain(&p.unix_sockets);
            for path in all {
                prop_assert!(path.starts_with('/'), "{path}");
                prop_assert!(!path.split('/').any(|c| c == "." || c == ".."), "{path}");
            }
            // What is read again lies inside what is denied.
            for r in &p.read_again {
                prop_assert!(p.read_deny.iter().any(|d| Path::new(r).starts_with(d)));
            }
        }
    }
}
