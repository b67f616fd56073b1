//! The broker through the facade, end to end: curl inside the sandbox
//! reaches a local HTTPS origin through the session proxy and the broker;
//! the origin sees the real token and only it; the sandbox sees only the
//! phantom token; a write is refused; after destroy the lease is revoked.

use agent_sandbox::{BrokerSettings, FilenameRules, ManagerBuilder, next_event};
use connect_proxy::{IpPolicy, StaticResolver};
use cred_broker::{Credential, HeaderTemplate, RuleEngine, RuleFile, Secret, UpstreamRoots};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use sandbox_core::{
    Access, SandboxBindMount, SandboxCommand, SandboxEvent, SandboxPort, SandboxSpec, probe_ambient,
};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SECRET: &str = "real-token-5d1e0c77";
const HOST: &str = "origin.test";

struct Pki {
    ca_der: Vec<u8>,
    leaf_der: Vec<u8>,
    leaf_key: Vec<u8>,
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_params(&params, &ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec![HOST.to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    Pki {
        ca_der: ca.der().to_vec(),
        leaf_der: leaf.der().to_vec(),
        leaf_key: leaf_key.serialize_der(),
    }
}

/// An HTTPS origin that records each request head and answers with a body.
async fn origin(pki: &Pki) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from(pki.leaf_der.clone())],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.leaf_key.clone())),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, log) = (acceptor.clone(), log.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match tls.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end + 4]).into_owned();
                    buf.drain(..end + 4);
                    log.lock().unwrap().push(head);
                    let body = "origin-ok";
                    let out = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if tls.write_all(out.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

#[tokio::test]
async fn curl_in_the_sandbox_gets_the_real_token_injected_and_writes_refused() {
    let native = &probe_ambient().native;
    if !test_support::require(
        native.available,
        "a native sandbox (bubblewrap and socat)",
        &format!("apt-get install {}", native.missing_packages.join(" ")),
    ) {
        return;
    }
    let pki = pki();
    let (addr, seen) = origin(&pki).await;
    let root = std::env::temp_dir().join(format!("facade-broker-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in ["home", "ws", "sockets"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let p = |rel: &str| root.join(rel).display().to_string();

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
    settings
        .host(HOST)
        .unwrap()
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
    let m = ManagerBuilder::from_ambient()
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
    while let Some(ev) = next_event(&mut events).await {
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

    let heads = seen.lock().unwrap().clone();
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
    let _ = std::fs::remove_dir_all(&root);
}
