//! A parsed, checked request head.

use crate::field::HeaderField;
use std::fmt;

/// The HTTP version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Version {
    /// `HTTP/1.0`.
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

impl Version {
    /// The version as it appears on the request line.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the request's body is delimited on the wire, as the head declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BodyFraming {
    /// No `Content-Length` and no `Transfer-Encoding`: no body.
    None,
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// The form of the request target (RFC 9112 section 3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TargetForm {
    /// `/path?query`.
    Origin,
    /// `http://host/path?query`.
    Absolute,
    /// `host:port`, for `CONNECT` only.
    Authority,
    /// `*`, for `OPTIONS` only.
    Asterisk,
}

/// A request head that passed every check of the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) form: TargetForm,
    pub(crate) version: Version,
    pub(crate) headers: Vec<HeaderField>,
    pub(crate) host: String,
    pub(crate) framing: BodyFraming,
}

impl RequestHead {
    /// The method, exactly as sent (methods are case-sensitive).
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The request target, exactly as sent.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The form of the request target.
    pub fn target_form(&self) -> TargetForm {
        self.form
    }

    /// The HTTP version.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Every header line, in order.
    pub fn headers(&self) -> &[HeaderField] {
        &self.headers
    }

    /// The value of the first header called `name` (ASCII case ignored).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.is(name))
            .map(|h| h.value.as_slice())
    }

    /// The single `Host` header's value (checked: a host with an optional
    /// port).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The body framing the head declares.
    pub fn framing(&self) -> BodyFraming {
        self.framing
    }

    /// The path of the target: for origin and absolute form the part
    /// before `?` (`/` when an absolute URI has none); empty for the
    /// authority and asterisk forms.
    pub fn path(&self) -> &str {
        let rest = match self.form {
            TargetForm::Origin => self.target.as_str(),
            TargetForm::Absolute => {
                let after_scheme = self.target.split_once("://").map_or("", |(_, rest)| rest);
                match after_scheme.find(['/', '?']) {
                    Some(i) => &after_scheme[i..],
                    None => "",
                }
            }
            TargetForm::Authority | TargetForm::Asterisk => return "",
        };
        let path = rest.split_once('?').map_or(rest, |(p, _)| p);
        if path.is_empty() && self.form == TargetForm::Absolute {
            "/"
        } else {
            path
        }
    }

    /// The query of the target (after `?`), if any.
    pub fn query(&self) -> Option<&str> {
        match self.form {
            TargetForm::Origin | TargetForm::Absolute => {
                self.target.split_once('?').map(|(_, q)| q)
            }
            TargetForm::Authority | TargetForm::Asterisk => None,
        }
    }
}
