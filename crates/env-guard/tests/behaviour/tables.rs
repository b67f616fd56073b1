//! Loads `testdata/*.toml` and checks every case.

use env_guard::{EnvGuard, EnvGuardBuilder, ErrorKind, Inherit, NoProxy, ProxyEnv, SshProxyTool};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    inherit: Option<String>,
    set: Vec<(String, String)>,
    include: Vec<String>,
    proxy: Option<Proxy>,
    no_proxy: Option<String>,
    ssh: Option<String>,
    ca: Option<String>,
}

#[derive(Deserialize)]
struct Proxy {
    http: String,
    socks: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineCase {
    intent: String,
    #[serde(flatten)]
    settings: Settings,
    input: Vec<(String, String)>,
    kept: BTreeMap<String, String>,
    #[serde(default)]
    exact: bool,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    dropped: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct File<T> {
    case: Vec<T>,
}

/// Decodes `\xNN` escapes into raw bytes, so tables can hold non-UTF-8.
fn bytes(s: &str) -> OsString {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 3 < b.len() {
            let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

fn builder(s: &Settings) -> EnvGuardBuilder {
    let mut b = EnvGuard::builder();
    b.inherit(match s.inherit.as_deref() {
        None | Some("core") => Inherit::Core,
        Some("all") => Inherit::All,
        Some("none") => Inherit::None,
        Some(other) => panic!("unknown inherit {other}"),
    });
    for (n, v) in &s.set {
        b.set(n.clone(), v.clone());
    }
    for n in &s.include {
        b.include(n.clone());
    }
    if let Some(p) = &s.proxy {
        b.proxy(ProxyEnv {
            http: p.http.parse().unwrap(),
            socks: p.socks.parse().unwrap(),
        });
    }
    match s.no_proxy.as_deref() {
        None | Some("empty") => b.no_proxy(NoProxy::Empty),
        Some("loopback") => b.no_proxy(NoProxy::Loopback),
        Some(other) => panic!("unknown no_proxy {other}"),
    };
    match s.ssh.as_deref() {
        None | Some("netcat") => b.ssh_proxy_tool(SshProxyTool::Netcat),
        Some("ncat") => b.ssh_proxy_tool(SshProxyTool::Ncat),
        Some("omit") => b.ssh_proxy_tool(SshProxyTool::Omit),
        Some(other) => panic!("unknown ssh {other}"),
    };
    if let Some(ca) = &s.ca {
        b.ca_bundle(ca);
    }
    b
}

fn load<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str::<File<T>>(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .case
}

#[test]
fn pipeline_table() {
    let cases: Vec<PipelineCase> = load("pipeline.toml");
    assert!(cases.len() >= 20);
    for case in cases {
        let intent = &case.intent;
        let guard = builder(&case.settings)
            .build()
            .unwrap_or_else(|e| panic!("{intent}: build: {e}"));
        let out = guard.apply(case.input.iter().map(|(n, v)| (bytes(n), bytes(v))));
        for (name, value) in &case.kept {
            let got = out.vars.iter().find(|(n, _)| *n == bytes(name));
            assert_eq!(
                got.map(|(_, v)| v.clone()),
                Some(bytes(value)),
                "{intent}: {name}"
            );
        }
        if case.exact {
            let names: Vec<_> = out.vars.iter().map(|(n, _)| n.to_string_lossy()).collect();
            assert_eq!(
                out.vars.len(),
                case.kept.len(),
                "{intent}: output {names:?}"
            );
        }
        for name in &case.absent {
            assert!(
                !out.vars.iter().any(|(n, _)| *n == bytes(name)),
                "{intent}: {name} should be absent"
            );
        }
        for (name, rule) in &case.dropped {
            let rules: Vec<_> = out
                .dropped
                .iter()
                .filter(|d| d.name == bytes(name))
                .map(|d| d.rule.label())
                .collect();
            assert!(!rules.is_empty(), "{intent}: {name} not reported");
            assert!(
                rules.iter().all(|r| r == rule),
                "{intent}: {name} dropped by {rules:?}, expected {rule}"
            );
        }
        // Every input variable is either passed on or reported.
        for (name, _) in &case.input {
            let name = bytes(name);
            assert!(
                out.vars.iter().any(|(n, _)| *n == name)
                    || out.dropped.iter().any(|d| d.name == name),
                "{intent}: {name:?} neither kept nor reported"
            );
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorCase {
    intent: String,
    #[serde(flatten)]
    settings: Settings,
    error: String,
}

fn kind_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidName { .. } => "InvalidName",
        ErrorKind::AlwaysDeleted { .. } => "AlwaysDeleted",
        ErrorKind::InvalidValue { .. } => "InvalidValue",
        ErrorKind::Conflict { .. } => "Conflict",
        ErrorKind::InvalidCaPath { .. } => "InvalidCaPath",
        ErrorKind::InputTooLarge { .. } => "InputTooLarge",
        ErrorKind::TooManyRecords { .. } => "TooManyRecords",
        ErrorKind::MissingEquals { .. } => "MissingEquals",
        _ => "unknown",
    }
}

#[test]
fn builder_error_table() {
    let cases: Vec<ErrorCase> = load("builder-errors.toml");
    assert!(cases.len() >= 8);
    for case in cases {
        let err = builder(&case.settings)
            .build()
            .err()
            .unwrap_or_else(|| panic!("{}: built", case.intent));
        assert_eq!(kind_name(err.kind()), case.error, "{}: {err}", case.intent);
        assert!(!err.to_string().is_empty());
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordCase {
    intent: String,
    input: String,
    #[serde(default)]
    records: Option<Vec<(String, String)>>,
    #[serde(default)]
    error: Option<String>,
}

#[test]
fn records_table() {
    let cases: Vec<RecordCase> = load("records.toml");
    for case in cases {
        let got = env_guard::parse_records(case.input.as_bytes());
        match (&case.records, &case.error, got) {
            (Some(want), None, Ok(got)) => {
                let want: Vec<_> = want
                    .iter()
                    .map(|(n, v)| (OsString::from(n), OsString::from(v)))
                    .collect();
                assert_eq!(got, want, "{}", case.intent);
                // Writing them back and parsing again is the identity.
                let again = env_guard::parse_records(&env_guard::write_records(&got)).unwrap();
                assert_eq!(again, got, "{}", case.intent);
            }
            (None, Some(want), Err(e)) => assert_eq!(kind_name(e.kind()), want, "{}", case.intent),
            (_, _, got) => panic!("{}: got {got:?}", case.intent),
        }
    }
}

#[test]
fn records_limits() {
    let big = vec![b'A'; env_guard::MAX_INPUT_BYTES + 1];
    let e = env_guard::parse_records(&big).unwrap_err();
    assert_eq!(kind_name(e.kind()), "InputTooLarge");
    let many: Vec<u8> = std::iter::repeat_n(*b"A=\0", env_guard::MAX_RECORDS + 1)
        .flatten()
        .collect();
    let e = env_guard::parse_records(&many).unwrap_err();
    assert_eq!(kind_name(e.kind()), "TooManyRecords");
    let ok: Vec<u8> = std::iter::repeat_n(*b"A=\0", env_guard::MAX_RECORDS)
        .flatten()
        .collect();
    assert_eq!(
        env_guard::parse_records(&ok).unwrap().len(),
        env_guard::MAX_RECORDS
    );
}

#[test]
fn dropped_reports_never_carry_values() {
    let guard = EnvGuard::builder().inherit(Inherit::All).build().unwrap();
    let out = guard.apply([
        ("GITHUB_TOKEN", "ghp_SECRETVALUE"),
        ("LD_PRELOAD", "/evil.so"),
    ]);
    let report = format!("{:?}", out.dropped);
    assert!(!report.contains("SECRETVALUE") && !report.contains("evil"));
    assert_eq!(out.dropped.len(), 2);
    assert!(out.dropped.iter().all(|d| !d.name.as_bytes().is_empty()));
}
