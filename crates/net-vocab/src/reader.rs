//! Reading a request head: line endings, line length, field count and
//! head size are checked byte by byte as bytes arrive; the structure and
//! the framing once the head is complete.

use crate::error::{Error, ErrorKind, truncate_bytes};
use crate::field::{HeaderField, ascii_string, is_tchar, parse_field_line};
use crate::head::{BodyFraming, HeadLimits, HostField, RequestHead, Version};
use crate::target::split_authority;
use std::borrow::Cow;

/// Reads one request head from a buffer that grows as bytes arrive.
///
/// Each byte is looked at once: a bare CR or LF, a line over
/// [`HeadLimits::max_line`], more than [`HeadLimits::max_headers`] fields
/// or a head over [`HeadLimits::max_head`] is refused as soon as it is
/// seen, without waiting for the end of the head.
///
/// ```
/// use net_vocab::{BodyFraming, HeadLimits, HeadReader};
/// let mut reader = HeadReader::new(HeadLimits::default());
/// let mut buf = b"POST /upload HTTP/1.1\r\nHost: example.com\r\n".to_vec();
/// assert!(reader.read(&buf).unwrap().is_none()); // not complete yet
/// buf.extend_from_slice(b"Content-Length: 5\r\n\r\nhello");
/// let (head, len) = reader.read(&buf).unwrap().unwrap();
/// assert_eq!((head.method(), head.host()), ("POST", Some("example.com")));
/// assert_eq!(head.framing(), BodyFraming::Length(5));
/// assert_eq!(&buf[len..], b"hello");
///
/// // Two lengths, even equal ones, are refused.
/// let twice = b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n";
/// assert!(HeadReader::new(HeadLimits::default()).read(twice).is_err());
/// ```
#[derive(Debug, Clone)]
pub struct HeadReader {
    limits: HeadLimits,
    pos: usize,
    line_start: usize,
    lines: usize,
}

impl HeadReader {
    /// A reader for one head.
    pub fn new(limits: HeadLimits) -> HeadReader {
        HeadReader {
            limits,
            pos: 0,
            line_start: 0,
            lines: 0,
        }
    }

    /// The limits this reader enforces.
    pub fn limits(&self) -> HeadLimits {
        self.limits
    }

    /// Continues reading `buf` (the same buffer each time, grown; bytes
    /// already seen are not looked at again). `Ok(None)` until the empty
    /// line that ends the head has arrived; then the checked head and its
    /// length (the bytes after it are the body or, for `CONNECT`, the
    /// tunnel).
    pub fn read(&mut self, buf: &[u8]) -> Result<Option<(RequestHead, usize)>, Error> {
        match self.scan(buf)? {
            // The lines counted are the request line and the fields.
            Some(end) => Ok(Some((
                parse_head(&buf[..end], self.lines.saturating_sub(1))?,
                end,
            ))),
            None => Ok(None),
        }
    }

    /// The length of the head once complete.
    fn scan(&mut self, buf: &[u8]) -> Result<Option<usize>, Error> {
        let limits = self.limits;
        while self.pos < buf.len() {
            let i = self.pos;
            let b = buf[i];
            if b != b'\r' && b != b'\n' && (i == 0 || buf[i - 1] != b'\r') {
                // A run of ordinary bytes at once: within it only the head
                // and line limits can be crossed, first at `first_over`.
                let run = memchr::memchr2(b'\r', b'\n', &buf[i..]).map_or(buf.len(), |n| i + n);
                let line_over = self.line_start.saturating_add(limits.max_line());
                let first_over = limits.max_head().min(line_over).max(i);
                if first_over < run {
                    return Err(if first_over >= limits.max_head() {
                        ErrorKind::HeadTooLarge {
                            limit: limits.max_head(),
                        }
                    } else {
                        ErrorKind::LineTooLong {
                            offset: self.line_start,
                            limit: limits.max_line(),
                        }
                    }
                    .into());
                }
                self.pos = run;
                continue;
            }
            if i > 0 && buf[i - 1] == b'\r' && b != b'\n' {
                return Err(ErrorKind::BareCr { offset: i - 1 }.into());
            }
            if i >= limits.max_head() {
                return Err(ErrorKind::HeadTooLarge {
                    limit: limits.max_head(),
                }
                .into());
            }
            self.pos += 1;
            // Here `b` is a CR or an LF: ordinary bytes went by in runs
            // above, and one right after a CR was refused.
            if b == b'\n' {
                if i == 0 || buf[i - 1] != b'\r' {
                    return Err(ErrorKind::BareLf { offset: i }.into());
                }
                if i - 1 == self.line_start {
                    if self.line_start == 0 {
                        return Err(ErrorKind::LeadingEmptyLine.into());
                    }
                    // Stay at the end: a later call gives the same head.
                    self.pos = i;
                    return Ok(Some(i + 1));
                }
                self.lines += 1;
                // The request line plus `max_headers` field lines.
                if self.lines > limits.max_headers() + 1 {
                    return Err(ErrorKind::TooManyHeaders {
                        limit: limits.max_headers(),
                    }
                    .into());
                }
                self.line_start = i + 1;
            }
        }
        Ok(None)
    }
}

/// Splits a complete head (ending in an empty line, line endings already
/// checked) into lines with their offsets.
fn lines(head: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let rest = head.get(start..)?;
        // The scanner saw every LF preceded by a CR.
        let lf = memchr::memchr(b'\n', rest)?;
        let line = (start, rest.get(..lf.checked_sub(1)?)?);
        start += lf + 1;
        Some(line)
    })
}

/// Parses and checks a complete head whose bytes the scanner passed;
/// `fields` is the number of field lines it counted.
fn parse_head(head: &[u8], fields: usize) -> Result<RequestHead, Error> {
    let mut it = lines(head);
    let (method, target, version) = match it.next() {
        Some((_, line)) => parse_request_line(line)?,
        None => return Err(ErrorKind::LeadingEmptyLine.into()),
    };
    let mut headers = Vec::with_capacity(fields);
    for (offset, line) in it {
        if line.is_empty() {
            break;
        }
        headers.push(parse_field_line(line, offset)?);
    }
    let host = single_host(&headers)?;
    let framing = framing(&method, version, &headers)?;
    Ok(RequestHead {
        method,
        target,
        version,
        headers,
        host,
        framing,
    })
}

/// The methods of RFC 9110 (and `PATCH`), held without an allocation.
const KNOWN_METHODS: [&str; 9] = [
    "CONNECT", "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH",
];

fn method_name(method: &[u8]) -> Cow<'static, str> {
    match KNOWN_METHODS.iter().find(|m| m.as_bytes() == method) {
        Some(m) => Cow::Borrowed(m),
        None => Cow::Owned(ascii_string(method)),
    }
}

fn parse_request_line(line: &[u8]) -> Result<(Cow<'static, str>, String, Version), Error> {
    let bad = |offset, reason| Err(ErrorKind::InvalidRequestLine { offset, reason }.into());
    const SHAPE: &str = "expected exactly `METHOD target HTTP/1.1` with single spaces";
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return bad(0, SHAPE);
    };
    if method.is_empty() || target.is_empty() || version.is_empty() {
        return bad(0, SHAPE);
    }
    if let Some(i) = method.iter().position(|&b| !is_tchar(b)) {
        return bad(i, "the method has a byte outside the token characters");
    }
    if let Some(i) = target.iter().position(|&b| !(0x21..0x7f).contains(&b)) {
        return bad(
            method.len() + 1 + i,
            "the target has a byte outside visible ASCII",
        );
    }
    let version = match version {
        b"HTTP/1.1" => Version::Http11,
        b"HTTP/1.0" => Version::Http10,
        [b'H', b'T', b'T', b'P', b'/', a, b'.', b] if a.is_ascii_digit() && b.is_ascii_digit() => {
            return Err(ErrorKind::UnsupportedVersion {
                version: truncate_bytes(version),
            }
            .into());
        }
        _ => {
            return bad(
                method.len() + target.len() + 2,
                "the version is not HTTP/1.1 or HTTP/1.0",
            );
        }
    };
    Ok((method_name(method), ascii_string(target), version))
}

/// At most one `Host` field, and its value a host with an optional port:
/// the field's index and that reading.
fn single_host(headers: &[HeaderField]) -> Result<Option<HostField>, Error> {
    let mut hosts = headers.iter().enumerate().filter(|(_, h)| h.is("host"));
    let Some((index, field)) = hosts.next() else {
        return Ok(None);
    };
    if hosts.next().is_some() {
        return Err(ErrorKind::RepeatedHost.into());
    }
    match field.value_str().map(split_authority) {
        Some(Ok((host, port))) => Ok(Some(HostField { index, host, port })),
        _ => Err(ErrorKind::InvalidHostHeader {
            value: truncate_bytes(field.value()),
        }
        .into()),
    }
}

fn framing(method: &str, version: Version, headers: &[HeaderField]) -> Result<BodyFraming, Error> {
    let te: Vec<&HeaderField> = headers
        .iter()
        .filter(|h| h.is("transfer-encoding"))
        .collect();
    let cl: Vec<&HeaderField> = headers.iter().filter(|h| h.is("content-length")).collect();
    if !te.is_empty() && version == Version::Http10 {
        return Err(ErrorKind::TransferEncodingInHttp10.into());
    }
    if !te.is_empty() && !cl.is_empty() {
        return Err(ErrorKind::LengthAndChunked.into());
    }
    if te.len() > 1 {
        return Err(ErrorKind::RepeatedTransferEncoding.into());
    }
    if cl.len() > 1 {
        return Err(ErrorKind::RepeatedContentLength.into());
    }
    if method == "CONNECT" && (!te.is_empty() || !cl.is_empty()) {
        return Err(ErrorKind::BodyOnConnect.into());
    }
    if let Some(te) = te.first() {
        if !te.value().eq_ignore_ascii_case(b"chunked") {
            return Err(ErrorKind::UnsupportedTransferEncoding {
                value: truncate_bytes(te.value()),
            }
            .into());
        }
        return Ok(BodyFraming::Chunked);
    }
    if let Some(cl) = cl.first() {
        let v = cl.value();
        let parsed = if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
            None
        } else {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
        };
        return match parsed {
            Some(n) => Ok(BodyFraming::Length(n)),
            None => Err(ErrorKind::InvalidContentLength {
                value: truncate_bytes(v),
            }
            .into()),
        };
    }
    Ok(BodyFraming::None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn methods_and_the_host_are_kept_as_sent() {
        for method in [
            "CONNECT", "GET", "PATCH", "PROPFIND", "get", "Connect", "M-SEARCH",
        ] {
            let head = format!("{method} / HTTP/1.1\r\nX-A: 1\r\nHost: a.example:81\r\n\r\n");
            let (h, _) = HeadReader::new(HeadLimits::default())
                .read(head.as_bytes())
                .unwrap()
                .unwrap();
            assert_eq!(h.method(), method);
            assert_eq!(h.host(), Some("a.example:81"));
            assert_eq!(h.headers().len(), 2);
        }
        // "get" is not GET: methods are case-sensitive, and no framing
        // rule of CONNECT applies to "Connect".
        let (h, _) = HeadReader::new(HeadLimits::default())
            .read(b"Connect / HTTP/1.1\r\nContent-Length: 2\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(h.framing(), BodyFraming::Length(2));
        assert_eq!(h.host(), None);
    }

    /// The scanner as it was, one byte per step: the reference the run
    /// skipping above must agree with.
    fn scan_bytewise(limits: HeadLimits, buf: &[u8]) -> Result<Option<usize>, Error> {
        let (mut line_start, mut lines) = (0, 0);
        for (i, &b) in buf.iter().enumerate() {
            if i > 0 && buf[i - 1] == b'\r' && b != b'\n' {
                return Err(ErrorKind::BareCr { offset: i - 1 }.into());
            }
            if i >= limits.max_head() {
                let limit = limits.max_head();
                return Err(ErrorKind::HeadTooLarge { limit }.into());
            }
            match b {
                b'\n' => {
                    if i == 0 || buf[i - 1] != b'\r' {
                        return Err(ErrorKind::BareLf { offset: i }.into());
                    }
                    if i - 1 == line_start {
                        if line_start == 0 {
                            return Err(ErrorKind::LeadingEmptyLine.into());
                        }
                        return Ok(Some(i + 1));
                    }
                    lines += 1;
                    if lines > limits.max_headers() + 1 {
                        let limit = limits.max_headers();
                        return Err(ErrorKind::TooManyHeaders { limit }.into());
                    }
                    line_start = i + 1;
                }
                b'\r' => {}
                _ if i - line_start >= limits.max_line() => {
                    let (offset, limit) = (line_start, limits.max_line());
                    return Err(ErrorKind::LineTooLong { offset, limit }.into());
                }
                _ => {}
            }
        }
        Ok(None)
    }

    fn head_like() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\n".to_vec()),
            proptest::collection::vec(b'a'..=b'z', 0..40),
        ];
        proptest::collection::vec(piece, 0..16).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Fed in any chunks, the scanner gives what the byte-at-a-time
        /// reference gives for the whole buffer, errors and offsets alike.
        #[test]
        fn skipping_runs_agrees_with_the_bytewise_scan(
            bytes in head_like(),
            cuts in proptest::collection::vec(0usize..400, 0..4),
            max_line in 16usize..40,
            extra_head in 0usize..80,
            max_headers in 1usize..6,
        ) {
            let limits = HeadLimits::new(max_line + extra_head, max_line, max_headers);
            prop_assert!(limits.is_ok());
            let Ok(limits) = limits else { return Ok(()) };
            let want = scan_bytewise(limits, &bytes);
            let mut reader = HeadReader::new(limits);
            let mut ends: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            ends.sort_unstable();
            ends.push(bytes.len());
            let mut got = Ok(None);
            for end in ends {
                got = reader.scan(&bytes[..end]);
                if !matches!(got, Ok(None)) {
                    break;
                }
            }
            prop_assert_eq!(got, want);
        }
    }
}
