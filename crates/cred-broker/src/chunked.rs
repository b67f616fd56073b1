//! A streaming decoder for the chunked transfer coding (RFC 9112 section 7.1),
//! stricter than the grammar where readers are known to disagree.

use crate::error::{Error, HttpErrorKind, truncate_bytes};
use crate::limits::Limits;
use net_vocab::{HeaderField, is_token};

/// The most hexadecimal digits accepted in a chunk size (leading zeros
/// included).
pub const MAX_CHUNK_SIZE_DIGITS: usize = 16;

/// Trailer fields that are refused: framing, routing and credentials must
/// come from the head only.
const FORBIDDEN_TRAILERS: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "host",
    "trailer",
    "te",
    "connection",
    "keep-alive",
    "upgrade",
    "expect",
    "content-encoding",
    "content-type",
    "content-range",
    "authorization",
    "proxy-authorization",
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Reading a chunk-size line.
    Size,
    /// Reading chunk data.
    Data { remaining: u64 },
    /// Expecting CR after chunk data.
    DataCr,
    /// Expecting LF after chunk data.
    DataLf,
    /// Reading trailer lines.
    Trailer,
    /// The last chunk and the trailer section have been read.
    Done,
}

/// Decodes a chunked body one slice at a time.
///
/// Feed bytes with [`ChunkedDecoder::decode`]; decoded data is appended to
/// the output. The decoder stops at the end of the chunked body, so the
/// bytes after it (a pipelined request) are left unconsumed.
///
/// ```
/// use cred_broker::{ChunkedDecoder, Limits};
/// let mut dec = ChunkedDecoder::new(Limits::default());
/// let mut out = Vec::new();
/// let input = b"5\r\nhello\r\n0\r\n\r\nGET";
/// let used = dec.decode(input, &mut out).unwrap();
/// assert!(dec.is_done());
/// assert_eq!((out.as_slice(), used), (&b"hello"[..], input.len() - 3));
/// assert!(dec.decode(b"1\r\n", &mut out).unwrap() == 0);
/// ```
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    limits: Limits,
    state: State,
    line: Vec<u8>,
    line_offset: usize,
    consumed: usize,
    body_len: u64,
    trailers: Vec<HeaderField>,
    failed: Option<Error>,
}

impl ChunkedDecoder {
    /// A decoder for one body, bounded by `limits`.
    pub fn new(limits: Limits) -> ChunkedDecoder {
        ChunkedDecoder {
            limits,
            state: State::Size,
            line: Vec::new(),
            line_offset: 0,
            consumed: 0,
            body_len: 0,
            trailers: Vec::new(),
            failed: None,
        }
    }

    /// Whether the whole chunked body (trailers included) has been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The trailer fields read so far.
    pub fn trailers(&self) -> &[HeaderField] {
        &self.trailers
    }

    /// Takes the trailer fields out of the decoder.
    pub fn take_trailers(&mut self) -> Vec<HeaderField> {
        std::mem::take(&mut self.trailers)
    }

    /// Decodes from `input`, appending data to `out`; returns how many bytes
    /// of `input` belong to the chunked body. Once done, consumes nothing.
    /// After an error the decoder keeps returning that error.
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.decode_inner(input, out)
            .inspect_err(|e| self.failed = Some(e.clone()))
    }

    fn decode_inner(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, Error> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Done => break,
                State::Data { remaining } => {
                    let avail = input.len() - i;
                    let take = usize::try_from(remaining).map_or(avail, |r| r.min(avail));
                    out.extend_from_slice(&input[i..i + take]);
                    i += take;
                    self.consumed += take;
                    let left = remaining - take as u64;
                    self.state = if left == 0 {
                        State::DataCr
                    } else {
                        State::Data { remaining: left }
                    };
                }
                State::DataCr | State::DataLf => {
                    let want = if self.state == State::DataCr {
                        b'\r'
                    } else {
                        b'\n'
                    };
                    if input[i] != want {
                        return Err(HttpErrorKind::BadChunkTerminator {
                            offset: self.consumed,
                        }
                        .into());
                    }
                    self.state = if want == b'\r' {
                        State::DataLf
                    } else {
                        State::Size
                    };
                    i += 1;
                    self.consumed += 1;
                }
                State::Size | State::Trailer => {
                    let b = input[i];
                    i += 1;
                    self.consumed += 1;
                    if let Some(line) = self.push_line_byte(b)? {
                        if self.state == State::Size {
                            self.size_line(&line)?;
                        } else {
                            self.trailer_line(&line)?;
                        }
                    }
                }
            }
        }
        Ok(i)
    }

    /// Adds one byte to the current line; returns the line at its CR LF.
    fn push_line_byte(&mut self, b: u8) -> Result<Option<Vec<u8>>, Error> {
        let offset = self.consumed - 1;
        if self.line.is_empty() {
            self.line_offset = offset;
        }
        if self.line.last() == Some(&b'\r') && b != b'\n' {
            return Err(HttpErrorKind::BareCr { offset: offset - 1 }.into());
        }
        if b == b'\n' {
            if self.line.last() != Some(&b'\r') {
                return Err(HttpErrorKind::BareLf { offset }.into());
            }
            self.line.pop();
            return Ok(Some(std::mem::take(&mut self.line)));
        }
        // The line holds no CR here (a CR not followed by LF failed above).
        if b != b'\r' && self.line.len() >= self.limits.max_line() {
            return Err(HttpErrorKind::LineTooLong {
                offset: self.line_offset,
                limit: self.limits.max_line(),
            }
            .into());
        }
        self.line.push(b);
        Ok(None)
    }

    fn size_line(&mut self, line: &[u8]) -> Result<(), Error> {
        let offset = self.line_offset;
        let (digits, ext) = match line.iter().position(|&b| b == b';') {
            Some(p) => (&line[..p], Some(&line[p + 1..])),
            None => (line, None),
        };
        let bad_size = || {
            Error::from(HttpErrorKind::InvalidChunkSize {
                offset,
                value: truncate_bytes(digits),
            })
        };
        if digits.is_empty()
            || digits.len() > MAX_CHUNK_SIZE_DIGITS
            || !digits.iter().all(u8::is_ascii_hexdigit)
        {
            return Err(bad_size());
        }
        let size = std::str::from_utf8(digits)
            .ok()
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(bad_size)?;
        if let Some(ext) = ext {
            check_extensions(ext, offset)?;
        }
        if size == 0 {
            self.state = State::Trailer;
            return Ok(());
        }
        let total = self.body_len.saturating_add(size);
        if total > self.limits.max_body {
            return Err(HttpErrorKind::BodyTooLarge {
                limit: self.limits.max_body,
            }
            .into());
        }
        self.body_len = total;
        self.state = State::Data { remaining: size };
        Ok(())
    }

    fn trailer_line(&mut self, line: &[u8]) -> Result<(), Error> {
        if line.is_empty() {
            self.state = State::Done;
            return Ok(());
        }
        let field =
            HeaderField::parse_line(line, self.line_offset).map_err(HttpErrorKind::Trailer)?;
        if FORBIDDEN_TRAILERS.iter().any(|n| field.is(n)) {
            return Err(HttpErrorKind::ForbiddenTrailer {
                name: field.name().to_owned(),
            }
            .into());
        }
        if self.trailers.len() >= self.limits.max_headers() {
            return Err(HttpErrorKind::TooManyHeaders {
                limit: self.limits.max_headers(),
            }
            .into());
        }
        self.trailers.push(field);
        Ok(())
    }
}

/// Chunk extensions: `name` or `name=value`, tokens only, no whitespace,
/// separated by `;`.
fn check_extensions(ext: &[u8], offset: usize) -> Result<(), Error> {
    for part in ext.split(|&b| b == b';') {
        let ok = match part.iter().position(|&b| b == b'=') {
            Some(eq) => is_token(&part[..eq]) && is_token(&part[eq + 1..]),
            None => is_token(part),
        };
        if !ok {
            return Err(HttpErrorKind::InvalidChunkExtension { offset }.into());
        }
    }
    Ok(())
}
