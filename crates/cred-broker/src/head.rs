//! A request head as the broker takes it: net-vocab's checked head (the
//! request line, the fields, at most one valid `Host`, the body framing),
//! and on top what the broker requires: a target in a form its method
//! allows, a `Host`, and an absolute URI's authority that names it.

use crate::error::{Error, HttpErrorKind, truncate};
use net_vocab::{BodyFraming, HeaderField, Target, Version};

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
    head: net_vocab::RequestHead,
    form: TargetForm,
}

impl RequestHead {
    /// The broker's checks on a head net-vocab's reader accepted: the
    /// target's form, a `Host` (required, in HTTP/1.0 too: the broker
    /// routes by it) and, for an absolute URI, its authority spelled as
    /// `Host` is (ASCII case ignored).
    pub(crate) fn check(head: net_vocab::RequestHead) -> Result<RequestHead, Error> {
        let form = target_form(head.method(), head.target())?;
        let Some(host) = head.host() else {
            return Err(HttpErrorKind::MissingHost.into());
        };
        if form == TargetForm::Absolute {
            let authority = absolute_authority(head.target())?;
            if !authority.eq_ignore_ascii_case(host) {
                return Err(HttpErrorKind::HostMismatch {
                    target_host: truncate(authority),
                    host: truncate(host),
                }
                .into());
            }
        }
        Ok(RequestHead { head, form })
    }

    /// The method, exactly as sent (methods are case-sensitive).
    pub fn method(&self) -> &str {
        self.head.method()
    }

    /// The request target, exactly as sent.
    pub fn target(&self) -> &str {
        self.head.target()
    }

    /// The form of the request target.
    pub fn target_form(&self) -> TargetForm {
        self.form
    }

    /// The HTTP version.
    pub fn version(&self) -> Version {
        self.head.version()
    }

    /// Every header line, in order.
    pub fn headers(&self) -> &[HeaderField] {
        self.head.headers()
    }

    /// The value of the first header called `name` (ASCII case ignored).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.head.header(name)
    }

    /// The single `Host` header's value (checked: a host with an optional
    /// port).
    pub fn host(&self) -> &str {
        // `check` made sure there is one.
        self.head.host().unwrap_or_default()
    }

    /// The body framing the head declares.
    pub fn framing(&self) -> BodyFraming {
        self.head.framing()
    }

    /// The path of the target: for origin and absolute form the part
    /// before `?` (`/` when an absolute URI has none); empty for the
    /// authority and asterisk forms.
    pub fn path(&self) -> &str {
        let target = self.target();
        let rest = match self.form {
            TargetForm::Origin => target,
            TargetForm::Absolute => {
                let after_scheme = target.split_once("://").map_or("", |(_, rest)| rest);
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
                self.target().split_once('?').map(|(_, q)| q)
            }
            TargetForm::Authority | TargetForm::Asterisk => None,
        }
    }
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
        if Target::parse_authority(target).is_err() {
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

/// The authority of an absolute-form target, checked as a `Host` value is:
/// a host in the wire grammar with an optional port.
fn absolute_authority(target: &str) -> Result<&str, Error> {
    let rest = target.split_once("://").map_or("", |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let authority = &rest[..end];
    // The default port only stands in for a missing one.
    if Target::parse_authority_or(authority, 1).is_err() {
        return Err(HttpErrorKind::InvalidTarget {
            target: truncate(target),
            reason: "the URI's authority is not a host with an optional port (userinfo is refused)",
        }
        .into());
    }
    Ok(authority)
}
