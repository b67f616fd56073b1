//! One intercepted client connection: TLS in, the request loop, one
//! verified upstream connection, responses streamed back.

use crate::broker::Broker;
use crate::classify::ClassifyInput;
use crate::error::{Error, ErrorKind, Response, truncate};
use crate::git::classifier::{GitClassifier, GitRequest};
use crate::git::push_body::{BodyEncoding, PushBody, SpooledPush};
use crate::git::report::{RECEIVE_PACK_RESULT, report_status};
use crate::head::RequestHead;
use crate::head::Version;
use crate::host_pattern::canonical_host;
use crate::inject::{Body, Target, upstream_head_for};
use crate::parser::{Request, RequestParser, Status};
use crate::response::{ChunkScanner, MAX_RESPONSE_HEAD, ResponseBody, head_end, parse_head};
use crate::rules::Verdict;
use crate::tls;
use std::io::Read;
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

/// Whether a request is a push (`POST .../git-receive-pack` as
/// [`GitClassifier`] sees it): its body is streamed into [`PushBody`].
fn is_push(head: &RequestHead) -> bool {
    matches!(
        GitClassifier::default().classify_git(&ClassifyInput::head(head)),
        Some(Ok(GitRequest::Push(None)))
    )
}

#[cfg(feature = "graphql")]
fn is_graphql(head: &RequestHead) -> bool {
    crate::graphql_rule::is_graphql_path(head.path())
}

#[cfg(not(feature = "graphql"))]
fn is_graphql(_: &RequestHead) -> bool {
    false
}

/// The body of a 403 on a GraphQL endpoint: GraphQL-shaped, so GraphQL
/// clients show the reason.
#[cfg(feature = "graphql")]
fn graphql_refusal(status: u16, graphql: bool, e: &Error) -> Option<String> {
    (graphql && status == 403)
        .then(|| crate::graphql_rule::graphql_error_body(&format!("cred-broker: {e}")))
}

#[cfg(not(feature = "graphql"))]
fn graphql_refusal(_: u16, _: bool, _: &Error) -> Option<String> {
    None
}

/// How a request's body goes upstream.
enum Outgoing {
    /// The parser's buffered body.
    Buffered,
    /// A push read by [`PushBody`], forwarded only if the push rule
    /// allows it.
    Push(Box<SpooledPush>),
}

/// What [`Conn::prepare`] did.
enum Prepared {
    /// The request went upstream.
    Sent,
    /// The push rule refused the push: git's report for the client, and
    /// the refusal for the violation.
    Refused { report: Vec<u8>, why: Error },
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
        parser.stream_bodies(is_push, self.broker.git_limits.max_inflated_body);
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let Some((request, push)) = self.next_request(&mut parser, &mut pending).await? else {
                let _ = self.client.shutdown().await;
                return Ok(());
            };
            let body = match push {
                Some(push) => Outgoing::Push(Box::new(push)),
                None => Outgoing::Buffered,
            };
            match self.handle(&request, body).await? {
                Next::KeepAlive => {}
                Next::Close => {
                    let _ = self.client.shutdown().await;
                    return Ok(());
                }
            }
        }
    }

    /// The next complete request, or `None` when the client closed (or
    /// went idle) between requests. A push comes with its body read by
    /// [`PushBody`] (the request's own body is then empty).
    async fn next_request(
        &mut self,
        parser: &mut RequestParser,
        pending: &mut Vec<u8>,
    ) -> Result<Option<(Request, Option<SpooledPush>)>, Error> {
        let mut push: Option<PushBody> = None;
        loop {
            if !pending.is_empty() {
                let fed = parser.feed(pending);
                let fed = match fed {
                    Ok(Status::Complete {
                        mut request,
                        consumed,
                    }) => {
                        pending.drain(..consumed);
                        if push.is_none() && is_push(request.head()) {
                            match self.start_push(request.head()).await {
                                Ok(body) => push = Some(body),
                                Err(()) => return Ok(None),
                            }
                        }
                        match push.take() {
                            None => return Ok(Some((*request, None))),
                            Some(mut body) => {
                                let rest = std::mem::take(&mut request.body);
                                body.feed(&rest)
                                    .and_then(|()| body.finish())
                                    .map(|done| Some((*request, Some(done))))
                            }
                        }
                    }
                    Ok(_) => {
                        pending.clear();
                        if push.is_none()
                            && let Some(head) = parser.streaming_head()
                        {
                            match self.start_push(head).await {
                                Ok(body) => push = Some(body),
                                Err(()) => return Ok(None),
                            }
                        }
                        match push.as_mut() {
                            Some(body) => body.feed(&parser.take_body_part()).map(|()| None),
                            None => Ok(None),
                        }
                    }
                    Err(e) => Err(e),
                };
                match fed {
                    Ok(Some(done)) => return Ok(Some(done)),
                    Ok(None) => {}
                    Err(e) => {
                        self.broker.report(self.target.to_string(), &e);
                        self.answer(&e, true, false).await;
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
    async fn handle(&mut self, request: &Request, body: Outgoing) -> Result<Next, Error> {
        let head = request.head();
        let label = format!("{} {}", self.target, truncate(head.path()));
        let client_close = head.version() == Version::Http10
            || head
                .header("connection")
                .map(String::from_utf8_lossy)
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")));
        let graphql = is_graphql(head);
        match self.prepare(request, body).await {
            Ok(Prepared::Sent) => {}
            Ok(Prepared::Refused { report, why }) => {
                self.broker.report(label, &why);
                self.answer_push_report(&report, client_close).await;
                return Ok(if client_close {
                    Next::Close
                } else {
                    Next::KeepAlive
                });
            }
            Err(e) => {
                self.broker.report(label, &e);
                return if e.response() == Response::Forbidden && !client_close {
                    self.answer(&e, false, graphql).await;
                    Ok(Next::KeepAlive)
                } else {
                    self.answer(&e, true, graphql).await;
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
                    self.answer(&error, true, false).await;
                }
                Err(error)
            }
        }
    }

    /// Every check, then the request written upstream. A push also has
    /// to pass the push rule; a refused push gets git's report instead.
    async fn prepare(&mut self, request: &Request, body: Outgoing) -> Result<Prepared, Error> {
        let head = request.head();
        let target = &self.target;
        if !target.agrees_with(head.host()) {
            return Err(ErrorKind::TargetMismatch {
                host: truncate(head.host()),
                target: target.to_string(),
            }
            .into());
        }
        // A push's body is judged by the push rule below; the rule engine
        // sees its head.
        let input = match &body {
            Outgoing::Buffered => ClassifyInput::with_body(head, request.body()),
            Outgoing::Push(_) => ClassifyInput::head(head),
        };
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
        let now = SystemTime::now();
        let (len, drop_encoding, mut push) = match body {
            Outgoing::Buffered => (request.body().len(), false, None),
            Outgoing::Push(mut push) => {
                grant.lease.check(now)?;
                let Some(rule) = self.broker.push_rule.as_ref() else {
                    return Err(ErrorKind::NoPushRule.into());
                };
                let limits = &self.broker.git_limits;
                let decision = rule.check_spooled(&push.request, &mut push.pack, limits);
                if decision.verdict() != Verdict::Allow {
                    let refs: Vec<String> = decision
                        .refs()
                        .iter()
                        .filter_map(|r| r.refusal().map(|why| format!("{}: {why}", r.refname())))
                        .collect();
                    let why = ErrorKind::PushRefused {
                        refs: truncate(&refs.join("; ")),
                    }
                    .into();
                    let report = report_status(&decision, &push.request)?;
                    return Ok(Prepared::Refused { report, why });
                }
                let len = usize::try_from(push.len())
                    .map_err(|_| self.upstream_error("the push is too large to forward"))?;
                (len, true, Some(push))
            }
        };
        let out = upstream_head_for(
            head,
            Body { len, drop_encoding },
            target,
            &grant.lease,
            &grant.credential,
            now,
        )?;
        if self.upstream.is_none() {
            self.upstream = Some(self.connect().await?);
        }
        let Some(up) = self.upstream.as_mut() else {
            return Err(self.upstream_error("no upstream connection"));
        };
        let sent = async {
            up.write_all(out.as_bytes()).await?;
            match push.as_deref_mut() {
                None => {
                    if !request.body().is_empty() {
                        up.write_all(request.body()).await?;
                    }
                }
                Some(push) => {
                    up.write_all(&push.commands).await?;
                    let mut reader = push.pack.reader().map_err(std::io::Error::other)?;
                    let mut buf = vec![0u8; READ_CHUNK * 4];
                    loop {
                        // The spool is in memory or a local temporary file.
                        let n = reader.read(&mut buf)?;
                        if n == 0 {
                            break;
                        }
                        up.write_all(&buf[..n]).await?;
                    }
                }
            }
            up.flush().await
        }
        .await;
        drop(out);
        sent.map_err(|e| self.upstream_error(e))?;
        Ok(Prepared::Sent)
    }

    /// Starts reading a push once its head is complete: the head must
    /// agree with the target, pass the rule engine, and a push rule must
    /// be configured, before any body byte is read. A refusal is reported
    /// and answered 403 with the connection closed (the body stays unread);
    /// then `Err`.
    async fn start_push(&mut self, head: &RequestHead) -> Result<PushBody, ()> {
        let checked = if !self.target.agrees_with(head.host()) {
            Err(ErrorKind::TargetMismatch {
                host: truncate(head.host()),
                target: self.target.to_string(),
            })
        } else {
            let input = ClassifyInput::head(head);
            let decision = self.broker.engine.decide(&input, self.target.host());
            if decision.verdict() != Verdict::Allow {
                Err(ErrorKind::RuleDenied {
                    method: truncate(head.method()),
                    path: truncate(head.path()),
                    decision: decision.to_string(),
                })
            } else if self.broker.push_rule.is_none() {
                Err(ErrorKind::NoPushRule)
            } else {
                Ok(())
            }
        };
        if let Err(kind) = checked {
            let e = Error::from(kind);
            let label = format!("{} {}", self.target, truncate(head.path()));
            self.broker.report(label, &e);
            self.answer(&e, true, false).await;
            return Err(());
        }
        // The client may wait for this before sending the body; the
        // upstream gets the whole body at once and no `Expect`.
        let expects = head
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        if expects && head.version() != Version::Http10 {
            let _ = self.write_client(b"HTTP/1.1 100 Continue\r\n\r\n").await;
            let _ = self.client.flush().await;
        }
        let limits = &self.broker.git_limits;
        Ok(
            match BodyEncoding::from_header(head.header("content-encoding")) {
                Some(encoding) => PushBody::new(encoding, limits),
                None => PushBody::refusing(limits),
            },
        )
    }

    /// Answers a refused push with git's report, in a `200 OK` as
    /// `git-receive-pack` itself would.
    async fn answer_push_report(&mut self, report: &[u8], close: bool) {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {RECEIVE_PACK_RESULT}\r\nCache-Control: no-cache\r\nContent-Length: {}\r\n",
            report.len()
        )
        .into_bytes();
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(report);
        let _ = self.client.write_all(&out).await;
        let _ = self.client.flush().await;
        if close {
            let _ = self.client.shutdown().await;
        }
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

    /// Answers a refusal with its status and a short reason; a 403 on a
    /// GraphQL endpoint carries a GraphQL-shaped error body.
    async fn answer(&mut self, e: &Error, close: bool, graphql: bool) {
        let status = e.response().status().unwrap_or(500);
        let text = match status {
            400 => "Bad Request",
            403 => "Forbidden",
            502 => "Bad Gateway",
            _ => "Internal Server Error",
        };
        let (kind, body) = match graphql_refusal(status, graphql, e) {
            Some(json) => ("application/json", json),
            None => ("text/plain; charset=utf-8", format!("cred-broker: {e}\n")),
        };
        let mut out = format!(
            "HTTP/1.1 {status} {text}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n",
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
