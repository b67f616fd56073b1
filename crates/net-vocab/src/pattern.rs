//! The wildcard host pattern of R-EGRESS-2: an exact host, a leading or a
//! middle wildcard, with an optional port. Parsed and checked once, when a
//! list is loaded, and matched against canonical hosts.

use crate::error::{Error, ErrorKind, HostProblem, truncate};
use crate::host::{self, Host, MAX_HOST_LEN, Unicode};
use crate::target::{Target, parse_port};
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// The longest entry accepted, in bytes (before UTS #46 mapping; the
/// canonical host part must still fit in [`MAX_HOST_LEN`]).
pub const MAX_ENTRY_LEN: usize = 512;

/// A parsed host pattern (an allowlist, denylist or credential-host
/// entry).
///
/// Forms: `api.example.com` (exact), `*.example.com` (any subdomain, any
/// depth, never the apex), `bedrock.*.amazonaws.com` (exactly one label in
/// place of the `*`), an IP literal (`169.254.169.254`, `[fd00:ec2::254]`;
/// IPv6 only in brackets), each with an optional `:port`. Names go through
/// [`Host::parse_config`], so Unicode entries become A-labels.
///
/// ```
/// use net_vocab::{ErrorKind, Host, HostPattern};
/// let p = HostPattern::parse("bedrock.*.amazonaws.com").unwrap();
/// assert!(p.matches(&Host::parse_wire("bedrock.us-east-1.amazonaws.com").unwrap()));
/// assert!(!p.matches(&Host::parse_wire("bedrock.evil.attacker.amazonaws.com").unwrap()));
/// let p = HostPattern::parse("*.example.com").unwrap();
/// assert!(p.matches(&Host::parse_wire("a.b.example.com").unwrap()));
/// assert!(!p.matches(&Host::parse_wire("example.com").unwrap()));
/// assert!(matches!(
///     HostPattern::parse("*.*.example.com").unwrap_err().kind(),
///     ErrorKind::MultipleWildcards { .. }
/// ));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPattern {
    shape: Shape,
    port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Shape {
    /// A canonical host (a name or an IP address).
    Exact(Host),
    /// `*.suffix`: the suffix without the leading dot.
    Suffix(String),
    /// `left.*.right`.
    Middle { left: String, right: String },
}

/// The form of a [`HostPattern`], for callers that index many patterns
/// (a label index must give the same answers as [`HostPattern::matches`]).
///
/// Not `#[non_exhaustive]`: R-EGRESS-2 fixes these three forms, and an
/// index that skipped an unknown form would silently drop a deny entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternShape<'a> {
    /// Exactly this host.
    Exact(&'a Host),
    /// `*.suffix`: any name ending in `.suffix`, at any depth.
    Suffix(&'a str),
    /// `left.*.right`: exactly one label between `left` and `right`.
    Middle {
        /// The labels before the `*`.
        left: &'a str,
        /// The labels after the `*`.
        right: &'a str,
    },
}

impl HostPattern {
    /// Parses and checks one entry.
    pub fn parse(entry: &str) -> Result<HostPattern, Error> {
        let err = |make: fn(String) -> ErrorKind| Err(Error::from(make(truncate(entry))));
        if entry.len() > MAX_ENTRY_LEN {
            return Err(Error::host(entry, HostProblem::TooLong));
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
            return Ok(HostPattern {
                shape: Shape::Exact(host),
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
            return Err(Error::host(entry, HostProblem::EmptyLabel));
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
        // The shortest host the pattern matches (one byte for the `*`)
        // must be a valid host: a pattern that can match nothing is a
        // mistake.
        let shortest = match &shape {
            Shape::Suffix(s) => s.len() + 2,
            Shape::Middle { left, right } => left.len() + right.len() + 3,
            Shape::Exact(_) => 0,
        };
        if shortest > MAX_HOST_LEN {
            return Err(Error::host(entry, HostProblem::TooLong));
        }
        Ok(HostPattern { shape, port })
    }

    /// The port this entry is limited to, if any.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// The pattern's form.
    pub fn shape(&self) -> PatternShape<'_> {
        match &self.shape {
            Shape::Exact(h) => PatternShape::Exact(h),
            Shape::Suffix(s) => PatternShape::Suffix(s),
            Shape::Middle { left, right } => PatternShape::Middle { left, right },
        }
    }

    /// Whether a canonical host matches, whatever the port. An IPv4 entry
    /// also matches the IPv4-mapped IPv6 form of its address; wildcards
    /// match names only.
    pub fn matches(&self, host: &Host) -> bool {
        match (&self.shape, host) {
            (Shape::Exact(Host::Ip(IpAddr::V4(want))), Host::Ip(IpAddr::V6(got))) => {
                got.to_ipv4_mapped() == Some(*want)
            }
            (Shape::Exact(want), got) => want == got,
            (Shape::Suffix(suffix), Host::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .and_then(|h| h.strip_suffix('.'))
                .is_some_and(|h| !h.is_empty()),
            (Shape::Middle { left, right }, Host::Name(name)) => name
                .strip_prefix(left.as_str())
                .and_then(|h| h.strip_prefix('.'))
                .and_then(|h| h.strip_suffix(right.as_str()))
                .and_then(|h| h.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
            (Shape::Suffix(_) | Shape::Middle { .. }, Host::Ip(_)) => false,
        }
    }

    /// Whether a target matches: its host, and its port when the entry
    /// names one.
    pub fn matches_target(&self, target: &Target) -> bool {
        self.port.is_none_or(|p| p == target.port) && self.matches(&target.host)
    }
}

fn split_port(entry: &str) -> Result<(&str, Option<u16>), Error> {
    if entry.starts_with('[') {
        return match entry.rsplit_once("]:") {
            Some((host, port)) => Ok((&entry[..host.len() + 1], Some(parse_port(port)?))),
            None => Ok((entry, None)),
        };
    }
    match entry.split_once(':') {
        None => Ok((entry, None)),
        Some((host, port)) if !port.contains(':') => Ok((host, Some(parse_port(port)?))),
        Some(_) if entry.parse::<Ipv6Addr>().is_ok() => Err(ErrorKind::UnbracketedIpv6 {
            entry: truncate(entry),
        }
        .into()),
        Some(_) => Err(Error::host(entry, HostProblem::BadByte)),
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.shape {
            Shape::Exact(Host::Ip(IpAddr::V6(ip))) => write!(f, "[{ip}]")?,
            Shape::Exact(h) => h.fmt(f)?,
            Shape::Suffix(s) => write!(f, "*.{s}")?,
            Shape::Middle { left, right } => write!(f, "{left}.*.{right}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}
