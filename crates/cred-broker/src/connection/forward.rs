//! Every check of one request, then the request written upstream with
//! the real credential: a buffered body as it is, a held body only if its
//! classifier's judgement allows it.

use super::{Conn, Outgoing, Prepared, READ_CHUNK, body_classifier};
use crate::classify::ClassifyInput;
use crate::error::{Error, LeaseErrorKind, RulesErrorKind, TlsErrorKind, truncate};
use crate::head::RequestHead;
use crate::inject::{Body, upstream_head_for};
use crate::parser::Request;
use crate::rules::Verdict;
use crate::streamed::{BodyReader, Judgement};
use crate::tls;
use net_vocab::Version;
use std::io::Read;
use std::time::SystemTime;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::{TlsConnector, client};

impl<S> Conn<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    /// The checks every request passes before anything of it goes
    /// upstream: its `Host` agrees with the target, and the rule engine
    /// allows it (a held body is judged by its classifier, so the engine
    /// sees the head alone).
    /// Returns the name of the rule that allowed it, when a named one did.
    fn check(&self, input: &ClassifyInput<'_>) -> Result<Option<String>, Error> {
        let head = input.head;
        if !self.spelled.agrees(head.host()) {
            return Err(RulesErrorKind::TargetMismatch {
                host: truncate(head.host()),
                target: self.target().to_string(),
            }
            .into());
        }
        let decision = self
            .broker
            .engine
            .decide_for(input, Some(&self.target().host));
        if decision.verdict() != Verdict::Allow {
            tracing::warn!(
                target: "cred_broker",
                destination = %self.target(),
                method = head.method(),
                path = crate::brokered::path_only(head.path()),
                decision = %decision,
                "brokered request refused"
            );
            return Err(RulesErrorKind::RuleDenied {
                method: truncate(head.method()),
                path: truncate(head.path()),
                decision: decision.to_string(),
            }
            .into());
        }
        Ok(decision.rule().map(str::to_owned))
    }

    /// Every check, then the request written upstream. A held body also
    /// has to pass its classifier's judgement; a refused one gets the
    /// classifier's answer instead.
    pub(super) async fn prepare(
        &mut self,
        request: &Request,
        body: Outgoing,
    ) -> Result<Prepared, Error> {
        let head = request.head();
        let input = match &body {
            Outgoing::Buffered => ClassifyInput::with_body(head, request.body()),
            Outgoing::Held(_) => ClassifyInput::head(head),
        };
        let rule = self.check(&input)?;
        let target = self.spelled.target();
        let Some(grant) = self
            .broker
            .grants
            .iter()
            .find(|g| g.credential.allows_host(&target.host))
        else {
            return Err(LeaseErrorKind::NoCredential {
                host: target.host.to_string(),
            }
            .into());
        };
        let now = SystemTime::now();
        let (len, drop_encoding, mut held) = match body {
            Outgoing::Buffered => (request.body().len(), false, None),
            Outgoing::Held(mut held) => {
                grant.lease.check(now)?;
                if let Judgement::Answer { answer, why } = held.judge()? {
                    return Ok(Prepared::Answered { answer, why });
                }
                let len = usize::try_from(held.len())
                    .map_err(|_| self.upstream_error("the body is too large to forward"))?;
                (len, true, Some(held))
            }
        };
        let out = upstream_head_for(
            head,
            Body { len, drop_encoding },
            &self.spelled,
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
        self.upstream_clean = false;
        let sent = async {
            up.write_all(out.as_bytes()).await?;
            match held.as_deref_mut() {
                None => {
                    if !request.body().is_empty() {
                        up.write_all(request.body()).await?;
                    }
                }
                Some(held) => {
                    let mut reader = held.reader().map_err(std::io::Error::other)?;
                    let mut buf = vec![0u8; READ_CHUNK * 4];
                    loop {
                        // A held body is in memory or a local temporary file.
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
        Ok(Prepared::Sent { rule })
    }

    /// Starts reading a body its classifier reads itself, once the head is
    /// complete: the head must agree with the target and pass the rule
    /// engine, and the classifier must take it, before any body byte is
    /// read. A refusal is reported and answered with the connection closed
    /// (the body stays unread); then `Err`.
    pub(super) async fn start_body(
        &mut self,
        head: &RequestHead,
    ) -> Result<Box<dyn BodyReader>, ()> {
        let started = self.check(&ClassifyInput::head(head)).and_then(|_| {
            match body_classifier(&self.broker.classifiers, head) {
                Some(c) => c.start_body(head),
                None => Err(self.upstream_error("no classifier reads this body")),
            }
        });
        let reader = match started {
            Ok(reader) => reader,
            Err(e) => {
                let label = format!("{} {}", self.target(), truncate(head.path()));
                self.broker.report(label, &e);
                self.answer(&e, true, None).await;
                return Err(());
            }
        };
        // The client may wait for this before sending the body; the
        // upstream gets the whole body at once and no `Expect`.
        let expects = head
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        if expects && head.version() != Version::Http10 {
            let _ = self.write_client(b"HTTP/1.1 100 Continue\r\n\r\n").await;
            let _ = self.client.flush().await;
        }
        Ok(reader)
    }

    pub(super) fn upstream_error(&self, message: impl std::fmt::Display) -> Error {
        TlsErrorKind::Upstream {
            target: self.target().to_string(),
            message: truncate(&message.to_string()),
        }
        .into()
    }

    /// Dials the vetted address and verifies the `CONNECT` host's identity.
    async fn connect(&self) -> Result<client::TlsStream<TcpStream>, Error> {
        let addr = self.upstream_addr;
        if let Some(kept) = self.broker.upstream_pool.take(self.target(), addr) {
            return Ok(kept);
        }
        let config = self.broker.client_config.clone();
        let name = tls::server_name(&self.target().host)?;
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
}
