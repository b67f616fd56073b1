//! Loopback fixtures for the socket tests: an HTTP origin that answers with
//! the request head it received, an echo server, and a proxy pair that
//! grants 127.0.0.1/32 explicitly.

use connect_proxy::{
    AllowList, Baseline, IpPolicy, ProxyConfig, ProxyConfigBuilder, ProxyPair, StaticResolver,
};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Every socket operation in a test is bounded by this.
pub(crate) const GUARD: Duration = Duration::from_secs(10);

pub(crate) const LOCAL: &str = "127.0.0.1";

/// Accept queue of the fixture servers. `TcpListener::bind` queues only
/// 128 connections; past that the kernel falls back to SYN cookies and
/// drops handshakes it cannot queue, and a tunnel whose data and FIN then
/// arrive out of step is reset by the kernel (seen as an empty echo). The
/// 1,000-tunnel test dials this many at once through the proxies.
pub(crate) const BACKLOG: u32 = 4096;

/// A listener on 127.0.0.1, port 0, with room for [`BACKLOG`] pending
/// connections.
pub(crate) fn listen() -> TcpListener {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind((LOCAL.parse::<IpAddr>().unwrap(), 0).into())
        .unwrap();
    socket.listen(BACKLOG).unwrap()
}

/// The next connection; transient accept errors (a reset before accept,
/// out of descriptors) are waited out instead of ending the server, which
/// would reset every connection still queued.
async fn accept(listener: &TcpListener) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((s, _)) => return s,
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// Answers each request with `200` and the request head as the body.
pub(crate) async fn origin() -> SocketAddr {
    let listener = listen();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let mut s = accept(&listener).await;
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut b = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&b[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    head.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
                let _ = s.write_all(&head).await;
                let _ = s.shutdown().await;
            });
        }
    });
    addr
}

/// Echoes every byte until the client half-closes, then closes.
pub(crate) async fn echo() -> SocketAddr {
    let listener = listen();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let mut s = accept(&listener).await;
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
                let _ = w.shutdown().await;
            });
        }
    });
    addr
}

pub(crate) struct Fixture {
    pub(crate) pair: ProxyPair,
    pub(crate) resolver: Arc<StaticResolver>,
    pub(crate) origin: SocketAddr,
    pub(crate) echo: SocketAddr,
}

pub(crate) const ALLOWED: &[&str] = &[
    "origin.test",
    "echo.test",
    "greeter.test",
    "sneaky.test",
    "nxdomain.test",
    "stall.test",
    "broker.test",
    "127.0.0.1",
];

pub(crate) async fn fixture(tune: impl FnOnce(&mut ProxyConfigBuilder)) -> Fixture {
    let origin = origin().await;
    let echo = echo().await;
    let (config, resolver) = config(tune);
    let pair = ProxyPair::start(config).await.unwrap();
    Fixture {
        pair,
        resolver,
        origin,
        echo,
    }
}

/// The fixture's configuration (the names of [`ALLOWED`], resolved by a
/// static resolver to loopback, which the address policy grants), tuned,
/// and its resolver.
pub(crate) fn config(
    tune: impl FnOnce(&mut ProxyConfigBuilder),
) -> (connect_proxy::ProxyConfig, Arc<StaticResolver>) {
    let resolver = Arc::new(StaticResolver::new());
    let local: IpAddr = LOCAL.parse().unwrap();
    resolver
        .insert("origin.test", [local])
        .insert("echo.test", [local])
        .insert("greeter.test", [local])
        .insert("broker.test", [local])
        .insert("sneaky.test", ["127.0.0.2".parse().unwrap()])
        .stall("stall.test");
    let list = AllowList::builder()
        .baseline(Baseline::Exclude)
        .allow_all(ALLOWED.iter().copied())
        .build()
        .unwrap();
    let mut ip = IpPolicy::new();
    ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    let mut b = ProxyConfig::builder();
    b.allowlist(list)
        .ip_policy(ip)
        .resolver(resolver.clone())
        .resolve_timeout(Duration::from_millis(300));
    tune(&mut b);
    (b.build().unwrap(), resolver)
}

/// Sends raw bytes, reads until the peer closes.
pub(crate) async fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    tokio::time::timeout(GUARD, async {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(bytes).await.unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        out
    })
    .await
    .expect("the proxy answered and closed in time")
}

/// Reads exactly `n` bytes.
pub(crate) async fn read_n(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(GUARD, s.read_exact(&mut buf))
        .await
        .expect("read in time")
        .unwrap();
    buf
}

/// Reads an HTTP response head (up to the blank line).
pub(crate) async fn read_head(s: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(GUARD, s.read(&mut b))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "closed before the end of the head: {head:?}");
        head.push(b[0]);
    }
    String::from_utf8(head).unwrap()
}

/// SOCKS5 greeting (no auth) and a CONNECT request by domain name; returns
/// the stream and the reply code.
pub(crate) async fn socks_connect(proxy: SocketAddr, host: &[u8], port: u16) -> (TcpStream, u8) {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(&[5, 1, 0]).await.unwrap();
    assert_eq!(read_n(&mut s, 2).await, [5, 0]);
    let mut req = vec![5, 1, 0, 3, u8::try_from(host.len()).unwrap()];
    req.extend_from_slice(host);
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).await.unwrap();
    let reply = read_n(&mut s, 10).await;
    (s, reply[1])
}

/// An HTTP CONNECT; returns the stream and the response head.
pub(crate) async fn http_connect(proxy: SocketAddr, authority: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    let req = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let head = read_head(&mut s).await;
    (s, head)
}
