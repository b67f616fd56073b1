//! One intercepted client connection: TLS in, the request loop, one
//! verified upstream connection, responses streamed back.

use crate::broker::Broker;
use crate::classify::ClassifyInput;
use crate::error::{Error, ErrorKind, Response, truncate};
use crate::head::Version;
use crate::host_pattern::canonical_host;
use crate::inject::{Target, upstream_head};
use crate::parser::{Request, RequestParser, Status};
use crate::response::{ChunkScanner, MAX_RESPONSE_HEAD, ResponseBody, head_end, parse_head};
use crate::rules::Verdict;
use crate::tls;
use std::net::{Ipv6Addr, SocketAddr};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::{LazyConfigAcceptor, TlsConnector, client, server};

/// Size of each read from either side.
const READ_CHUNK: usize = 16 * 1024;

fn client_error(message: impl std::fmt::Display) -> Error {
    ErrorKind::Client {
        message: truncate(&message.to_string()),
    }
    .into()
}

impl Broker {
    /// Serves one intercepted client connection until it closes.
    ///
    /// `client` carries the bytes after the proxy's answer to `CONNECT`
    /// (prepend any bytes the proxy already read, for example with
    /// [`tokio::io::AsyncReadExt::chain`] and [`tokio::io::join`]; set
    /// `TCP_NODELAY` on a TCP stream). `connect_host` and `connect_port`
    /// are the `CONNECT` target, which is authoritative (a host name or an
    /// IP literal, IPv6 with or without brackets); `upstream` is the
    /// address the proxy already vetted for it, dialed once, at the first
    /// request that passes every check, and never re-resolved.
    ///
    /// Returns `Ok` when the client closed between requests or a response
    /// closed the connection, and the error that ended it otherwise: a
    /// failed or refused TLS handshake (an SNI for another host), a
    /// malformed request (answered 400), an upstream that could not be
    /// reached or did not prove the `CONNECT` host's identity (answered
    /// 502). Refusals that keep the connection open (403) are not errors
    /// here; every refusal is reported to
    /// [`Broker::subscribe_violations`].
    pub async fn serve<S>(
        &self,
        client: S,
        connect_host: &str,
        connect_port: u16,
        upstream: SocketAddr,
    ) -> Result<(), Error>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send,
    {
        // The proxy may name an IPv6 target without brackets.
        let target = if connect_host.parse::<Ipv6Addr>().is_ok() {
            Target::new(&format!("[{connect_host}]"), connect_port)?
        } else {
            Target::new(connect_host, connect_port)?
        };
        let acceptor = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), client);
        let start = timeout(self.handshake_timeout, acceptor)
            .await
            .map_err(|_| client_error("the TLS handshake timed out"))?
            .map_err(client_error)?;
        if let Some(sni) = start.client_hello().server_name()
            && canonical_host(sni) != target.host()
        {
            let e = Error::from(ErrorKind::SniMismatch {
                sni: truncate(sni),
                target: target.to_string(),
            });
            self.report(target.to_string(), &e);
            return Err(e);
        }
        let leaf = self.ca.leaf(target.host(), SystemTime::now())?;
        let config =
            tls::server_config(&self.provider, leaf.der(), &self.leaf_key, &self.sessions)?;
        let stream = timeout(self.handshake_timeout, start.into_stream(config))
            .await
            .map_err(|_| client_error("the TLS handshake timed out"))?
            .map_err(client_error)?;
        let mut conn = Conn {
            broker: self,
            target,
            client: stream,
            upstream_addr: upstream,
            upstream: None,
            ubuf: Vec::new(),
            rbuf: vec![0; READ_CHUNK],
        };
        conn.run().await
    }
}

/// The state of one client connection.
struct Conn<'a, S> {
    broker: &'a Broker,
    target: Target,
    client: server::TlsStream<S>,
    upstream_addr: SocketAddr,
    upstream: Option<client::TlsStream<TcpStream>>,
    /// Upstream bytes read but not yet forwarded.
    ubuf: Vec<u8>,
    /// Scratch buffer for reads.
    rbuf: Vec<u8>,
}

/// How the request loop goes on after a request.
enum Next {
    KeepAlive,
    Close,
}

/// A response relay failure, and whether the client already got bytes of
/// the response (then a 502 cannot be sent).
struct RelayError {
    error: Error,
    started: bool,
}

impl<S> Conn<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    async fn run(&mut self) -> Result<(), Error> {
        let mut parser = RequestParser::new(self.broker.limits);
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let Some(request) = self.next_request(&mut parser, &mut pending).await? else {
                let _ = self.client.shutdown().await;
                return Ok(());
            };
            match self.handle(&request).await? {
                Next::KeepAlive => {}
                Next::Close => {
                    let _ = self.client.shutdown().await;
                    return Ok(());
                }
            }
        }
    }

    /// The next complete request, or `None` when the client closed (or
    /// went idle) between requests.
    async fn next_request(
        &mut self,
        parser: &mut RequestParser,
        pending: &mut Vec<u8>,
    ) -> Result<Option<Request>, Error> {
        loop {
            if !pending.is_empty() {
                match parser.feed(pending) {
                    Ok(Status::Complete { request, consumed }) => {
                        pending.drain(..consumed);
                        return Ok(Some(*request));
                    }
                    Ok(_) => pending.clear(),
                    Err(e) => {
                        self.broker.report(self.target.to_string(), &e);
                        self.answer(&e, true).await;
                        return Err(e);
                    }
                }
            }
            let read = timeout(self.broker.idle_timeout, self.client.read(&mut self.rbuf)).await;
            let n = match read {
                Err(_) if parser.is_idle() => return Ok(None),
                Err(_) => return Err(client_error("the client stalled inside a request")),
                Ok(Err(e)) => return Err(client_error(e)),
                Ok(Ok(n)) => n,
            };
            if n == 0 {
                parser.finish()?;
                return Ok(None);
            }
            pending.extend_from_slice(&self.rbuf[..n]);
        }
    }

    /// Checks, decides, injects, forwards one request and relays its
    /// response.
    async fn handle(&mut self, request: &Request) -> Result<Next, Error> {
        let head = request.head();
        let label = format!("{} {}", self.target, truncate(head.path()));
        let client_close = head.version() == Version::Http10
            || head
                .header("connection")
                .map(String::from_utf8_lossy)
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")));
        match self.prepare(request).await {
            Ok(()) => {}
            Err(e) => {
                self.broker.report(label, &e);
                return if e.response() == Response::Forbidden && !client_close {
                    self.answer(&e, false).await;
                    Ok(Next::KeepAlive)
                } else {
                    self.answer(&e, true).await;
                    match e.response() {
                        Response::Forbidden => Ok(Next::Close),
                        _ => Err(e),
                    }
                };
            }
        }
        match self.relay_response(head.method()).await {
            Ok(true) if !client_close => Ok(Next::KeepAlive),
            Ok(_) => Ok(Next::Close),
            Err(RelayError { error, started }) => {
                self.broker.report(label, &error);
                if !started {
                    self.answer(&error, true).await;
                }
                Err(error)
            }
        }
    }

    /// Every check, then the request written upstream.
    async fn prepare(&mut self, request: &Request) -> Result<(), Error> {
        let head = request.head();
        let target = &self.target;
        if !target.agrees_with(head.host()) {
            return Err(ErrorKind::TargetMismatch {
                host: truncate(head.host()),
                target: target.to_string(),
            }
            .into());
        }
        let input = ClassifyInput::with_body(head, request.body());
        let decision = self.broker.engine.decide(&input, target.host());
        if decision.verdict() != Verdict::Allow {
            return Err(ErrorKind::RuleDenied {
                method: truncate(head.method()),
                path: truncate(head.path()),
                decision: decision.to_string(),
            }
            .into());
        }
        let Some(grant) = self
            .broker
            .grants
            .iter()
            .find(|g| g.credential.allows_host(target.host()))
        else {
            return Err(ErrorKind::NoCredential {
                host: target.host().to_owned(),
            }
            .into());
        };
        let out = upstream_head(
            request,
            target,
            &grant.lease,
            &grant.credential,
            SystemTime::now(),
        )?;
        if self.upstream.is_none() {
            self.upstream = Some(self.connect().await?);
        }
        let Some(up) = self.upstream.as_mut() else {
            return Err(self.upstream_error("no upstream connection"));
        };
        let sent = async {
            up.write_all(out.as_bytes()).await?;
            if !request.body().is_empty() {
                up.write_all(request.body()).await?;
            }
            up.flush().await
        }
        .await;
        drop(out);
        sent.map_err(|e| self.upstream_error(e))
    }

    fn upstream_error(&self, message: impl std::fmt::Display) -> Error {
        ErrorKind::Upstream {
            target: self.target.to_string(),
            message: truncate(&message.to_string()),
        }
        .into()
    }

    /// Dials the vetted address and verifies the `CONNECT` host's identity.
    async fn connect(&self) -> Result<client::TlsStream<TcpStream>, Error> {
        let addr = self.upstream_addr;
        let config = self.broker.client_config.clone();
        let name = tls::server_name(self.target.host())?;
        let dial = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("connect to {addr}: {e}"))?;
            let _ = tcp.set_nodelay(true);
            TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {addr}: {e}"))
        };
        match timeout(self.broker.upstream_timeout, dial).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(message)) => Err(self.upstream_error(message)),
            Err(_) => Err(self.upstream_error("connect and TLS handshake timed out")),
        }
    }

    async fn read_upstream(&mut self) -> Result<usize, Error> {
        let idle: Duration = self.broker.idle_timeout;
        let Some(up) = self.upstream.as_mut() else {
            return Err(self.upstream_error("no upstream connection"));
        };
        match timeout(idle, up.read(&mut self.rbuf)).await {
            Ok(Ok(n)) => Ok(n),
            Ok(Err(e)) => Err(self.upstream_error(e)),
            Err(_) => Err(self.upstream_error("the response stalled")),
        }
    }

    /// Streams one response (after any interim 1xx) to the client; true
    /// when both sides may keep the connection.
    async fn relay_response(&mut self, method: &str) -> Result<bool, RelayError> {
        let mut started = false;
        let fail = |error: Error, started: bool| RelayError { error, started };
        loop {
            let end = loop {
                if let Some(end) = head_end(&self.ubuf) {
                    break end;
                }
                if self.ubuf.len() > MAX_RESPONSE_HEAD {
                    let e = self.upstream_error("response head too large");
                    return Err(fail(e, started));
                }
                let n = self.read_upstream().await.map_err(|e| fail(e, started))?;
                if n == 0 {
                    let e = self.upstream_error("closed before a complete response head");
                    return Err(fail(e, started));
                }
                self.ubuf.extend_from_slice(&self.rbuf[..n]);
            };
            let head = parse_head(&self.ubuf[..end], method)
                .map_err(|m| fail(self.upstream_error(m), started))?;
            if head.status == 101 {
                let e = self.upstream_error("the upstream switched protocols");
                return Err(fail(e, started));
            }
            let mut out: Vec<u8> = self.ubuf.drain(..end).collect();
            if (100..200).contains(&head.status) {
                self.write_client(&out).await.map_err(|e| fail(e, true))?;
                started = true;
                continue;
            }
            let mut framer = match head.body {
                ResponseBody::None => Framer::Length(0),
                ResponseBody::Length(n) => Framer::Length(n),
                ResponseBody::Chunked => Framer::Chunked(ChunkScanner::new()),
                ResponseBody::Close => Framer::Close,
            };
            // The head and whatever body bytes came with it go in one write.
            let (used, mut done) = framer
                .take(&self.ubuf)
                .map_err(|m| fail(self.upstream_error(m), started))?;
            out.extend(self.ubuf.drain(..used));
            self.write_client(&out).await.map_err(|e| fail(e, true))?;
            while !done {
                let n = self.read_upstream().await.map_err(|e| fail(e, true))?;
                if n == 0 {
                    if matches!(framer, Framer::Close) {
                        break;
                    }
                    let e = self.upstream_error("closed inside a response body");
                    return Err(fail(e, true));
                }
                let (used, d) = framer
                    .take(&self.rbuf[..n])
                    .map_err(|m| fail(self.upstream_error(m), true))?;
                done = d;
                let chunk = self.rbuf[..used].to_vec();
                self.ubuf.extend_from_slice(&self.rbuf[used..n]);
                self.write_client(&chunk).await.map_err(|e| fail(e, true))?;
            }
            self.client
                .flush()
                .await
                .map_err(|e| fail(client_error(e), true))?;
            return Ok(head.keep_alive);
        }
    }

    async fn write_client(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.client.write_all(bytes).await.map_err(client_error)
    }

    /// Answers a refusal with its status and a short reason.
    async fn answer(&mut self, e: &Error, close: bool) {
        let status = e.response().status().unwrap_or(500);
        let text = match status {
            400 => "Bad Request",
            403 => "Forbidden",
            502 => "Bad Gateway",
            _ => "Internal Server Error",
        };
        let body = format!("cred-broker: {e}\n");
        let mut out = format!(
            "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n",
            body.len()
        );
        if close {
            out.push_str("Connection: close\r\n");
        }
        out.push_str("\r\n");
        out.push_str(&body);
        let _ = self.client.write_all(out.as_bytes()).await;
        let _ = self.client.flush().await;
        if close {
            let _ = self.client.shutdown().await;
        }
    }
}

/// Where a response body ends.
enum Framer {
    Length(u64),
    Chunked(ChunkScanner),
    Close,
}

impl Framer {
    /// How many bytes of `input` belong to the body, and whether it ended.
    fn take(&mut self, input: &[u8]) -> Result<(usize, bool), String> {
        match self {
            Framer::Length(left) => {
                let used = usize::try_from(*left).map_or(input.len(), |l| l.min(input.len()));
                *left -= used as u64;
                Ok((used, *left == 0))
            }
            Framer::Chunked(scanner) => {
                let used = scanner.scan(input)?;
                Ok((used, scanner.is_done()))
            }
            Framer::Close => Ok((input.len(), false)),
        }
    }
}
