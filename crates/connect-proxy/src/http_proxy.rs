//! The HTTP proxy: CONNECT tunnels and absolute-form plain HTTP, one
//! request per client connection.

use crate::client::ClientStream;
use crate::egress::Denial;
use crate::events::Protocol;
use crate::session::{Route, Shared, printable};
use crate::spare_buffers::FIRST_BUFFER;
use crate::tunnel::relay;
use bytes::BufMut;
use net_vocab::{ErrorKind, HeadLimits, HeadReader, RequestHead, Target};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves one client connection.
pub(crate) async fn serve(mut client: ClientStream, shared: Arc<Shared>) {
    let mut buf = shared.spare.take(FIRST_BUFFER);
    let read = read_head(&mut client, &mut buf, shared.head);
    let (head, end) = match tokio::time::timeout(shared.limits.header_timeout, read).await {
        Err(_) => {
            let r = response(
                408,
                "Request Timeout",
                "http_request_error",
                "request head not received in time",
            );
            let _ = client.write_all(&r).await;
            return;
        }
        Ok(Err(HeadRead::Refused(e))) => {
            let (status, phrase) = if e.is_too_large() {
                (431, "Request Header Fields Too Large")
            } else {
                (400, "Bad Request")
            };
            let r = response(status, phrase, "http_request_error", &e.to_string());
            let _ = client.write_all(&r).await;
            return;
        }
        Ok(Err(HeadRead::Closed)) => return,
        Ok(Ok(read)) => read,
    };
    let rest = buf.split_off(end);
    // The head is parsed into owned parts: its bytes are done with.
    shared.spare.give(buf);
    if let Some(creds) = &shared.credentials {
        let mut values = head.values("proxy-authorization");
        let presented = matches!(
            (values.next(), values.next()),
            (Some(v), None) if creds.accepts_basic(v)
        );
        if !presented {
            let protocol = if head.method() == "CONNECT" {
                Protocol::HttpConnect
            } else {
                Protocol::HttpForward
            };
            let d = Denial::Unauthenticated(
                "no Proxy-Authorization with the session's credentials".to_owned(),
            );
            let d = shared.refuse(protocol, printable(head.target().as_bytes()), d);
            let _ = client.write_all(&denial_response(&d)).await;
            return;
        }
    }
    if head.method() == "CONNECT" {
        connect(client, &shared, &head, rest).await;
    } else {
        forward(client, &shared, &head, rest).await;
    }
}

enum HeadRead {
    /// Refused by the head reader (431 when too large, 400 otherwise).
    Refused(net_vocab::Error),
    Closed,
}

/// The most one read of the request head asks for (a CONNECT head is
/// usually far shorter); the buffer is a first copy buffer, kept between
/// connections.
const READ_CHUNK: usize = 2048;

/// Reads until the head is complete, checking each byte as it arrives;
/// never reads past the head limit. Bytes after the head stay in `buf`.
async fn read_head(
    client: &mut ClientStream,
    buf: &mut Vec<u8>,
    limits: HeadLimits,
) -> Result<(RequestHead, usize), HeadRead> {
    let mut reader = HeadReader::new(limits);
    let max = limits.max_head();
    loop {
        if buf.len() >= max {
            let e = ErrorKind::HeadTooLarge { limit: max };
            return Err(HeadRead::Refused(e.into()));
        }
        // Straight into the buffer's spare room, never zeroed first, and
        // never more than the limit leaves.
        let want = READ_CHUNK.min(max - buf.len());
        buf.reserve(want);
        let n = client
            .read_buf(&mut (&mut *buf).limit(want))
            .await
            .map_err(|_| HeadRead::Closed)?;
        if n == 0 {
            return Err(HeadRead::Closed);
        }
        if let Some(read) = reader.read(buf).map_err(HeadRead::Refused)? {
            return Ok(read);
        }
    }
}

async fn connect(mut client: ClientStream, shared: &Shared, head: &RequestHead, rest: Vec<u8>) {
    let protocol = Protocol::HttpConnect;
    let target = match head.authority_target() {
        Ok(t) => t,
        Err(e) => {
            let d = Denial::Malformed(e.to_string());
            let d = shared.refuse(protocol, printable(head.target().as_bytes()), d);
            let _ = client.write_all(&denial_response(&d)).await;
            return;
        }
    };
    // The egress (440 bytes) and the relay (944) are futures of their own
    // on the heap, so that a connection's future is 872 bytes instead of
    // 1,632: small enough for the allocator's per-thread cache, where the
    // three allocations cost less than the one large one did (callgrind:
    // 26,404 and 26,551 instructions per connection against 26,879 and
    // 27,070). The SOCKS5 proxy does the same.
    match Box::pin(shared.open(protocol, &target)).await {
        Err(d) => {
            let _ = client.write_all(&denial_response(&d)).await;
        }
        Ok(Route::Intercept(hook, addrs)) => {
            if client.write_all(ESTABLISHED).await.is_ok() {
                shared
                    .hand_over(hook, protocol, target, addrs, client, rest)
                    .await;
            }
        }
        Ok(Route::Upstream(mut upstream)) => {
            if client.write_all(ESTABLISHED).await.is_err() {
                return;
            }
            if !rest.is_empty() && upstream.write_all(&rest).await.is_err() {
                return;
            }
            let _ = Box::pin(relay(&mut client, &mut upstream, shared.copying())).await;
        }
    }
}

const ESTABLISHED: &[u8] = b"HTTP/1.1 200 Connection established\r\n\r\n";

async fn forward(mut client: ClientStream, shared: &Shared, head: &RequestHead, rest: Vec<u8>) {
    let protocol = Protocol::HttpForward;
    let (target, path) = match forward_target(head) {
        Ok(t) => t,
        Err(reason) => {
            let d = Denial::Malformed(reason.to_owned());
            let d = shared.refuse(protocol, printable(head.target().as_bytes()), d);
            let _ = client.write_all(&denial_response(&d)).await;
            return;
        }
    };
    let mut upstream = match Box::pin(shared.open(protocol, &target)).await {
        Err(d) => {
            let _ = client.write_all(&denial_response(&d)).await;
            return;
        }
        Ok(Route::Upstream(u)) => u,
        Ok(Route::Intercept(..)) => {
            // Interception applies to tunnels only; plain HTTP is never
            // handed over.
            let d = Denial::Malformed("this host is only served through CONNECT".to_owned());
            let d = shared.refuse(protocol, target.to_string(), d);
            let _ = client.write_all(&denial_response(&d)).await;
            return;
        }
    };
    let mut out = rewrite_head(head, &path, &target);
    out.extend_from_slice(&rest);
    if upstream.write_all(&out).await.is_err() {
        return;
    }
    let _ = Box::pin(relay(&mut client, &mut upstream, shared.copying())).await;
}

/// The target of an absolute-form request, and the origin-form path to
/// send upstream. The Host header, when present, must name the same host
/// and port (the head reader already refused a second one).
pub(crate) fn forward_target(head: &RequestHead) -> Result<(Target, String), &'static str> {
    let t = head.target();
    let scheme_ok = t
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"));
    if !scheme_ok {
        return Err(if t.starts_with('/') {
            "origin-form request to a proxy; send an absolute http:// URI"
        } else {
            "only absolute http:// URIs are forwarded; use CONNECT for other schemes"
        });
    }
    let rest = &t[7..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err("userinfo in the request URI");
    }
    if path.contains('#') {
        return Err("fragment in the request URI");
    }
    let target =
        Target::parse_authority_or(authority, 80).map_err(|_| "bad host in the request URI")?;
    if let Some(value) = head.host() {
        let from_header = Target::parse_authority_or(value, 80).map_err(|_| "bad Host header")?;
        if from_header != target {
            return Err("Host header disagrees with the request URI");
        }
    }
    let path = match path.chars().next() {
        None => "/".to_owned(),
        Some('?') => format!("/{path}"),
        Some(_) => path.to_owned(),
    };
    Ok((target, path))
}

fn is_hop_by_hop(name: &str, listed: &[String]) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("proxy-")
        || matches!(
            lower.as_str(),
            "host" | "connection" | "keep-alive" | "te" | "trailer" | "upgrade"
        )
        || listed.contains(&lower)
}

/// Origin-form request line, the Host header, end-to-end headers only, and
/// `Connection: close`.
fn rewrite_head(head: &RequestHead, path: &str, target: &Target) -> Vec<u8> {
    let listed: Vec<String> = head
        .values("connection")
        .flat_map(|v| v.split(|&b| b == b','))
        .map(|t| String::from_utf8_lossy(t.trim_ascii()).to_ascii_lowercase())
        .collect();
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(format!("{} {} {}\r\n", head.method(), path, head.version()).as_bytes());
    let host = if target.port == 80 {
        target.to_string().trim_end_matches(":80").to_owned()
    } else {
        target.to_string()
    };
    out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
    for field in head.headers() {
        if is_hop_by_hop(field.name(), &listed) {
            continue;
        }
        out.extend_from_slice(field.name().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(field.value());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// Status, reason phrase and RFC 9209 error type for a denial.
fn status_for(d: &Denial) -> (u16, &'static str, &'static str) {
    match d {
        Denial::Policy(_) => (403, "Forbidden", "http_request_denied"),
        Denial::Address { .. } | Denial::DenylistedAddress(_) => {
            (403, "Forbidden", "destination_ip_prohibited")
        }
        Denial::Malformed(_) => (400, "Bad Request", "http_request_error"),
        Denial::NotFound => (502, "Bad Gateway", "dns_error"),
        Denial::DnsTimeout => (504, "Gateway Timeout", "dns_timeout"),
        Denial::ConnectTimeout => (504, "Gateway Timeout", "connection_timeout"),
        Denial::Refused => (502, "Bad Gateway", "connection_refused"),
        Denial::Unreachable(_) => (502, "Bad Gateway", "destination_unavailable"),
        Denial::Unauthenticated(_) => (407, "Proxy Authentication Required", "http_request_denied"),
    }
}

fn denial_response(d: &Denial) -> Vec<u8> {
    let (status, phrase, error) = status_for(d);
    let challenge = match d {
        Denial::Unauthenticated(_) => {
            "Proxy-Authenticate: Basic realm=\"agent-sandbox session\"\r\n"
        }
        _ => "",
    };
    response_with(status, phrase, error, &d.to_string(), challenge)
}

/// A short `Connection: close` response with a `Proxy-Status` header.
pub(crate) fn response(status: u16, phrase: &str, error: &str, details: &str) -> Vec<u8> {
    response_with(status, phrase, error, details, "")
}

/// [`response`] with extra header lines (each ending in CRLF).
fn response_with(status: u16, phrase: &str, error: &str, details: &str, extra: &str) -> Vec<u8> {
    let details: String = details
        .chars()
        .take(200)
        .filter(|c| (' '..='~').contains(c))
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    let body = format!("{status} {phrase}: {details}\n");
    format!(
        "HTTP/1.1 {status} {phrase}\r\n\
         Proxy-Status: connect-proxy; error={error}; details=\"{details}\"\r\n\
         {extra}\
         Content-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> RequestHead {
        let mut reader = HeadReader::new(HeadLimits::default());
        reader.read(raw.as_bytes()).unwrap().unwrap().0
    }

    #[test]
    fn forward_target_rules() {
        let h = head(
            "GET http://Example.com/a?b HTTP/1.1\r\nHost: example.com\r\nProxy-Authorization: x\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n",
        );
        let (t, p) = forward_target(&h).unwrap();
        assert_eq!(
            (t.to_string().as_str(), p.as_str()),
            ("example.com:80", "/a?b")
        );
        let out = String::from_utf8(rewrite_head(&h, &p, &t)).unwrap();
        assert_eq!(
            out,
            "GET /a?b HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let bad = head("GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n");
        assert!(forward_target(&bad).is_err());
        assert!(forward_target(&head("GET http://u@a.example/ HTTP/1.1\r\n\r\n")).is_err());
        assert!(forward_target(&head("GET https://a.example/ HTTP/1.1\r\n\r\n")).is_err());
        let (_, p) = forward_target(&head("GET http://a.example?q HTTP/1.1\r\n\r\n")).unwrap();
        assert_eq!(p, "/?q");
    }
}
