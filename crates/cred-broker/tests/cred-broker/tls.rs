//! The broker over real loopback sockets: a local HTTPS origin with a test
//! CA, clients speaking TLS through `Broker::serve` (directly, and curl
//! through connect-proxy's proxy pair with an `Intercept` adapter).

use crate::support::{proxy_pair, read_message};
use test_support::tls_origin::{self, Message, Origin, Reply, TestPki};

use cred_broker::{
    BROKER_DENY, Broker, Credential, HeaderTemplate, Host, Lease, RuleEngine, RuleFile, Secret,
    SessionCa, Target, UpstreamRoots,
};
use sandbox_core::SandboxViolation;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;

const SECRET: &str = "real-secret-7f3c9a1e";
const HOST: &str = "origin.test";
/// Only a guard against a hung test; nothing asserts on time.
const GUARD: Duration = Duration::from_secs(20);

/// A local HTTPS origin: answers every request with its path (chunked on
/// `/chunked`, close-delimited on `/close`, closing unannounced after
/// `/bye`), and records every request.
async fn origin(pki: &TestPki) -> Origin {
    Origin::start(pki, |m| async move {
        let path = m.path().to_owned();
        let reply = format!("origin saw {path}");
        match path.as_str() {
            "/chunked" => Reply::new(format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n{:x}\r\n{reply}\r\n0\r\n\r\n",
                reply.len()
            )),
            "/close" => Reply::then_close(format!(
                "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{reply}"
            )),
            // Says nothing of closing, then closes.
            "/bye" => Reply::then_close(format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{reply}",
                reply.len()
            )),
            _ => Reply::new(format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{reply}",
                reply.len()
            )),
        }
    })
    .await
}

/// Every request the origin received, as text.
fn seen_by(origin: &Origin) -> Vec<String> {
    origin.seen().iter().map(Message::text).collect()
}

const RULES: &str = r#"
    [[rule]]
    name = "read-only"
    decision = "allow"
    hosts = ["origin.test", "127.0.0.1"]
    classes = ["rest-read"]

    [[rule]]
    name = "uploads"
    decision = "allow"
    hosts = ["origin.test"]
    methods = ["POST"]
    paths = ["/upload"]
"#;

struct Setup {
    origin: Origin,
    ca: Arc<SessionCa>,
    broker: Arc<Broker>,
    lease: Lease,
    violations: broadcast::Receiver<SandboxViolation>,
}

fn credential() -> Credential {
    Credential::builder("code-host")
        .secret(Secret::new(SECRET.as_bytes().to_vec()).unwrap())
        .host(HOST)
        .host("127.0.0.1")
        .template(HeaderTemplate::Bearer)
        .build()
        .unwrap()
}

async fn setup(pki: TestPki, trust: &[u8], expires: Option<SystemTime>) -> Setup {
    let origin = origin(&pki).await;
    let ca = Arc::new(SessionCa::builder("s-tls").build().unwrap());
    let engine = RuleEngine::builder()
        .rules(RuleFile::from_toml(RULES).unwrap())
        .build()
        .unwrap();
    let cred = credential();
    let mut lease_builder = Lease::builder("s-tls", &cred);
    if let Some(at) = expires {
        lease_builder.expires_at(at);
    }
    let lease = lease_builder.build().unwrap();
    let broker = Broker::builder(ca.clone(), engine)
        .extra_root_der(trust)
        .upstream_roots(UpstreamRoots::ExtraOnly)
        .grant(cred, lease.clone())
        .build()
        .unwrap();
    let broker = Arc::new(broker);
    let violations = broker.subscribe_violations();
    Setup {
        origin,
        ca,
        broker,
        lease,
        violations,
    }
}

async fn trusted() -> Setup {
    let pki = TestPki::new(&[HOST, "127.0.0.1"]);
    let der = pki.ca_der.clone();
    setup(pki, &der, None).await
}

/// Listens on loopback and serves every accepted connection with the
/// broker for `origin.test:<origin port>`; returns the address and the
/// results of finished `serve` calls.
async fn broker_listener(
    s: &Setup,
) -> (SocketAddr, Arc<Mutex<Vec<Result<(), cred_broker::Error>>>>) {
    broker_listener_for(s, HOST).await
}

async fn broker_listener_for(
    s: &Setup,
    connect_host: &'static str,
) -> (SocketAddr, Arc<Mutex<Vec<Result<(), cred_broker::Error>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let broker = s.broker.clone();
    let upstream = s.origin.addr();
    let target = Target::new(Host::parse_wire(connect_host).unwrap(), upstream.port());
    let results = Arc::new(Mutex::new(Vec::new()));
    let out = results.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tcp.set_nodelay(true).unwrap();
            let (broker, out, target) = (broker.clone(), out.clone(), target.clone());
            tokio::spawn(async move {
                let r = broker.serve(tcp, &target, upstream).await;
                out.lock().unwrap().push(r);
            });
        }
    });
    (addr, results)
}

async fn client(
    addr: SocketAddr,
    ca: &SessionCa,
    sni: &str,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    client_alpn(addr, ca, sni, &[b"h2", b"http/1.1"]).await
}

async fn client_alpn(
    addr: SocketAddr,
    ca: &SessionCa,
    sni: &str,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut config = tls_origin::client_config(&[ca.ca_cert_der()]);
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    tls_origin::connect(addr, sni, config).await
}

/// Sends one request, reads one response: (status, head, body).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
    request: &str,
) -> (u16, String, String) {
    s.write_all(request.as_bytes()).await.unwrap();
    let (head, body) = tokio::time::timeout(GUARD, read_message(s, buf))
        .await
        .expect("a response in time")
        .expect("a response");
    let status = head[9..12].parse().unwrap();
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

fn drain(rx: &mut broadcast::Receiver<SandboxViolation>) -> Vec<SandboxViolation> {
    let mut out = Vec::new();
    while let Ok(v) = rx.try_recv() {
        out.push(v);
    }
    out
}

fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {HOST}:PORT\r\n{extra}\r\n")
}

fn with_port(req: String, port: u16) -> String {
    req.replace("PORT", &port.to_string())
}

/// Every string collected during a test, searched for the secret.
fn assert_no_secret(texts: &[String]) {
    for t in texts {
        assert!(!t.contains(SECRET), "the secret leaked into: {t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_session_through_the_broker() {
    let mut s = trusted().await;
    let port = s.origin.addr().port();
    let (addr, results) = broker_listener(&s).await;
    let mut tls = client(addr, &s.ca, HOST).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut buf = Vec::new();
    let mut collected = Vec::new();
    let phantom = s.lease.phantom().to_string();

    // GET with the phantom token: allowed, the origin sees the real token only.
    let req = with_port(
        get("/user", &format!("Authorization: Bearer {phantom}\r\n")),
        port,
    );
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!((status, body.as_str()), (200, "origin saw /user"));
    collected.extend([head, body]);
    let seen = seen_by(&s.origin);
    assert_eq!(seen.len(), 1);
    let auth: Vec<&str> = seen[0]
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("authorization:"))
        .collect();
    assert_eq!(auth, [format!("Authorization: Bearer {SECRET}")]);
    assert!(!seen[0].contains(&phantom));

    // No Authorization at all: exactly the real token.
    let req = with_port(get("/repos/o/r", ""), port);
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 200);
    collected.extend([head, body]);
    let seen = seen_by(&s.origin);
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].matches(SECRET).count(), 1);
    assert_eq!(
        seen[1]
            .to_ascii_lowercase()
            .matches("authorization:")
            .count(),
        1
    );

    // A chunked response streams through, on the same connection.
    let req = with_port(get("/chunked", ""), port);
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 200);
    assert!(body.contains("origin saw /chunked"), "{body}");
    collected.extend([head, body]);

    // POST is refused by the read-only rule; the origin sees nothing.
    let req = format!(
        "POST /repos/o/r/issues HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 403, "{head}{body}");
    assert!(body.contains("denied: no rule matches"), "{body}");
    assert!(!head.to_ascii_lowercase().contains("connection: close"));
    collected.extend([head, body]);
    assert_eq!(seen_by(&s.origin).len(), 3);

    // Host disagreeing with the CONNECT target: 403, nothing sent.
    let req = get("/user", "").replace(&format!("{HOST}:PORT"), "other.test");
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("disagrees with the connection target"),
        "{body}"
    );
    collected.extend([head, body]);
    assert_eq!(seen_by(&s.origin).len(), 3);

    // Still usable; then revoke: 403 on the same keep-alive connection.
    let req = with_port(get("/user", ""), port);
    let (status, _, _) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 200);
    s.lease.revoke();
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 403);
    assert!(body.contains("revoked"), "{body}");
    collected.extend([head, body]);
    assert_eq!(seen_by(&s.origin).len(), 4);

    // Malformed framing: 400 and the connection is closed.
    let req = format!(
        "POST / HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    );
    let (status, head, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 400);
    assert!(head.contains("Connection: close"));
    collected.extend([head, body]);
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(GUARD, tls.read_to_end(&mut rest))
        .await
        .unwrap();
    assert!(rest.is_empty());
    assert_eq!(seen_by(&s.origin).len(), 4);

    let violations = drain(&mut s.violations);
    let targets: Vec<&str> = violations.iter().map(|v| v.target.as_str()).collect();
    let t = |p: &str| format!("{HOST}:{port} {p}");
    assert_eq!(
        targets,
        [
            t("/repos/o/r/issues"),
            t("/user"),
            t("/user"),
            format!("{HOST}:{port}")
        ]
    );
    assert!(violations.iter().all(|v| v.action == BROKER_DENY));
    tokio::time::timeout(GUARD, async {
        while results.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let results = results.lock().unwrap();
    let err = results[0].as_ref().unwrap_err();
    assert_eq!(err.response().status(), Some(400));
    collected.extend(violations.iter().map(|v| format!("{v} {v:?}")));
    collected.push(format!("{err} {err:?}"));
    collected.push(format!("{:?} {:?} {:?}", s.broker, s.lease, credential()));
    assert_no_secret(&collected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_delimited_response_closes_the_client() {
    let s = trusted().await;
    let port = s.origin.addr().port();
    let (addr, _) = broker_listener(&s).await;
    let mut tls = client(addr, &s.ca, HOST).await.unwrap();
    let mut buf = Vec::new();
    let (status, _, body) = exchange(&mut tls, &mut buf, &with_port(get("/close", ""), port)).await;
    assert_eq!((status, body.as_str()), (200, "origin saw /close"));
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(GUARD, tls.read_to_end(&mut rest))
        .await
        .unwrap();
    assert!(rest.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sni_mismatch_is_refused() {
    let mut s = trusted().await;
    let (addr, results) = broker_listener(&s).await;
    assert!(client(addr, &s.ca, "evil.test").await.is_err());
    tokio::time::timeout(GUARD, async {
        while results.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let err = results.lock().unwrap()[0].clone().unwrap_err();
    assert!(err.to_string().contains("\"evil.test\""), "{err}");
    let v = drain(&mut s.violations);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].target, format!("{HOST}:{}", s.origin.addr().port()));
    assert!(seen_by(&s.origin).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_upstream_is_502() {
    // The broker trusts only an unrelated CA, so the origin cannot prove
    // its identity.
    let other = TestPki::new(&[HOST, "127.0.0.1"]);
    let mut s = setup(TestPki::new(&[HOST, "127.0.0.1"]), &other.ca_der, None).await;
    let port = s.origin.addr().port();
    let (addr, _) = broker_listener(&s).await;
    let mut tls = client(addr, &s.ca, HOST).await.unwrap();
    let mut buf = Vec::new();
    let (status, head, body) =
        exchange(&mut tls, &mut buf, &with_port(get("/user", ""), port)).await;
    assert_eq!(status, 502, "{body}");
    assert!(head.contains("Connection: close"));
    assert!(body.contains("certificate"), "{body}");
    assert!(seen_by(&s.origin).is_empty());
    let v = drain(&mut s.violations);
    assert_eq!(v.len(), 1);
    assert_no_secret(&[head, body, format!("{v:?}")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_lease_is_refused() {
    let pki = TestPki::new(&[HOST, "127.0.0.1"]);
    let der = pki.ca_der.clone();
    let expired = SystemTime::now() - Duration::from_secs(1);
    let mut s = setup(pki, &der, Some(expired)).await;
    let port = s.origin.addr().port();
    let (addr, _) = broker_listener(&s).await;
    let mut tls = client(addr, &s.ca, HOST).await.unwrap();
    let mut buf = Vec::new();
    let (status, _, body) = exchange(&mut tls, &mut buf, &with_port(get("/user", ""), port)).await;
    assert_eq!(status, 403);
    assert!(body.contains("expired"), "{body}");
    assert!(seen_by(&s.origin).is_empty());
    assert_eq!(drain(&mut s.violations).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_through_proxy_and_broker() {
    let mut s = trusted().await;
    let port = s.origin.addr().port();
    let pair = proxy_pair(s.broker.clone(), HOST).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    std::fs::write(&ca_pem, s.ca.ca_cert_pem()).unwrap();
    let phantom = s.lease.phantom().to_string();
    let url = |p: &str| format!("https://{HOST}:{port}{p}");
    let curl = |args: Vec<String>| {
        let mut cmd = tokio::process::Command::new("curl");
        cmd.args(["-sS", "--max-time", "15", "-x"])
            .arg(format!("http://{}", pair.http_addr()))
            .arg("--cacert")
            .arg(&ca_pem)
            .args(["-w", "\\n%{http_code}\\n"])
            .args(args);
        cmd
    };
    let out = match curl(vec![
        "-H".into(),
        format!("Authorization: Bearer {phantom}"),
        url("/user"),
        url("/repos/o/r"),
    ])
    .output()
    .await
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            test_support::tool("curl", "apt-get install curl");
            return;
        }
        Err(e) => panic!("curl: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "origin saw /user\n200\norigin saw /repos/o/r\n200\n"
    );
    let seen = seen_by(&s.origin);
    assert_eq!(seen.len(), 2);
    for request in &seen {
        let auth: Vec<&str> = request
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("authorization:"))
            .collect();
        assert_eq!(auth, [format!("Authorization: Bearer {SECRET}")]);
        assert!(!request.contains(&phantom));
    }

    let post = curl(vec!["-d".into(), "{}".into(), url("/repos/o/r/issues")])
        .output()
        .await
        .unwrap();
    let post_out = String::from_utf8_lossy(&post.stdout).into_owned();
    assert!(post_out.ends_with("\n403\n"), "{post_out}");
    assert_eq!(seen_by(&s.origin).len(), 2);

    s.lease.revoke();
    let revoked = curl(vec![url("/user")]).output().await.unwrap();
    let revoked_out = String::from_utf8_lossy(&revoked.stdout).into_owned();
    assert!(revoked_out.ends_with("\n403\n"), "{revoked_out}");
    assert_eq!(seen_by(&s.origin).len(), 2);

    let v = drain(&mut s.violations);
    assert_eq!(v.len(), 2, "{v:?}");
    let post_err = String::from_utf8_lossy(&post.stderr).into_owned();
    assert_no_secret(&[
        stdout,
        stderr,
        post_out,
        post_err,
        revoked_out,
        format!("{v:?}"),
    ]);
    pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_chunked_body_is_reframed() {
    let mut s = trusted().await;
    let port = s.origin.addr().port();
    let (addr, _) = broker_listener(&s).await;
    let mut tls = client(addr, &s.ca, HOST).await.unwrap();
    let mut buf = Vec::new();
    // Two requests in one write: a chunked upload, then a GET.
    let both = format!(
        "POST /upload HTTP/1.1\r\nHost: {HOST}:{port}\r\nTransfer-Encoding: chunked\r\nAuthorization: token agent-made-up\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\nGET /user HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n"
    );
    tls.write_all(both.as_bytes()).await.unwrap();
    for expected in ["origin saw /upload", "origin saw /user"] {
        let (head, body) = tokio::time::timeout(GUARD, read_message(&mut tls, &mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(String::from_utf8_lossy(&body), expected);
    }
    let seen = seen_by(&s.origin);
    assert_eq!(seen.len(), 2);
    let upload = seen[0].to_ascii_lowercase();
    assert!(upload.contains("content-length: 5\r\n"), "{upload}");
    assert!(!upload.contains("transfer-encoding"), "{upload}");
    assert!(upload.ends_with("\r\n\r\nhello"), "{upload}");
    assert!(!upload.contains("agent-made-up"), "{upload}");
    for request in &seen {
        assert_eq!(request.matches(SECRET).count(), 1, "{request}");
    }
    assert!(drain(&mut s.violations).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ip_literal_target() {
    let s = trusted().await;
    let port = s.origin.addr().port();
    let (addr, _) = broker_listener_for(&s, "127.0.0.1").await;
    // No SNI for an IP; the leaf carries an IP subject alternative name and
    // the upstream must prove the IP.
    let mut tls = client(addr, &s.ca, "127.0.0.1").await.unwrap();
    let mut buf = Vec::new();
    let req = format!("GET /ip HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let (status, _, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!((status, body.as_str()), (200, "origin saw /ip"));
    assert_eq!(seen_by(&s.origin)[0].matches(SECRET).count(), 1);
    // The name form of the same origin is another target here.
    let req = with_port(get("/user", ""), port);
    let (status, _, _) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!(status, 403);
    assert_eq!(seen_by(&s.origin).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_http11_is_spoken() {
    let s = trusted().await;
    let (addr, _) = broker_listener(&s).await;
    assert!(client_alpn(addr, &s.ca, HOST, &[b"h2"]).await.is_err());
    let tls = client_alpn(addr, &s.ca, HOST, &[]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), None);
    assert!(seen_by(&s.origin).is_empty());
}

/// The broker picks TLS 1.3's AES-128-GCM-SHA256 even for a client that
/// lists AES-256-GCM-SHA384 first (as rustls's and OpenSSL's defaults do),
/// and still serves one that offers only AES-256-GCM-SHA384.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_prefers_aes128_and_still_speaks_aes256() {
    use rustls::CipherSuite::{TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384};
    let s = trusted().await;
    let (addr, _) = broker_listener(&s).await;
    let config = tls_origin::client_config(&[s.ca.ca_cert_der()]);
    let first = config.crypto_provider().cipher_suites[0].suite();
    assert_eq!(first, TLS13_AES_256_GCM_SHA384, "the client's own order");
    let tls = tls_origin::connect(addr, HOST, config).await.unwrap();
    let suite = tls.get_ref().1.negotiated_cipher_suite().unwrap().suite();
    assert_eq!(suite, TLS13_AES_128_GCM_SHA256);

    let mut only256 = rustls::crypto::ring::default_provider();
    only256
        .cipher_suites
        .retain(|c| c.suite() == TLS13_AES_256_GCM_SHA384);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(s.ca.ca_cert_der().into()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(only256))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut tls = tls_origin::connect(addr, HOST, config).await.unwrap();
    let suite = tls.get_ref().1.negotiated_cipher_suite().unwrap().suite();
    assert_eq!(suite, TLS13_AES_256_GCM_SHA384);
    let mut buf = Vec::new();
    let req = with_port(get("/x", ""), s.origin.addr().port());
    let (status, _, body) = exchange(&mut tls, &mut buf, &req).await;
    assert_eq!((status, body.as_str()), (200, "origin saw /x"));
}

/// Set (to `trusted` or `untrusted`) in the process
/// [`upstream_trust_comes_from_the_platform_store`] starts.
const PLATFORM_MODE: &str = "CRED_BROKER_TEST_PLATFORM_TRUST";

/// The default trust is the platform's: on Linux the system store, which
/// `SSL_CERT_FILE` names when set. The store is read when the broker is
/// built, from the environment of the process, so each case runs in a
/// process of its own (this test binary again, with `SSL_CERT_FILE` set
/// and only [`platform_trust_case`] selected).
#[test]
fn upstream_trust_comes_from_the_platform_store() {
    let dir = std::env::temp_dir().join(format!("cred-broker-platform-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for mode in ["trusted", "untrusted"] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tls::platform_trust_case", "--ignored"])
            .env(PLATFORM_MODE, mode)
            .env("SSL_CERT_FILE", dir.join(format!("{mode}.pem")))
            .env("SSL_CERT_DIR", dir.join("no-such-dir"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{mode}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One case of [`upstream_trust_comes_from_the_platform_store`]: writes the
/// origin's CA (trusted) or an unrelated CA (untrusted) to the file
/// `SSL_CERT_FILE` names, builds a broker with the default trust and no
/// extra root, and asks the origin through it: 200, or 502 and nothing sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "one case of upstream_trust_comes_from_the_platform_store, run by it in a process of its own"]
async fn platform_trust_case() {
    let mode = std::env::var(PLATFORM_MODE).expect("started by the platform trust test");
    let store = std::env::var("SSL_CERT_FILE").expect("SSL_CERT_FILE set");
    let pki = TestPki::new(&[HOST, "127.0.0.1"]);
    let other = TestPki::new(&[HOST, "127.0.0.1"]);
    let in_store = if mode == "trusted" { &pki } else { &other };
    std::fs::write(&store, &in_store.ca_pem).unwrap();
    let origin = origin(&pki).await;
    let ca = Arc::new(SessionCa::builder("s-tls").build().unwrap());
    let engine = RuleEngine::builder()
        .rules(RuleFile::from_toml(RULES).unwrap())
        .build()
        .unwrap();
    let cred = credential();
    let lease = Lease::builder("s-tls", &cred).build().unwrap();
    // No upstream_roots call: the default is the platform's trust.
    let broker = Broker::builder(ca.clone(), engine)
        .grant(cred, lease.clone())
        .build()
        .unwrap();
    let broker = Arc::new(broker);
    let s = Setup {
        violations: broker.subscribe_violations(),
        origin,
        ca,
        broker,
        lease,
    };
    let port = s.origin.addr().port();
    let (addr, _) = broker_listener(&s).await;
    let mut tls = client(addr, &s.ca, HOST).await.unwrap();
    let mut buf = Vec::new();
    let (status, _, body) = exchange(&mut tls, &mut buf, &with_port(get("/user", ""), port)).await;
    if mode == "trusted" {
        assert_eq!(status, 200, "{body}");
        assert_eq!(seen_by(&s.origin).len(), 1);
    } else {
        assert_eq!(status, 502, "{body}");
        assert!(body.contains("certificate"), "{body}");
        assert!(seen_by(&s.origin).is_empty());
    }
}

#[test]
fn extra_roots_come_as_pem_bundles_and_a_bundle_without_one_is_refused() {
    let a = TestPki::new(&[HOST]);
    let b = TestPki::new(&[HOST]);
    let bundle = format!("{}\n# a comment line\n{}", a.ca_pem, b.ca_pem);
    let engine = || {
        RuleEngine::builder()
            .rules(RuleFile::from_toml(RULES).unwrap())
            .build()
            .unwrap()
    };
    let ca = Arc::new(SessionCa::builder("s-pem").build().unwrap());
    let mut builder = Broker::builder(ca.clone(), engine());
    builder.upstream_roots(UpstreamRoots::ExtraOnly);
    builder.extra_roots_pem(bundle.as_bytes()).unwrap();
    assert!(builder.build().is_ok());
    for bad in ["", "not pem at all", "-----BEGIN CERTIFICATE-----\nAAA\n"] {
        let mut builder = Broker::builder(ca.clone(), engine());
        assert!(builder.extra_roots_pem(bad.as_bytes()).is_err(), "{bad:?}");
    }
    // Only the extra roots, and none given: refused at build.
    let mut builder = Broker::builder(ca, engine());
    builder.upstream_roots(UpstreamRoots::ExtraOnly);
    assert!(builder.build().is_err());
}

/// Waits until `n` client connections have been served to the end.
async fn served(results: &Mutex<Vec<Result<(), cred_broker::Error>>>, n: usize) {
    let wait = async {
        while results.lock().unwrap().len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(GUARD, wait)
        .await
        .expect("served in time");
}

/// Clients that open a new connection for each request share the
/// broker's verified upstream connection: three clients, one TCP
/// connection at the origin, each request with the real credential. A
/// response that closes the connection leaves nothing to reuse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_connection_outlives_its_client() {
    let s = trusted().await;
    let port = s.origin.addr().port();
    let (addr, results) = broker_listener(&s).await;
    let once = |path: &'static str| {
        let ca = &s.ca;
        async move {
            let mut tls = client(addr, ca, HOST).await.unwrap();
            let mut buf = Vec::new();
            let (status, _, body) =
                exchange(&mut tls, &mut buf, &with_port(get(path, ""), port)).await;
            assert_eq!((status, body), (200, format!("origin saw {path}")));
        }
    };
    for round in 1..=3 {
        once("/user").await;
        served(&results, round).await;
    }
    assert_eq!(
        s.origin.connections(),
        1,
        "one upstream connection for three clients"
    );
    let seen = seen_by(&s.origin);
    assert_eq!(seen.len(), 3);
    for request in &seen {
        assert_eq!(request.matches(SECRET).count(), 1, "{request}");
    }
    // The kept connection carries this one, and the origin closes it.
    once("/close").await;
    served(&results, 4).await;
    assert_eq!(s.origin.connections(), 1);
    once("/user").await;
    assert_eq!(
        s.origin.connections(),
        2,
        "a closed connection is never reused"
    );
    served(&results, 5).await;

    // Kept (the response promised nothing), then closed by the origin
    // while idle: the next client is not handed a dead connection.
    once("/bye").await;
    served(&results, 6).await;
    assert_eq!(s.origin.connections(), 2);
    tokio::time::sleep(Duration::from_millis(50)).await;
    once("/user").await;
    assert_eq!(
        s.origin.connections(),
        3,
        "a connection the origin closed is dialed anew"
    );
}
