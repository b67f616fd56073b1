//! Host patterns for rules and credentials: exact, leading wildcard (any
//! depth, never the apex) and middle wildcard (exactly one label).

use crate::error::{Error, RulesErrorKind, truncate};
use std::fmt;

/// The longest pattern accepted, in bytes.
pub const MAX_HOST_PATTERN_LEN: usize = 253;

/// A compiled host pattern.
///
/// Forms: `api.example.com` (exactly that host), `*.example.com` (any
/// subdomain at any depth, never `example.com` itself), `a.*.example.com`
/// (exactly one label in place of the `*`). Matching ignores ASCII case, a
/// trailing dot and a port on the host.
///
/// ```
/// use cred_broker::HostPattern;
/// let p = HostPattern::parse("bedrock.*.amazonaws.com").unwrap();
/// assert!(p.matches("bedrock.us-east-1.amazonaws.com"));
/// assert!(!p.matches("bedrock.a.b.amazonaws.com"));
/// assert!(HostPattern::parse("*.example.com").unwrap().matches("a.b.example.com:443"));
/// assert!(HostPattern::parse("*.*.example.com").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    shape: Shape,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Shape {
    Exact(String),
    /// `*.suffix`, holding the suffix.
    Suffix(String),
    /// `left.*.right`.
    Middle {
        left: String,
        right: String,
    },
}

impl HostPattern {
    /// Parses and checks one pattern.
    pub fn parse(pattern: &str) -> Result<HostPattern, Error> {
        let bad = |reason| {
            Err(Error::from(RulesErrorKind::InvalidHostPattern {
                pattern: truncate(pattern),
                reason,
            }))
        };
        if pattern.len() > MAX_HOST_PATTERN_LEN {
            return bad("it is longer than 253 bytes");
        }
        if let Some(inner) = pattern.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            let ok = inner.contains(':')
                && inner
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
            return match ok {
                true => Ok(HostPattern {
                    shape: Shape::Exact(pattern.to_ascii_lowercase()),
                }),
                false => bad("brackets may only hold an IPv6 address"),
            };
        }
        let p = pattern
            .strip_suffix('.')
            .unwrap_or(pattern)
            .to_ascii_lowercase();
        let labels: Vec<&str> = p.split('.').collect();
        let mut star = None;
        for (i, label) in labels.iter().enumerate() {
            if label.is_empty() {
                return bad("it has an empty label");
            }
            if label.contains('*') {
                if *label != "*" {
                    return bad("'*' must be a whole label");
                }
                if star.is_some() {
                    return bad("it has more than one '*'");
                }
                star = Some(i);
                continue;
            }
            if label.len() > 63 {
                return bad("a label is longer than 63 bytes");
            }
            if !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return bad(
                    "use letters, digits, '-' and '_' in labels (IDNA A-labels for others)",
                );
            }
        }
        let Some(star) = star else {
            return Ok(HostPattern {
                shape: Shape::Exact(p),
            });
        };
        let right = labels[star + 1..].join(".");
        if labels.len() - star - 1 < 2 {
            return bad("give at least two labels after the '*'");
        }
        if labels
            .last()
            .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()))
        {
            return bad("'*' cannot stand for part of an IP address");
        }
        let shape = if star == 0 {
            Shape::Suffix(right)
        } else {
            Shape::Middle {
                left: labels[..star].join("."),
                right,
            }
        };
        Ok(HostPattern { shape })
    }

    /// Whether `host` (optionally with `:port`, any case, optional trailing
    /// dot) matches.
    pub fn matches(&self, host: &str) -> bool {
        let host = canonical_host(host);
        match &self.shape {
            Shape::Exact(e) => host == *e,
            Shape::Suffix(s) => host
                .strip_suffix(s.as_str())
                .and_then(|h| h.strip_suffix('.'))
                .is_some_and(|h| !h.is_empty() && !h.ends_with('.')),
            Shape::Middle { left, right } => host
                .strip_prefix(left.as_str())
                .and_then(|h| h.strip_prefix('.'))
                .and_then(|h| h.strip_suffix(right.as_str()))
                .and_then(|h| h.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
        }
    }
}

/// A host as matched: the port removed, ASCII lower case, one trailing dot
/// removed. Bracketed IPv6 literals keep their brackets.
pub(crate) fn canonical_host(host: &str) -> String {
    let without_port = if host.starts_with('[') {
        match host.find(']') {
            Some(i) => &host[..=i],
            None => host,
        }
    } else {
        match host.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => host,
        }
    };
    let h = without_port.strip_suffix('.').unwrap_or(without_port);
    h.to_ascii_lowercase()
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.shape {
            Shape::Exact(h) => f.write_str(h),
            Shape::Suffix(s) => write!(f, "*.{s}"),
            Shape::Middle { left, right } => write!(f, "{left}.*.{right}"),
        }
    }
}
