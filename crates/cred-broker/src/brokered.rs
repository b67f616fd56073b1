//! What the broker tells of each request it forwarded, once the
//! upstream's response to it has been relayed
//! ([`crate::Broker::subscribe_requests`]): enough for an audit trail,
//! never a secret.

/// One request the broker forwarded upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BrokeredRequest {
    /// The `CONNECT` target, `host:port`.
    pub target: String,
    /// The request's method.
    pub method: String,
    /// Its path, without the query (a query may carry a token).
    pub path: String,
    /// The rule that allowed it, when a named rule did.
    pub rule: Option<String>,
    /// Whether the real credential was added to it (its value is never
    /// here): every forwarded request has a credential's grant.
    pub credential_injected: bool,
    /// The upstream's response status, as relayed.
    pub status: u16,
}

/// The longest method and path kept.
const MAX_FIELD: usize = 512;

impl BrokeredRequest {
    pub(crate) fn new(
        target: String,
        method: &str,
        path: &str,
        rule: Option<&str>,
        status: u16,
    ) -> BrokeredRequest {
        let path = path_only(path);
        BrokeredRequest {
            target,
            method: cut(method),
            path: cut(path),
            rule: rule.map(cut),
            credential_injected: true,
            status,
        }
    }
}

/// `path` without its query and fragment (a query may carry a token).
pub(crate) fn path_only(path: &str) -> &str {
    path.split(['?', '#']).next().unwrap_or_default()
}

/// `s` cut to [`MAX_FIELD`] bytes at a character boundary.
fn cut(s: &str) -> String {
    let mut end = s.len().min(MAX_FIELD);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_and_fragment_are_left_out_and_fields_are_bounded() {
        let r = BrokeredRequest::new(
            "api.example.com:443".into(),
            "GET",
            "/v1/x?access_token=ghp_secret#frag",
            Some("read"),
            200,
        );
        assert_eq!(r.path, "/v1/x");
        assert_eq!(r.rule.as_deref(), Some("read"));
        let long = "é".repeat(400);
        let r = BrokeredRequest::new("h:1".into(), &long, &long, None, 404);
        assert!(r.method.len() <= MAX_FIELD && r.path.len() <= MAX_FIELD);
    }
}
