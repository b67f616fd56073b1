//! The audit trail: a session doing one of each recorded step, every line
//! checked against the OCSF schema of the stated version (the JSON schemas
//! `ocsf-json-schema` generates from the OCSF releases it bundles, checked
//! with `jsonschema`), each step's class and activity present, and no
//! credential anywhere in the trail.

use super::native::{Tree, native_available, origin};
use agent_sandbox::FilenameRules;
use sandbox_core::{SandboxCommand, SandboxEvent};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The validator's script: reads records (one per line) from stdin, checks
/// each against its class's schema, prints `VALID n` or each error.
const VALIDATE: &str = r#"
import json, sys
import jsonschema
from ocsf_json_schema import get_ocsf_schema, OcsfJsonSchemaEmbedded
schema = OcsfJsonSchemaEmbedded(get_ocsf_schema(version=sys.argv[1]))
n, bad = 0, 0
for line in sys.stdin:
    rec = json.loads(line)
    name = schema.lookup_class_name_from_uid(class_uid=rec["class_uid"])
    s = schema.get_class_schema(class_name=name, profiles=rec["metadata"].get("profiles", []))
    errors = list(jsonschema.Draft202012Validator(s).iter_errors(rec))
    for e in errors:
        print("INVALID", rec["class_uid"], list(e.path), e.message[:300])
    bad += bool(errors)
    n += 1
print("VALID" if bad == 0 else "FAILED", n)
"#;

pub(super) fn validator_available() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import jsonschema, ocsf_json_schema"])
        .status()
        .is_ok_and(|s| s.success());
    test_support::require(
        ok,
        "python3 with jsonschema and ocsf-json-schema (the OCSF schemas, offline)",
        "pip3 install jsonschema ocsf-json-schema",
    )
}

async fn run(
    m: &agent_sandbox::SandboxManager,
    h: &sandbox_core::SandboxHandle,
    cmd: SandboxCommand,
) {
    let mut events = m.exec(h, cmd).await.unwrap();
    while let Some(ev) = events.next_event().await {
        if matches!(ev, SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) {
            break;
        }
    }
    while events.next_event().await.is_some() {}
}

fn sh(script: &str) -> SandboxCommand {
    let mut c = SandboxCommand::new("/bin/sh");
    c.arg("-c").arg(script);
    c
}

#[tokio::test]
async fn every_step_of_a_session_is_an_ocsf_record_and_none_holds_a_credential() {
    if !native_available() || !validator_available() {
        return;
    }
    let t = Tree::new("audit");
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let port = origin();
    let mut ip = connect_proxy::IpPolicy::new();
    ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    let mut b = crate::builder();
    b.ip_policy(ip).allow("localhost");
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .name_guard_launcher(crate::launcher())
        .filename_rules(FilenameRules::EnforcedByNameGuard)
        .audit(Arc::new(move |l: &str| {
            sink.lock().unwrap().push(l.to_owned())
        }))
        .base_env(vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("GITHUB_TOKEN".into(), "ghp_must_not_pass_audit".into()),
        ]);
    let m = b.build().unwrap();
    let mut h = m.launch(t.spec("audit-1")).await.unwrap();
    run(&m, &h, sh("echo x > .env; true")).await;
    // Allowed: a CONNECT through the HTTP proxy, and SOCKS5.
    run(
        &m,
        &h,
        sh(&format!(
            "curl -s -o /dev/null --max-time 5 -p http://localhost:{port}/; \
             curl -s -o /dev/null --max-time 5 --proxy \"$ALL_PROXY\" http://localhost:{port}/; true"
        )),
    )
    .await;
    run(
        &m,
        &h,
        sh("curl -s -o /dev/null --max-time 5 https://refused.invalid/; true"),
    )
    .await;
    let mut slow = sh("sleep 30");
    slow.timeout(Duration::from_millis(300));
    run(&m, &h, slow).await;
    run(&m, &h, sh("exit 3")).await;
    m.destroy(&mut h).await.unwrap();
    // Allowed connections are recorded beside the command's events, as the
    // proxies decide them: wait for the two to be written.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while lines
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("\"activity_name\":\"Open\""))
        .count()
        < 2
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let trail = lines.lock().unwrap().clone();
    let records: Vec<serde_json::Value> = trail
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<(u64, u64, u64)> = records
        .iter()
        .map(|r| {
            (
                r["class_uid"].as_u64().unwrap(),
                r["activity_id"].as_u64().unwrap(),
                r["status_id"].as_u64().unwrap(),
            )
        })
        .collect();
    for (want, what) in [
        ((6002, 3, 1), "the session's start"),
        ((6002, 4, 1), "the session's end"),
        ((1007, 1, 1), "a command's start"),
        ((1007, 2, 1), "a command's exit"),
        ((1007, 2, 2), "the command killed by its timeout"),
        ((1001, 1, 2), "the .env refused"),
        ((4001, 5, 2), "the CONNECT refused"),
        ((4001, 1, 1), "a connection allowed"),
    ] {
        assert!(steps.contains(&want), "{what} {want:?}: {trail:#?}");
    }
    assert_eq!(
        steps.iter().filter(|s| s.0 == 1007 && s.1 == 1).count(),
        5,
        "{trail:#?}"
    );
    for r in &records {
        assert_eq!(r["metadata"]["correlation_uid"], "audit-1", "{r}");
        assert_eq!(r["metadata"]["version"], agent_sandbox::audit::OCSF_VERSION);
        assert!(r["time_dt"].as_str().unwrap().len() >= 27, "{r}");
    }
    assert!(records.iter().any(|r| r["exit_code"] == 3), "{trail:#?}");
    // Both proxies' allowed connections, to the origin.
    for protocol in ["http-connect", "socks5"] {
        assert!(
            records.iter().any(|r| r["class_uid"] == 4001
                && r["activity_id"] == 1
                && r["app_name"] == protocol
                && r["dst_endpoint"]["port"] == port),
            "{protocol}: {trail:#?}"
        );
    }
    assert!(
        records
            .iter()
            .any(|r| r["file"]["name"] == ".env" && r["class_uid"] == 1001),
        "{trail:#?}"
    );
    // No credential anywhere.
    let all = trail.join("\n");
    assert!(!all.contains("ghp_must_not_pass_audit"), "{all}");

    assert_valid_ocsf(&trail);
}

/// Checks every line of `trail` against the schema of its class.
pub(super) fn assert_valid_ocsf(trail: &[String]) {
    let mut py = std::process::Command::new("python3")
        .args(["-c", VALIDATE, agent_sandbox::audit::OCSF_VERSION])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = trail.join("\n");
    text.push('\n');
    std::io::Write::write_all(py.stdin.as_mut().unwrap(), text.as_bytes()).unwrap();
    drop(py.stdin.take());
    let out = py.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.trim_end().ends_with(&format!("VALID {}", trail.len())),
        "{said}"
    );
}
