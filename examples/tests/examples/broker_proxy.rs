//! `broker-proxy` on the real host: its loopback proxies serve only clients
//! that present the run's secret, so no other local user can have the
//! broker act with the real credential.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_broker-proxy");

#[test]
fn another_user_without_the_secret_gets_407_and_the_broker_never_acts() {
    if !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
        || test_support::tool("curl", "apt-get install curl").is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"read\"\ndecision = \"allow\"\nhosts = [\"api.example.test\"]\nclasses = [\"rest-read\"]\n",
    )
    .unwrap();
    let ca = dir.path().join("ca.pem");
    let mut child = Command::new(BIN)
        .arg("--rules")
        .arg(&rules)
        .arg("--ca-out")
        .arg(&ca)
        .args([
            "--broker",
            "api.example.test",
            "--credential-env",
            "REAL_TOKEN",
        ])
        .env("REAL_TOKEN", "real-credential-never-shared")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    let http = v["http"].as_str().unwrap().to_owned();
    let socks = v["socks"].as_str().unwrap().to_owned();
    let http_url = v["httpUrl"].as_str().unwrap().to_owned();
    assert!(http_url.starts_with("http://session:"), "{http_url}");
    let secret = http_url
        .trim_start_matches("http://session:")
        .split('@')
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(secret.len(), 64);
    // Another local user, on both listeners, without the secret.
    let as_nobody = |args: &[&str]| {
        Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "curl"])
            .args(["-sS", "-m", "10", "--cacert"])
            .arg(&ca)
            .args(args)
            .output()
            .unwrap()
    };
    let o = as_nobody(&[
        "-x",
        &format!("http://{http}"),
        "https://api.example.test/user",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("407"), "{err}");
    let o = as_nobody(&[
        "-x",
        &format!("socks5h://{socks}"),
        "https://api.example.test/user",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("authentication"), "{err}");
    child.stdin.take().unwrap().write_all(b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    // Both refusals were reported; the broker never saw a request.
    assert_eq!(log.matches("denied: network-outbound").count(), 2, "{log}");
    assert!(!log.contains("real-credential"), "{log}");
}

fn rules_in(dir: &std::path::Path) -> std::path::PathBuf {
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"read\"\ndecision = \"allow\"\nhosts = [\"api.example.test\"]\nclasses = [\"rest-read\"]\n",
    )
    .unwrap();
    rules
}

#[test]
fn with_stdin_at_dev_null_it_runs_until_a_signal_and_its_line_names_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_in(dir.path());
    let push = dir.path().join("push.toml");
    std::fs::write(&push, "refs = [\"refs/heads/agent/{session}/*\"]\n").unwrap();
    let ca = dir.path().join("ca.pem");
    let mut child = Command::new(BIN)
        .arg("--rules")
        .arg(&rules)
        .arg("--ca-out")
        .arg(&ca)
        .arg("--push-rule")
        .arg(&push)
        .args([
            "--broker",
            "api.example.test",
            "--broker-port",
            "8443",
            "--template",
            "header:x-api-key",
            "--credential-env",
            "REAL_TOKEN",
        ])
        .env("REAL_TOKEN", "real-credential-never-shared")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        v["session"].as_str(),
        Some(format!("broker-proxy-{}", child.id()).as_str()),
        "{line}"
    );
    assert!(!v["phantom"].as_str().unwrap().is_empty(), "{line}");
    assert_eq!(v["ca"].as_str(), Some(ca.to_str().unwrap()), "{line}");
    // End of input does not end it: stdin was never input.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "it stopped on its own");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains(
            "broker-proxy: stdin is /dev/null or closed: running until SIGINT or SIGTERM (Ctrl-C)"
        ),
        "{log}"
    );
}

#[test]
fn a_push_rule_that_does_not_parse_or_a_bad_port_is_refused_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_in(dir.path());
    let push = dir.path().join("push.toml");
    std::fs::write(&push, "refs = \"refs/heads/main\"\n").unwrap();
    let run = |extra: &[&str]| {
        Command::new(BIN)
            .arg("--rules")
            .arg(&rules)
            .arg("--ca-out")
            .arg(dir.path().join("ca.pem"))
            .args([
                "--broker",
                "api.example.test",
                "--credential-env",
                "REAL_TOKEN",
            ])
            .args(extra)
            .env("REAL_TOKEN", "real-credential-never-shared")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // The push rule is read with the command line: a usage error.
    let o = run(&["--push-rule", push.to_str().unwrap()]);
    let log = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{log}");
    assert!(
        log.contains(&format!("--push-rule {}: not a push rule", push.display())),
        "{log}"
    );
    assert!(o.stdout.is_empty(), "no JSON line on a refusal");
    let o = run(&["--broker-port", "99999"]);
    let log = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{log}");
    assert!(
        log.contains("--broker-port takes a port number from 1 to 65535, not \"99999\"")
            && log.contains("For more information, try '--help'."),
        "{log}"
    );
}
