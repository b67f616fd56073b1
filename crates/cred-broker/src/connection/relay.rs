//! Relaying one response from the upstream to the client, streamed by
//! its own framing, never buffered whole.

use super::{Conn, client_error};
use crate::error::Error;
use crate::response::{ChunkScanner, MAX_RESPONSE_HEAD, ResponseBody, head_end, parse_head};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::timeout;

/// A response relay failure, and whether the client already got bytes of
/// the response (then a 502 cannot be sent).
pub(super) struct RelayError {
    pub(super) error: Error,
    pub(super) started: bool,
}

impl<S> Conn<'_, S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
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

    /// Streams one response (after any interim 1xx) to the client: whether
    /// both sides may keep the connection, and the response's status.
    pub(super) async fn relay_response(&mut self, method: &str) -> Result<(bool, u16), RelayError> {
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
            if (100..200).contains(&head.status) {
                let sent = self.client.write_all(&self.ubuf[..end]).await;
                sent.map_err(|e| fail(client_error(e), true))?;
                self.ubuf.drain(..end);
                started = true;
                continue;
            }
            let mut framer = match head.body {
                ResponseBody::None => Framer::Length(0),
                ResponseBody::Length(n) => Framer::Length(n),
                ResponseBody::Chunked => Framer::Chunked(ChunkScanner::new()),
                ResponseBody::Close => Framer::Close,
            };
            // The head and whatever body bytes came with it go in one write,
            // straight from the buffer they were read into.
            let body = self.ubuf.get(end..).unwrap_or_default();
            let (used, mut done) = framer
                .take(body)
                .map_err(|m| fail(self.upstream_error(m), started))?;
            let sent = self.client.write_all(&self.ubuf[..end + used]).await;
            sent.map_err(|e| fail(client_error(e), true))?;
            self.ubuf.drain(..end + used);
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
                let sent = self.client.write_all(&self.rbuf[..used]).await;
                sent.map_err(|e| fail(client_error(e), true))?;
                self.ubuf.extend_from_slice(&self.rbuf[used..n]);
            }
            self.client
                .flush()
                .await
                .map_err(|e| fail(client_error(e), true))?;
            return Ok((head.keep_alive, head.status));
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
