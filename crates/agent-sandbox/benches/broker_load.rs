//! Load helper for `benches/compare/broker.sh`: an HTTPS origin on
//! 127.0.0.1 with its own CA, our proxy pair with the credential broker in
//! front of it, and a load client that sends HTTPS requests through any
//! CONNECT proxy (ours, mitmproxy) or straight to the origin.
//!
//! `broker_load serve DIR` prints one JSON line (`origin`, `origin_ca`,
//! `proxy`, `session_ca`) and serves until stdin closes.
//! `broker_load load --origin ADDR --ca FILE [--proxy ADDR] --mode
//! keepalive|new --conns N --secs S` prints `REQ_PER_S P50_MS P99_MS ERRORS`
//! (and the last error on stderr).

// A bench helper: a broken fixture should stop it loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use agent_sandbox::broker_intercept_on_ports;
use connect_proxy::{AllowList, Baseline, IpPolicy, ProxyConfig, ProxyPair, StaticResolver};
use cred_broker::{
    Broker, Credential, HeaderTemplate, Lease, RuleEngine, RuleFile, Secret, SessionCa,
    UpstreamRoots,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::tls_origin::{self, Origin, Reply, TestPki};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

const BODY: &[u8] = b"0123456789abcdef";

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match args.first().map(String::as_str) {
        Some("serve") => rt.block_on(serve(&args[1])),
        Some("load") => rt.block_on(load(&args[1..])),
        _ => eprintln!(
            "usage: broker_load serve DIR | load --origin ADDR --ca FILE [--proxy ADDR] --mode keepalive|new --conns N --secs S"
        ),
    }
}

async fn serve(dir: &str) {
    // The origin's leaf names 127.0.0.1 (an IP subject alternative name).
    let pki = TestPki::new(&["127.0.0.1"]);
    let origin_ca = format!("{dir}/origin-ca.pem");
    std::fs::write(&origin_ca, &pki.ca_pem).unwrap();
    let reply = [
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", BODY.len()).as_bytes(),
        BODY,
    ]
    .concat();
    let origin = Origin::start_unrecorded(&pki, move |_| {
        let reply = reply.clone();
        async move { Reply::new(reply) }
    })
    .await
    .addr();

    let session = Arc::new(SessionCa::builder("bench").build().unwrap());
    let session_ca = format!("{dir}/session-ca.pem");
    std::fs::write(&session_ca, session.ca_cert_pem()).unwrap();
    let engine = RuleEngine::builder()
        .rules(RuleFile::from_toml("[[rule]]\nname = \"read\"\ndecision = \"allow\"\nhosts = [\"127.0.0.1\"]\nclasses = [\"rest-read\"]\n").unwrap())
        .build()
        .unwrap();
    let cred = Credential::builder("bench")
        .secret(Secret::from_string("bench-secret".into()).unwrap())
        .host("127.0.0.1")
        .template(HeaderTemplate::Bearer)
        .build()
        .unwrap();
    let lease = Lease::builder("bench", &cred).build().unwrap();
    let broker = Arc::new(
        Broker::builder(session, engine)
            .grant(cred, lease)
            .extra_root_der(&pki.ca_der)
            .upstream_roots(UpstreamRoots::ExtraOnly)
            .build()
            .unwrap(),
    );
    let list = AllowList::builder()
        .baseline(Baseline::Exclude)
        .allow("127.0.0.1")
        .build()
        .unwrap();
    let mut policy = IpPolicy::new();
    policy.allow_cidr("127.0.0.1/32".parse().unwrap());
    let pair = ProxyPair::start(
        ProxyConfig::builder()
            .allowlist(list)
            .ip_policy(policy)
            .resolver(Arc::new(StaticResolver::new()))
            // The origin listens on an ephemeral port, not 443.
            .intercept(broker_intercept_on_ports(
                broker,
                vec!["127.0.0.1".into()],
                vec![origin.port()],
            ))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    println!(
        "{{\"origin\":\"{origin}\",\"origin_ca\":\"{origin_ca}\",\"proxy\":\"{}\",\"session_ca\":\"{session_ca}\"}}",
        pair.http_addr()
    );
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await
    .unwrap();
    pair.shutdown().await;
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

async fn open(
    origin: SocketAddr,
    proxy: Option<SocketAddr>,
    tls: &tokio_rustls::TlsConnector,
) -> Result<Box<dyn Stream>, String> {
    let tcp = TcpStream::connect(proxy.unwrap_or(origin))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut tcp = tcp;
    if proxy.is_some() {
        let req = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n\r\n");
        tcp.write_all(req.as_bytes())
            .await
            .map_err(|e| format!("CONNECT: {e}"))?;
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            let n = tcp
                .read(&mut b)
                .await
                .map_err(|e| format!("CONNECT: {e}"))?;
            if n == 0 || head.len() > 4096 {
                return Err("CONNECT: no complete answer".into());
            }
            head.push(b[0]);
        }
        if !head.starts_with(b"HTTP/1.1 200") && !head.starts_with(b"HTTP/1.0 200") {
            let line = String::from_utf8_lossy(&head);
            return Err(format!("CONNECT: {}", line.lines().next().unwrap_or("")));
        }
    }
    let name = ServerName::IpAddress(origin.ip().into());
    let stream = tls
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS: {e}"))?;
    Ok(Box::new(stream))
}

async fn request(s: &mut Box<dyn Stream>, origin: SocketAddr, buf: &mut Vec<u8>) -> bool {
    let req = format!("GET /repos/x HTTP/1.1\r\nHost: {origin}\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            if buf.len() >= i + 4 + len {
                return head.starts_with("http/1.1 200");
            }
        }
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn load(args: &[String]) {
    let get = |k: &str| {
        args.iter()
            .position(|a| a == k)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let origin: SocketAddr = get("--origin").unwrap().parse().unwrap();
    let proxy: Option<SocketAddr> = get("--proxy").map(|p| p.parse().unwrap());
    let ca = std::fs::read(get("--ca").unwrap()).unwrap();
    let keepalive = get("--mode").as_deref() != Some("new");
    let conns: usize = get("--conns").map(|c| c.parse().unwrap()).unwrap_or(8);
    let secs: u64 = get("--secs").map(|c| c.parse().unwrap()).unwrap_or(3);
    let roots: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(&ca)
        .map(Result::unwrap)
        .collect();
    let roots: Vec<&[u8]> = roots.iter().map(|c| c.as_ref()).collect();
    let config = tls_origin::client_config(&roots);
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let tls = tls.clone();
        tasks.push(tokio::spawn(async move {
            let (mut lat, mut errors, mut last_error) = (Vec::new(), 0u64, None);
            let mut buf = Vec::new();
            let mut conn: Option<Box<dyn Stream>> = None;
            while Instant::now() < deadline {
                let t = Instant::now();
                if conn.is_none() || !keepalive {
                    conn = match open(origin, proxy, &tls).await {
                        Ok(s) => Some(s),
                        Err(e) => {
                            last_error = Some(e);
                            None
                        }
                    };
                }
                let ok = match conn.as_mut() {
                    Some(s) => {
                        let ok = request(s, origin, &mut buf).await;
                        if !ok {
                            last_error = Some("no 200 answer to the GET".into());
                        }
                        ok
                    }
                    None => false,
                };
                if ok {
                    lat.push(t.elapsed());
                } else {
                    errors += 1;
                    conn = None;
                }
            }
            (lat, errors, last_error)
        }));
    }
    let (mut all, mut errors, mut last_error) = (Vec::new(), 0, None);
    for t in tasks {
        let (l, e, le) = t.await.unwrap();
        all.extend(l);
        errors += e;
        last_error = le.or(last_error);
    }
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 - 1.0) * p) as usize)
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or(0.0)
    };
    println!(
        "{:.0} {:.3} {:.3} {}",
        all.len() as f64 / secs as f64,
        pct(0.5),
        pct(0.99),
        errors
    );
    if let Some(e) = last_error {
        eprintln!("broker_load: last error: {e}");
    }
}
