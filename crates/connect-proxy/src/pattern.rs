//! One allowlist entry: an exact host, a leading or a middle wildcard, with
//! an optional port. Parsed and checked once, when a list is loaded.

use crate::error::{Error, ErrorKind, truncate};
use crate::host::{self, Host, Unicode};
use std::fmt;

/// The longest entry accepted, in bytes.
pub const MAX_ENTRY_LEN: usize = 512;

/// A parsed allowlist or denylist entry.
///
/// Forms: `api.example.com` (exact), `*.example.com` (any subdomain, any
/// depth, never the apex), `bedrock.*.amazonaws.com` (exactly one label in
/// place of the `*`), an IP literal (`169.254.169.254`, `[fd00:ec2::254]`),
/// each with an optional `:port`.
///
/// ```
/// use connect_proxy::{ErrorKind, Pattern};
/// assert!(Pattern::parse("*.example.com:443").is_ok());
/// assert!(matches!(
///     Pattern::parse("*.*.example.com").unwrap_err().kind(),
///     ErrorKind::MultipleWildcards { .. }
/// ));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pattern {
    pub(crate) shape: Shape,
    pub(crate) port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Shape {
    /// The canonical host text (a name or an IP address).
    Exact(String),
    /// `*.suffix`: the suffix without the leading dot.
    Suffix(String),
    /// `left.*.right`.
    Middle { left: String, right: String },
}

impl Pattern {
    /// Parses and checks one entry.
    pub fn parse(entry: &str) -> Result<Pattern, Error> {
        let err = |make: fn(String) -> ErrorKind| Err(Error::from(make(truncate(entry))));
        if entry.len() > MAX_ENTRY_LEN {
            return Err(Error::host(entry, crate::HostProblem::TooLong));
        }
        if entry.contains("://") {
            return err(|entry| ErrorKind::Scheme { entry });
        }
        if entry.contains(['/', '?', '#']) {
            return err(|entry| ErrorKind::Path { entry });
        }
        if entry.contains('@') {
            return err(|entry| ErrorKind::Userinfo { entry });
        }
        let (host_part, port) = split_port(entry)?;
        let stars = host_part.matches('*').count();
        if stars == 0 {
            let host = Host::parse_config(host_part)?;
            return Ok(Pattern {
                shape: Shape::Exact(host.to_string()),
                port,
            });
        }
        if stars > 1 {
            return err(|entry| ErrorKind::MultipleWildcards { entry });
        }
        if host_part == "*" || host_part == "*." {
            return err(|entry| ErrorKind::BareWildcard { entry });
        }
        let labels: Vec<&str> = host_part.split('.').collect();
        let Some(star) = labels.iter().position(|l| l.contains('*')) else {
            return err(|entry| ErrorKind::WildcardInLabel { entry });
        };
        if labels[star] != "*" {
            return err(|entry| ErrorKind::WildcardInLabel { entry });
        }
        if labels[..star].iter().any(|l| l.is_empty()) {
            return Err(Error::host(entry, crate::HostProblem::EmptyLabel));
        }
        // The fixed part after the `*` (it may end with one dot).
        let right = labels[star + 1..].join(".");
        if right.is_empty() || right == "." {
            return err(|entry| ErrorKind::WildcardOverTld { entry });
        }
        let right = host::canonical_labels(&right, Unicode::ToALabel)?;
        if !right.contains('.') {
            return err(|entry| ErrorKind::WildcardOverTld { entry });
        }
        if host::last_label_is_numeric(&right) {
            return err(|entry| ErrorKind::WildcardOnIpLiteral { entry });
        }
        let shape = if star == 0 {
            Shape::Suffix(right)
        } else {
            let left = labels[..star].join(".");
            let left = host::canonical_labels(&left, Unicode::ToALabel)?;
            Shape::Middle { left, right }
        };
        Ok(Pattern { shape, port })
    }

    /// The port this entry is limited to, if any.
    pub fn port(&self) -> Option<u16> {
        self.port
    }
}

fn split_port(entry: &str) -> Result<(&str, Option<u16>), Error> {
    if entry.starts_with('[') {
        return match entry.rsplit_once("]:") {
            Some((host, port)) => Ok((&entry[..host.len() + 1], Some(host::parse_port(port)?))),
            None => Ok((entry, None)),
        };
    }
    match entry.matches(':').count() {
        0 => Ok((entry, None)),
        1 => {
            let (host, port) = entry.split_at(entry.find(':').unwrap_or(entry.len()));
            Ok((host, Some(host::parse_port(&port[1..])?)))
        }
        // An unbracketed IPv6 literal, without a port.
        _ => Ok((entry, None)),
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.shape {
            Shape::Exact(h) if h.contains(':') => write!(f, "[{h}]")?,
            Shape::Exact(h) => f.write_str(h)?,
            Shape::Suffix(s) => write!(f, "*.{s}")?,
            Shape::Middle { left, right } => write!(f, "{left}.*.{right}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn display_reparses(s in "[*a-zA-Z0-9.:\\[\\]-]{0,24}") {
            if let Ok(p) = Pattern::parse(&s) {
                prop_assert_eq!(Pattern::parse(&p.to_string()).unwrap(), p);
            }
        }
    }
}
