//! A strict HTTP/1 request-head parser: bounded, never panics, refuses every
//! ambiguous framing.

use std::fmt;

/// The default cap on a request head, in bytes.
pub(crate) const DEFAULT_MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header fields a request head may carry.
pub const MAX_HEADERS: usize = 100;

/// A parsed request head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RequestHead {
    /// The method, as sent (case-sensitive).
    pub(crate) method: String,
    /// The request target, as sent.
    pub(crate) target: String,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub(crate) minor: u8,
    /// Header fields in order: name as sent, value without surrounding
    /// whitespace.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
}

impl RequestHead {
    /// All values of a header, by case-insensitive name.
    pub(crate) fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// Why a head was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum HeadError {
    /// Larger than the cap without a terminating blank line.
    TooLarge,
    /// More than [`MAX_HEADERS`] fields.
    TooManyHeaders,
    /// Not valid HTTP/1 syntax, or ambiguous framing.
    Malformed(&'static str),
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadError::TooLarge => f.write_str("request head too large"),
            HeadError::TooManyHeaders => f.write_str("too many header fields"),
            HeadError::Malformed(m) => f.write_str(m),
        }
    }
}

/// The end of the head (index just past the blank line), searching from
/// `from` (bytes before it were already searched).
pub(crate) fn find_head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    buf.get(start..)?
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| start + p + 4)
}

/// Parses a complete head (ending with the blank line).
pub(crate) fn parse_head(head: &[u8], max_bytes: usize) -> Result<RequestHead, HeadError> {
    if head.len() > max_bytes {
        return Err(HeadError::TooLarge);
    }
    let body = head
        .strip_suffix(b"\r\n\r\n")
        .ok_or(HeadError::Malformed("head does not end with a blank line"))?;
    let mut lines = Lines { rest: body };
    let request_line = lines.next_line()?.unwrap_or_default();
    let (method, target, minor) = parse_request_line(request_line)?;
    let mut headers = Vec::new();
    while let Some(line) = lines.next_line()? {
        if headers.len() == MAX_HEADERS {
            return Err(HeadError::TooManyHeaders);
        }
        headers.push(parse_field(line)?);
    }
    let head = RequestHead {
        method,
        target,
        minor,
        headers,
    };
    check_framing(&head)?;
    Ok(head)
}

struct Lines<'a> {
    rest: &'a [u8],
}

impl<'a> Lines<'a> {
    fn next_line(&mut self) -> Result<Option<&'a [u8]>, HeadError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let (line, rest) = match self.rest.windows(2).position(|w| w == b"\r\n") {
            Some(i) => (&self.rest[..i], &self.rest[i + 2..]),
            None => (self.rest, &[][..]),
        };
        if line.iter().any(|&b| b == b'\r' || b == b'\n') {
            return Err(HeadError::Malformed("bare CR or LF in the request head"));
        }
        self.rest = rest;
        Ok(Some(line))
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn parse_request_line(line: &[u8]) -> Result<(String, String, u8), HeadError> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed(
            "request line is not METHOD TARGET VERSION",
        ));
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(HeadError::Malformed("bad method"));
    }
    if target.is_empty() || !target.iter().all(|&b| (0x21..=0x7e).contains(&b)) {
        return Err(HeadError::Malformed("bad request target"));
    }
    let minor = match version {
        b"HTTP/1.1" => 1,
        b"HTTP/1.0" => 0,
        _ => {
            return Err(HeadError::Malformed(
                "only HTTP/1.0 and HTTP/1.1 are served",
            ));
        }
    };
    // Both were checked to be ASCII above.
    let text = |b: &[u8]| b.iter().map(|&c| c as char).collect::<String>();
    Ok((text(method), text(target), minor))
}

fn parse_field(line: &[u8]) -> Result<(String, Vec<u8>), HeadError> {
    if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
        return Err(HeadError::Malformed("obsolete line folding"));
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HeadError::Malformed("header field without ':'"))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(HeadError::Malformed("bad header field name"));
    }
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(HeadError::Malformed("control byte in a header value"));
    }
    let trim = |c: &u8| *c == b' ' || *c == b'\t';
    let start = value.iter().position(|c| !trim(c)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|c| !trim(c))
        .map_or(start, |e| e + 1);
    let name = name.iter().map(|&c| c as char).collect();
    Ok((name, value[start..end].to_vec()))
}

/// Refuses the framings that let two parties read different requests:
/// Content-Length with Transfer-Encoding, disagreeing Content-Lengths, a
/// non-numeric length, a transfer coding that does not end in `chunked`.
fn check_framing(head: &RequestHead) -> Result<(), HeadError> {
    let mut length: Option<&[u8]> = None;
    for v in head.values("content-length") {
        if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
            return Err(HeadError::Malformed("bad Content-Length"));
        }
        if length.is_some_and(|l| l != v) {
            return Err(HeadError::Malformed("conflicting Content-Length fields"));
        }
        length = Some(v);
    }
    let codings: Vec<&[u8]> = head.values("transfer-encoding").collect();
    if !codings.is_empty() {
        if length.is_some() {
            return Err(HeadError::Malformed(
                "both Content-Length and Transfer-Encoding",
            ));
        }
        if head.minor == 0 {
            return Err(HeadError::Malformed(
                "Transfer-Encoding in an HTTP/1.0 request",
            ));
        }
        let last = codings
            .iter()
            .flat_map(|v| v.split(|&b| b == b','))
            .next_back()
            .map(|c| c.trim_ascii())
            .unwrap_or_default();
        if !last.eq_ignore_ascii_case(b"chunked") {
            return Err(HeadError::Malformed(
                "transfer coding does not end in chunked",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_refuses() {
        let h = parse_head(
            b"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
            1024,
        )
        .unwrap();
        assert_eq!(h.method, "CONNECT");
        assert_eq!(h.target, "a.example:443");
        assert_eq!(h.values("host").next().unwrap(), b"a.example:443");
        for bad in [
            &b"GET / HTTP/2\r\n\r\n"[..],
            b"GET  / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nA: b\nC: d\r\n\r\n",
            b"GET / HTTP/1.1\r\n folded\r\n\r\n",
            b"GET / HTTP/1.1\r\nA : b\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        ] {
            assert!(
                parse_head(bad, 1024).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\n\r\nxy", 0), Some(18));
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\n\r\nxy", 17), Some(18));
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = find_head_end(&bytes, bytes.len() / 2);
            let _ = parse_head(&bytes, 256);
        }
    }
}
