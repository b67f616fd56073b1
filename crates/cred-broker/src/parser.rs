//! The streaming request parser: bytes in, whole checked requests out, one
//! at a time.

use crate::chunked::ChunkedDecoder;
use crate::error::{Error, HttpErrorKind};
use crate::head::RequestHead;
use crate::limits::Limits;
use net_vocab::{BodyFraming, HeadReader, HeaderField};
use std::fmt;
use std::sync::Arc;

/// Capacity of the head buffer kept for the next request: a head larger
/// than this gives its buffer back.
const KEPT_HEAD_BUFFER: usize = 4096;

/// One complete request: the checked head, the decoded body and any
/// trailer fields. The client's framing is not kept; see
/// [`Request::reframe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub(crate) head: RequestHead,
    pub(crate) body: Vec<u8>,
    pub(crate) trailers: Vec<HeaderField>,
}

impl Request {
    /// The head.
    pub fn head(&self) -> &RequestHead {
        &self.head
    }

    /// The decoded body (empty when there is none).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The trailer fields of a chunked body (already checked; they are not
    /// forwarded).
    pub fn trailers(&self) -> &[HeaderField] {
        &self.trailers
    }
}

/// What [`RequestParser::feed`] got to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// The request is not complete; feed more bytes.
    Incomplete,
    /// A request is complete. `consumed` bytes of the last input belong to
    /// it; feed the rest again for the next (pipelined) request.
    Complete {
        /// The request.
        request: Box<Request>,
        /// How many bytes of the last input were used.
        consumed: usize,
    },
}

#[derive(Debug, Clone)]
enum State {
    Head,
    Length {
        head: Box<RequestHead>,
        remaining: u64,
    },
    Chunked {
        head: Box<RequestHead>,
        decoder: Box<ChunkedDecoder>,
    },
    Failed(Error),
}

/// Chooses the requests whose bodies are streamed, and bounds each such
/// body (decoded) instead of [`Limits::max_body`].
pub(crate) type PickStreamed = Arc<dyn Fn(&RequestHead) -> Option<u64> + Send + Sync>;

/// A [`PickStreamed`] that `Debug` can show.
#[derive(Clone)]
struct Pick(PickStreamed);

impl fmt::Debug for Pick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pick(..)")
    }
}

/// Reads requests from a byte stream, one at a time, in whatever slices
/// the bytes arrive. Every check of the crate runs here (the head's by
/// net-vocab's [`HeadReader`] within [`Limits::head`], then the broker's
/// own, see [`RequestHead`]); the first problem is an [`Error`] and the
/// parser stays failed (answer 400 and close).
///
/// ```
/// use cred_broker::{Limits, RequestParser, Status};
/// let mut parser = RequestParser::new(Limits::default());
/// assert_eq!(parser.feed(b"GET / HTTP/1.1\r\nHo").unwrap(), Status::Incomplete);
/// let Status::Complete { request, consumed } = parser.feed(b"st: a.test\r\n\r\n").unwrap() else {
///     panic!("complete")
/// };
/// assert_eq!((request.head().host(), consumed), ("a.test", 14));
/// ```
#[derive(Debug, Clone)]
pub struct RequestParser {
    limits: Limits,
    state: State,
    buf: Vec<u8>,
    reader: HeadReader,
    body: Vec<u8>,
    /// Which requests have their bodies streamed (taken in parts with
    /// `take_body_part`) instead of collected, and the bound on each such
    /// decoded body.
    stream: Option<Pick>,
    /// Whether the request being read is streamed.
    streaming: bool,
}

impl RequestParser {
    /// A parser bounded by `limits`.
    pub fn new(limits: Limits) -> RequestParser {
        RequestParser {
            limits,
            state: State::Head,
            buf: Vec::new(),
            reader: HeadReader::new(limits.head),
            body: Vec::new(),
            stream: None,
            streaming: false,
        }
    }

    /// Streams the bodies of the requests `pick` chooses: their body bytes
    /// are bounded by the bound `pick` gives (instead of
    /// [`Limits::max_body`]) and taken in parts with
    /// [`RequestParser::take_body_part`] while the request is incomplete;
    /// the completed request holds only the part not yet taken.
    pub(crate) fn stream_bodies(&mut self, pick: PickStreamed) {
        self.stream = Some(Pick(pick));
    }

    /// The head of a streamed request whose body is being read.
    pub(crate) fn streaming_head(&self) -> Option<&RequestHead> {
        match &self.state {
            State::Length { head, .. } | State::Chunked { head, .. } if self.streaming => {
                Some(head)
            }
            _ => None,
        }
    }

    /// Takes the body bytes of a streamed request decoded so far.
    pub(crate) fn take_body_part(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.body)
    }

    /// Whether no byte of a next request has been read yet.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Head) && self.buf.is_empty()
    }

    /// Tells the parser the stream ended: an error unless it was idle.
    pub fn finish(&mut self) -> Result<(), Error> {
        match &self.state {
            State::Failed(e) => Err(e.clone()),
            _ if self.is_idle() => Ok(()),
            _ => Err(self.fail(HttpErrorKind::Truncated.into())),
        }
    }

    /// Feeds the next bytes of the stream.
    pub fn feed(&mut self, input: &[u8]) -> Result<Status, Error> {
        match self.step(input) {
            Ok(s) => Ok(s),
            Err(e) => Err(self.fail(e)),
        }
    }

    fn fail(&mut self, e: Error) -> Error {
        self.state = State::Failed(e.clone());
        self.buf = Vec::new();
        self.body = Vec::new();
        e
    }

    fn step(&mut self, input: &[u8]) -> Result<Status, Error> {
        let mut used = 0;
        if let State::Failed(e) = &self.state {
            return Err(e.clone());
        }
        if let State::Head = self.state {
            // Never buffer more than one byte past the head limit.
            let room = (self.limits.max_head() + 1).saturating_sub(self.buf.len());
            let take = input.len().min(room);
            let before = self.buf.len();
            self.buf.extend_from_slice(&input[..take]);
            let read = self.reader.read(&self.buf).map_err(HttpErrorKind::Head)?;
            let Some((head, end)) = read else {
                return Ok(Status::Incomplete);
            };
            used = end - before;
            let head = RequestHead::check(head)?;
            // The next head is read into the same buffer, unless this one
            // made it large.
            self.buf.clear();
            if self.buf.capacity() > KEPT_HEAD_BUFFER {
                self.buf = Vec::new();
            }
            self.reader = HeadReader::new(self.limits.head);
            let mut limits = self.limits;
            self.streaming = false;
            if let Some(Pick(pick)) = &self.stream
                && let Some(max) = pick(&head)
            {
                self.streaming = true;
                limits.max_body = max;
            }
            self.state = match head.framing() {
                BodyFraming::None | BodyFraming::Length(0) => {
                    return Ok(self.complete(head, Vec::new(), used));
                }
                BodyFraming::Length(n) if n > limits.max_body => {
                    return Err(HttpErrorKind::BodyTooLarge {
                        limit: limits.max_body,
                    }
                    .into());
                }
                BodyFraming::Length(n) => State::Length {
                    head: Box::new(head),
                    remaining: n,
                },
                BodyFraming::Chunked => State::Chunked {
                    head: Box::new(head),
                    decoder: Box::new(ChunkedDecoder::new(limits)),
                },
            };
        }
        let rest = &input[used..];
        match &mut self.state {
            State::Length { remaining, .. } => {
                let take = usize::try_from(*remaining).map_or(rest.len(), |r| r.min(rest.len()));
                self.body.extend_from_slice(&rest[..take]);
                *remaining -= take as u64;
                used += take;
                if *remaining > 0 {
                    return Ok(Status::Incomplete);
                }
            }
            State::Chunked { decoder, .. } => {
                used += decoder.decode(rest, &mut self.body)?;
                if !decoder.is_done() {
                    return Ok(Status::Incomplete);
                }
            }
            State::Head | State::Failed(_) => return Ok(Status::Incomplete),
        }
        let state = std::mem::replace(&mut self.state, State::Head);
        let body = std::mem::take(&mut self.body);
        Ok(match state {
            State::Length { head, .. } => self.complete(*head, body, used),
            State::Chunked { head, mut decoder } => {
                let trailers = decoder.take_trailers();
                let mut status = self.complete(*head, body, used);
                if let Status::Complete { request, .. } = &mut status {
                    request.trailers = trailers;
                }
                status
            }
            State::Head | State::Failed(_) => Status::Incomplete,
        })
    }

    fn complete(&mut self, head: RequestHead, body: Vec<u8>, consumed: usize) -> Status {
        self.state = State::Head;
        self.streaming = false;
        Status::Complete {
            request: Box::new(Request {
                head,
                body,
                trailers: Vec::new(),
            }),
            consumed,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::panic,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;

    fn big() -> PickStreamed {
        Arc::new(|head: &RequestHead| (head.path() == "/big").then_some(100))
    }

    #[test]
    fn streamed_bodies_come_in_parts_and_have_their_own_bound() {
        let limits = Limits::builder().max_body(4).build().unwrap();
        for chunked in [false, true] {
            let mut p = RequestParser::new(limits);
            p.stream_bodies(big());
            let wire: &[u8] = if chunked {
                b"POST /big HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n"
            } else {
                b"POST /big HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\nhelloworld"
            };
            let mut body = Vec::new();
            let mut done = None;
            for b in wire.chunks(3) {
                match p.feed(b).unwrap() {
                    Status::Incomplete => {
                        if p.streaming_head().is_some() {
                            body.extend(p.take_body_part());
                        }
                    }
                    Status::Complete { request, .. } => done = Some(request),
                }
            }
            let request = done.unwrap();
            body.extend_from_slice(request.body());
            assert_eq!(body, b"helloworld", "chunked: {chunked}");
            assert!(p.streaming_head().is_none());
        }
        // Past the stream's bound, and other requests keep the parser's.
        let mut p = RequestParser::new(limits);
        p.stream_bodies(big());
        assert!(
            p.feed(b"POST /big HTTP/1.1\r\nHost: a.test\r\nContent-Length: 101\r\n\r\n")
                .is_err()
        );
        let mut p = RequestParser::new(limits);
        p.stream_bodies(big());
        assert!(
            p.feed(b"POST /small HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\n")
                .is_err()
        );
    }
}
