//! The broker through the facade, end to end: curl inside the sandbox
//! reaches a local HTTPS origin through the session proxy and the broker;
//! the origin sees the real token and only it; the sandbox sees only the
//! phantom token; a write is refused; after destroy the lease is revoked.

use agent_sandbox::{BrokerSettings, FilenameRules};
use connect_proxy::{IpPolicy, StaticResolver};
use cred_broker::{Credential, HeaderTemplate, RuleEngine, RuleFile, Secret, UpstreamRoots};
use sandbox_core::{
    Access, SandboxBindMount, SandboxCommand, SandboxEvent, SandboxSpec, probe_ambient,
};
use std::sync::{Arc, Mutex};
use test_support::tls_origin::{Origin, Reply, TestPki};

const SECRET: &str = "real-token-5d1e0c77";
const HOST: &str = "origin.test";

#[tokio::test]
async fn curl_in_the_sandbox_gets_the_real_token_injected_and_writes_refused() {
    // A host's tracing subscriber sees the broker's decisions.
    #[cfg(target_os = "linux")]
    let traced = super::traces::collector();
    let native = &probe_ambient().native;
    if !test_support::require(
        native.mechanism == Some(sandbox_core::NativeMechanism::Bubblewrap),
        "bubblewrap (the native sandbox's namespace mechanism)",
        "apt-get install bubblewrap",
    ) {
        return;
    }
    let pki = TestPki::new(&[HOST]);
    let origin = Origin::start(&pki, |_| async {
        Reply::new("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\norigin-ok")
    })
    .await;
    let addr = origin.addr();
    let root = std::env::temp_dir().join(format!("facade-broker-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in ["home", "ws", "sockets"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let p = |rel: &str| root.join(rel).display().to_string();

    let mut settings = read_only_broker();
    settings
        // The test origin does not listen on 443.
        .broker_port(addr.port())
        .extra_root_der(pki.ca_der.clone())
        .upstream_roots(UpstreamRoots::ExtraOnly);

    let resolver = Arc::new(StaticResolver::new());
    resolver.insert(HOST, ["127.0.0.1".parse().unwrap()]);
    let mut ip = IpPolicy::new();
    ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    let logs = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = logs.clone();
    let trail = Arc::new(Mutex::new(Vec::<String>::new()));
    let audit = trail.clone();
    let m = crate::builder()
        .audit(Arc::new(move |l: &str| {
            audit.lock().unwrap().push(l.to_owned())
        }))
        .home(p("home"))
        .temp_dir(p("sockets"))
        .filename_rules(FilenameRules::DropFilenameGlobDenies)
        .ip_policy(ip)
        .resolver(resolver)
        .broker(settings)
        .base_env(vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("GITHUB_TOKEN".into(), SECRET.into()),
        ])
        .log(Arc::new(move |l: &str| {
            sink.lock().unwrap().push(l.to_owned())
        }))
        .build()
        .unwrap();
    let mut spec = SandboxSpec::new("brokered", "w");
    spec.bind_mounts
        .push(SandboxBindMount::new(p("ws"), Access::ReadWrite).unwrap());
    spec.guest_workdir = Some(p("ws"));
    let mut h = m.launch(spec).await.unwrap();

    let port = addr.port();
    let script = format!(
        "env | grep -E '^(GH_TOKEN|GITHUB_TOKEN|SSL_CERT_FILE)='; \
         curl -sS -m 20 https://{HOST}:{port}/repos/a; echo; \
         curl -sS -m 20 -H \"Authorization: Bearer $GH_TOKEN\" https://{HOST}:{port}/repos/b; echo; \
         curl -s -m 20 -o /dev/null -w 'post=%{{http_code}}\\n' -X POST -d x https://{HOST}:{port}/repos/c"
    );
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg(&script);
    let mut events = m.exec(&h, cmd).await.unwrap();
    let (mut out, mut err, mut violations) = (String::new(), String::new(), Vec::new());
    while let Some(ev) = events.next_event().await {
        match ev {
            SandboxEvent::Stdout { data } => out.push_str(&String::from_utf8_lossy(&data)),
            SandboxEvent::Stderr { data } => err.push_str(&String::from_utf8_lossy(&data)),
            SandboxEvent::Violation { violation } => violations.push(violation),
            _ => {}
        }
    }
    let phantom = out
        .lines()
        .find_map(|l| l.strip_prefix("GH_TOKEN="))
        .unwrap_or_else(|| panic!("no phantom token in {out}\n{err}"))
        .to_owned();
    assert_ne!(phantom, SECRET);
    assert!(out.contains(&format!("GITHUB_TOKEN={phantom}")), "{out}");
    assert!(
        out.contains("SSL_CERT_FILE=/run/agent-sandbox/ca.pem"),
        "{out}"
    );
    assert_eq!(
        out.matches("origin-ok").count(),
        2,
        "both reads reach the origin: {out}\n{err}"
    );
    assert!(
        out.contains("post=403"),
        "the write is refused by the read-only rule: {out}\n{err}"
    );

    let heads: Vec<String> = origin.seen().into_iter().map(|m| m.head).collect();
    assert_eq!(
        heads.len(),
        2,
        "the refused POST never reached the origin: {heads:?}"
    );
    for head in &heads {
        let auth: Vec<String> = head
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("authorization:"))
            .map(|l| l.to_ascii_lowercase())
            .collect();
        assert_eq!(
            auth,
            vec![format!("authorization: bearer {SECRET}")],
            "exactly the real token: {head}"
        );
        assert!(!head.contains(&phantom), "{head}");
    }
    assert!(
        violations
            .iter()
            .any(|v| v.action == cred_broker::BROKER_DENY && v.target.contains("/repos/c")),
        "{violations:?}"
    );
    // The real value never reaches the sandbox, its events or the logs.
    let all = format!("{out}{err}{violations:?}{:?}", logs.lock().unwrap());
    assert!(!all.contains(SECRET), "the secret leaked: {all}");

    m.destroy(&mut h).await.unwrap();
    // The audit trail: the refused POST as HTTP Activity (403, its path),
    // the connections handed to the broker, and neither the secret nor
    // the phantom anywhere.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !trail
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("the broker") || l.contains("brokered GET"))
        .count()
        < 3
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let lines = trail.lock().unwrap().clone();
    let records: Vec<serde_json::Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        records.iter().any(|r| r["class_uid"] == 4002
            && r["status_id"] == 2
            && r["http_response"]["code"] == 403
            && r["http_request"]["url"]["path"] == "/repos/c"),
        "{lines:#?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r["class_uid"] == 4001 && r["activity_id"] == 1),
        "{lines:#?}"
    );
    // Both reads as HTTP Activity, Get, allowed by the read-only rule with
    // the credential added.
    for path in ["/repos/a", "/repos/b"] {
        assert!(
            records.iter().any(|r| r["class_uid"] == 4002
                && r["activity_id"] == 3
                && r["status_id"] == 1
                && r["http_request"]["http_method"] == "GET"
                && r["http_request"]["url"]["path"] == path
                && r["http_response"]["code"] == 200
                && r["unmapped"]["rule"] == "read-only"
                && r["unmapped"]["credential_injected"] == true),
            "{path}: {lines:#?}"
        );
    }
    let all = lines.join("\n");
    assert!(!all.contains(SECRET) && !all.contains(&phantom), "{all}");
    #[cfg(target_os = "linux")]
    {
        // The broker's decisions as tracing events in the session's span:
        // both reads forwarded by the rule, the POST refused; no secret.
        let seen: Vec<super::traces::Seen> = traced
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.session.as_deref() == Some("brokered"))
            .cloned()
            .collect();
        let forwarded = seen
            .iter()
            .filter(|s| s.name == "brokered request forwarded" && s.fields["rule"] == "read-only")
            .count();
        assert_eq!(forwarded, 2, "{seen:#?}");
        assert!(
            seen.iter()
                .any(|s| s.name == "brokered request refused" && s.fields["path"] == "/repos/c"),
            "{seen:#?}"
        );
        let traced_text = format!("{seen:?}");
        assert!(!traced_text.contains(SECRET) && !traced_text.contains(&phantom));
    }
    if crate::audit::validator_available() {
        crate::audit::assert_valid_ocsf(&lines);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Broker settings for `origin.test` that allow reads.
fn read_only_broker() -> BrokerSettings {
    let engine = RuleEngine::builder()
        .rules(
            RuleFile::from_toml(
                "[[rule]]\nname = \"read-only\"\ndecision = \"allow\"\nhosts = [\"origin.test\"]\nclasses = [\"rest-read\"]\n",
            )
            .unwrap(),
        )
        .build()
        .unwrap();
    let credential = Credential::builder("code-host")
        .secret(Secret::from_string(SECRET.into()).unwrap())
        .host(HOST)
        .template(HeaderTemplate::Bearer)
        .build()
        .unwrap();
    let mut settings = BrokerSettings::new(engine, credential);
    settings.host(HOST).unwrap();
    settings
}

#[test]
fn a_broker_with_the_none_backend_is_refused_never_dropped() {
    use agent_sandbox::ErrorKind;
    use sandbox_core::{BackendRequest, SandboxBackend, SandboxSwitch, Surface};
    // (intent, backend request, switch)
    let cases = [
        (
            "--backend none asked for explicitly",
            BackendRequest::Explicit(SandboxBackend::None),
            SandboxSwitch::On,
        ),
        (
            "the sandbox switched off",
            BackendRequest::Unspecified,
            SandboxSwitch::Off,
        ),
    ];
    for (intent, request, switch) in cases {
        let mut b = crate::builder();
        b.home("/nonexistent-home")
            .request(request, Surface::Dispatch)
            .switch(switch)
            .broker(read_only_broker());
        let e = b.build().unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::BrokerNeedsSandbox {
                    backend: SandboxBackend::None,
                    ..
                }
            ),
            "{intent}: {e}"
        );
        assert!(
            e.to_string().contains("leave the broker out"),
            "{intent}: {e}"
        );
        // Without the broker the same request builds.
        let mut b = crate::builder();
        b.home("/nonexistent-home")
            .request(request, Surface::Dispatch)
            .switch(switch);
        assert!(b.build().is_ok(), "{intent}");
    }
}

#[test]
fn a_missing_home_is_a_missing_setting_naming_the_builder_method() {
    use agent_sandbox::ErrorKind;
    let e = crate::builder().build().unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::MissingSetting {
                setting: "home",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("ManagerBuilder::home"), "{e}");
}
