//! An answer the broker sends itself: a refusal, or what a classifier
//! answers in place of the upstream.

/// A whole response the broker writes to the client itself: a status, a
/// `Content-Type`, any further fields, and a body framed by a
/// `Content-Length` of its own.
///
/// ```
/// use cred_broker::Answer;
/// let a = Answer::new(403, "application/json", r#"{"errors":[]}"#);
/// assert_eq!((a.status(), a.content_type()), (403, "application/json"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    status: u16,
    content_type: String,
    fields: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    /// An answer with this status, content type and body.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            status,
            content_type: content_type.to_owned(),
            fields: Vec::new(),
            body: body.into(),
        }
    }

    /// Adds a field, written after `Content-Type` in the order added.
    /// Framing and connection fields are the broker's own: give none.
    pub fn field(mut self, name: &str, value: &str) -> Answer {
        self.fields.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The `Content-Type`.
    pub fn content_type(&self) -> &str {
        &self.content_type
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The wire form: status line, `Content-Type`, the other fields,
    /// `Content-Length`, `Connection: close` when `close`, the body.
    pub(crate) fn to_bytes(&self, close: bool) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            502 => "Bad Gateway",
            _ => "Internal Server Error",
        };
        let mut out = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\n",
            self.status, self.content_type
        );
        for (name, value) in &self.fields {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        if close {
            out.push_str("Connection: close\r\n");
        }
        out.push_str("\r\n");
        let mut out = out.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form() {
        let a = Answer::new(
            200,
            "application/x-git-receive-pack-result",
            b"0000".to_vec(),
        )
        .field("Cache-Control", "no-cache");
        assert_eq!(
            a.to_bytes(true),
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-receive-pack-result\r\nCache-Control: no-cache\r\nContent-Length: 4\r\nConnection: close\r\n\r\n0000"
        );
        let a = Answer::new(403, "text/plain; charset=utf-8", "cred-broker: no\n");
        assert_eq!(
            a.to_bytes(false),
            b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 16\r\n\r\ncred-broker: no\n"
        );
    }
}
