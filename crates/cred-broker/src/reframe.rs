//! Writing a request for the upstream with framing of our own: the client's
//! `Content-Length`, `Transfer-Encoding` and hop-by-hop fields never pass.

use crate::head::RequestHead;
use crate::parser::Request;
use net_vocab::{BodyFraming, HeaderField};

/// Fields that describe one hop (or the client's framing) and are never
/// forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

impl RequestHead {
    /// The fields forwarded upstream, in order: everything except the
    /// hop-by-hop and framing fields and the fields the client's
    /// `Connection` header names (`Host` always stays).
    pub fn forwarded_fields(&self) -> impl Iterator<Item = &HeaderField> {
        let named: Vec<String> = self
            .headers()
            .iter()
            .filter(|h| h.is("connection"))
            .flat_map(|h| {
                String::from_utf8_lossy(h.value())
                    .split(',')
                    .map(|t| t.trim().to_ascii_lowercase())
                    .collect::<Vec<_>>()
            })
            .filter(|t| !t.is_empty() && t != "host")
            .collect();
        self.headers()
            .iter()
            .filter(move |h| !HOP_BY_HOP.iter().any(|n| h.is(n)) && !named.iter().any(|n| h.is(n)))
    }
}

impl Request {
    /// The request as the upstream gets it: the same request line, the
    /// forwarded fields, and a `Content-Length` of our own when the client
    /// framed a body (or when there is one), followed by the decoded body.
    /// No credential is added here; see [`crate::upstream_head`].
    pub fn reframe(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.body.len());
        write_head(&self.head, self.body.len(), None, &mut out);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Writes the upstream head without its final empty line: request line,
/// forwarded fields minus those `skip` picks, our own `Content-Length`.
pub(crate) fn write_head(
    head: &RequestHead,
    body_len: usize,
    skip: Option<&dyn Fn(&HeaderField) -> bool>,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(head.method().as_bytes());
    out.push(b' ');
    out.extend_from_slice(head.target().as_bytes());
    out.push(b' ');
    out.extend_from_slice(head.version().as_str().as_bytes());
    out.extend_from_slice(b"\r\n");
    for field in head.forwarded_fields() {
        if skip.is_some_and(|s| s(field)) {
            continue;
        }
        out.extend_from_slice(field.name().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(field.value());
        out.extend_from_slice(b"\r\n");
    }
    if body_len > 0 || head.framing() != BodyFraming::None {
        out.extend_from_slice(b"Content-Length: ");
        out.extend_from_slice(body_len.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}
