//! One intercepted client connection: TLS in, the request loop, one
//! verified upstream connection, responses streamed back.
//!
//! The connection knows no protocol above HTTP by name: it asks the
//! broker's classifiers ([`crate::RequestClassifier`]) whether a request's
//! body is theirs to read and judge (a git push) and how a refusal is
//! shaped (GraphQL's error body).

mod forward;
mod relay;

use crate::answer::Answer;
use crate::broker::Broker;
use crate::classify::RequestClassifier;
use crate::error::{Error, Response, TlsErrorKind, truncate};
use crate::head::RequestHead;
use crate::inject::SpelledTarget;
use crate::parser::{Request, RequestParser, Status};
use crate::streamed::{BodyReader, HeldBody};
use crate::tls;
use net_vocab::{Host, Target, Version};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::{LazyConfigAcceptor, client, server};

/// Size of each read from either side.
const READ_CHUNK: usize = 16 * 1024;

fn client_error(message: impl std::fmt::Display) -> Error {
    TlsErrorKind::Client {
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
    /// `TCP_NODELAY` on a TCP stream). `target` is the `CONNECT` target,
    /// which is authoritative; `upstream` is the address the proxy already
    /// vetted for it, dialed once, at the first request that passes every
    /// check, and never re-resolved. An earlier client's verified
    /// connection to the same target and address is used instead when the
    /// broker kept one: kept only after a response that ended cleanly,
    /// for at most 2 s, and taken only while open and silent; a request is
    /// never sent twice.
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
        target: &Target,
        upstream: SocketAddr,
    ) -> Result<(), Error>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send,
    {
        let target = target.clone();
        let acceptor = LazyConfigAcceptor::new(rustls::server::Acceptor::default(), client);
        let start = timeout(self.handshake_timeout, acceptor)
            .await
            .map_err(|_| client_error("the TLS handshake timed out"))?
            .map_err(client_error)?;
        if let Some(sni) = start.client_hello().server_name()
            && Host::parse_wire(sni).ok().as_ref() != Some(&target.host)
        {
            let e = Error::from(TlsErrorKind::SniMismatch {
                sni: truncate(sni),
                target: target.to_string(),
            });
            self.report(target.to_string(), &e);
            return Err(e);
        }
        let leaf = self.ca.leaf_for(&target.host, SystemTime::now())?;
        let config =
            tls::server_config(&self.provider, leaf.der(), &self.leaf_key, &self.sessions)?;
        let stream = timeout(self.handshake_timeout, start.into_stream(config))
            .await
            .map_err(|_| client_error("the TLS handshake timed out"))?
            .map_err(client_error)?;
        let mut conn = Conn {
            broker: self,
            spelled: SpelledTarget::new(target),
            client: stream,
            upstream_addr: upstream,
            upstream: None,
            upstream_clean: false,
            ubuf: Vec::new(),
            rbuf: vec![0; READ_CHUNK],
        };
        let result = conn.run().await;
        // However the client left, an upstream connection whose last
        // response ended cleanly can serve the session's next client.
        if conn.upstream_clean
            && let Some(up) = conn.upstream.take()
        {
            self.upstream_pool
                .give(conn.target(), conn.upstream_addr, up);
        }
        result
    }
}

/// How a request's body goes upstream.
enum Outgoing {
    /// The parser's buffered body.
    Buffered,
    /// A body read by its classifier, forwarded only if the classifier's
    /// judgement allows it.
    Held(Box<dyn HeldBody>),
}

/// What [`Conn::prepare`] did.
enum Prepared {
    /// The request went upstream, allowed by the named rule (if a named
    /// rule decided).
    Sent { rule: Option<String> },
    /// The classifier that read the body answered instead: the answer for
    /// the client, and the refusal for the violation.
    Answered { answer: Answer, why: Error },
}

/// The state of one client connection.
struct Conn<'a, S> {
    broker: &'a Broker,
    /// The `CONNECT` target, which is authoritative.
    spelled: SpelledTarget,
    client: server::TlsStream<S>,
    upstream_addr: SocketAddr,
    upstream: Option<client::TlsStream<TcpStream>>,
    /// The upstream connection is between responses: the last one ended
    /// with both sides keeping the connection, no byte of it is left over
    /// and no request is in flight.
    upstream_clean: bool,
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

/// The classifier that reads the body of `head` itself, if one does.
fn body_classifier<'a>(
    classifiers: &'a [Arc<dyn RequestClassifier>],
    head: &RequestHead,
) -> Option<&'a Arc<dyn RequestClassifier>> {
    classifiers.iter().find(|c| c.streams_body(head).is_some())
}

impl<S> Conn<'_, S> {
    fn target(&self) -> &Target {
        self.spelled.target()
    }
}

impl<S> Conn<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    async fn run(&mut self) -> Result<(), Error> {
        let mut parser = RequestParser::new(self.broker.limits);
        let classifiers = Arc::clone(&self.broker.classifiers);
        parser.stream_bodies(Arc::new(move |head: &RequestHead| {
            classifiers.iter().find_map(|c| c.streams_body(head))
        }));
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let Some((request, held)) = self.next_request(&mut parser, &mut pending).await? else {
                let _ = self.client.shutdown().await;
                return Ok(());
            };
            let body = match held {
                Some(held) => Outgoing::Held(held),
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
    /// went idle) between requests. A request whose body a classifier
    /// reads comes with that body held (the request's own body is then
    /// empty).
    async fn next_request(
        &mut self,
        parser: &mut RequestParser,
        pending: &mut Vec<u8>,
    ) -> Result<Option<(Request, Option<Box<dyn HeldBody>>)>, Error> {
        let mut reader: Option<Box<dyn BodyReader>> = None;
        loop {
            if !pending.is_empty() {
                let fed = parser.feed(pending);
                let fed = match fed {
                    Ok(Status::Complete {
                        mut request,
                        consumed,
                    }) => {
                        pending.drain(..consumed);
                        if reader.is_none()
                            && body_classifier(&self.broker.classifiers, request.head()).is_some()
                        {
                            match self.start_body(request.head()).await {
                                Ok(body) => reader = Some(body),
                                Err(()) => return Ok(None),
                            }
                        }
                        match reader.take() {
                            None => return Ok(Some((*request, None))),
                            Some(mut body) => {
                                let rest = std::mem::take(&mut request.body);
                                body.feed(&rest)
                                    .and_then(|()| body.finish())
                                    .map(|held| Some((*request, Some(held))))
                            }
                        }
                    }
                    Ok(_) => {
                        pending.clear();
                        if reader.is_none()
                            && let Some(head) = parser.streaming_head()
                        {
                            match self.start_body(head).await {
                                Ok(body) => reader = Some(body),
                                Err(()) => return Ok(None),
                            }
                        }
                        match reader.as_mut() {
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
                        self.broker.report(self.target().to_string(), &e);
                        self.answer(&e, true, None).await;
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
        // What a report names (built only for one: formatting the target
        // was about 5% of a kept-alive request's instructions).
        let label = |target: &Target| format!("{target} {}", truncate(head.path()));
        let client_close = head.version() == Version::Http10
            || head
                .header("connection")
                .map(String::from_utf8_lossy)
                .is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")));
        let rule = match self.prepare(request, body).await {
            Ok(Prepared::Sent { rule }) => rule,
            Ok(Prepared::Answered { answer, why }) => {
                self.broker.report(label(self.target()), &why);
                self.send(&answer, client_close).await;
                return Ok(if client_close {
                    Next::Close
                } else {
                    Next::KeepAlive
                });
            }
            Err(e) => {
                self.broker.report(label(self.target()), &e);
                return if e.response() == Response::Forbidden && !client_close {
                    self.answer(&e, false, Some(head)).await;
                    Ok(Next::KeepAlive)
                } else {
                    self.answer(&e, true, Some(head)).await;
                    match e.response() {
                        Response::Forbidden => Ok(Next::Close),
                        _ => Err(e),
                    }
                };
            }
        };
        let relayed = self.relay_response(head.method()).await;
        self.upstream_clean = matches!(relayed, Ok((true, _))) && self.ubuf.is_empty();
        if let Ok((_, status)) = &relayed
            && self.broker.wants_requests()
        {
            self.broker.forwarded(crate::BrokeredRequest::new(
                self.target().to_string(),
                head.method(),
                head.path(),
                rule.as_deref(),
                *status,
            ));
        }
        match relayed {
            Ok((true, _)) if !client_close => Ok(Next::KeepAlive),
            Ok(_) => Ok(Next::Close),
            Err(relay::RelayError { error, started }) => {
                self.broker.report(label(self.target()), &error);
                if !started {
                    self.answer(&error, true, None).await;
                }
                Err(error)
            }
        }
    }

    async fn write_client(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.client.write_all(bytes).await.map_err(client_error)
    }

    /// Answers a refusal with its status and a short reason. With the
    /// request's head, the classifiers may shape it (a 403 on a GraphQL
    /// endpoint carries a GraphQL-shaped error body).
    async fn answer(&mut self, e: &Error, close: bool, head: Option<&RequestHead>) {
        let status = e.response().status().unwrap_or(500);
        let message = format!("cred-broker: {e}");
        let shaped = head.and_then(|head| {
            self.broker
                .classifiers
                .iter()
                .find_map(|c| c.refusal(head, status, &message))
        });
        let answer = shaped.unwrap_or_else(|| {
            Answer::new(status, "text/plain; charset=utf-8", format!("{message}\n"))
        });
        self.send(&answer, close).await;
    }

    /// Sends an answer of the broker's own; closes the connection after it
    /// when `close`.
    async fn send(&mut self, answer: &Answer, close: bool) {
        let _ = self.client.write_all(&answer.to_bytes(close)).await;
        let _ = self.client.flush().await;
        if close {
            let _ = self.client.shutdown().await;
        }
    }
}
