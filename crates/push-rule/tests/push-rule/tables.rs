//! The behaviour tables: pkt-lines and command lists, push rules, and
//! the refusal in git's report format.

use crate::support::{RULE, body_of, gzip, load, push_body, rule, variant};
use push_rule::{
    GitLimits, ObjectFormat, Permission, Pkt, PushRule, PushRuleSpec, ReceivePack, Verdict,
    decode_body, parse_receive_pack, read_all, report_refused, report_status,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct PktCase {
    intent: String,
    pkts: Vec<String>,
    #[serde(default)]
    gzip: bool,
    encoding: Option<String>,
    max_inflated: Option<u64>,
    error: Option<String>,
    updates: Option<usize>,
    format: Option<String>,
    options: Option<Vec<String>>,
    caps: Option<Vec<String>>,
    kinds: Option<Vec<String>>,
}

#[test]
fn pktline_table() {
    for case in load::<PktCase>("pktline.toml") {
        let intent = &case.intent;
        let mut body = body_of(&case.pkts);
        let mut encoding = case.encoding.clone();
        if case.gzip {
            body = gzip(&body);
            encoding = Some("gzip".to_owned());
        }
        let mut limits = GitLimits::default();
        if let Some(m) = case.max_inflated {
            limits = limits.max_inflated_body(m);
        }
        let parsed = decode_body(
            encoding.as_deref().map(str::as_bytes),
            &body,
            limits.inflated_body_limit(),
        )
        .and_then(|b| parse_receive_pack(&b, &limits));
        match (&case.error, parsed) {
            (Some(want), Err(e)) => {
                assert_eq!(&variant(e.kind()), want, "{intent}: {e}");
                assert!(!e.kind().is_config(), "{intent}: {e}");
            }
            (Some(want), Ok(rp)) => panic!("{intent}: expected {want}, got {rp:?}"),
            (None, Err(e)) => panic!("{intent}: refused: {e}"),
            (None, Ok(rp)) => check_accepted(&case, &rp),
        }
    }
}

fn check_accepted(case: &PktCase, rp: &ReceivePack) {
    let intent = &case.intent;
    assert_eq!(Some(rp.updates().len()), case.updates, "{intent}");
    let format = match rp.object_format() {
        ObjectFormat::Sha256 => "sha256",
        _ => "sha1",
    };
    assert_eq!(format, case.format.as_deref().unwrap_or("sha1"), "{intent}");
    if let Some(o) = &case.options {
        assert_eq!(rp.push_options(), o.as_slice(), "{intent}");
    }
    if let Some(c) = &case.caps {
        assert_eq!(rp.capabilities(), c.as_slice(), "{intent}");
    }
    if let Some(k) = &case.kinds {
        let got: Vec<String> = rp.updates().iter().map(|u| variant(&u.kind())).collect();
        assert_eq!(&got, k, "{intent}");
    }
}

#[derive(Deserialize)]
struct RuleCase {
    intent: String,
    rule: String,
    /// (old, new, ref) with `a`/`b` for ids and "" for zero.
    updates: Vec<[String; 3]>,
    /// Expected refusal variant per ref, "" for none.
    refusals: Vec<String>,
}

#[test]
fn push_rule_table() {
    let limits = GitLimits::default();
    for case in load::<RuleCase>("push_rules.toml") {
        let r = rule(&case.rule);
        let ids = |s: &str| match s {
            "" => "0".repeat(40),
            other => other.repeat(40),
        };
        let owned: Vec<(String, String, String)> = case
            .updates
            .iter()
            .map(|[o, n, r]| (ids(o), ids(n), r.clone()))
            .collect();
        let refs: Vec<(&str, &str, &str)> = owned
            .iter()
            .map(|(o, n, r)| (o.as_str(), n.as_str(), r.as_str()))
            .collect();
        let rp = parse_receive_pack(
            &push_body(ObjectFormat::Sha1, &refs, "report-status"),
            &limits,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.intent));
        let d = r.check(&rp, None, &limits);
        let got: Vec<String> = d
            .refs()
            .iter()
            .map(|v| v.refusal().map(variant).unwrap_or_default())
            .collect();
        assert_eq!(got, case.refusals, "{}", case.intent);
        let allowed = case.refusals.iter().all(String::is_empty);
        assert_eq!(d.verdict() == Verdict::Allow, allowed, "{}", case.intent);
    }
    assert!(PushRule::compile(&PushRuleSpec::new(["refs/heads/**/x"]), "s1").is_err());
    assert!(PushRule::compile(&PushRuleSpec::new(["refs/heads/x"]), "../x").is_err());
    assert!(PushRuleSpec::from_toml("refs = []\nforse = \"allow\"").is_err());
    assert_eq!(PushRuleSpec::new(["refs/heads/x"]).force, Permission::Deny);
}

#[test]
fn refusal_in_gits_report_format() {
    let limits = GitLimits::default();
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    for (caps, banded) in [
        ("report-status", false),
        ("report-status side-band-64k", true),
    ] {
        let body = push_body(
            ObjectFormat::Sha1,
            &[
                ("", &b, "refs/heads/agent/s1/ok"),
                (&a, &b, "refs/heads/main"),
            ],
            caps,
        );
        let rp = parse_receive_pack(&body, &limits).unwrap();
        let d = rule(RULE).check(&rp, None, &limits);
        let report = report_status(&d, &rp).unwrap();
        let inner = if banded {
            // One band-1 packet holding the report, then a flush.
            let pkts = read_all(&report, 10).unwrap();
            assert_eq!(pkts.len(), 2);
            let Pkt::Data(d) = pkts[0] else { panic!() };
            assert_eq!(d[0], 1);
            d[1..].to_vec()
        } else {
            report
        };
        let lines: Vec<String> = read_all(&inner, 10)
            .unwrap()
            .into_iter()
            .map(|p| match p {
                Pkt::Data(d) => String::from_utf8(d.to_vec()).unwrap(),
                _ => "0000".to_owned(),
            })
            .collect();
        assert_eq!(
            lines,
            [
                "unpack ok\n",
                "ng refs/heads/agent/s1/ok another ref in this push is refused\n",
                "ng refs/heads/main ref not allowed by the push rule\n",
                "0000",
            ]
        );
    }
}

/// The lines of a report, unwrapped from side-band 1 when `banded`.
fn report_lines(report: &[u8], banded: bool) -> Vec<String> {
    let inner = if banded {
        let pkts = read_all(report, 10).unwrap();
        assert_eq!(pkts.len(), 2);
        let Pkt::Data(d) = pkts[0] else { panic!() };
        assert_eq!(d[0], 1);
        d[1..].to_vec()
    } else {
        report.to_vec()
    };
    read_all(&inner, 10)
        .unwrap()
        .into_iter()
        .map(|p| match p {
            Pkt::Data(d) => String::from_utf8(d.to_vec()).unwrap(),
            _ => "0000".to_owned(),
        })
        .collect()
}

#[test]
fn a_push_refused_as_a_whole_names_every_ref_with_the_one_reason() {
    let limits = GitLimits::default();
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    for (caps, banded) in [
        ("report-status", false),
        ("report-status side-band-64k", true),
    ] {
        let body = push_body(
            ObjectFormat::Sha1,
            &[
                ("", &b, "refs/heads/agent/s1/ok"),
                (&a, &b, "refs/heads/main"),
            ],
            caps,
        );
        let rp = parse_receive_pack(&body, &limits).unwrap();
        let report = report_refused(&rp, "no rule\there").unwrap();
        assert_eq!(
            report_lines(&report, banded),
            [
                "unpack ok\n",
                "ng refs/heads/agent/s1/ok no rule here\n",
                "ng refs/heads/main no rule here\n",
                "0000",
            ],
            "{caps}"
        );
    }
    // git's probe before a large push names no ref: `unpack ok` alone.
    let rp = parse_receive_pack(b"0000", &limits).unwrap();
    assert_eq!(
        report_lines(&report_refused(&rp, "no rule").unwrap(), false),
        ["unpack ok\n", "0000"]
    );
}

#[test]
fn a_compiled_rule_names_its_patterns_with_the_session() {
    let spec = PushRuleSpec::new(["refs/heads/agent/{session}/*", "refs/tags/**"]);
    let rule = PushRule::compile(&spec, "s1").unwrap();
    assert_eq!(rule.patterns(), ["refs/heads/agent/s1/*", "refs/tags/**"]);
}

#[derive(Deserialize)]
struct RefFileCase {
    intent: String,
    kind: String,
    text: String,
    want: String,
}

#[test]
fn ref_files_table() {
    for case in load::<RefFileCase>("ref_files.toml") {
        let bytes = case.text.as_bytes();
        let got = match case.kind.as_str() {
            "loose" => push_rule::loose_ref_id(bytes, ObjectFormat::Sha1).map(|id| id.to_owned()),
            "packed" => push_rule::packed_ref_id(bytes, "refs/heads/task", ObjectFormat::Sha1)
                .map(|id| id.unwrap_or("none").to_owned()),
            other => panic!("{}: no kind {other}", case.intent),
        };
        let got = got.unwrap_or_else(|e| format!("{e:?}"));
        assert_eq!(got, case.want, "{}", case.intent);
    }
}

proptest::proptest! {
    /// Any bytes: never a panic, and an id given is one of the format
    /// found in the bytes.
    #[test]
    fn ref_files_take_any_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
            if let Ok(id) = push_rule::loose_ref_id(&bytes, format) {
                proptest::prop_assert_eq!(id.len(), format.hex_len());
            }
            if let Ok(Some(id)) = push_rule::packed_ref_id(&bytes, "refs/heads/task", format) {
                proptest::prop_assert_eq!(id.len(), format.hex_len());
            }
        }
    }
}
