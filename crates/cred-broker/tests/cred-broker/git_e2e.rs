//! Real git through connect-proxy and the broker to a local HTTPS git
//! server (`git http-backend` as CGI behind a small TLS server with its own
//! CA): clone, pushes the push rule allows, pushes it refuses (answered in
//! git's report format, nothing forwarded), and the credential swap.

use crate::support::proxy_pair;
use test_support::git_origin::{GitServer, base64, basic};
use test_support::tls_origin::TestPki;

use cred_broker::{
    Broker, Credential, GitClassifier, GitLimits, HeaderTemplate, Lease, PushRuleSpec, RuleEngine,
    RuleFile, Secret, SessionCa, UpstreamRoots,
};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

const SECRET: &str = "real-git-secret-5b81d2";
const HOST: &str = "git.test";
const SESSION: &str = "s-git";

const RULES: &str = r#"
[[rule]]
name = "git"
decision = "allow"
hosts = ["git.test"]
classes = ["git-fetch", "git-push"]
"#;

/// A git command with a clean configuration: no system or global config,
/// no credential helper, no prompts, the proxy and the session CA set,
/// and the phantom token (never the real one) as its credential.
struct Git {
    home: PathBuf,
    proxy: String,
    ca: PathBuf,
    phantom: String,
}

impl Git {
    fn cmd(&self, dir: &Path) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("git");
        cmd.current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "agent")
            .env("GIT_AUTHOR_EMAIL", "agent@example.invalid")
            .env("GIT_COMMITTER_NAME", "agent")
            .env("GIT_COMMITTER_EMAIL", "agent@example.invalid")
            .env("HTTPS_PROXY", &self.proxy)
            .env("https_proxy", &self.proxy)
            .env("GIT_SSL_CAINFO", &self.ca)
            .args(["-c", "credential.helper=", "-c", "init.defaultBranch=main"])
            .arg("-c")
            .arg(format!(
                "http.extraHeader=Authorization: {}",
                basic(&self.phantom)
            ));
        cmd
    }

    async fn run(&self, dir: &Path, args: &[&str]) -> Output {
        self.cmd(dir).args(args).output().await.unwrap()
    }

    async fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.run(dir, args).await;
        assert!(
            out.status.success(),
            "git {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

async fn refs(git: &Git, bare: &Path) -> String {
    git.ok(
        bare,
        &[
            "--git-dir",
            bare.to_str().unwrap(),
            "for-each-ref",
            "--format=%(refname) %(objectname)",
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn real_git_through_proxy_and_broker() {
    if test_support::tool("git", "apt-get install git").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("server");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let bare = root.join("repo.git");

    let pki = TestPki::new(&[HOST]);
    let server = GitServer::start(root.clone(), &pki, SECRET).await;
    let ca_der = pki.ca_der;
    let port = server.addr().port();

    // The broker: the git classifier, a read-and-push rule, the push rule
    // for the session's own branches (and tags, to show the tag refusal).
    let session_ca = Arc::new(SessionCa::builder(SESSION).build().unwrap());
    let engine = RuleEngine::builder()
        .classifier(Arc::new(GitClassifier::default()))
        .rules(RuleFile::from_toml(RULES).unwrap())
        .build()
        .unwrap();
    let cred = Credential::builder("code-host")
        .secret(Secret::new(SECRET.as_bytes().to_vec()).unwrap())
        .host(HOST)
        .template(HeaderTemplate::git_basic())
        .build()
        .unwrap();
    let lease = Lease::builder(SESSION, &cred).build().unwrap();
    let broker = Broker::builder(session_ca.clone(), engine)
        .extra_root_der(&ca_der)
        .upstream_roots(UpstreamRoots::ExtraOnly)
        .grant(cred, lease.clone())
        // A small in-memory spool, so the large push below is spooled to a
        // temporary file.
        .git_limits(GitLimits::default().spool_memory(64 * 1024))
        .push_rule(PushRuleSpec::new([
            "refs/heads/agent/{session}/**",
            "refs/tags/**",
        ]))
        .build()
        .unwrap();
    let broker = Arc::new(broker);
    let mut violations = broker.subscribe_violations();
    let pair = proxy_pair(broker.clone(), HOST).await;
    let ca_pem = dir.path().join("session-ca.pem");
    std::fs::write(&ca_pem, session_ca.ca_cert_pem()).unwrap();
    let phantom = lease.phantom().to_string();
    assert_ne!(phantom, SECRET);
    let git = Git {
        home: home.clone(),
        proxy: format!("http://{}", pair.http_addr()),
        ca: ca_pem,
        phantom: phantom.clone(),
    };
    let mut outputs: Vec<String> = Vec::new();

    // The server's bare repository, seeded locally with one commit on main.
    git.ok(
        dir.path(),
        &["init", "--bare", "-q", bare.to_str().unwrap()],
    )
    .await;
    git.ok(&bare, &["config", "http.receivepack", "true"]).await;
    let seed = dir.path().join("seed");
    git.ok(dir.path(), &["init", "-q", seed.to_str().unwrap()])
        .await;
    std::fs::write(seed.join("README"), "seed\n").unwrap();
    git.ok(&seed, &["add", "README"]).await;
    git.ok(&seed, &["commit", "-q", "-m", "seed"]).await;
    git.ok(&seed, &["push", "-q", bare.to_str().unwrap(), "main"])
        .await;

    // Clone through the proxy and the broker.
    let url = format!("https://{HOST}:{port}/repo.git");
    let work = dir.path().join("work");
    git.ok(dir.path(), &["clone", "-q", &url, work.to_str().unwrap()])
        .await;
    assert_eq!(
        std::fs::read_to_string(work.join("README")).unwrap(),
        "seed\n"
    );

    // The run's branch: created, then fast-forwarded (twice).
    let branch = format!("refs/heads/agent/{SESSION}/work");
    let push_spec = format!("HEAD:{branch}");
    std::fs::write(work.join("a.txt"), "one\n").unwrap();
    git.ok(&work, &["add", "a.txt"]).await;
    git.ok(&work, &["commit", "-q", "-m", "one"]).await;
    git.ok(&work, &["push", "-q", "origin", &push_spec]).await;
    let one = git.ok(&work, &["rev-parse", "HEAD"]).await;
    std::fs::write(work.join("a.txt"), "two\n").unwrap();
    git.ok(&work, &["commit", "-q", "-am", "two"]).await;
    git.ok(&work, &["push", "-q", "origin", &push_spec]).await;
    // A large, incompressible file: git sends the push chunked (past its
    // 1 MiB post buffer) and the broker spools the pack to disk.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let big: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(work.join("big.bin"), &big).unwrap();
    git.ok(&work, &["add", "big.bin"]).await;
    git.ok(&work, &["commit", "-q", "-m", "big"]).await;
    git.ok(&work, &["push", "-q", "origin", &push_spec]).await;
    let three = git.ok(&work, &["rev-parse", "HEAD"]).await;
    let before = refs(&git, &bare).await;
    assert!(before.contains(&format!("{branch} {three}")), "{before}");
    assert!(before.contains("refs/heads/main "), "{before}");
    assert_eq!(before.lines().count(), 2, "{before}");
    let receive_posts = GitServer::receive_pack_posts;
    // Three pushes, and the `0000` probe git sends before a chunked one.
    assert_eq!(receive_posts(&server), 4);

    // Refused pushes: each shows `[remote rejected]` with the reason, and
    // the server's refs do not move.
    git.ok(&work, &["tag", "v1"]).await;
    let cases: Vec<(&str, Vec<String>, Vec<&str>)> = vec![
        (
            "main",
            vec!["HEAD:refs/heads/main".into()],
            vec!["main (ref not allowed by the push rule)"],
        ),
        (
            "tag",
            vec!["refs/tags/v1".into()],
            vec!["v1 (pushing tags is not allowed)"],
        ),
        (
            "delete",
            vec![format!(":{branch}")],
            vec!["(deleting refs is not allowed)"],
        ),
        (
            "mixed",
            vec![
                format!("HEAD:refs/heads/agent/{SESSION}/other"),
                "HEAD:refs/heads/main".into(),
            ],
            vec![
                "(another ref in this push is refused)",
                "main (ref not allowed by the push rule)",
            ],
        ),
    ];
    for (name, specs, reasons) in cases {
        let mut args = vec!["push", "origin"];
        args.extend(specs.iter().map(String::as_str));
        let out = git.run(&work, &args).await;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{name}: {stderr}");
        assert!(stderr.contains("[remote rejected]"), "{name}: {stderr}");
        for r in reasons {
            assert!(stderr.contains(r), "{name}: {r:?} not in {stderr}");
        }
        assert_eq!(refs(&git, &bare).await, before, "{name}");
        outputs.push(stderr);
    }

    // A forced update of the run's branch: history rewritten locally.
    git.ok(&work, &["reset", "-q", "--hard", &one]).await;
    std::fs::write(work.join("a.txt"), "rewritten\n").unwrap();
    git.ok(&work, &["commit", "-q", "-am", "rewritten"]).await;
    let out = git
        .run(&work, &["push", "--force", "origin", &push_spec])
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "force: {stderr}");
    assert!(stderr.contains("[remote rejected]"), "force: {stderr}");
    assert!(
        stderr.contains("not proven a fast-forward (forced updates are not allowed)"),
        "force: {stderr}"
    );
    assert_eq!(refs(&git, &bare).await, before, "force");
    outputs.push(stderr);

    // A forced update disguised as a fast-forward: the old tip named in a
    // `parent` line after the committer, which git does not read as a
    // parent (the commit is a root) while a careless reader would.
    // The server's current tip of the run's branch: what a fast-forward
    // must descend from.
    let old_tip = git
        .ok(
            &bare,
            &["--git-dir", bare.to_str().unwrap(), "rev-parse", &branch],
        )
        .await;
    let tree = git.ok(&work, &["rev-parse", "HEAD^{tree}"]).await;
    let forged = format!(
        "tree {}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\nparent {}\n\nrewritten root\n",
        tree.trim(),
        old_tip.trim()
    );
    std::fs::write(work.join("forged.txt"), forged).unwrap();
    let new = git
        .ok(
            &work,
            &[
                "hash-object",
                "-t",
                "commit",
                "-w",
                "--literally",
                "forged.txt",
            ],
        )
        .await;
    let out = git
        .run(
            &work,
            &[
                "push",
                "--force",
                "origin",
                &format!("{}:{branch}", new.trim()),
            ],
        )
        .await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "disguised force: {stderr}");
    assert!(
        stderr.contains("[remote rejected]"),
        "disguised force: {stderr}"
    );
    assert_eq!(refs(&git, &bare).await, before, "disguised force");
    outputs.push(stderr);

    // Nothing of a refused push reached the server.
    assert_eq!(receive_posts(&server), 4);
    // Six refusals, each a violation.
    let mut refused = 0;
    while let Ok(v) = violations.try_recv() {
        let text = format!("{v:?}");
        assert!(!text.contains(SECRET), "{text}");
        if text.contains("push refused by the push rule") {
            refused += 1;
        }
    }
    assert_eq!(refused, 6);

    // The server saw exactly the real credential on every request, never
    // the phantom; git's output never holds the real value.
    let seen = server.seen();
    assert!(seen.len() >= 6, "{seen:?}");
    let want = basic(SECRET);
    for r in &seen {
        assert_eq!(r.auth.as_deref(), Some(want.as_str()), "{}", r.line);
        assert_ne!(r.auth.as_deref(), Some(basic(&phantom).as_str()));
    }
    for text in &outputs {
        assert!(!text.contains(SECRET));
    }
    pair.shutdown().await;
}

#[test]
fn base64_matches_known_values() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
}
