//! How the HTTP proxy answers request heads its reader refuses: the
//! framing rules that are stricter than the proxy's own parser was (a
//! second `Content-Length`, any coding but `chunked`, a body on `CONNECT`,
//! a second or malformed `Host`), the 8 KiB line limit, and a bare LF
//! answered as soon as it arrives.

use crate::support::*;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_framing_is_refused_before_anything_is_dialed() {
    let f = fixture(|_| {}).await;
    let mut violations = f.pair.subscribe_violations();
    let origin = format!("origin.test:{}", f.origin.port());
    let echo = format!("echo.test:{}", f.echo.port());
    let refused = [
        format!(
            "POST http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx"
        ),
        format!(
            "POST http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"
        ),
        format!(
            "POST http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
        format!("CONNECT {echo} HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"),
        format!("CONNECT {echo} HTTP/1.1\r\nHost: {echo}\r\nHost: other.test:1\r\n\r\n"),
        format!("CONNECT {echo} HTTP/1.1\r\nHost: a b\r\n\r\n"),
    ];
    for req in &refused {
        let out = text(&exchange(f.pair.http_addr(), req.as_bytes()).await);
        assert!(out.starts_with("HTTP/1.1 400 "), "{req:?}: {out}");
        assert!(out.contains("error=http_request_error"), "{out}");
    }
    // The same requests with one clean framing are served.
    let served = [
        format!("POST http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\nContent-Length: 1\r\n\r\nx"),
        format!(
            "POST http://{origin}/ HTTP/1.1\r\nHost: {origin}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        ),
    ];
    for req in &served {
        let out = text(&exchange(f.pair.http_addr(), req.as_bytes()).await);
        assert!(out.starts_with("HTTP/1.1 200 "), "{req:?}: {out}");
    }
    let (mut tunnel, head) = http_connect(f.pair.http_addr(), &echo).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tunnel.write_all(b"ping").await.unwrap();
    assert_eq!(read_n(&mut tunnel, 4).await, b"ping");
    // A head refused before its target was read names no target: no
    // violation for any of them.
    assert!(violations.try_recv().is_none());
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_over_8_kib_is_too_large_even_in_a_smaller_head_limit() {
    let f = fixture(|_| {}).await;
    let echo = format!("echo.test:{}", f.echo.port());
    let long = format!(
        "CONNECT {echo} HTTP/1.1\r\nX-Long: {}\r\n\r\n",
        "a".repeat(8200)
    );
    assert!(long.len() < 16 * 1024);
    let out = text(&exchange(f.pair.http_addr(), long.as_bytes()).await);
    assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
    // A line just under the limit passes.
    let fits = format!(
        "CONNECT {echo} HTTP/1.1\r\nX-Long: {}\r\n\r\n",
        "a".repeat(8000)
    );
    let (_tunnel, head) = http_connect_raw(f.pair.http_addr(), fits.as_bytes()).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_lf_is_answered_as_it_arrives_not_at_the_timeout() {
    let f = fixture(|b| {
        b.header_timeout(Duration::from_secs(8));
    })
    .await;
    let start = Instant::now();
    // The head never ends with CR LF CR LF, and the client keeps its side
    // open: only the bare LF can end the wait.
    let mut s = TcpStream::connect(f.pair.http_addr()).await.unwrap();
    s.write_all(b"GET http://origin.test/ HTTP/1.1\nHost: origin.test\n\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(GUARD, s.read_to_end(&mut out))
        .await
        .expect("answered before the guard")
        .unwrap();
    let out = text(&out);
    assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
    assert!(out.contains("bare LF"), "{out}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    f.pair.shutdown().await;
}

/// Sends a whole CONNECT head; the tunnel and the proxy's answer head.
async fn http_connect_raw(proxy: std::net::SocketAddr, head: &[u8]) -> (TcpStream, String) {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(head).await.unwrap();
    let answer = read_head(&mut s).await;
    (s, answer)
}
