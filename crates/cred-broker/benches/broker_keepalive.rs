//! One HTTPS request and its response on an open keep-alive connection
//! (`broker_keepalive`) and on a new connection each time
//! (`broker_new_connection`: TCP, TLS handshakes, request), straight to a
//! local origin (`direct`) and through `Broker::serve` (`broker`: TLS in,
//! parse, rules, lease, injection, TLS out). The
//! difference of the medians is the latency the broker adds; the target is
//! at most 1 ms at p50. Everything runs on one current-thread runtime, so
//! the figures are CPU cost on loopback, not scheduling.

// A bench is a test harness: a bad fixture should stop it loudly, and
// criterion's macros generate undocumented items.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use cred_broker::{
    Broker, Credential, HeaderTemplate, Host, Lease, RuleEngine, RuleFile, Secret, SessionCa,
    Target, UpstreamRoots,
};
use criterion::{Criterion, criterion_group, criterion_main};
use std::net::SocketAddr;
use std::sync::Arc;
use test_support::tls_origin::{self, Origin, Reply, TestPki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::client::TlsStream;

const HOST: &str = "origin.test";
const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A keep-alive HTTPS origin answering every request with `RESPONSE`.
async fn origin() -> (SocketAddr, Vec<u8>) {
    let pki = TestPki::new(&[HOST]);
    let origin = Origin::start_unrecorded(&pki, |_| async { Reply::new(RESPONSE) }).await;
    (origin.addr(), pki.ca_der)
}

async fn connect(addr: SocketAddr, root: &[u8]) -> TlsStream<TcpStream> {
    let mut config = tls_origin::client_config(&[root]);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tls_origin::connect(addr, HOST, config).await.unwrap()
}

async fn round_trip(tls: &mut TlsStream<TcpStream>, request: &[u8], buf: &mut [u8]) {
    tls.write_all(request).await.unwrap();
    let mut got = 0;
    while got < RESPONSE.len() {
        let n = tls.read(&mut buf[got..]).await.unwrap();
        assert!(n > 0, "connection closed");
        got += n;
    }
    assert_eq!(&buf[..got], RESPONSE);
}

struct Fixture {
    direct: TlsStream<TcpStream>,
    brokered: TlsStream<TcpStream>,
    request: Vec<u8>,
    origin_addr: SocketAddr,
    origin_root: Vec<u8>,
    broker_addr: SocketAddr,
    session_root: Vec<u8>,
}

/// A new connection: TCP, TLS handshake, one request and its response.
async fn fresh(addr: SocketAddr, root: &[u8], request: &[u8], buf: &mut [u8]) {
    let mut tls = connect(addr, root).await;
    round_trip(&mut tls, request, buf).await;
}

async fn fixture() -> Fixture {
    let (origin_addr, origin_root) = origin().await;
    let ca = Arc::new(SessionCa::builder("bench").build().unwrap());
    let rules = RuleFile::from_toml(
        "[[rule]]\nname = \"read\"\ndecision = \"allow\"\nhosts = [\"origin.test\"]\nclasses = [\"rest-read\"]\n",
    )
    .unwrap();
    let engine = RuleEngine::builder().rules(rules).build().unwrap();
    let cred = Credential::builder("code-host")
        .secret(Secret::new(b"bench-secret-value".to_vec()).unwrap())
        .host(HOST)
        .template(HeaderTemplate::Bearer)
        .build()
        .unwrap();
    let lease = Lease::builder("bench", &cred).build().unwrap();
    let phantom = lease.phantom().to_string();
    let broker = Arc::new(
        Broker::builder(ca.clone(), engine)
            .extra_root_der(&origin_root)
            .upstream_roots(UpstreamRoots::ExtraOnly)
            .grant(cred, lease)
            .build()
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let broker_addr = listener.local_addr().unwrap();
    let target = Target::new(Host::parse_wire(HOST).unwrap(), origin_addr.port());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tcp.set_nodelay(true).unwrap();
            let (broker, target) = (broker.clone(), target.clone());
            tokio::spawn(async move {
                let _ = broker.serve(tcp, &target, origin_addr).await;
            });
        }
    });
    let request = format!(
        "GET /repos/o/r HTTP/1.1\r\nHost: {HOST}:{}\r\nUser-Agent: bench\r\nAccept: */*\r\nAuthorization: Bearer {phantom}\r\n\r\n",
        origin_addr.port()
    )
    .into_bytes();
    Fixture {
        direct: connect(origin_addr, &origin_root).await,
        brokered: connect(broker_addr, ca.ca_cert_der()).await,
        request,
        origin_addr,
        origin_root,
        broker_addr,
        session_root: ca.ca_cert_der().to_vec(),
    }
}

fn keep_alive(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut f = rt.block_on(fixture());
    let mut buf = vec![0u8; 4096];
    // Warm both paths (the broker dials its upstream at the first request).
    rt.block_on(round_trip(&mut f.direct, &f.request, &mut buf));
    rt.block_on(round_trip(&mut f.brokered, &f.request, &mut buf));
    let mut group = c.benchmark_group("broker_keepalive");
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(round_trip(&mut f.direct, &f.request, &mut buf)))
    });
    group.bench_function("broker", |b| {
        b.iter(|| rt.block_on(round_trip(&mut f.brokered, &f.request, &mut buf)))
    });
    group.finish();
    let mut group = c.benchmark_group("broker_new_connection");
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(fresh(f.origin_addr, &f.origin_root, &f.request, &mut buf)))
    });
    group.bench_function("broker", |b| {
        b.iter(|| rt.block_on(fresh(f.broker_addr, &f.session_root, &f.request, &mut buf)))
    });
    group.finish();
}

criterion_group!(benches, keep_alive);
criterion_main!(benches);
