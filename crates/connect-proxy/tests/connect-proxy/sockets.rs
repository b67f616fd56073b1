//! Both proxies over real loopback sockets: curl and raw-bytes clients to a
//! local origin granted with `allow_cidr`, every denial with its code,
//! half-close, 1,000 concurrent tunnels, slow clients, interception and
//! shutdown.

use crate::support::*;
use connect_proxy::{
    AllowList, BoxFuture, ClientStream, Intercept, Intercepted, ProxyConfig, ProxyPair,
    StaticResolver, Target,
};
use sandbox_core::{SandboxSpec, SandboxViolation};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn curl_available() -> bool {
    test_support::tool("curl", "apt-get install curl").is_some()
}

async fn curl(args: Vec<String>) -> (bool, String, String) {
    tokio::task::spawn_blocking(move || {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "10", "--noproxy", ""])
            .args(&args)
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .output()
            .unwrap();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_through_both_proxies() {
    if !curl_available() {
        return;
    }
    let f = fixture(|_| {}).await;
    let http = f.pair.http_addr();
    let socks = f.pair.socks_addr();
    let url = format!("http://origin.test:{}/hello?x=1", f.origin.port());
    let runs = [
        (
            "-x",
            vec!["-x".to_owned(), format!("http://{http}"), url.clone()],
        ),
        (
            "-p -x",
            vec![
                "-p".to_owned(),
                "-x".to_owned(),
                format!("http://{http}"),
                url.clone(),
            ],
        ),
        (
            "--socks5-hostname",
            vec![
                "--socks5-hostname".to_owned(),
                socks.to_string(),
                url.clone(),
            ],
        ),
    ];
    for (name, args) in runs {
        let (ok, body, err) = curl(args).await;
        assert!(ok, "curl {name} failed: {err}");
        assert!(
            body.starts_with("GET /hello?x=1 HTTP/1.1\r\n"),
            "curl {name}: {body}"
        );
        assert!(
            !body.to_ascii_lowercase().contains("proxy-"),
            "curl {name}: {body}"
        );
    }
    // A denied host: curl reports the proxy's refusal.
    let (ok, _, err) = curl(vec![
        "-p".to_owned(),
        "-x".to_owned(),
        format!("http://{http}"),
        "http://denied.test:80/".to_owned(),
    ])
    .await;
    assert!(!ok && err.contains("403"), "{err}");
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_is_rewritten_to_origin_form() {
    let f = fixture(|_| {}).await;
    let port = f.origin.port();
    let req = format!(
        "GET http://origin.test:{port}/x HTTP/1.1\r\nHost: origin.test:{port}\r\n\
         Proxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\
         Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n"
    );
    let out = text(&exchange(f.pair.http_addr(), req.as_bytes()).await);
    let body = out.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(
        body,
        format!("GET /x HTTP/1.1\r\nHost: origin.test:{port}\r\nAccept: */*\r\nConnection: close")
    );
    // A Host header that disagrees with the URI is refused.
    let req = format!("GET http://origin.test:{port}/ HTTP/1.1\r\nHost: other.test\r\n\r\n");
    let out = text(&exchange(f.pair.http_addr(), req.as_bytes()).await);
    assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_clients_and_half_close_both_ways() {
    let f = fixture(|_| {}).await;
    // A server that speaks first and half-closes, then reports what it read.
    let greeter = TcpListener::bind((LOCAL, 0)).await.unwrap();
    let greeter_port = greeter.local_addr().unwrap().port();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = greeter.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                s.write_all(b"hi").await.unwrap();
                s.shutdown().await.unwrap();
                let mut got = Vec::new();
                s.read_to_end(&mut got).await.unwrap();
                tx.send(got).unwrap();
            });
        }
    });

    let echo_port = f.echo.port();
    let clients: [(&str, TcpStream); 2] = [
        (
            "http",
            http_connect(f.pair.http_addr(), &format!("echo.test:{echo_port}"))
                .await
                .0,
        ),
        (
            "socks",
            socks_connect(f.pair.socks_addr(), b"echo.test", echo_port)
                .await
                .0,
        ),
    ];
    for (name, mut s) in clients {
        // Client half-closes first: the echo server sees EOF, answers, closes.
        s.write_all(b"ping through ").await.unwrap();
        s.write_all(name.as_bytes()).await.unwrap();
        s.shutdown().await.unwrap();
        let mut back = Vec::new();
        tokio::time::timeout(GUARD, s.read_to_end(&mut back))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text(&back), format!("ping through {name}"));
    }

    for name in ["http", "socks"] {
        let (mut s, ok) = if name == "http" {
            let (s, head) =
                http_connect(f.pair.http_addr(), &format!("greeter.test:{greeter_port}")).await;
            (s, head.starts_with("HTTP/1.1 200"))
        } else {
            let (s, code) = socks_connect(f.pair.socks_addr(), b"greeter.test", greeter_port).await;
            (s, code == 0)
        };
        assert!(ok, "{name}");
        // Upstream half-closes first: the client sees EOF and can still send.
        let mut first = Vec::new();
        tokio::time::timeout(GUARD, s.read_to_end(&mut first))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first, b"hi");
        s.write_all(name.as_bytes()).await.unwrap();
        s.shutdown().await.unwrap();
        let got = tokio::time::timeout(GUARD, rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(text(&got), name);
    }
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks_handshake_one_byte_at_a_time() {
    let f = fixture(|_| {}).await;
    let mut s = TcpStream::connect(f.pair.socks_addr()).await.unwrap();
    let mut all = vec![5u8, 1, 0];
    all.extend_from_slice(&[5, 1, 0, 3, 9]);
    all.extend_from_slice(b"echo.test");
    all.extend_from_slice(&f.echo.port().to_be_bytes());
    for (i, b) in all.iter().enumerate() {
        s.write_all(&[*b]).await.unwrap();
        if i == 2 {
            assert_eq!(read_n(&mut s, 2).await, [5, 0]);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(read_n(&mut s, 10).await[1], 0);
    s.write_all(b"x").await.unwrap();
    assert_eq!(read_n(&mut s, 1).await, b"x");
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_denials_with_codes_and_violations() {
    let f = fixture(|b| {
        b.connect_timeout(Duration::from_millis(300));
    })
    .await;
    let mut violations = f.pair.subscribe_violations();
    let closed_port = {
        let l = std::net::TcpListener::bind((LOCAL, 0)).unwrap();
        l.local_addr().unwrap().port()
    };
    let (hung, _held, _listener) =
        test_support::net::full_accept_queue(LOCAL.parse().unwrap()).await;
    let http_port = f.pair.http_addr().port();
    let cases: Vec<(String, &str, &str, Option<&str>)> = vec![
        (
            "denied.test:443".into(),
            "403",
            "error=http_request_denied",
            Some("denied.test:443"),
        ),
        (
            "metadata.google.internal:80".into(),
            "403",
            "error=http_request_denied",
            Some("metadata.google.internal:80"),
        ),
        (
            "2852039166:80".into(),
            "403",
            "error=http_request_denied",
            Some("169.254.169.254:80"),
        ),
        (
            "sneaky.test:80".into(),
            "403",
            "error=destination_ip_prohibited",
            Some("sneaky.test:80"),
        ),
        (
            format!("127.0.0.1:{http_port}"),
            "403",
            "error=destination_ip_prohibited",
            Some("127.0.0.1:PROXY"),
        ),
        (
            "bad%host:443".into(),
            "400",
            "error=http_request_error",
            Some("bad%host:443"),
        ),
        // Allowed, then failed by the network: reported too, saying so.
        (
            "nxdomain.test:443".into(),
            "502",
            "error=dns_error",
            Some("nxdomain.test:443"),
        ),
        (
            "stall.test:443".into(),
            "504",
            "error=dns_timeout",
            Some("stall.test:443"),
        ),
        (
            format!("origin.test:{closed_port}"),
            "502",
            "error=connection_refused",
            Some("origin.test:CLOSED"),
        ),
        (
            format!("origin.test:{}", hung.port()),
            "504",
            "error=connection_timeout",
            Some("origin.test:HUNG"),
        ),
    ];
    for (authority, status, proxy_status, violation) in cases {
        let req = format!("CONNECT {authority} HTTP/1.1\r\n\r\n");
        let out = text(&exchange(f.pair.http_addr(), req.as_bytes()).await);
        assert!(
            out.starts_with(&format!("HTTP/1.1 {status} ")),
            "{authority}: {out}"
        );
        assert!(
            out.contains("Proxy-Status: connect-proxy; "),
            "{authority}: {out}"
        );
        assert!(out.contains(proxy_status), "{authority}: {out}");
        assert!(!out.contains(" 407 "), "{authority}: {out}");
        if let Some(target) = violation {
            let v = tokio::time::timeout(GUARD, violations.recv())
                .await
                .unwrap()
                .unwrap();
            let target = target
                .replace("PROXY", &http_port.to_string())
                .replace("CLOSED", &closed_port.to_string())
                .replace("HUNG", &hung.port().to_string());
            assert_eq!(v.action, SandboxViolation::NETWORK_OUTBOUND);
            assert_eq!(v.target, target, "{authority}");
            let raw = v.raw.unwrap_or_default();
            assert_eq!(
                raw.contains("allowed, but the upstream failed: "),
                status.starts_with('5'),
                "{authority}: {raw}"
            );
        }
    }
    assert!(violations.try_recv().is_none(), "one event per connection");
    // Denied names were never looked up.
    let looked = f.resolver.looked_up();
    assert!(
        !looked
            .iter()
            .any(|n| n.contains("denied") || n.contains("metadata")),
        "{looked:?}"
    );
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks_denials_with_codes() {
    let f = fixture(|_| {}).await;
    let socks = f.pair.socks_addr();
    let mut violations = f.pair.subscribe_violations();
    let closed_port = {
        let l = std::net::TcpListener::bind((LOCAL, 0)).unwrap();
        l.local_addr().unwrap().port()
    };
    for (host, port, code) in [
        (&b"denied.test"[..], 443, 0x02),
        (b"sneaky.test", 80, 0x02),
        (b"nxdomain.test", 443, 0x04),
        (b"origin.test", closed_port, 0x05),
        (b"bad\0host.test", 443, 0x02),
        (b"bad host", 443, 0x02),
    ] {
        let (_, got) = socks_connect(socks, host, port).await;
        assert_eq!(got, code, "{}", text(host));
    }
    let lookups = f.resolver.looked_up();
    assert_eq!(
        lookups,
        ["sneaky.test", "nxdomain.test", "origin.test"],
        "no lookup for denied or malformed names"
    );
    let mut targets = Vec::new();
    while let Some(v) = violations.try_recv() {
        targets.push(v.target);
    }
    let closed = format!("origin.test:{closed_port}");
    assert_eq!(
        targets,
        [
            "denied.test:443",
            "sneaky.test:80",
            "nxdomain.test:443",
            closed.as_str(),
            "bad?host.test",
            "bad?host"
        ]
    );

    // Commands other than CONNECT: 07. Unknown address type: 08.
    for (request, code) in [
        (vec![5u8, 2, 0, 1, 127, 0, 0, 1, 0, 80], 0x07),
        (vec![5, 3, 0, 1, 127, 0, 0, 1, 0, 80], 0x07),
        (vec![5, 1, 0, 9, 127, 0, 0, 1, 0, 80], 0x08),
    ] {
        let mut bytes = vec![5, 1, 0];
        bytes.extend_from_slice(&request);
        let out = exchange(socks, &bytes).await;
        assert_eq!(&out[..2], [5, 0]);
        assert_eq!(out[3], code, "{request:?}");
    }
    // No acceptable authentication method: 05 FF.
    assert_eq!(exchange(socks, &[5, 1, 2]).await, [5, 0xFF]);
    // IPv4 and IPv6 address types reach the policy too.
    let out = exchange(socks, &[5, 1, 0, 5, 1, 0, 1, 10, 0, 0, 1, 0, 80]).await;
    assert_eq!(out[3], 0x02, "an IPv4 literal outside the allowlist");
    let mut v6 = vec![5, 1, 0, 5, 1, 0, 4];
    v6.extend_from_slice(&"::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
    v6.extend_from_slice(&[0, 80]);
    assert_eq!(exchange(socks, &v6).await[3], 0x02);
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_cut_at_the_header_timeout() {
    let f = fixture(|b| {
        b.header_timeout(Duration::from_millis(400));
    })
    .await;
    for addr in [f.pair.http_addr(), f.pair.socks_addr()] {
        let mut s = TcpStream::connect(addr).await.unwrap();
        // Neither ever completes: no blank line; a greeting announcing 255
        // methods that arrive one every 50 ms.
        let drip = if addr == f.pair.http_addr() {
            b"CONNECT origin.test:80 HTTP/1.1\r\n".to_vec()
        } else {
            [vec![5u8, 255], vec![2u8; 255]].concat()
        };
        let cut = tokio::time::timeout(GUARD, async {
            for b in drip.iter().cycle() {
                if s.write_all(&[*b]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                let mut probe = [0u8; 64];
                if let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(1), s.read(&mut probe)).await
                {
                    return probe[..n].to_vec();
                }
            }
            Vec::new()
        })
        .await
        .expect("the proxy cut the slow client before the guard");
        if addr == f.pair.http_addr() {
            assert!(text(&cut).starts_with("HTTP/1.1 408 "), "{}", text(&cut));
        }
    }
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_tunnels() {
    // Each tunnel holds four descriptors in this process.
    if !test_support::require_fd_limit(4_500) {
        return;
    }
    let n = 1_000;
    // All of them connect at once: the echo server's accept queue must hold
    // every dial from the proxies (support::BACKLOG, capped by the kernel).
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok());
    // Below that, accept queues would overflow into SYN cookies and resets.
    if !test_support::require(
        somaxconn.is_some_and(|q| q >= n),
        &format!("net.core.somaxconn of at least {n} (it is {somaxconn:?})"),
        "sysctl -w net.core.somaxconn=4096",
    ) {
        return;
    }
    let f = fixture(|_| {}).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let echo_port = f.echo.port();
    let (http, socks) = (f.pair.http_addr(), f.pair.socks_addr());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let barrier = barrier.clone();
        tasks.spawn(async move {
            let mut s = if i % 2 == 0 {
                let (s, head) = http_connect(http, &format!("echo.test:{echo_port}")).await;
                assert!(head.starts_with("HTTP/1.1 200"), "{head}");
                s
            } else {
                let (s, code) = socks_connect(socks, b"echo.test", echo_port).await;
                assert_eq!(code, 0);
                s
            };
            // Every tunnel is open at once before any data moves.
            barrier.wait().await;
            let msg = format!("tunnel {i}");
            s.write_all(msg.as_bytes()).await.unwrap();
            s.shutdown().await.unwrap();
            let mut back = Vec::new();
            s.read_to_end(&mut back).await.unwrap();
            assert_eq!(text(&back), msg);
        });
    }
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(r) = tasks.join_next().await {
            r.unwrap();
        }
    })
    .await
    .expect("all tunnels finished");
    f.pair.shutdown().await;
}

/// A stand-in for an interception hook (not the broker's adapter): it
/// claims `broker.test` and answers with what it was handed, and whether
/// the client's socket has Nagle's algorithm off.
struct NoteHook;

impl Intercept for NoteHook {
    fn claims(&self, target: &Target) -> bool {
        target.host.as_name() == Some("broker.test")
    }

    fn take(&self, mut conn: Intercepted) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let nodelay = match &conn.client {
                ClientStream::Tcp(s) => s.nodelay().ok(),
                _ => None,
            };
            let note = format!(
                "intercepted {} {:?} {} nodelay={nodelay:?}",
                conn.target,
                conn.addrs,
                text(&conn.buffered)
            );
            let _ = conn.client.write_all(note.as_bytes()).await;
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intercept_takes_claimed_hosts() {
    let f = fixture(|b| {
        b.intercept(Arc::new(NoteHook));
    })
    .await;
    let out = exchange(
        f.pair.http_addr(),
        b"CONNECT broker.test:443 HTTP/1.1\r\n\r\nhello",
    )
    .await;
    assert_eq!(
        text(&out),
        "HTTP/1.1 200 Connection established\r\n\r\nintercepted broker.test:443 [127.0.0.1:443] hello nodelay=Some(true)"
    );
    let mut socks = vec![5u8, 1, 0, 5, 1, 0, 3, 11];
    socks.extend_from_slice(b"broker.test");
    socks.extend_from_slice(&443u16.to_be_bytes());
    let out = exchange(f.pair.socks_addr(), &socks).await;
    assert_eq!(&out[..2], [5, 0]);
    assert_eq!(out[3], 0);
    assert!(text(&out[12..]).starts_with("intercepted broker.test:443"));
    assert!(text(&out[12..]).ends_with("nodelay=Some(true)"));
    // Unclaimed hosts are dialed as usual.
    let (_, head) = http_connect(f.pair.http_addr(), &format!("echo.test:{}", f.echo.port())).await;
    assert!(head.starts_with("HTTP/1.1 200"));
    f.pair.shutdown().await;
}

/// Listeners handed in by the caller (how agent-run serves the listeners it
/// binds in the sandbox's network namespace): each client they accept has
/// Nagle's algorithm off, whether the listener passes it on (Linux) or the
/// proxy sets it per connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_clients_have_nodelay() {
    use connect_proxy::{ProxyKind, ProxyService};
    let (config, _) = config(|b| {
        b.intercept(Arc::new(NoteHook));
    });
    let service = ProxyService::start(config);
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let socks = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (http_addr, socks_addr) = (http.local_addr().unwrap(), socks.local_addr().unwrap());
    let _ = service.serve_tcp(ProxyKind::Http, http);
    let _ = service.serve_tcp(ProxyKind::Socks5, socks);
    for _ in 0..3 {
        let out = exchange(http_addr, b"CONNECT broker.test:443 HTTP/1.1\r\n\r\n").await;
        assert!(
            text(&out).ends_with("intercepted broker.test:443 [127.0.0.1:443]  nodelay=Some(true)"),
            "{}",
            text(&out)
        );
        let mut hello = vec![5u8, 1, 0, 5, 1, 0, 3, 11];
        hello.extend_from_slice(b"broker.test");
        hello.extend_from_slice(&443u16.to_be_bytes());
        let out = exchange(socks_addr, &hello).await;
        assert_eq!(&out[..2], [5, 0]);
        assert!(
            text(&out[12..]).ends_with(" nodelay=Some(true)"),
            "{}",
            text(&out)
        );
    }
    service.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_off_denies_everything_without_lookups() {
    let mut spec = SandboxSpec::new("s-off", "w");
    spec.network_enabled = false;
    spec.egress_allowlist = vec!["origin.test".into()];
    let resolver = Arc::new(StaticResolver::new());
    resolver.insert("origin.test", [LOCAL.parse().unwrap()]);
    let pair = ProxyPair::start(
        ProxyConfig::builder()
            .allowlist(AllowList::for_spec(&spec).unwrap())
            .resolver(resolver.clone())
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let out = text(&exchange(pair.http_addr(), b"CONNECT origin.test:80 HTTP/1.1\r\n\r\n").await);
    assert!(out.starts_with("HTTP/1.1 403 "), "{out}");
    let (_, code) = socks_connect(pair.socks_addr(), b"api.github.com", 443).await;
    assert_eq!(code, 0x02);
    assert_eq!(resolver.lookups(), 0);
    pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_nothing_behind() {
    let f = fixture(|_| {}).await;
    let (http, socks) = (f.pair.http_addr(), f.pair.socks_addr());
    let mut violations = f.pair.subscribe_violations();
    // An open tunnel and a half-sent request at shutdown time.
    let (mut tunnel, head) = http_connect(http, &format!("echo.test:{}", f.echo.port())).await;
    assert!(head.starts_with("HTTP/1.1 200"));
    let mut pending = TcpStream::connect(socks).await.unwrap();
    pending.write_all(&[5]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    tokio::time::timeout(GUARD, f.pair.shutdown())
        .await
        .expect("shutdown finished");

    for s in [&mut tunnel, &mut pending] {
        let mut rest = Vec::new();
        let r = tokio::time::timeout(GUARD, s.read_to_end(&mut rest))
            .await
            .unwrap();
        assert!(
            r.is_err() || rest.is_empty(),
            "connection closed by shutdown"
        );
    }
    assert!(
        TcpStream::connect(http).await.is_err(),
        "http listener closed"
    );
    assert!(
        TcpStream::connect(socks).await.is_err(),
        "socks listener closed"
    );
    assert!(violations.recv().await.is_none(), "channel closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pairs_never_share_ports() {
    let a = fixture(|_| {}).await;
    let b = fixture(|_| {}).await;
    let ports = [
        a.pair.http_addr(),
        a.pair.socks_addr(),
        b.pair.http_addr(),
        b.pair.socks_addr(),
    ];
    for (i, p) in ports.iter().enumerate() {
        assert!(p.ip().is_loopback());
        assert!(!ports[i + 1..].contains(p));
    }
    a.pair.shutdown().await;
    b.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_transfers_arrive_intact() {
    for buffer in [16 * 1024, 256 * 1024] {
        let f = fixture(|b| {
            b.copy_buffer_bytes(buffer);
        })
        .await;
        let echo_port = f.echo.port();
        let streams = [
            http_connect(f.pair.http_addr(), &format!("echo.test:{echo_port}"))
                .await
                .0,
            socks_connect(f.pair.socks_addr(), b"echo.test", echo_port)
                .await
                .0,
        ];
        for s in streams {
            let payload: Vec<u8> = (0..8u32 << 20).map(|i| (i % 251) as u8).collect();
            let (mut r, mut w) = s.into_split();
            let sent = payload.clone();
            let writer = tokio::spawn(async move {
                w.write_all(&sent).await.unwrap();
                w.shutdown().await.unwrap();
            });
            let mut back = Vec::with_capacity(payload.len());
            tokio::time::timeout(Duration::from_secs(30), r.read_to_end(&mut back))
                .await
                .unwrap()
                .unwrap();
            writer.await.unwrap();
            assert!(
                back == payload,
                "buffer {buffer}: {} bytes back of {}",
                back.len(),
                payload.len()
            );
        }
        f.pair.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_enforced() {
    let f = fixture(|b| {
        b.max_header_bytes(512)
            .idle_timeout(Duration::from_millis(300))
            .max_connections(2);
    })
    .await;
    let http = f.pair.http_addr();
    // A head over the cap: 431.
    let big = format!(
        "CONNECT echo.test:1 HTTP/1.1\r\nX: {}\r\n\r\n",
        "a".repeat(600)
    );
    let out = text(&exchange(http, big.as_bytes()).await);
    assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
    // Origin-form and other schemes are refused with 400.
    for req in [
        "GET / HTTP/1.1\r\nHost: echo.test\r\n\r\n",
        "GET https://echo.test/ HTTP/1.1\r\n\r\n",
    ] {
        let out = text(&exchange(http, req.as_bytes()).await);
        assert!(out.starts_with("HTTP/1.1 400 "), "{out}");
    }
    // An IPv6 literal outside the grants: loopback, refused.
    let out = text(&exchange(http, b"CONNECT [::1]:80 HTTP/1.1\r\n\r\n").await);
    assert!(out.starts_with("HTTP/1.1 403 "), "{out}");
    // A tunnel with no traffic is closed at the idle timeout.
    let (mut idle, head) = http_connect(http, &format!("echo.test:{}", f.echo.port())).await;
    assert!(head.starts_with("HTTP/1.1 200"));
    let mut rest = Vec::new();
    let r = tokio::time::timeout(GUARD, idle.read_to_end(&mut rest)).await;
    assert!(r.expect("closed before the guard").is_ok() && rest.is_empty());
    // Over the connection cap, new clients are closed at once.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(http).await.unwrap();
        s.write_all(b"C").await.unwrap();
        held.push(s);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = exchange(http, b"CONNECT echo.test:1 HTTP/1.1\r\n\r\n").await;
    assert!(out.is_empty(), "{}", text(&out));
    drop(held);
    f.pair.shutdown().await;
}

/// An origin that sends `body` on each connection and then aborts it.
async fn aborting_origin(body: Vec<u8>) -> u16 {
    let origin = TcpListener::bind((LOCAL, 0)).await.unwrap();
    let port = origin.local_addr().unwrap().port();
    let body = Arc::new(body);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = origin.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let _ = s.write_all(&body).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                s.set_zero_linger().unwrap();
                drop(s);
            });
        }
    });
    port
}

/// Reads through each proxy from `port` until the connection ends, which
/// must be a reset; returns what arrived before it, per proxy.
async fn read_until_reset(f: &Fixture, port: u16) -> Vec<(&'static str, Vec<u8>)> {
    let mut read = Vec::new();
    for name in ["http", "socks"] {
        let mut s = if name == "http" {
            let (s, head) = http_connect(f.pair.http_addr(), &format!("greeter.test:{port}")).await;
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            s
        } else {
            let (s, code) = socks_connect(f.pair.socks_addr(), b"greeter.test", port).await;
            assert_eq!(code, 0);
            s
        };
        let mut got = Vec::new();
        let r = tokio::time::timeout(GUARD, s.read_to_end(&mut got))
            .await
            .unwrap();
        let e = r.expect_err("a reset, not a clean end of stream");
        assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{name}: {e}");
        read.push((name, got));
    }
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_reset_reaches_the_client_as_a_reset_not_a_clean_end() {
    let f = fixture(|_| {}).await;
    // An origin that sends part of a body and then aborts the connection.
    let port = aborting_origin(b"partial".to_vec()).await;
    for (name, got) in read_until_reset(&f, port).await {
        assert_eq!(text(&got), "partial", "{name}");
    }
    f.pair.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_reset_mid_bulk_reaches_the_client_as_a_reset() {
    // Past the largest buffer: the copy has grown to its full size when
    // the origin aborts.
    let f = fixture(|_| {}).await;
    let port = aborting_origin(vec![b'x'; 4 << 20]).await;
    for (name, got) in read_until_reset(&f, port).await {
        assert!(got.iter().all(|&b| b == b'x'), "{name}");
    }
    f.pair.shutdown().await;
}

#[cfg(unix)]
/// A service with no listener of its own, serving a Unix socket whose
/// peers must have `uid`.
async fn unix_service(uid: u32) -> (connect_proxy::ProxyService, std::path::PathBuf) {
    use connect_proxy::{AllowList, Baseline, IpPolicy, ProxyConfig, ProxyKind, StaticResolver};
    let dir = std::env::temp_dir().join(format!(
        "proxy-unix-{}-{uid}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("http.sock");
    let list = AllowList::builder()
        .baseline(Baseline::Exclude)
        .allow("allowed.test:443")
        .build()
        .unwrap();
    let mut b = ProxyConfig::builder();
    b.allowlist(list)
        .ip_policy(IpPolicy::new())
        .resolver(Arc::new(StaticResolver::new()));
    let service = connect_proxy::ProxyService::start(b.build().unwrap());
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let _ = service.serve_unix(ProxyKind::Http, listener, uid);
    (service, sock)
}

#[cfg(unix)]
fn own_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid()
}

#[cfg(unix)]
#[tokio::test]
async fn a_unix_socket_serves_the_sessions_uid_only() {
    // The session's own uid: served like any client (here a policy 403).
    let (service, sock) = unix_service(own_uid()).await;
    let mut violations = service.subscribe_violations();
    let mut c = tokio::net::UnixStream::connect(&sock).await.unwrap();
    c.write_all(b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    c.read_to_end(&mut answer).await.unwrap();
    assert!(
        text(&answer).starts_with("HTTP/1.1 403"),
        "{}",
        text(&answer)
    );
    assert_eq!(violations.recv().await.unwrap().target, "denied.test:443");
    service.shutdown().await;
    // After shutdown nothing is served on it any more.
    if let Ok(mut c) = tokio::net::UnixStream::connect(&sock).await {
        let _ = c
            .write_all(b"CONNECT denied.test:443 HTTP/1.1\r\n\r\n")
            .await;
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer).await;
        assert!(answer.is_empty(), "{}", text(&answer));
    }
    std::fs::remove_dir_all(sock.parent().unwrap()).unwrap();

    // Another uid: closed without an answer, and reported.
    let other = own_uid().wrapping_add(1);
    let (service, sock) = unix_service(other).await;
    let mut violations = service.subscribe_violations();
    let mut c = tokio::net::UnixStream::connect(&sock).await.unwrap();
    let _ = c
        .write_all(b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")
        .await;
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer).await;
    assert!(answer.is_empty(), "answered: {}", text(&answer));
    let v = violations.recv().await.unwrap();
    assert_eq!(v.action, "network-outbound");
    assert_eq!(v.target, format!("unix-peer:uid={}", own_uid()));
    let raw = v.raw.unwrap_or_default();
    assert!(raw.contains(&format!("session's uid {other}")), "{raw}");
    service.shutdown().await;
    std::fs::remove_dir_all(sock.parent().unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_required_credentials_only_clients_that_present_them_are_served() {
    if !curl_available() {
        return;
    }
    let creds = connect_proxy::ProxyCredentials::generate_from_os_rng().unwrap();
    let c = creds.clone();
    let f = fixture(move |b| {
        b.require_credentials(c);
    })
    .await;
    let (http, socks) = (f.pair.http_addr(), f.pair.socks_addr());
    let mut violations = f.pair.subscribe_violations();
    let url = format!("http://origin.test:{}/hello", f.origin.port());
    // The URLs the sandbox's environment carries: CONNECT (-p), plain
    // forwarding and SOCKS5 with username/password all work.
    for (name, proxy, tunnel) in [
        ("http CONNECT", creds.http_url(http), true),
        ("http forward", creds.http_url(http), false),
        ("socks5h", creds.socks_url(socks), false),
    ] {
        let mut args = vec!["-x".to_owned(), proxy];
        if tunnel {
            args.push("-p".to_owned());
        }
        args.push(url.clone());
        let (ok, body, err) = curl(args).await;
        assert!(ok, "{name}: {err}");
        assert!(
            body.starts_with("GET /hello HTTP/1.1\r\n"),
            "{name}: {body}"
        );
        // The secret never goes upstream.
        assert!(!body.contains(creds.reveal_secret()), "{name}: {body}");
        assert!(
            !body.to_ascii_lowercase().contains("proxy-"),
            "{name}: {body}"
        );
    }
    // Without credentials, or with wrong ones: 407 from the HTTP proxy, the
    // authentication failure from SOCKS5, a violation each, nothing dialed.
    let wrong = connect_proxy::ProxyCredentials::new("session", "wrong").unwrap();
    for (name, proxy, tunnel, needle) in [
        ("http none", format!("http://{http}"), true, "407"),
        ("http forward none", format!("http://{http}"), false, "407"),
        ("http wrong", wrong.http_url(http), true, "407"),
        (
            "socks none",
            format!("socks5h://{socks}"),
            false,
            "authentication",
        ),
        ("socks wrong", wrong.socks_url(socks), false, "rejected"),
    ] {
        let mut args = vec!["-x".to_owned(), proxy];
        if tunnel {
            args.push("-p".to_owned());
        }
        args.push(url.clone());
        let (ok, body, err) = curl(args).await;
        assert!(!ok || body.contains("407"), "{name} got through: {body}");
        assert!(
            err.contains(needle) || body.contains(needle),
            "{name}: {err}{body}"
        );
        let v = tokio::time::timeout(GUARD, violations.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v.action, "network-outbound", "{name}");
        assert!(
            v.raw
                .unwrap_or_default()
                .contains("not the session's client"),
            "{name}"
        );
    }
    // Raw: a 407 carries the Basic challenge, and policy denials keep their
    // 403 for an authenticated client.
    let mut s = TcpStream::connect(http).await.unwrap();
    s.write_all(b"CONNECT origin.test:443 HTTP/1.1\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.unwrap();
    let answer = text(&answer);
    assert!(answer.starts_with("HTTP/1.1 407 "), "{answer}");
    assert!(
        answer.contains("\r\nProxy-Authenticate: Basic realm="),
        "{answer}"
    );
    let (ok, _, err) = curl(vec![
        "-p".to_owned(),
        "-x".to_owned(),
        creds.http_url(http),
        "http://denied.test:80/".to_owned(),
    ])
    .await;
    assert!(!ok && err.contains("403"), "{err}");
    // SOCKS5 greeting and credentials in one write (curl waits for the
    // method choice in between): one answer carries both replies.
    for (secret, want) in [
        (creds.reveal_secret(), [5, 2, 1, 0]),
        ("nope", [5, 2, 1, 1]),
    ] {
        let mut s = TcpStream::connect(socks).await.unwrap();
        let mut hello = vec![5, 1, 2, 1, 7];
        hello.extend_from_slice(b"session");
        hello.push(secret.len() as u8);
        hello.extend_from_slice(secret.as_bytes());
        s.write_all(&hello).await.unwrap();
        let mut reply = [0u8; 4];
        s.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply, want);
    }
    f.pair.shutdown().await;
}
