//! Pushes on the wire, through `Broker::serve` to a recording HTTPS origin:
//! no push rule means every push is refused; an allowed push reaches the
//! origin identity-encoded with a `Content-Length` whatever its client
//! framing and encoding was; a refused push, by the rule or for want of
//! one, is answered in git's report format and reaches nothing.

use crate::support::read_message;
use cred_broker::push_rule::{Pkt, write_pkt};
use cred_broker::{
    Broker, Credential, GitClassifier, HeaderTemplate, Host, Lease, PushRuleSpec, RuleEngine,
    RuleFile, Secret, SessionCa, Target, UpstreamRoots,
};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use test_support::tls_origin::{self, Origin, Reply, TestPki};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

const SECRET: &str = "real-push-secret-11d0e";
const HOST: &str = "git.test";
const SESSION: &str = "s-wire";
/// Only a guard against a hung test; nothing asserts on time.
const GUARD: Duration = Duration::from_secs(20);

const RULES: &str = r#"
[[rule]]
name = "git"
decision = "allow"
hosts = ["git.test"]
classes = ["git-fetch", "git-push"]
"#;

struct World {
    broker: Arc<Broker>,
    ca: Arc<SessionCa>,
    lease: Lease,
    origin: Origin,
}

impl World {
    /// Every request the origin received: head and body.
    fn seen(&self) -> Vec<(String, Vec<u8>)> {
        self.origin
            .seen()
            .into_iter()
            .map(|m| (m.head, m.body))
            .collect()
    }
}

async fn world(push_rule: Option<PushRuleSpec>) -> World {
    let pki = TestPki::new(&[HOST]);
    let origin = Origin::start(&pki, |_| async {
        Reply::new("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    })
    .await;
    let ca = Arc::new(SessionCa::builder(SESSION).build().unwrap());
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
    let mut b = Broker::builder(ca.clone(), engine);
    b.extra_root_der(&pki.ca_der)
        .upstream_roots(UpstreamRoots::ExtraOnly)
        .grant(cred, lease.clone());
    if let Some(spec) = push_rule {
        b.push_rule(spec);
    }
    World {
        broker: Arc::new(b.build().unwrap()),
        ca,
        lease,
        origin,
    }
}

/// A TLS client connection served by the broker for `git.test`.
async fn connect(w: &World) -> tokio_rustls::client::TlsStream<TcpStream> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let broker = w.broker.clone();
    let upstream = w.origin.addr();
    let target = Target::new(Host::parse_wire(HOST).unwrap(), upstream.port());
    tokio::spawn(async move {
        if let Ok((tcp, _)) = listener.accept().await {
            let _ = broker.serve(tcp, &target, upstream).await;
        }
    });
    let config = tls_origin::client_config(&[w.ca.ca_cert_der()]);
    tls_origin::connect(addr, HOST, config).await.unwrap()
}

/// A push body: one update command (capabilities on the first line), a
/// flush, and the given pack bytes.
fn push_body(old: &str, new: &str, refname: &str, pack: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    let line = format!("{old} {new} {refname}\0report-status side-band-64k");
    write_pkt(&mut body, Pkt::Data(line.as_bytes())).unwrap();
    write_pkt(&mut body, Pkt::Flush).unwrap();
    body.extend_from_slice(pack);
    body
}

fn head(w: &World, port: u16, extra: &str) -> String {
    format!(
        "POST /o/r.git/git-receive-pack HTTP/1.1\r\nHost: {HOST}:{port}\r\nAuthorization: Basic {}\r\nContent-Type: application/x-git-receive-pack-request\r\n{extra}\r\n",
        w.lease.phantom()
    )
}

const ZERO: &str = "0000000000000000000000000000000000000000";

fn ids() -> (String, String) {
    ("a".repeat(40), "b".repeat(40))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_without_a_push_rule_is_refused_in_gits_report_format() {
    let w = world(None).await;
    let mut violations = w.broker.subscribe_violations();
    let port = w.origin.addr().port();
    let mut c = connect(&w).await;
    let (old, new) = ids();
    // Two refs, one the session's own: without a rule neither may move.
    let mut body = Vec::new();
    for line in [
        format!("{ZERO} {new} refs/heads/agent/s-wire/x\0report-status side-band-64k"),
        format!("{old} {new} refs/heads/main"),
    ] {
        write_pkt(&mut body, Pkt::Data(line.as_bytes())).unwrap();
    }
    write_pkt(&mut body, Pkt::Flush).unwrap();
    body.extend_from_slice(b"PACK-not-forwarded");
    let mut req = head(&w, port, &format!("Content-Length: {}\r\n", body.len())).into_bytes();
    req.extend_from_slice(&body);
    c.write_all(&req).await.unwrap();
    let mut buf = Vec::new();
    let (h, b) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    // Not a bare 403 (git would print neither ref nor reason): git's
    // report, each ref `ng` with the reason.
    assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{h}");
    assert!(
        h.contains("Content-Type: application/x-git-receive-pack-result\r\n"),
        "{h}"
    );
    let text = String::from_utf8_lossy(&b);
    assert!(text.contains("\u{1}000eunpack ok\n"), "{text}");
    for refname in ["refs/heads/agent/s-wire/x", "refs/heads/main"] {
        assert!(
            text.contains(&format!(
                "ng {refname} git pushes are refused: no push rule is configured\n"
            )),
            "{refname}: {text}"
        );
    }
    assert!(!text.contains("\nok "), "{text}");
    let v = violations.try_recv().unwrap();
    assert!(
        format!("{v:?}").contains("no push rule is configured"),
        "{v:?}"
    );
    // Nothing reached the origin, and the connection is kept: the next
    // push is refused the same way.
    assert!(w.seen().is_empty());
    let body = push_body(ZERO, &new, "refs/heads/agent/s-wire/y", b"PACK");
    let mut req = head(&w, port, &format!("Content-Length: {}\r\n", body.len())).into_bytes();
    req.extend_from_slice(&body);
    c.write_all(&req).await.unwrap();
    let (h, b) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{h}");
    assert!(
        String::from_utf8_lossy(&b).contains("ng refs/heads/agent/s-wire/y git pushes are refused"),
        "{h}"
    );
    assert!(w.seen().is_empty());
    // A fetch is not a push and goes through.
    let mut c = connect(&w).await;
    let mut buf = Vec::new();
    let get = format!(
        "GET /o/r.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n"
    );
    c.write_all(get.as_bytes()).await.unwrap();
    let (h, _) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 200 "), "{h}");
    let seen = w.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].0.starts_with("GET "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_pushes_are_forwarded_identity_encoded() {
    let w = world(Some(PushRuleSpec::new(["refs/heads/agent/{session}/**"]))).await;
    let port = w.origin.addr().port();
    let mut c = connect(&w).await;
    let mut buf = Vec::new();
    let pack = b"PACK-bytes-forwarded-as-they-came".repeat(100);
    let body = push_body(ZERO, &ids().1, "refs/heads/agent/s-wire/x", &pack);

    // Chunked, in small chunks.
    let mut req = head(&w, port, "Transfer-Encoding: chunked\r\n").into_bytes();
    for c in body.chunks(100) {
        req.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        req.extend_from_slice(c);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    c.write_all(&req).await.unwrap();
    let (h, b) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 200 "), "{h}");
    assert_eq!(b, b"ok");

    // Gzip-encoded, with a length.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&body).unwrap();
    let gz = gz.finish().unwrap();
    let mut req = head(
        &w,
        port,
        &format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n", gz.len()),
    )
    .into_bytes();
    req.extend_from_slice(&gz);
    c.write_all(&req).await.unwrap();
    let (h, _) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 200 "), "{h}");

    let seen = w.seen();
    assert_eq!(seen.len(), 2);
    let want_auth = "authorization: basic ";
    for (h, b) in &seen {
        let lower = h.to_ascii_lowercase();
        assert_eq!(b, &body, "the body as the client meant it");
        assert!(
            lower.contains(&format!("\r\ncontent-length: {}\r\n", body.len())),
            "{h}"
        );
        assert!(!lower.contains("content-encoding"), "{h}");
        assert!(!lower.contains("transfer-encoding"), "{h}");
        assert_eq!(lower.matches(want_auth).count(), 1, "{h}");
        assert!(!h.contains(&w.lease.phantom().to_string()), "{h}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_push_gets_git_report_and_reaches_nothing() {
    let w = world(Some(PushRuleSpec::new(["refs/heads/agent/{session}/**"]))).await;
    let mut violations = w.broker.subscribe_violations();
    let port = w.origin.addr().port();
    let mut c = connect(&w).await;
    let mut buf = Vec::new();
    let (old, new) = ids();
    let body = push_body(&old, &new, "refs/heads/main", b"PACK-not-forwarded");
    let mut req = head(&w, port, &format!("Content-Length: {}\r\n", body.len())).into_bytes();
    req.extend_from_slice(&body);
    c.write_all(&req).await.unwrap();
    let (h, b) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 200 OK\r\n"), "{h}");
    assert!(
        h.contains("Content-Type: application/x-git-receive-pack-result\r\n"),
        "{h}"
    );
    // Side-band 1 around the report.
    let text = String::from_utf8_lossy(&b);
    assert!(text.contains("\u{1}000eunpack ok\n"), "{text}");
    assert!(
        text.contains("ng refs/heads/main ref not allowed by the push rule\n"),
        "{text}"
    );
    assert!(w.seen().is_empty());
    // The violation names the rule and each refused ref with its reason.
    let v = violations.try_recv().unwrap();
    assert!(
        format!("{v:?}").contains(
            "push refused by the push rule [refs/heads/agent/s-wire/**]: \
             refs/heads/main: ref not allowed by the push rule"
        ),
        "{v:?}"
    );
    // The connection is kept: a later allowed push goes through.
    let body = push_body(ZERO, &new, "refs/heads/agent/s-wire/y", b"PACK");
    let mut req = head(&w, port, &format!("Content-Length: {}\r\n", body.len())).into_bytes();
    req.extend_from_slice(&body);
    c.write_all(&req).await.unwrap();
    let (h, _) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 200 "), "{h}");
    assert_eq!(w.seen().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_denied_by_the_rules_is_refused_before_its_body() {
    let w = world(Some(PushRuleSpec::new(["refs/heads/agent/{session}/**"]))).await;
    let port = w.origin.addr().port();
    let mut c = connect(&w).await;
    let mut buf = Vec::new();
    // A Host that disagrees with the connection's target; the body is
    // announced but never sent, and the answer comes anyway.
    let req = format!(
        "POST /o/r.git/git-receive-pack HTTP/1.1\r\nHost: other.test:{port}\r\nContent-Length: 100000\r\n\r\n"
    );
    c.write_all(req.as_bytes()).await.unwrap();
    let (h, _) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(h.starts_with("HTTP/1.1 403 "), "{h}");
    assert!(w.seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_push_body_is_400_and_reaches_nothing() {
    let w = world(Some(PushRuleSpec::new(["refs/heads/agent/{session}/**"]))).await;
    let port = w.origin.addr().port();
    for (extra, body) in [
        ("", b"+00a not a pkt-line".to_vec()),
        ("Content-Encoding: br\r\n", b"0000".to_vec()),
    ] {
        let mut c = connect(&w).await;
        let mut buf = Vec::new();
        let mut req = head(
            &w,
            port,
            &format!("{extra}Content-Length: {}\r\n", body.len()),
        )
        .into_bytes();
        req.extend_from_slice(&body);
        c.write_all(&req).await.unwrap();
        let (h, _) = tokio::time::timeout(GUARD, read_message(&mut c, &mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(h.starts_with("HTTP/1.1 400 "), "{h}");
    }
    assert!(w.seen().is_empty());
}

#[test]
fn a_push_rule_is_compiled_for_the_one_session_of_the_grants() {
    let ca = Arc::new(SessionCa::builder(SESSION).build().unwrap());
    let engine = || RuleEngine::builder().build().unwrap();
    let cred = Credential::builder("code-host")
        .secret(Secret::new(SECRET.as_bytes().to_vec()).unwrap())
        .host(HOST)
        .build()
        .unwrap();
    let spec = PushRuleSpec::new(["refs/heads/agent/{session}/**"]);
    // No grant: no session to substitute.
    assert!(
        Broker::builder(ca.clone(), engine())
            .push_rule(spec.clone())
            .build()
            .is_err()
    );
    // Grants for two sessions.
    let a = Lease::builder("a", &cred).build().unwrap();
    let b = Lease::builder("b", &cred).build().unwrap();
    assert!(
        Broker::builder(ca.clone(), engine())
            .grant(cred.clone(), a.clone())
            .grant(cred.clone(), b)
            .push_rule(spec.clone())
            .build()
            .is_err()
    );
    let broker = Broker::builder(ca, engine())
        .grant(cred, a)
        .push_rule(spec)
        .build()
        .unwrap();
    let rule = broker.push_rule().unwrap();
    assert!(rule.matches("refs/heads/agent/a/x"));
    assert!(!rule.matches("refs/heads/agent/b/x"));
}
