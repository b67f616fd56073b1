//! Whole-process helper for `benches/compare/proxy.sh` (not a criterion
//! bench): a loopback origin, our proxy pair, and a connection-rate client
//! that speaks direct, HTTP CONNECT or SOCKS5 to any proxy.
//!
//! ```text
//! proxy_load origin                      # prints the port; GET /1g = 1 GiB,
//!                                        # /64m = 64 MiB (smoke runs), else 1 KiB
//! proxy_load proxy [--copy-buffer N] [--runtime current|multi] [--auth USER:SECRET]
//!                                        # prints "HTTP_ADDR SOCKS_ADDR"; runs until killed
//! proxy_load rate --via direct|connect|socks [--proxy ADDR] --origin ADDR
//!                 [--concurrency 32] [--seconds 3] [--auth USER:SECRET [--basic B64]]
//!
//! `--auth` makes the proxy require those credentials, and the client
//! present them (CONNECT with `Proxy-Authorization: Basic B64`, SOCKS5 with
//! username/password).
//! ```

// A load helper stops loudly on a broken fixture; criterion's harness is
// not used, so nothing here is public API.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use connect_proxy::{
    AllowList, Baseline, IpPolicy, ProxyConfig, ProxyCredentials, ProxyPair, SystemResolver,
};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const GIB: u64 = 1 << 30;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let current = flag(&args, "--runtime") == Some("current");
    let rt = if current {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Runtime::new().unwrap()
    };
    match args.first().map(String::as_str) {
        Some("origin") => rt.block_on(origin()),
        Some("proxy") => rt.block_on(proxy(&args[1..])),
        Some("rate") => rt.block_on(rate(&args[1..])),
        _ => eprintln!("proxy_load: a helper for benches/compare/proxy.sh; nothing to run"),
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

async fn origin() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("{}", listener.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    loop {
        let (mut s, _) = listener.accept().await.unwrap();
        tokio::spawn(async move {
            let _ = s.set_nodelay(true);
            let mut head = Vec::new();
            let mut b = [0u8; 2048];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut b).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&b[..n]),
                }
            }
            let len = if head.windows(3).any(|w| w == b"/1g") {
                GIB
            } else if head.windows(4).any(|w| w == b"/64m") {
                64 << 20
            } else {
                1024
            };
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\
                 Content-Length: {len}\r\nConnection: close\r\n\r\n"
            );
            if s.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
            let chunk = vec![b'x'; 256 * 1024];
            let mut left = len;
            while left > 0 {
                let n = left.min(chunk.len() as u64) as usize;
                if s.write_all(&chunk[..n]).await.is_err() {
                    return;
                }
                left -= n as u64;
            }
            let _ = s.shutdown().await;
        });
    }
}

async fn proxy(args: &[String]) {
    let list = AllowList::builder()
        .baseline(Baseline::Exclude)
        .allow("127.0.0.1")
        .build()
        .unwrap();
    let mut ip = IpPolicy::new();
    ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    let mut config = ProxyConfig::builder();
    config
        .allowlist(list)
        .ip_policy(ip)
        .resolver(Arc::new(SystemResolver::from_ambient()));
    if let Some(n) = flag(args, "--copy-buffer") {
        config.copy_buffer_bytes(n.parse().unwrap());
    }
    if let Some(a) = flag(args, "--auth") {
        let (user, secret) = a.split_once(':').unwrap();
        config.require_credentials(ProxyCredentials::new(user, secret).unwrap());
    }
    let pair = ProxyPair::start(config.build().unwrap()).await.unwrap();
    println!("{} {}", pair.http_addr(), pair.socks_addr());
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
}

#[derive(Clone, Copy, PartialEq)]
enum Via {
    Direct,
    Connect,
    Socks,
}

/// The credentials a rate client presents: `(user, secret, base64(user:secret))`.
type Auth = Option<Arc<(String, String, String)>>;

async fn one(via: Via, proxy: SocketAddr, origin: SocketAddr, auth: &Auth) -> Result<(), String> {
    let first = if via == Via::Direct { origin } else { proxy };
    let mut s = TcpStream::connect(first).await.map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut b = [0u8; 4096];
    match via {
        Via::Direct => {}
        Via::Connect => {
            let creds = match auth {
                Some(a) => format!("Proxy-Authorization: Basic {}\r\n", a.2),
                None => String::new(),
            };
            let req = format!("CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n{creds}\r\n");
            s.write_all(req.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut b).await.map_err(|e| e.to_string())?;
                if n == 0 {
                    return Err("closed during CONNECT".into());
                }
                head.extend_from_slice(&b[..n]);
            }
            if !head.starts_with(b"HTTP/1.1 200") && !head.starts_with(b"HTTP/1.0 200") {
                return Err(String::from_utf8_lossy(&head).into_owned());
            }
        }
        Via::Socks => {
            match auth {
                None => {
                    s.write_all(&[5, 1, 0]).await.map_err(|e| e.to_string())?;
                    s.read_exact(&mut b[..2]).await.map_err(|e| e.to_string())?;
                }
                Some(a) => {
                    let mut hello = vec![5, 1, 2, 1, a.0.len() as u8];
                    hello.extend_from_slice(a.0.as_bytes());
                    hello.push(a.1.len() as u8);
                    hello.extend_from_slice(a.1.as_bytes());
                    // Greeting and authentication in one write, as clients
                    // that know the method do.
                    s.write_all(&hello).await.map_err(|e| e.to_string())?;
                    s.read_exact(&mut b[..4]).await.map_err(|e| e.to_string())?;
                    if b[..4] != [5, 2, 1, 0] {
                        return Err(format!("socks auth reply {:?}", &b[..4]));
                    }
                }
            }
            let SocketAddr::V4(v4) = origin else {
                return Err("IPv4 origin expected".into());
            };
            let mut req = vec![5, 1, 0, 1];
            req.extend_from_slice(&v4.ip().octets());
            req.extend_from_slice(&v4.port().to_be_bytes());
            s.write_all(&req).await.map_err(|e| e.to_string())?;
            s.read_exact(&mut b[..10])
                .await
                .map_err(|e| e.to_string())?;
            if b[1] != 0 {
                return Err(format!("socks reply {}", b[1]));
            }
        }
    }
    let get = format!("GET /1k HTTP/1.1\r\nHost: {origin}\r\nConnection: close\r\n\r\n");
    s.write_all(get.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut total = 0;
    loop {
        let n = s.read(&mut b).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        total += n;
    }
    if total < 1024 {
        return Err(format!("short response: {total} bytes"));
    }
    Ok(())
}

async fn rate(args: &[String]) {
    let via = match flag(args, "--via") {
        Some("direct") => Via::Direct,
        Some("connect") => Via::Connect,
        Some("socks") => Via::Socks,
        other => panic!("--via direct|connect|socks, not {other:?}"),
    };
    let origin: SocketAddr = flag(args, "--origin").unwrap().parse().unwrap();
    let proxy: SocketAddr = flag(args, "--proxy")
        .unwrap_or("127.0.0.1:9")
        .parse()
        .unwrap();
    let conc: usize = flag(args, "--concurrency").unwrap_or("32").parse().unwrap();
    let secs: f64 = flag(args, "--seconds").unwrap_or("3").parse().unwrap();
    let auth: Auth = flag(args, "--auth").map(|a| {
        let (user, secret) = a.split_once(':').unwrap();
        let basic = flag(args, "--basic")
            .expect("--auth needs --basic")
            .to_owned();
        Arc::new((user.to_owned(), secret.to_owned(), basic))
    });
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..conc {
        let auth = auth.clone();
        tasks.spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0u64;
            let mut last_error = None;
            while Instant::now() < deadline {
                let t = Instant::now();
                match tokio::time::timeout(Duration::from_secs(5), one(via, proxy, origin, &auth))
                    .await
                {
                    Ok(Ok(())) => lat.push(t.elapsed()),
                    Ok(Err(e)) => {
                        errors += 1;
                        last_error = Some(e);
                    }
                    Err(_) => {
                        errors += 1;
                        last_error = Some("timeout".into());
                    }
                }
            }
            (lat, errors, last_error)
        });
    }
    let mut all = Vec::new();
    let mut errors = 0;
    let mut last_error = None;
    while let Some(r) = tasks.join_next().await {
        let (lat, e, le) = r.unwrap();
        all.extend(lat);
        errors += e;
        last_error = le.or(last_error);
    }
    let elapsed = start.elapsed().as_secs_f64();
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{:.0} {:.2} {:.2} {}",
        all.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        errors
    );
    if let Some(e) = last_error {
        eprintln!("proxy_load: last error: {e}");
    }
}
