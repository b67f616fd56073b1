//! GET requests: `?query=...&operationName=...` in the URL query string.

use crate::classifier::Classifier;
use crate::error::{Error, ErrorKind, echo};
use crate::operation::{Classification, OperationKind};

/// Decodes one `application/x-www-form-urlencoded` component that starts at
/// byte `base` of the query string.
fn decode(part: &str, base: usize, whole: &str) -> Result<String, Error> {
    let b = part.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' => {
                let hex = |k: usize| b.get(k).and_then(|&c| char::from(c).to_digit(16));
                match (hex(i + 1), hex(i + 2)) {
                    (Some(h), Some(l)) => {
                        out.push((h * 16 + l) as u8);
                        i += 3;
                    }
                    _ => {
                        let offset = base + i;
                        let kind = ErrorKind::BadQueryString {
                            offset,
                            reason: "% needs two hex digits",
                        };
                        return Err(Error::at(kind, whole.as_bytes(), offset));
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| {
        let kind = ErrorKind::BadQueryString {
            offset: base,
            reason: "not UTF-8 once decoded",
        };
        Error::at(kind, whole.as_bytes(), base)
    })
}

impl Classifier {
    /// Classifies a GET request from its URL query string (the part after
    /// `?`, without the `?`).
    ///
    /// Only `query`, `operationName` and `variables` are accepted, each at
    /// most once; a raw `;` is refused (some servers split on it); a mutation is refused ([`ErrorKind::MutationOverGet`]),
    /// so a GET is never a write path.
    pub fn classify_get(&self, query_string: &str) -> Result<Classification, Error> {
        if query_string.len() > self.max_request_bytes {
            return Err(Error::new(ErrorKind::RequestTooLarge {
                size: query_string.len(),
                limit: self.max_request_bytes,
            }));
        }
        if let Some(offset) = query_string.find(';') {
            let kind = ErrorKind::BadQueryString {
                offset,
                reason: "a raw ';' separates parameters for some servers; encode it as %3B",
            };
            return Err(Error::at(kind, query_string.as_bytes(), offset));
        }
        let mut query = None;
        let mut operation_name = None;
        let mut variables_seen = false;
        let mut base = 0;
        for pair in query_string.split('&') {
            let start = base;
            base += pair.len() + 1;
            if pair.is_empty() {
                continue;
            }
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = decode(raw_key, start, query_string)?;
            let value_start = start + raw_key.len() + 1;
            let slot = match key.as_str() {
                "query" => &mut query,
                "operationName" => &mut operation_name,
                "variables" => {
                    if std::mem::replace(&mut variables_seen, true) {
                        let kind = ErrorKind::DuplicateKey { key, offset: start };
                        return Err(Error::at(kind, query_string.as_bytes(), start));
                    }
                    continue;
                }
                "extensions" | "documentId" | "id" => {
                    let field = match key.as_str() {
                        "extensions" => "extensions",
                        "documentId" => "documentId",
                        _ => "id",
                    };
                    let kind = ErrorKind::PersistedQuery {
                        field,
                        offset: start,
                    };
                    return Err(Error::at(kind, query_string.as_bytes(), start));
                }
                _ => {
                    let kind = ErrorKind::UnknownKey {
                        key: echo(&key),
                        offset: start,
                    };
                    return Err(Error::at(kind, query_string.as_bytes(), start));
                }
            };
            if slot.is_some() {
                let kind = ErrorKind::DuplicateKey { key, offset: start };
                return Err(Error::at(kind, query_string.as_bytes(), start));
            }
            *slot = Some(decode(raw_value, value_start, query_string)?);
        }
        let query = query.ok_or_else(|| Error::new(ErrorKind::MissingQuery))?;
        let c = self.classify_document(&query, operation_name.as_deref())?;
        if c.kind == OperationKind::Mutation {
            return Err(Error::new(ErrorKind::MutationOverGet));
        }
        Ok(c)
    }
}
