//! `broker-proxy` pushing with real git to a local HTTPS git server (`git
//! http-backend` behind a test CA, reached as `localhost` on its own
//! port): without `--push-rule` every push is refused in git's report
//! format and the server's repository does not move; with a push rule the
//! session's own branch is pushed with the real credential and `main` is
//! refused, each refusal named on broker-proxy's stderr with its reason.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use test_support::git_origin::{GitServer, basic};
use test_support::tls_origin::TestPki;

const BIN: &str = env!("CARGO_BIN_EXE_broker-proxy");
const SECRET: &str = "real-push-secret-3c9e71";
const HOST: &str = "localhost";

const RULES: &str = r#"
[[rule]]
name = "git"
decision = "allow"
hosts = ["localhost"]
classes = ["git-fetch", "git-push"]
"#;

/// The server, its bare repository seeded with one commit on `main`, and
/// the runtime that serves it.
struct World {
    dir: tempfile::TempDir,
    server: GitServer,
    server_ca: PathBuf,
    bare: PathBuf,
    seed: String,
    _rt: tokio::runtime::Runtime,
}

/// A git command that reads no system or global configuration and never
/// prompts.
fn git(home: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_AUTHOR_NAME", "agent")
        .env("GIT_AUTHOR_EMAIL", "agent@example.invalid")
        .env("GIT_COMMITTER_NAME", "agent")
        .env("GIT_COMMITTER_EMAIL", "agent@example.invalid")
        .args(["-c", "credential.helper=", "-c", "init.defaultBranch=main"]);
    cmd
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("server");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let pki = TestPki::new(&[HOST]);
        let server_ca = dir.path().join("server-ca.pem");
        std::fs::write(&server_ca, &pki.ca_pem).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(GitServer::start(root.clone(), &pki, SECRET));
        let bare = root.join("repo.git");
        let w = World {
            server,
            server_ca,
            bare,
            seed: String::new(),
            _rt: rt,
            dir,
        };
        let top = w.dir.path();
        w.local(top, &["init", "--bare", "-q", w.bare.to_str().unwrap()]);
        w.local(&w.bare, &["config", "http.receivepack", "true"]);
        let seed = top.join("seed");
        w.local(top, &["init", "-q", seed.to_str().unwrap()]);
        std::fs::write(seed.join("README"), "seed\n").unwrap();
        w.local(&seed, &["add", "README"]);
        w.local(&seed, &["commit", "-q", "-m", "seed"]);
        w.local(&seed, &["push", "-q", w.bare.to_str().unwrap(), "main"]);
        let seed = w.local(&seed, &["rev-parse", "HEAD"]);
        World { seed, ..w }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A local git command (no network), which must succeed.
    fn local(&self, dir: &Path, args: &[&str]) -> String {
        ok(
            git(&self.home(), dir).args(args).output().unwrap(),
            &format!("git {args:?}"),
        )
    }

    /// The server repository's refs: `name id` lines.
    fn refs(&self) -> String {
        let bare = self.bare.to_str().unwrap();
        self.local(
            self.dir.path(),
            &[
                "--git-dir",
                bare,
                "for-each-ref",
                "--format=%(refname) %(objectname)",
            ],
        )
    }

    /// What the server repository's `name` points at, if it exists.
    fn rev_parse(&self, name: &str) -> Option<String> {
        let out = git(&self.home(), self.dir.path())
            .args(["--git-dir", self.bare.to_str().unwrap(), "rev-parse"])
            .args(["--verify", "-q", name])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn url(&self) -> String {
        format!("https://{HOST}:{}/repo.git", self.server.addr().port())
    }
}

/// A running broker-proxy and what its JSON line said.
struct Proxy {
    child: Child,
    http_url: String,
    ca: PathBuf,
    phantom: String,
    session: String,
}

impl Proxy {
    /// Starts broker-proxy brokering `localhost` on the server's port, its
    /// CA trusted upstream, loopback allowed; with `push_rule` (TOML) as
    /// `--push-rule` when given.
    fn start(w: &World, name: &str, push_rule: Option<&str>) -> Proxy {
        let dir = w.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let rules = dir.join("rules.toml");
        std::fs::write(&rules, RULES).unwrap();
        let ca = dir.join("session-ca.pem");
        let mut cmd = Command::new(BIN);
        cmd.arg("--rules")
            .arg(&rules)
            .arg("--ca-out")
            .arg(&ca)
            .args(["--broker", HOST, "--broker-port"])
            .arg(w.server.addr().port().to_string())
            .arg("--upstream-ca")
            .arg(&w.server_ca)
            .args(["--allow-cidr", "127.0.0.1/32", "--template", "git-basic"])
            .args(["--credential-env", "REAL_GIT_TOKEN"])
            .env("REAL_GIT_TOKEN", SECRET);
        if let Some(text) = push_rule {
            let file = dir.join("push.toml");
            std::fs::write(&file, text).unwrap();
            cmd.arg("--push-rule").arg(&file);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        let field = |k: &str| {
            v[k].as_str()
                .unwrap_or_else(|| panic!("{k}: {line}"))
                .to_owned()
        };
        let proxy = Proxy {
            http_url: field("httpUrl"),
            ca: PathBuf::from(field("ca")),
            phantom: field("phantom"),
            session: field("session"),
            child,
        };
        assert_eq!(proxy.ca, ca);
        assert_ne!(proxy.phantom, SECRET);
        proxy
    }

    /// A git command through the proxy: `http.proxy` its URL (with the
    /// run's secret, sent with the first `CONNECT` rather than after a
    /// 407), `http.sslCAInfo` the session CA, and the phantom token, never
    /// the real one, as the password.
    fn git(&self, w: &World, dir: &Path) -> Command {
        let mut cmd = git(&w.home(), dir);
        cmd.arg("-c")
            .arg(format!("http.proxy={}", self.http_url))
            .args(["-c", "http.proxyAuthMethod=basic"])
            .arg("-c")
            .arg(format!("http.sslCAInfo={}", self.ca.display()))
            .arg("-c")
            .arg(format!(
                "http.extraHeader=Authorization: {}",
                basic(&self.phantom)
            ));
        cmd
    }

    /// Clones the server's repository through the proxy into `name`, with
    /// one new commit on top of the seed.
    fn clone_and_commit(&self, w: &World, name: &str) -> (PathBuf, String) {
        let work = w.dir.path().join(name);
        let out = self
            .git(w, w.dir.path())
            .args(["clone", "-q", &w.url()])
            .arg(&work)
            .output()
            .unwrap();
        ok(out, "clone through broker-proxy");
        assert_eq!(
            std::fs::read_to_string(work.join("README")).unwrap(),
            "seed\n"
        );
        std::fs::write(work.join("work.txt"), format!("{name}\n")).unwrap();
        w.local(&work, &["add", "work.txt"]);
        w.local(&work, &["commit", "-q", "-m", name]);
        let head = w.local(&work, &["rev-parse", "HEAD"]);
        (work, head)
    }

    /// `git push origin SPEC` through the proxy: its exit status and
    /// stderr.
    fn push(&self, w: &World, work: &Path, spec: &str) -> (bool, String) {
        let out = self
            .git(w, work)
            .args(["push", "origin", spec])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains(SECRET), "{stderr}");
        (out.status.success(), stderr)
    }

    /// Closes stdin, which ends the run; its stderr.
    fn stop(mut self) -> String {
        self.child.stdin.take().unwrap().write_all(b"").unwrap();
        let out = self.child.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{log}");
        assert!(!log.contains(SECRET), "{log}");
        log
    }
}

/// The server saw the real credential on every request, never the
/// phantom.
fn only_the_real_credential_reached_the_server(w: &World, phantom: &str) {
    let seen = w.server.seen();
    assert!(!seen.is_empty());
    let want = basic(SECRET);
    for r in &seen {
        assert_eq!(r.auth.as_deref(), Some(want.as_str()), "{}", r.line);
        assert!(!r.auth.as_deref().unwrap_or("").contains(phantom));
        assert_ne!(r.auth.as_deref(), Some(basic(phantom).as_str()));
    }
}

#[test]
fn without_a_push_rule_every_push_is_rejected_in_gits_report_and_nothing_moves() {
    if test_support::tool("git", "apt-get install git").is_none() {
        return;
    }
    let w = World::new();
    let proxy = Proxy::start(&w, "no-rule", None);
    let (work, _) = proxy.clone_and_commit(&w, "work");
    let before = w.refs();
    assert_eq!(before, format!("refs/heads/main {}", w.seed));
    let reason = "git pushes are refused: no push rule is configured";

    let own = format!("refs/heads/agent/{}/work", proxy.session);
    for (spec, shown) in [
        (
            format!("HEAD:{own}"),
            format!("HEAD -> agent/{}/work", proxy.session),
        ),
        ("HEAD:refs/heads/main".to_owned(), "HEAD -> main".to_owned()),
    ] {
        let (pushed, stderr) = proxy.push(&w, &work, &spec);
        assert!(!pushed, "{spec}: {stderr}");
        assert!(
            stderr.contains(&format!(" ! [remote rejected] {shown} ({reason})")),
            "{spec}: {stderr}"
        );
        assert!(
            stderr.contains("error: failed to push some refs"),
            "{stderr}"
        );
        assert!(!stderr.contains("Everything up-to-date"), "{stderr}");
        assert_eq!(w.refs(), before, "{spec}");
    }
    assert_eq!(w.rev_parse("refs/heads/main"), Some(w.seed.clone()));
    assert_eq!(w.rev_parse(&own), None);
    // Nothing of either push reached the server.
    assert_eq!(w.server.receive_pack_posts(), 0);
    only_the_real_credential_reached_the_server(&w, &proxy.phantom);

    let log = proxy.stop();
    let port = w.server.addr().port();
    let line = format!("denied: broker-deny {HOST}:{port} /repo.git/git-receive-pack ({reason})");
    assert_eq!(log.matches(&line).count(), 2, "{line:?} in {log}");
    assert_eq!(log.matches("denied:").count(), 2, "{log}");
}

#[test]
fn with_a_push_rule_the_sessions_branch_is_pushed_and_main_is_rejected() {
    if test_support::tool("git", "apt-get install git").is_none() {
        return;
    }
    let w = World::new();
    let proxy = Proxy::start(
        &w,
        "rule",
        Some("refs = [\"refs/heads/agent/{session}/*\"]\n"),
    );
    let session = proxy.session.clone();
    let (work, head) = proxy.clone_and_commit(&w, "work");
    let own = format!("refs/heads/agent/{session}/work");

    // The session's branch: created on the server, at the pushed commit.
    let (pushed, stderr) = proxy.push(&w, &work, &format!("HEAD:{own}"));
    assert!(pushed, "{stderr}");
    assert!(
        stderr.contains(&format!(
            " * [new branch]      HEAD -> agent/{session}/work"
        )),
        "{stderr}"
    );
    assert_eq!(w.rev_parse(&own), Some(head.clone()));
    assert_eq!(w.server.receive_pack_posts(), 1);

    // main, in the same run: rejected with the rule's reason, unchanged.
    let (pushed, stderr) = proxy.push(&w, &work, "HEAD:refs/heads/main");
    assert!(!pushed, "{stderr}");
    assert!(
        stderr.contains(" ! [remote rejected] HEAD -> main (ref not allowed by the push rule)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("error: failed to push some refs"),
        "{stderr}"
    );
    assert_eq!(w.rev_parse("refs/heads/main"), Some(w.seed.clone()));
    assert_eq!(
        w.refs(),
        format!(
            "refs/heads/agent/{session}/work {head}\nrefs/heads/main {}",
            w.seed
        )
    );
    assert_eq!(
        w.server.receive_pack_posts(),
        1,
        "the refused push was not forwarded"
    );

    // The accepted push carried the real credential, never the phantom.
    only_the_real_credential_reached_the_server(&w, &proxy.phantom);

    let log = proxy.stop();
    let port = w.server.addr().port();
    let line = format!(
        "denied: broker-deny {HOST}:{port} /repo.git/git-receive-pack (push refused by the push \
         rule [refs/heads/agent/{session}/*]: refs/heads/main: ref not allowed by the push rule)"
    );
    assert_eq!(log.matches(&line).count(), 1, "{line:?} in {log}");
    assert_eq!(log.matches("denied:").count(), 1, "{log}");
}
