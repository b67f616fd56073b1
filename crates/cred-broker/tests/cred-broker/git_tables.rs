//! The smart-HTTP classifier's tables: git requests by method, path and
//! headers, and every push body of `push-rule`'s pkt-line table through
//! the classifier (refused exactly when the push parser refuses it, and
//! answered 400).

use crate::support::{load, request};
use cred_broker::push_rule::{GitLimits, Pkt, write_pkt};
use cred_broker::{
    Classification, ClassifyInput, Error, GitClassifier, GitRequest, RequestClassifier,
    decoded_body,
};
use serde::Deserialize;
use std::io::Write;
use std::path::Path;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn expand(s: &str) -> String {
    s.replace("{A64}", &"a".repeat(64))
        .replace("{B64}", &"b".repeat(64))
        .replace("{Z64}", &"0".repeat(64))
        .replace("{AH}", &"61".repeat(40))
        .replace("{BH}", &"62".repeat(40))
        .replace("{A}", &"a".repeat(40))
        .replace("{B}", &"b".repeat(40))
        .replace("{C}", &"c".repeat(40))
        .replace("{Z}", &"0".repeat(40))
}

fn body_of(pkts: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pkts {
        let p = expand(p);
        if p == "flush" {
            out.extend_from_slice(b"0000");
        } else if p == "delim" {
            out.extend_from_slice(b"0001");
        } else if let Some(raw) = p.strip_prefix("raw:") {
            out.extend_from_slice(raw.as_bytes());
        } else if let Some(h) = p.strip_prefix("rawhex:") {
            out.extend(hex(h));
        } else {
            let data = match p.strip_prefix("hexpkt:") {
                Some(h) => hex(h),
                None => p.into_bytes(),
            };
            write_pkt(&mut out, Pkt::Data(&data)).unwrap();
        }
    }
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A case of `push-rule`'s pkt-line table, as far as the classifier
/// needs it.
#[derive(Deserialize)]
struct PktCase {
    intent: String,
    pkts: Vec<String>,
    #[serde(default)]
    gzip: bool,
    encoding: Option<String>,
    max_inflated: Option<u64>,
    error: Option<String>,
}

#[test]
fn pktline_table_through_the_classifier() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../push-rule/testdata");
    for case in test_support::cases::load::<PktCase>(&dir, "pktline.toml") {
        let intent = &case.intent;
        let mut body = body_of(&case.pkts);
        let mut encoding = case.encoding.clone();
        if case.gzip {
            body = gzip(&body);
            encoding = Some("gzip".to_owned());
        }
        let extra = encoding
            .map(|e| format!("Content-Encoding: {e}\r\n"))
            .unwrap_or_default();
        let req = request("POST", "/o/r.git/git-receive-pack", &extra, &body);
        let input = ClassifyInput::with_body(req.head(), req.body());
        let mut limits = GitLimits::default();
        if let Some(m) = case.max_inflated {
            limits = limits.max_inflated_body(m);
        }
        let parsed = decoded_body(&input, req.body(), limits.inflated_body_limit()).and_then(|b| {
            cred_broker::push_rule::parse_receive_pack(&b, &limits).map_err(Error::from)
        });
        let classified = GitClassifier::new(limits).classify(&input);
        match (&case.error, parsed) {
            (Some(_), Err(e)) => {
                assert_eq!(e.response().status(), Some(400), "{intent}");
                assert!(
                    matches!(classified, Classification::Refused { .. }),
                    "{intent}: {classified:?}"
                );
            }
            (Some(want), Ok(rp)) => panic!("{intent}: expected {want}, got {rp:?}"),
            (None, Err(e)) => panic!("{intent}: refused: {e}"),
            (None, Ok(_)) => {
                let Classification::Class(c) = classified else {
                    panic!("{intent}: {classified:?}")
                };
                assert_eq!(c.as_str(), "git-push", "{intent}");
            }
        }
    }
}

#[derive(Deserialize)]
struct GitRequestCase {
    intent: String,
    method: String,
    target: String,
    #[serde(default)]
    headers: String,
    /// `git-fetch`, `git-push`, `refused` or `not-mine`.
    verdict: String,
}

#[test]
fn git_request_table() {
    let classifier = GitClassifier::default();
    for case in load::<GitRequestCase>("git_requests.toml") {
        let req = request(&case.method, &case.target, &case.headers, b"");
        let got = match classifier.classify(&ClassifyInput::head(req.head())) {
            Classification::Class(c) => c.as_str().to_owned(),
            Classification::Refused { .. } => "refused".to_owned(),
            Classification::NotMine => "not-mine".to_owned(),
            other => panic!("{other:?}"),
        };
        assert_eq!(got, case.verdict, "{}", case.intent);
    }
    // A push read with its body yields the parsed updates.
    let body = body_of(&[
        format!(
            "{} {} refs/heads/agent/s1/x\0report-status",
            "a".repeat(40),
            "b".repeat(40)
        ),
        "flush".to_owned(),
        "raw:PACK".to_owned(),
    ]);
    let req = request("POST", "/o/r/git-receive-pack", "", &body);
    let got = classifier.classify_git(&ClassifyInput::with_body(req.head(), req.body()));
    let Some(Ok(GitRequest::Push(Some(rp)))) = got else {
        panic!("{got:?}")
    };
    assert_eq!(rp.updates()[0].refname(), "refs/heads/agent/s1/x");
}
