//! One header field line, and the token grammar (RFC 9110 section 5).

use crate::error::{Error, ErrorKind};
use std::fmt;

/// One header field as received: the name with its original spelling and
/// the value without surrounding whitespace.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HeaderField {
    /// The name's bytes, then the value's: one allocation per field.
    bytes: Box<[u8]>,
    /// The name's length: where the value starts in `bytes`.
    split: usize,
}

impl HeaderField {
    /// A field of `name` (already checked to be a token) and `value`.
    fn from_parts(name: &[u8], value: &[u8]) -> HeaderField {
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        HeaderField {
            bytes: bytes.into_boxed_slice(),
            split: name.len(),
        }
    }

    fn name_bytes(&self) -> &[u8] {
        self.bytes.get(..self.split).unwrap_or_default()
    }

    /// The name as the client spelled it.
    pub fn name(&self) -> &str {
        // A token is ASCII: the conversion cannot fail.
        std::str::from_utf8(self.name_bytes()).unwrap_or_default()
    }

    /// The value bytes (visible ASCII, spaces, tabs and obs-text).
    pub fn value(&self) -> &[u8] {
        self.bytes.get(self.split..).unwrap_or_default()
    }

    /// The value as text, when it is ASCII.
    pub fn value_str(&self) -> Option<&str> {
        let value = self.value();
        if value.is_ascii() {
            std::str::from_utf8(value).ok()
        } else {
            None
        }
    }

    /// Whether the name equals `name`, ignoring ASCII case.
    pub fn is(&self, name: &str) -> bool {
        self.name_bytes().eq_ignore_ascii_case(name.as_bytes())
    }

    /// Parses one field line (without its CR LF) as [`crate::HeadReader`]
    /// does, for field lines read elsewhere (the trailer section of a
    /// chunked body). `offset` is where the line starts, for errors.
    ///
    /// ```
    /// use net_vocab::{ErrorKind, HeaderField};
    /// let f = HeaderField::parse_line(b"X-Sum:  12 ", 0).unwrap();
    /// assert_eq!((f.name(), f.value()), ("X-Sum", &b"12"[..]));
    /// let e = HeaderField::parse_line(b" folded", 40).unwrap_err();
    /// assert_eq!(e.kind(), &ErrorKind::ObsFold { offset: 40 });
    /// ```
    pub fn parse_line(line: &[u8], offset: usize) -> Result<HeaderField, Error> {
        parse_field_line(line, offset)
    }
}

/// Header values may carry credentials, so `Debug` shows the value only for
/// headers that never do.
impl fmt::Debug for HeaderField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("HeaderField");
        s.field("name", &self.name());
        if is_sensitive(self.name()) {
            s.field("value", &"<redacted>");
        } else {
            s.field("value", &String::from_utf8_lossy(self.value()));
        }
        s.finish()
    }
}

/// Headers whose values are never shown in `Debug` output.
fn is_sensitive(name: &str) -> bool {
    [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// `tchar` of RFC 9110 section 5.6.2.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether `s` is a token (RFC 9110 section 5.6.2): one or more `tchar`,
/// the grammar of methods and field names.
///
/// ```
/// assert!(net_vocab::is_token(b"X-Api-Key"));
/// assert!(!net_vocab::is_token(b"a b") && !net_vocab::is_token(b""));
/// ```
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// Parses one field line (without its CR LF); `offset` is where the line
/// starts, for error messages.
pub(crate) fn parse_field_line(line: &[u8], offset: usize) -> Result<HeaderField, Error> {
    match line.first() {
        Some(b' ' | b'\t') => return Err(ErrorKind::ObsFold { offset }.into()),
        Some(b':') => return Err(ErrorKind::EmptyHeaderName { offset }.into()),
        _ => {}
    }
    let mut colon = None;
    for (i, &b) in line.iter().enumerate() {
        match b {
            b':' => {
                colon = Some(i);
                break;
            }
            b' ' | b'\t' => {
                return Err(ErrorKind::WhitespaceBeforeColon { offset: offset + i }.into());
            }
            b if !is_tchar(b) => {
                return Err(ErrorKind::InvalidHeaderName {
                    offset: offset + i,
                    byte: b,
                }
                .into());
            }
            _ => {}
        }
    }
    let Some(colon) = colon else {
        return Err(ErrorKind::MissingColon { offset }.into());
    };
    let raw = &line[colon + 1..];
    for (i, &b) in raw.iter().enumerate() {
        let ok = b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80;
        if !ok {
            return Err(ErrorKind::InvalidHeaderValue {
                offset: offset + colon + 1 + i,
                byte: b,
            }
            .into());
        }
    }
    Ok(HeaderField::from_parts(&line[..colon], trim_ows(raw)))
}

/// Bytes already checked to be ASCII (tchars, visible characters) as a
/// `String`; the conversion cannot fail for them.
pub(crate) fn ascii_string(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap_or_default()
}

/// Strips optional whitespace (spaces and tabs) at both ends.
fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}
