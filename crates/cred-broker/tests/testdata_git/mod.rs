//! The git push tables: pkt-line and command-list inputs with their
//! verdicts, the smart-HTTP classifier, push rules judged on packs made
//! by real `git`, and git's report format.

use super::load;
use cred_broker::{
    Ancestry, Classification, ClassifyInput, GitClassifier, GitLimits, GitRequest, ObjectFormat,
    ObjectId, PackSpool, Permission, PushRule, PushRuleSpec, ReceivePack, Refusal, Request,
    RequestClassifier, RequestParser, Status, Verdict, decoded_body, parse_receive_pack, read_pack,
    report_status,
};
use serde::Deserialize;
use std::io::Write;
use std::path::Path;
use std::process::Command;

fn variant<T: std::fmt::Debug>(v: &T) -> String {
    super::variant(v)
}

fn request(method: &str, target: &str, extra: &str, body: &[u8]) -> Request {
    let mut wire = format!(
        "{method} {target} HTTP/1.1\r\nHost: git.example.com\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    wire.extend_from_slice(body);
    let mut parser = RequestParser::new(cred_broker::Limits::default());
    match parser.feed(&wire) {
        Ok(Status::Complete { request, .. }) => *request,
        other => panic!("{target}: {other:?}"),
    }
}

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
            cred_broker::write_pkt(&mut out, cred_broker::Pkt::Data(&data)).unwrap();
        }
    }
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

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
        let extra = encoding
            .map(|e| format!("Content-Encoding: {e}\r\n"))
            .unwrap_or_default();
        let req = request("POST", "/o/r.git/git-receive-pack", &extra, &body);
        let input = ClassifyInput::with_body(req.head(), req.body());
        let mut limits = GitLimits::default();
        if let Some(m) = case.max_inflated {
            limits = limits.max_inflated_body(m);
        }
        let parsed = decoded_body(&input, req.body(), case.max_inflated.unwrap_or(512 << 20))
            .and_then(|b| parse_receive_pack(&b, &limits));
        let classified = GitClassifier::new(limits).classify(&input);
        match (&case.error, parsed) {
            (Some(want), Err(e)) => {
                eprintln!("{intent}: {e}");
                assert_eq!(&variant(e.kind()), want, "{intent}: {e}");
                assert_eq!(e.response().status(), Some(400), "{intent}");
                assert!(
                    matches!(classified, Classification::Refused { .. }),
                    "{intent}: {classified:?}"
                );
            }
            (Some(want), Ok(rp)) => panic!("{intent}: expected {want}, got {rp:?}"),
            (None, Err(e)) => panic!("{intent}: refused: {e}"),
            (None, Ok(rp)) => {
                check_accepted(&case, &rp);
                let Classification::Class(c) = classified else {
                    panic!("{intent}: {classified:?}")
                };
                assert_eq!(c.as_str(), "git-push", "{intent}");
            }
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

// ---- Packs made by real git. ----

struct Repo {
    dir: tempfile::TempDir,
    format: ObjectFormat,
}

fn git_available() -> bool {
    test_support::tool("git", "apt-get install git").is_some()
}

impl Repo {
    fn new(format: ObjectFormat) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo { dir, format };
        let f = match format {
            ObjectFormat::Sha256 => "sha256",
            _ => "sha1",
        };
        repo.git(&[
            "init",
            "-q",
            "-b",
            "main",
            &format!("--object-format={f}"),
            ".",
        ]);
        repo
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z");
        c
    }

    fn git(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Commits a file change with a message; returns the commit id.
    fn commit(&self, file: &str, content: &str, message: &str) -> String {
        std::fs::write(self.dir.path().join(file), content).unwrap();
        self.git(&["add", file]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git pack-objects --stdout --revs` of `new` minus `old`.
    fn pack(&self, new: &str, old: Option<&str>, extra: &[&str]) -> Vec<u8> {
        let mut args = vec!["pack-objects", "--stdout", "--revs", "-q"];
        args.extend_from_slice(extra);
        let mut child = self
            .cmd(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = format!("{new}\n");
        if let Some(old) = old {
            input.push_str(&format!("^{old}\n"));
        }
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        out.stdout
    }

    fn id(&self, hex: &str) -> ObjectId {
        ObjectId::from_hex(hex.as_bytes(), self.format).unwrap()
    }

    /// Object type and delta depth per commit, from `git verify-pack -v`.
    fn delta_commits(&self, pack: &[u8]) -> usize {
        let path = self.dir.path().join("probe.pack");
        std::fs::write(&path, pack).unwrap();
        self.git(&["index-pack", "probe.pack"]);
        let out = self.git(&["verify-pack", "-v", "probe.idx"]);
        out.lines()
            .filter(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() == 7 && cols[1] == "commit"
            })
            .count()
    }
}

fn push_body(format: ObjectFormat, updates: &[(&str, &str, &str)], caps: &str) -> Vec<u8> {
    let zero = "0".repeat(format.hex_len());
    let mut pkts = Vec::new();
    for (i, (old, new, name)) in updates.iter().enumerate() {
        let old = if old.is_empty() { zero.as_str() } else { old };
        let new = if new.is_empty() { zero.as_str() } else { new };
        let mut line = format!("{old} {new} {name}");
        if i == 0 {
            line.push('\0');
            line.push_str(caps);
        }
        pkts.push(line);
    }
    pkts.push("flush".to_owned());
    body_of(&pkts)
}

fn rule(spec: &str) -> PushRule {
    PushRule::compile(&PushRuleSpec::from_toml(spec).unwrap(), "s1").unwrap()
}

/// Spools `pack`, parses `body` and checks it with `rule`.
fn judge(
    rule: &PushRule,
    body: &[u8],
    pack: &[u8],
    limits: &GitLimits,
) -> cred_broker::PushDecision {
    let rp = parse_receive_pack(body, limits).unwrap();
    let mut spool = PackSpool::new(limits);
    for chunk in pack.chunks(1000) {
        spool.write(chunk).unwrap();
    }
    rule.check_spooled(&rp, &mut spool, limits)
}

const RULE: &str = r#"refs = ["refs/heads/agent/{session}/**"]"#;

#[test]
fn fast_forward_force_and_create_on_real_packs() {
    if !git_available() {
        return;
    }
    for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
        let repo = Repo::new(format);
        let c1 = repo.commit("a", "one\n", "one");
        let c2 = repo.commit("a", "two\n", "two");
        let c3 = repo.commit("b", "three\n", "three");
        let caps = match format {
            ObjectFormat::Sha256 => "report-status object-format=sha256",
            _ => "report-status",
        };
        let limits = GitLimits::default();
        let r = rule(RULE);
        let branch = "refs/heads/agent/s1/work";

        // Fast-forward c1 -> c3: the pack proves it.
        let pack = repo.pack(&c3, Some(&c1), &[]);
        let commits = read_pack(
            &mut std::io::Cursor::new(&pack),
            pack.len() as u64,
            format,
            &limits,
        )
        .unwrap();
        assert_eq!(commits.commits(), 2);
        assert_eq!(
            commits.is_ancestor(&repo.id(&c1), &repo.id(&c3), 100),
            Ancestry::Proven
        );
        let d = judge(
            &r,
            &push_body(format, &[(&c1, &c3, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Allow, "{format:?} {d:?}");

        // A rewrite: d1 on c1, pushed over c3.
        repo.git(&["checkout", "-q", "-b", "other", &c1]);
        let d1 = repo.commit("c", "rewrite\n", "rewrite");
        let pack = repo.pack(&d1, Some(&c3), &[]);
        let d = judge(
            &r,
            &push_body(format, &[(&c3, &d1, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Deny);
        assert_eq!(d.refs()[0].refusal(), Some(&Refusal::NotFastForward));

        // The same rewrite is allowed when the rule allows forcing.
        let forcing = rule(&format!("{RULE}\nforce = \"allow\""));
        let d = judge(
            &forcing,
            &push_body(format, &[(&c3, &d1, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Allow);

        // Creating a ref needs no walk (an empty pack is fine).
        let pack = repo.pack(&c2, Some(&c2), &[]);
        let d = judge(
            &r,
            &push_body(format, &[("", &c2, "refs/heads/agent/s1/new")], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Allow);

        // An update to a commit the server has (empty pack) is not proven.
        let d = judge(
            &r,
            &push_body(format, &[(&c3, &c2, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.refs()[0].refusal(), Some(&Refusal::NotFastForward));
    }
}

#[test]
fn delta_compressed_commits_are_rebuilt() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let long: String = (0..200)
        .map(|i| format!("line {i} of a long shared message\n"))
        .collect();
    let base = repo.commit("f", "0\n", &format!("start\n\n{long}"));
    let mut last = base.clone();
    for i in 1..=30 {
        last = repo.commit("f", &format!("{i}\n"), &format!("change {i}\n\n{long}"));
    }
    let limits = GitLimits::default();
    // REF_DELTA (git's default without --delta-base-offset) and OFS_DELTA,
    // also spooled to disk.
    for extra in [
        &["--window=50"][..],
        &["--window=50", "--delta-base-offset"],
    ] {
        let pack = repo.pack(&last, Some(&base), extra);
        assert!(
            repo.delta_commits(&pack) > 0,
            "{extra:?}: git made no commit deltas"
        );
        let commits = read_pack(
            &mut std::io::Cursor::new(&pack),
            pack.len() as u64,
            ObjectFormat::Sha1,
            &limits,
        )
        .unwrap();
        assert_eq!(commits.commits(), 30, "{extra:?}");
        assert_eq!(
            commits.is_ancestor(&repo.id(&base), &repo.id(&last), 1000),
            Ancestry::Proven
        );
        assert_eq!(
            commits.is_ancestor(&repo.id(&base), &repo.id(&last), 5),
            Ancestry::LimitReached
        );
        let small = GitLimits::default().spool_memory(512);
        let body = push_body(
            ObjectFormat::Sha1,
            &[(&base, &last, "refs/heads/agent/s1/w")],
            "report-status",
        );
        let d = judge(&rule(RULE), &body, &pack, &small);
        assert_eq!(d.verdict(), Verdict::Allow, "{extra:?}");
    }
}

#[test]
fn corrupt_packs_are_refused_and_count_as_forced() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let c1 = repo.commit("a", "1\n", "one");
    let c2 = repo.commit("a", "2\n", "two");
    let pack = repo.pack(&c2, Some(&c1), &[]);
    let limits = GitLimits::default();
    let read = |p: &[u8]| {
        read_pack(
            &mut std::io::Cursor::new(p),
            p.len() as u64,
            ObjectFormat::Sha1,
            &limits,
        )
    };
    assert!(read(&pack).is_ok());
    let mut flipped = pack.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(read(&flipped).is_err(), "checksum");
    assert!(read(&pack[..pack.len() - 1]).is_err(), "truncated");
    let mut longer = pack.clone();
    longer.push(0);
    assert!(read(&longer).is_err(), "trailing byte");
    let body = push_body(
        ObjectFormat::Sha1,
        &[(&c1, &c2, "refs/heads/agent/s1/w")],
        "report-status",
    );
    let d = judge(&rule(RULE), &body, &flipped, &limits);
    assert!(
        matches!(d.refs()[0].refusal(), Some(Refusal::UnreadablePack(_))),
        "{d:?}"
    );
    // A pack past the spool's cap is refused while spooling.
    let mut spool = PackSpool::new(&GitLimits::default().max_pack(10));
    assert!(spool.write(&pack).is_err());
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
            let pkts = cred_broker::read_all(&report, 10).unwrap();
            assert_eq!(pkts.len(), 2);
            let cred_broker::Pkt::Data(d) = pkts[0] else {
                panic!()
            };
            assert_eq!(d[0], 1);
            d[1..].to_vec()
        } else {
            report
        };
        let lines: Vec<String> = cred_broker::read_all(&inner, 10)
            .unwrap()
            .into_iter()
            .map(|p| match p {
                cred_broker::Pkt::Data(d) => String::from_utf8(d.to_vec()).unwrap(),
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

#[cfg(feature = "graphql")]
mod graphql {
    use super::*;
    use cred_broker::{GraphqlClassifier, RuleEngine, RuleFile, graphql_error_body};
    use std::sync::Arc;

    #[derive(Deserialize)]
    struct Case {
        intent: String,
        #[serde(default = "post")]
        method: String,
        target: String,
        body: String,
        #[serde(default)]
        headers: String,
        verdict: String,
    }

    fn post() -> String {
        "POST".to_owned()
    }

    #[test]
    fn graphql_table() {
        let classifier = GraphqlClassifier::new();
        for case in load::<Case>("graphql.toml") {
            let unread = case.body == "-";
            let body = if unread { "" } else { case.body.as_str() };
            let req = request(&case.method, &case.target, &case.headers, body.as_bytes());
            let input = if unread {
                ClassifyInput::head(req.head())
            } else {
                ClassifyInput::with_body(req.head(), req.body())
            };
            let got = match classifier.classify(&input) {
                Classification::Class(c) => c.as_str().to_owned(),
                Classification::Refused { .. } => "refused".to_owned(),
                Classification::NotMine => "not-mine".to_owned(),
                other => panic!("{other:?}"),
            };
            assert_eq!(got, case.verdict, "{}", case.intent);
        }
    }

    #[test]
    fn read_only_rule_allows_queries_only() {
        let rules = RuleFile::from_toml(
            r#"
            [[rule]]
            name = "graphql-read"
            decision = "allow"
            hosts = ["api.example.com"]
            classes = ["graphql-query"]
        "#,
        )
        .unwrap();
        let engine = RuleEngine::builder()
            .rules(rules)
            .classifier(Arc::new(GraphqlClassifier::new()))
            .build()
            .unwrap();
        let decide = |body: &str| {
            let req = request("POST", "/graphql", "", body.as_bytes());
            engine
                .decide(
                    &ClassifyInput::with_body(req.head(), req.body()),
                    "api.example.com",
                )
                .verdict()
        };
        assert_eq!(
            decide(r#"{"query":"{ viewer { login } }"}"#),
            Verdict::Allow
        );
        assert_eq!(decide(r#"{"query":"mutation { b }"}"#), Verdict::Deny);
        assert_eq!(
            decide(r#"{"query":"query A { a } query A { b }"}"#),
            Verdict::Deny
        );
        let body: serde_json::Value =
            serde_json::from_str(&graphql_error_body("mutations are \"refused\"")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"errors": [{"message": "mutations are \"refused\""}]})
        );
    }
}

/// Runs a real `git push` into a local bare repository, recording the
/// bytes the client sends to `receive-pack` (the same bytes a smart-HTTP
/// push carries as its request body).
fn captured_push(repo: &Repo, bare: &Path, args: &[&str], name: &str) -> Vec<u8> {
    let capture = repo.dir.path().join(name);
    let receive = format!("tee {} | git receive-pack", capture.display());
    let mut all = vec!["push", "-q", "--receive-pack", &receive];
    let bare = bare.display().to_string();
    all.push(&bare);
    all.extend_from_slice(args);
    repo.git(&all);
    std::fs::read(&capture).unwrap()
}

fn judge_body(rule: &PushRule, body: &[u8]) -> cred_broker::PushDecision {
    let limits = GitLimits::default();
    let mut pb = cred_broker::PushBody::new(cred_broker::BodyEncoding::Identity, &limits);
    for c in body.chunks(777) {
        pb.feed(c).unwrap();
    }
    let mut done = pb.finish().unwrap();
    rule.check_spooled(&done.request, &mut done.pack, &limits)
}

#[test]
fn real_git_push_bodies() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let bare = tempfile::tempdir().unwrap();
    repo.cmd(&["init", "-q", "--bare", "-b", "main"])
        .current_dir(bare.path())
        .output()
        .unwrap();
    let r = rule(r#"refs = ["refs/heads/**"]"#);
    let long: String = (0..100).map(|i| format!("shared line {i}\n")).collect();
    repo.commit("f", "0\n", &format!("c0\n\n{long}"));
    let first = captured_push(&repo, bare.path(), &["main"], "create.bin");
    let d = judge_body(&r, &first);
    assert_eq!(d.verdict(), Verdict::Allow, "{d:?}");
    // A fast-forward of similar commits (git sends a thin pack).
    for i in 1..=5 {
        repo.commit("f", &format!("{i}\n"), &format!("c{i}\n\n{long}"));
    }
    let ff = captured_push(&repo, bare.path(), &["main"], "ff.bin");
    let rp = parse_receive_pack(&ff, &GitLimits::default()).unwrap();
    assert!(rp.has_capability("report-status") || rp.has_capability("report-status-v2"));
    let d = judge_body(&r, &ff);
    assert_eq!(d.verdict(), Verdict::Allow, "{d:?}");
    // A forced rewrite.
    repo.git(&["reset", "-q", "--hard", "HEAD~2"]);
    repo.commit("g", "x\n", "rewrite");
    let forced = captured_push(&repo, bare.path(), &["--force", "main"], "force.bin");
    let d = judge_body(&r, &forced);
    assert_eq!(
        d.refs()[0].refusal(),
        Some(&Refusal::NotFastForward),
        "{d:?}"
    );
    // A delete carries no pack.
    captured_push(&repo, bare.path(), &["main:refs/heads/other"], "other.bin");
    let del = captured_push(&repo, bare.path(), &[":other"], "delete.bin");
    let d = judge_body(&r, &del);
    assert_eq!(d.refs()[0].refusal(), Some(&Refusal::Delete), "{d:?}");
}

#[test]
fn git_push_shows_the_refusal() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let bare = tempfile::tempdir().unwrap();
    repo.cmd(&["init", "-q", "--bare", "-b", "main"])
        .current_dir(bare.path())
        .output()
        .unwrap();
    repo.commit("f", "0\n", "c0");
    captured_push(&repo, bare.path(), &["main"], "create.bin");
    repo.commit("f", "1\n", "c1");
    // What the broker answers when the push rule refuses `main`.
    let adv = repo
        .cmd(&[
            "receive-pack",
            "--advertise-refs",
            &bare.path().display().to_string(),
        ])
        .output()
        .unwrap()
        .stdout;
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    let limits = GitLimits::default();
    let body = push_body(
        ObjectFormat::Sha1,
        &[(&a, &b, "refs/heads/main")],
        "report-status side-band-64k",
    );
    let rp = parse_receive_pack(&body, &limits).unwrap();
    let d = rule(RULE).check(&rp, None, &limits);
    let report = report_status(&d, &rp).unwrap();
    let dir = repo.dir.path();
    std::fs::write(dir.join("adv.bin"), adv).unwrap();
    std::fs::write(dir.join("report.bin"), report).unwrap();
    let fake = format!(
        "cat {0}/adv.bin; cat > /dev/null; cat {0}/report.bin; true",
        dir.display()
    );
    let out = repo
        .cmd(&[
            "push",
            "--receive-pack",
            &fake,
            &bare.path().display().to_string(),
            "main",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[remote rejected] main -> main (ref not allowed by the push rule)"),
        "{stderr}"
    );
}
