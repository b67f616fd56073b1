//! Just enough of an upstream response to know where it ends: the status,
//! the body framing, and whether the connection stays open. The head is
//! forwarded as received; the body is streamed, never buffered whole.

/// Most bytes a response head may take.
pub(crate) const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// Most bytes of one chunk-size or trailer line in a response.
const MAX_LINE: usize = 8 * 1024;

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseBody {
    /// No body (HEAD, 1xx, 204, 304).
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: ... chunked`.
    Chunked,
    /// Until the upstream closes.
    Close,
}

/// The parts of a response head the broker needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseHead {
    /// The status code.
    pub(crate) status: u16,
    /// The body framing.
    pub(crate) body: ResponseBody,
    /// Whether the upstream keeps the connection open afterwards.
    pub(crate) keep_alive: bool,
}

/// Where the head ends (just past the empty line), if it is complete.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    lf_ending_with(buf, b"\r\n\r\n").map(|lf| lf + 1)
}

/// Where the first CRLF of `buf` starts.
fn find_crlf(buf: &[u8]) -> Option<usize> {
    lf_ending_with(buf, b"\r\n").map(|lf| lf - 1)
}

/// The index of the first LF in `buf` that ends `ending` (whose last byte
/// is LF). One LF search per line: a head is a few short lines.
fn lf_ending_with(buf: &[u8], ending: &[u8]) -> Option<usize> {
    let back = ending.len().checked_sub(1)?;
    let mut from = 0;
    loop {
        let lf = from + memchr::memchr(b'\n', buf.get(from..)?)?;
        if lf >= back && buf.get(lf - back..=lf) == Some(ending) {
            return Some(lf);
        }
        from = lf + 1;
    }
}

/// The pieces of `text` between its CRLFs, as `text.split("\r\n")` gives
/// them (a lone CR or LF stays inside its piece).
fn crlf_pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let piece = rest?;
        match find_crlf(piece.as_bytes()) {
            // CR and LF are ASCII: both cuts fall on character boundaries.
            Some(i) => {
                rest = piece.get(i + 2..);
                piece.get(..i)
            }
            None => {
                rest = None;
                Some(piece)
            }
        }
    })
}

/// Reads a complete response head (through the empty line).
pub(crate) fn parse_head(head: &[u8], request_method: &str) -> Result<ResponseHead, String> {
    let text = std::str::from_utf8(head).map_err(|_| "response head is not UTF-8".to_owned())?;
    let mut lines = crlf_pieces(text);
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(format!("unsupported response version {:.32?}", version)),
    };
    let code = parts.next().unwrap_or_default();
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad response status {:.32?}", code));
    }
    let status: u16 = code.parse().map_err(|_| "bad response status".to_owned())?;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut encoded = false;
    let mut close = http10;
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err("response header line without a colon".to_owned());
        };
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            let n = value
                .parse::<u64>()
                .ok()
                .filter(|_| value.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| format!("bad response Content-Length {:.32?}", value))?;
            if length.is_some_and(|l| l != n) {
                return Err("conflicting response Content-Length".to_owned());
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            encoded = true;
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") && http10 {
                    close = false;
                }
            }
        }
    }
    let body = if request_method == "HEAD"
        || (100..200).contains(&status)
        || status == 204
        || status == 304
    {
        ResponseBody::None
    } else if chunked {
        ResponseBody::Chunked
    } else if encoded {
        ResponseBody::Close
    } else if let Some(n) = length {
        ResponseBody::Length(n)
    } else {
        ResponseBody::Close
    };
    Ok(ResponseHead {
        status,
        keep_alive: !close && body != ResponseBody::Close,
        body,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    SizeLine,
    Data(u64),
    DataEnd(usize),
    Trailer,
    Done,
}

/// Finds the end of a chunked body without decoding it (the bytes are
/// forwarded as they are).
#[derive(Debug)]
pub(crate) struct ChunkScanner {
    state: ChunkState,
    line: Vec<u8>,
}

impl ChunkScanner {
    /// At the start of a chunked body.
    pub(crate) fn new() -> ChunkScanner {
        ChunkScanner {
            state: ChunkState::SizeLine,
            line: Vec::new(),
        }
    }

    /// Whether the body ended.
    pub(crate) fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Scans `input`; returns how many of its bytes belong to the body.
    pub(crate) fn scan(&mut self, input: &[u8]) -> Result<usize, String> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                ChunkState::Done => break,
                ChunkState::Data(n) => {
                    let take =
                        usize::try_from(n).map_or(input.len() - i, |n| n.min(input.len() - i));
                    i += take;
                    let left = n - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd(0)
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::DataEnd(k) => {
                    if input[i] != b"\r\n"[k] {
                        return Err("response chunk not followed by CR LF".to_owned());
                    }
                    i += 1;
                    self.state = if k == 1 {
                        ChunkState::SizeLine
                    } else {
                        ChunkState::DataEnd(1)
                    };
                }
                ChunkState::SizeLine | ChunkState::Trailer => {
                    let b = input[i];
                    i += 1;
                    if b != b'\n' {
                        if self.line.len() >= MAX_LINE {
                            return Err("response chunk line too long".to_owned());
                        }
                        self.line.push(b);
                        continue;
                    }
                    let line = self.line.strip_suffix(b"\r").unwrap_or(&self.line);
                    self.state = if self.state == ChunkState::Trailer {
                        if line.is_empty() {
                            ChunkState::Done
                        } else {
                            ChunkState::Trailer
                        }
                    } else {
                        let size = chunk_size(line)?;
                        if size == 0 {
                            ChunkState::Trailer
                        } else {
                            ChunkState::Data(size)
                        }
                    };
                    self.line.clear();
                }
            }
        }
        Ok(i)
    }
}

fn chunk_size(line: &[u8]) -> Result<u64, String> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = digits.trim_ascii();
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err("bad response chunk size".to_owned());
    }
    let text = std::str::from_utf8(digits).map_err(|_| "bad response chunk size".to_owned())?;
    u64::from_str_radix(text, 16).map_err(|_| "bad response chunk size".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Heads made mostly of the bytes that matter here: CR, LF and a few
    /// others, so CRLF pairs, lone CRs and lone LFs all come up.
    fn crlf_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just('\r'), Just('\n'), Just('a'), Just(':'), Just('é')],
            0..40,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        /// The CRLF cutter gives exactly the pieces `str::split` gives.
        #[test]
        fn crlf_pieces_are_split_pieces(text in crlf_text()) {
            let ours: Vec<&str> = crlf_pieces(&text).collect();
            let split: Vec<&str> = text.split("\r\n").collect();
            prop_assert_eq!(ours, split);
        }

        /// The head's end is where the first CRLF CRLF ends.
        #[test]
        fn head_end_is_first_blank_line(text in crlf_text()) {
            let b = text.as_bytes();
            let oracle = b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
            prop_assert_eq!(head_end(b), oracle);
        }
    }

    #[test]
    fn framing() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "GET").unwrap();
        assert_eq!((h.body, h.keep_alive), (ResponseBody::Length(5), true));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD").unwrap();
        assert_eq!(h.body, ResponseBody::None);
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET",
        )
        .unwrap();
        assert_eq!(h.body, ResponseBody::Chunked);
        let h = parse_head(b"HTTP/1.1 200 OK\r\n\r\n", "GET").unwrap();
        assert_eq!((h.body, h.keep_alive), (ResponseBody::Close, false));
        let h = parse_head(b"HTTP/1.1 204 No\r\nConnection: close\r\n\r\n", "GET").unwrap();
        assert_eq!((h.body, h.keep_alive), (ResponseBody::None, false));
        assert!(parse_head(b"HTTP/2 200 OK\r\n\r\n", "GET").is_err());
    }

    #[derive(serde::Deserialize)]
    struct Table {
        head: Vec<HeadCase>,
        chunks: Vec<ChunkCase>,
    }

    #[derive(serde::Deserialize)]
    struct HeadCase {
        intent: String,
        head: String,
        method: Option<String>,
        expect: String,
        keep_alive: Option<bool>,
    }

    #[derive(serde::Deserialize)]
    struct ChunkCase {
        intent: String,
        body: String,
        expect: String,
    }

    #[test]
    fn response_table() {
        let table: Table = toml::from_str(include_str!("../testdata/responses.toml")).unwrap();
        for c in &table.head {
            let got = parse_head(c.head.as_bytes(), c.method.as_deref().unwrap_or("GET"));
            let shown = match &got {
                Err(_) => "error".to_owned(),
                Ok(h) => match h.body {
                    ResponseBody::None => "none".to_owned(),
                    ResponseBody::Close => "close".to_owned(),
                    ResponseBody::Chunked => "chunked".to_owned(),
                    ResponseBody::Length(n) => format!("length:{n}"),
                },
            };
            assert_eq!(shown, c.expect, "{}", c.intent);
            if let (Some(k), Ok(h)) = (c.keep_alive, &got) {
                assert_eq!(h.keep_alive, k, "{}", c.intent);
            }
        }
        for c in &table.chunks {
            let mut s = ChunkScanner::new();
            let shown = match s.scan(c.body.as_bytes()) {
                Err(_) => "error".to_owned(),
                Ok(n) => n.to_string(),
            };
            assert_eq!(shown, c.expect, "{}", c.intent);
        }
    }

    #[test]
    fn chunks_in_any_slices() {
        let body = b"5;x=y\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\nNEXT";
        let end = body.len() - 4;
        for split in 0..body.len() {
            let mut s = ChunkScanner::new();
            let a = s.scan(&body[..split]).unwrap();
            assert_eq!(a, split.min(end));
            let b = s.scan(&body[split..]).unwrap();
            assert_eq!(a + b, end);
            assert!(s.is_done());
        }
        assert!(ChunkScanner::new().scan(b"zz\r\n").is_err());
        assert!(ChunkScanner::new().scan(b"1\r\nab").is_err());
    }
}
