//! The behaviour tables under `testdata/*.toml` and the golden profiles.

use sandbox_core::{FakeHost, Os, SandboxSpec};
use seatbelt_profile::{
    Decision, DispatchProfileBuilder, Error, ErrorKind, Evaluator, Operation, Profile, Target,
    TerminalProfileBuilder, glob_to_regex, parse_violation_line, read_profile,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn load<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    #[derive(Deserialize)]
    struct File<T> {
        case: Vec<T>,
    }
    let text = std::fs::read_to_string(testdata(name)).unwrap();
    toml::from_str::<File<T>>(&text)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .case
}

/// The name of an error kind, as the tables spell it.
fn kind_name(e: &Error) -> String {
    let debug = format!("{:?}", e.kind());
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap()
        .to_owned()
}

#[derive(Deserialize)]
struct Query {
    op: String,
    path: Option<String>,
    ip: Option<String>,
    socket: Option<String>,
    expect: String,
}

fn check_queries(intent: &str, ev: &Evaluator, queries: &[Query]) {
    for q in queries {
        let op = Operation::from_name(&q.op).unwrap_or_else(|| panic!("{intent}: op {}", q.op));
        let addr: Option<SocketAddr> = q.ip.as_ref().map(|s| s.parse().unwrap());
        let target = match (&q.path, addr, &q.socket) {
            (Some(p), None, None) => Target::Path(p),
            (None, Some(a), None) => Target::Ip(a.ip(), a.port()),
            (None, None, Some(s)) => Target::UnixSocket(s),
            _ => panic!("{intent}: a query needs exactly one of path, ip, socket"),
        };
        let want = match q.expect.as_str() {
            "allow" => Decision::Allow,
            "deny" => Decision::Deny,
            other => panic!("{intent}: expect {other}"),
        };
        assert_eq!(
            ev.decide(op, target),
            want,
            "{intent}: {} {:?}",
            q.op,
            target
        );
    }
}

#[derive(Deserialize)]
struct GlobCase {
    intent: String,
    glob: String,
    regex: Option<String>,
    #[serde(default)]
    widened: bool,
    #[serde(default)]
    matches: Vec<String>,
    #[serde(default)]
    rejects: Vec<String>,
    error: Option<String>,
}

#[test]
fn glob_table() {
    for c in load::<GlobCase>("glob.toml") {
        let intent = &c.intent;
        let result = glob_to_regex(&c.glob);
        if let Some(err) = &c.error {
            let e = result.expect_err(intent);
            assert_eq!(&kind_name(&e), err, "{intent}: {e}");
            continue;
        }
        let re = result.unwrap_or_else(|e| panic!("{intent}: {e}"));
        assert_eq!(Some(re.as_str()), c.regex.as_deref(), "{intent}");
        assert_eq!(re.is_widened(), c.widened, "{intent}");
        // Meaning, through the evaluator: a profile denying reads by this regex.
        let mut p = Profile::new();
        p.rule(seatbelt_profile::Rule::new(
            seatbelt_profile::Action::Allow,
            Operation::Default,
            vec![],
        ));
        p.rule(seatbelt_profile::Rule::new(
            seatbelt_profile::Action::Deny,
            Operation::FileReadAll,
            vec![seatbelt_profile::Filter::Regex(re)],
        ));
        let r = p.render().unwrap();
        let ev = Evaluator::from_sbpl(r.text(), &r.params_map()).unwrap();
        for m in &c.matches {
            assert!(
                !ev.allows(Operation::FileReadData, Target::Path(m)),
                "{intent}: should match {m:?}"
            );
        }
        for m in &c.rejects {
            assert!(
                ev.allows(Operation::FileReadData, Target::Path(m)),
                "{intent}: should not match {m:?}"
            );
        }
    }
}

#[derive(Deserialize)]
struct ViolationCase {
    intent: String,
    line: String,
    action: Option<String>,
    target: Option<String>,
    #[serde(default)]
    none: bool,
}

#[test]
fn violation_table() {
    for c in load::<ViolationCase>("violations.toml") {
        let got = parse_violation_line(&c.line);
        if c.none {
            assert_eq!(got, None, "{}", c.intent);
            continue;
        }
        let v = got.unwrap_or_else(|| panic!("{}: no violation", c.intent));
        assert_eq!(Some(v.action.as_str()), c.action.as_deref(), "{}", c.intent);
        assert_eq!(Some(v.target.as_str()), c.target.as_deref(), "{}", c.intent);
        assert_eq!(
            v.raw.as_deref(),
            Some(c.line.trim_end_matches(['\r', '\n'])),
            "{}",
            c.intent
        );
    }
}

#[derive(Deserialize)]
struct EvaluatorCase {
    intent: String,
    profile: String,
    #[serde(default)]
    params: BTreeMap<String, String>,
    #[serde(default)]
    queries: Vec<Query>,
    error: Option<String>,
}

#[test]
fn evaluator_table() {
    for c in load::<EvaluatorCase>("evaluator.toml") {
        let result = Evaluator::from_sbpl(&c.profile, &c.params);
        if let Some(err) = &c.error {
            let e = result.expect_err(&c.intent);
            assert_eq!(&kind_name(&e), err, "{}: {e}", c.intent);
            continue;
        }
        let ev = result.unwrap_or_else(|e| panic!("{}: {e}", c.intent));
        check_queries(&c.intent, &ev, &c.queries);
    }
}

/// The macOS host every profile case and golden profile runs on: `~/.ssh`
/// is a directory, `~/.netrc` and `~/.gitconfig` are regular files.
fn mac_host() -> FakeHost {
    let mut host = FakeHost::new(Os::MacOs);
    host.symlink("/tmp", "/private/tmp")
        .symlink("/var", "/private/var")
        .symlink("/etc", "/private/etc")
        .file("/Users/dev/.ssh/id_ed25519")
        .file("/Users/dev/.netrc")
        .file("/Users/dev/.gitconfig")
        .file("/private/tmp")
        .file("/private/var/folders/zz")
        .executable("/usr/bin/sudo");
    host
}

#[derive(Deserialize)]
struct ProfileCase {
    intent: String,
    #[serde(default)]
    kind: Option<String>,
    spec: String,
    home: Option<String>,
    workdir: Option<String>,
    #[serde(default)]
    temp_dirs: Vec<String>,
    /// Extra read denies, and paths read again inside them.
    #[serde(default)]
    read_deny: Vec<String>,
    #[serde(default)]
    read_again: Vec<String>,
    http: Option<u16>,
    socks: Option<u16>,
    #[serde(default)]
    queries: Vec<Query>,
    #[serde(default)]
    filters: Vec<FilterQuery>,
    error: Option<String>,
}

/// How the rule whose parameters are named `RULE_NNN` names `path`.
#[derive(Deserialize)]
struct FilterQuery {
    rule: String,
    path: String,
    kind: String,
}

fn check_filters(intent: &str, r: &seatbelt_profile::RenderedProfile, filters: &[FilterQuery]) {
    for f in filters {
        let key = r
            .params()
            .iter()
            .find_map(|(k, v)| {
                let n = k.strip_prefix(f.rule.as_str())?.strip_prefix('_')?;
                (*v == f.path && n.bytes().all(|b| b.is_ascii_digit())).then_some(k)
            })
            .unwrap_or_else(|| panic!("{intent}: no {} parameter for {}", f.rule, f.path));
        let want = format!("({} (param \"{key}\"))", f.kind);
        assert!(
            r.text().contains(&want),
            "{intent}: {} {} should be {want}",
            f.rule,
            f.path
        );
    }
}

fn build_case(c: &ProfileCase) -> Result<Profile, Error> {
    let host = mac_host();
    let home = c.home.clone().unwrap_or_else(|| "/Users/dev".into());
    if c.kind.as_deref() == Some("terminal") {
        let mut b = TerminalProfileBuilder::new();
        b.home(home);
        if let Some(w) = &c.workdir {
            b.workdir(w.clone());
        }
        for t in &c.temp_dirs {
            b.temp_dir(t.clone());
        }
        return b.build(&host);
    }
    let long = format!("/{}", "x".repeat(1100));
    let spec: SandboxSpec = serde_json::from_str(&c.spec.replace("@LONG@", &long)).unwrap();
    let mut b = DispatchProfileBuilder::new(&spec);
    b.home(home)
        .http_proxy_port(c.http.unwrap_or(8080))
        .socks_proxy_port(c.socks.unwrap_or(1080));
    for t in &c.temp_dirs {
        b.temp_dir(t.clone());
    }
    for d in &c.read_deny {
        b.read_deny(d.clone());
    }
    for r in &c.read_again {
        b.allow_read_within_denies(r.clone());
    }
    b.build(&host)
}

#[test]
fn profile_table() {
    for c in load::<ProfileCase>("profiles.toml") {
        let rendered = build_case(&c).and_then(|p| p.render());
        if let Some(err) = &c.error {
            let e = rendered.expect_err(&c.intent);
            assert_eq!(&kind_name(&e), err, "{}: {e}", c.intent);
            continue;
        }
        let r = rendered.unwrap_or_else(|e| panic!("{}: {e}", c.intent));
        let ev = Evaluator::from_sbpl(r.text(), &r.params_map())
            .unwrap_or_else(|e| panic!("{}: {e}", c.intent));
        check_queries(&c.intent, &ev, &c.queries);
        check_filters(&c.intent, &r, &c.filters);
    }
}

/// The two representative specs of the issue, rendered on the described
/// macOS host and compared with the reviewed files under testdata/golden.
/// On a mismatch the new rendering is written next to the golden file as
/// `*.new` for review.
#[test]
fn golden_profiles() {
    let mut differ = Vec::new();
    for name in ["chat-protected", "review-runner"] {
        let dir = testdata("golden");
        let spec_text = std::fs::read_to_string(dir.join(format!("{name}.spec.json"))).unwrap();
        let spec: SandboxSpec = serde_json::from_str(&spec_text).unwrap();
        let mut b = DispatchProfileBuilder::new(&spec);
        b.home("/Users/dev")
            .http_proxy_port(8080)
            .socks_proxy_port(1080)
            .temp_dir("/var/folders/zz/T/agent-s1");
        let r = b.build(&mac_host()).unwrap().render().unwrap();
        let params = serde_json::to_string_pretty(&r.params_map()).unwrap() + "\n";
        let sb_path = dir.join(format!("{name}.sb"));
        let params_path = dir.join(format!("{name}.params.json"));
        let want_sb = std::fs::read_to_string(&sb_path).unwrap_or_default();
        let want_params = std::fs::read_to_string(&params_path).unwrap_or_default();
        if want_sb != r.text() || want_params != params {
            std::fs::write(dir.join(format!("{name}.sb.new")), r.text()).unwrap();
            std::fs::write(dir.join(format!("{name}.params.json.new")), &params).unwrap();
            differ.push(name);
            continue;
        }
        // The golden text reads back to the same rules.
        let back = read_profile(&want_sb, &r.params_map()).unwrap();
        let built = b.build(&mac_host()).unwrap();
        assert!(
            back.rules().eq(built.rules()),
            "{name}: read-back rules differ"
        );
    }
    assert!(
        differ.is_empty(),
        "{differ:?}: rendering differs from the golden files; review the .new files"
    );
}

#[test]
fn error_kinds_name_the_value() {
    let e = glob_to_regex("/a/**b").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::InvalidGlob { glob, .. } if glob == "/a/**b"));
    assert!(e.to_string().contains("/a/**b"));
}
