//! Finding and parsing a request head: line endings and sizes are checked
//! byte by byte as bytes arrive; the structure once the head is complete.

use crate::error::{Error, HttpErrorKind, truncate, truncate_bytes};
use crate::field::{HeaderField, is_tchar, parse_field_line};
use crate::head::{BodyFraming, RequestHead, TargetForm, Version};
use crate::limits::Limits;

/// Scans a growing buffer for the end of the head, checking line endings,
/// line length, line count and head size on every byte exactly once.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeadScanner {
    pos: usize,
    line_start: usize,
    lines: usize,
}

impl HeadScanner {
    /// Continues scanning `buf` (which only ever grows). Returns the length
    /// of the head (through the empty line) once it is complete.
    pub(crate) fn scan(&mut self, buf: &[u8], limits: &Limits) -> Result<Option<usize>, Error> {
        while self.pos < buf.len() {
            let i = self.pos;
            let b = buf[i];
            if i > 0 && buf[i - 1] == b'\r' && b != b'\n' {
                return Err(HttpErrorKind::BareCr { offset: i - 1 }.into());
            }
            if i >= limits.max_head {
                return Err(HttpErrorKind::HeadTooLarge {
                    limit: limits.max_head,
                }
                .into());
            }
            self.pos += 1;
            match b {
                b'\n' => {
                    if i == 0 || buf[i - 1] != b'\r' {
                        return Err(HttpErrorKind::BareLf { offset: i }.into());
                    }
                    let len = i - 1 - self.line_start;
                    if len == 0 {
                        if self.line_start == 0 {
                            return Err(HttpErrorKind::LeadingEmptyLine { offset: 0 }.into());
                        }
                        return Ok(Some(i + 1));
                    }
                    self.lines += 1;
                    // The request line plus `max_headers` header lines.
                    if self.lines > limits.max_headers + 1 {
                        return Err(HttpErrorKind::TooManyHeaders {
                            limit: limits.max_headers,
                        }
                        .into());
                    }
                    self.line_start = i + 1;
                }
                b'\r' => {}
                _ => {
                    if i - self.line_start >= limits.max_line {
                        return Err(HttpErrorKind::LineTooLong {
                            offset: self.line_start,
                            limit: limits.max_line,
                        }
                        .into());
                    }
                }
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
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        let line = (start, &rest[..end]);
        start += end + 2;
        Some(line)
    })
}

/// Parses and checks a complete head.
pub(crate) fn parse_head(head: &[u8]) -> Result<RequestHead, Error> {
    let mut it = lines(head);
    let Some((_, request_line)) = it.next() else {
        return Err(HttpErrorKind::Truncated.into());
    };
    let (method, target, version) = parse_request_line(request_line)?;
    let mut headers = Vec::new();
    for (offset, line) in it {
        if line.is_empty() {
            break;
        }
        headers.push(parse_field_line(line, offset)?);
    }
    let form = target_form(&method, &target)?;
    let host = single_host(&headers)?;
    if form == TargetForm::Absolute {
        let authority = absolute_authority(&target)?;
        if !authority.eq_ignore_ascii_case(&host) {
            return Err(HttpErrorKind::HostMismatch {
                target_host: truncate(authority),
                host: truncate(&host),
            }
            .into());
        }
    }
    let framing = framing(&method, version, &headers)?;
    Ok(RequestHead {
        method,
        target,
        form,
        version,
        headers,
        host,
        framing,
    })
}

fn parse_request_line(line: &[u8]) -> Result<(String, String, Version), Error> {
    let bad = |offset, reason| Err(HttpErrorKind::InvalidRequestLine { offset, reason }.into());
    let parts: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return bad(
            0,
            "expected exactly `METHOD target HTTP/1.1` with single spaces",
        );
    }
    let (method, target, version) = (parts[0], parts[1], parts[2]);
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
            return Err(HttpErrorKind::UnsupportedVersion {
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
    // Both are checked ASCII above.
    let method = String::from_utf8_lossy(method).into_owned();
    let target = String::from_utf8_lossy(target).into_owned();
    Ok((method, target, version))
}

fn target_form(method: &str, target: &str) -> Result<TargetForm, Error> {
    let bad = |reason| {
        Err(HttpErrorKind::InvalidTarget {
            target: truncate(target),
            reason,
        }
        .into())
    };
    if target.contains('#') {
        return bad("a target carries no fragment");
    }
    if method == "CONNECT" {
        if !is_host_port(target) || !target.contains(':') {
            return bad("CONNECT needs `host:port`");
        }
        return Ok(TargetForm::Authority);
    }
    if target == "*" {
        if method != "OPTIONS" {
            return bad("`*` is only for OPTIONS");
        }
        return Ok(TargetForm::Asterisk);
    }
    if target.starts_with('/') {
        if target.starts_with("//") {
            return bad("an origin-form target cannot start with `//`");
        }
        return Ok(TargetForm::Origin);
    }
    let lower = target.get(..8).unwrap_or(target).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        absolute_authority(target)?;
        return Ok(TargetForm::Absolute);
    }
    bad("expected `/path`, an http(s) URI, `host:port` for CONNECT or `*` for OPTIONS")
}

/// The authority of an absolute-form target, checked.
fn absolute_authority(target: &str) -> Result<&str, Error> {
    let rest = target.split_once("://").map_or("", |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if !is_host_port(authority) {
        return Err(HttpErrorKind::InvalidTarget {
            target: truncate(target),
            reason: "the URI's authority is not a host with an optional port (userinfo is refused)",
        }
        .into());
    }
    Ok(authority)
}

/// `host [":" port]` where host is a name, an IPv4 address or a bracketed
/// IPv6 address; names use letters, digits, `-`, `.` and `_` only.
pub(crate) fn is_host_port(s: &str) -> bool {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((inner, after)) = rest.split_once(']') else {
            return false;
        };
        if inner.is_empty()
            || !inner
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
        {
            return false;
        }
        match after {
            "" => return true,
            _ => match after.strip_prefix(':') {
                Some(port) => ("x", Some(port)),
                None => return false,
            },
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_');
    // Digits only (no sign), and a TCP port number.
    let port_ok = port.is_none_or(|p| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
    });
    host_ok && port_ok
}

fn single_host(headers: &[HeaderField]) -> Result<String, Error> {
    let mut hosts = headers.iter().filter(|h| h.is("host"));
    let Some(host) = hosts.next() else {
        return Err(HttpErrorKind::MissingHost.into());
    };
    if hosts.next().is_some() {
        return Err(HttpErrorKind::RepeatedHost.into());
    }
    match host.value_str() {
        Some(v) if is_host_port(v) => Ok(v.to_owned()),
        _ => Err(HttpErrorKind::InvalidHost {
            value: truncate_bytes(&host.value),
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
        return Err(HttpErrorKind::TransferEncodingInHttp10.into());
    }
    if !te.is_empty() && !cl.is_empty() {
        return Err(HttpErrorKind::LengthAndChunked.into());
    }
    if te.len() > 1 {
        return Err(HttpErrorKind::RepeatedTransferEncoding.into());
    }
    if cl.len() > 1 {
        return Err(HttpErrorKind::RepeatedContentLength.into());
    }
    if method == "CONNECT" && (!te.is_empty() || !cl.is_empty()) {
        return Err(HttpErrorKind::BodyOnConnect.into());
    }
    if let Some(te) = te.first() {
        if !te.value.eq_ignore_ascii_case(b"chunked") {
            return Err(HttpErrorKind::UnsupportedTransferEncoding {
                value: truncate_bytes(&te.value),
            }
            .into());
        }
        return Ok(BodyFraming::Chunked);
    }
    if let Some(cl) = cl.first() {
        let v = &cl.value;
        let parsed = if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
            None
        } else {
            std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
        };
        return match parsed {
            Some(n) => Ok(BodyFraming::Length(n)),
            None => Err(HttpErrorKind::InvalidContentLength {
                value: truncate_bytes(v),
            }
            .into()),
        };
    }
    Ok(BodyFraming::None)
}
