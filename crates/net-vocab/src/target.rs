//! The typed connect target: what a client asked to reach, as a canonical
//! host and a port.

use crate::error::{Error, HostProblem};
use crate::host::{Host, parse_bracketed};
use std::fmt;
use std::net::IpAddr;

/// A host and a port: what a client asked to reach.
///
/// Displays as `host:port`, with brackets around IPv6 addresses.
///
/// ```
/// use net_vocab::Target;
/// let t = Target::parse_authority("Example.com:443").unwrap();
/// assert_eq!(t.to_string(), "example.com:443");
/// assert_eq!(Target::parse_authority("[::1]:22").unwrap().to_string(), "[::1]:22");
/// assert!(Target::parse_authority("example.com").is_err()); // the port is required
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    /// The canonical host.
    pub host: Host,
    /// The port, 1..=65535.
    pub port: u16,
}

impl Target {
    /// A target from its parts.
    pub fn new(host: Host, port: u16) -> Target {
        Target { host, port }
    }

    /// Parses `host:port` or `[v6]:port` from the wire; the port is required.
    pub fn parse_authority(input: &str) -> Result<Target, Error> {
        let (host, port) = split_authority(input)?;
        match port {
            Some(port) => Ok(Target { host, port }),
            None => Err(Error::port("")),
        }
    }

    /// Parses an authority from the wire, using `default_port` when it has
    /// none.
    pub fn parse_authority_or(input: &str, default_port: u16) -> Result<Target, Error> {
        let (host, port) = split_authority(input)?;
        Ok(Target {
            host,
            port: port.unwrap_or(default_port),
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            host => write!(f, "{host}:{}", self.port),
        }
    }
}

/// A host with an optional port, as an authority spells it.
pub(crate) fn split_authority(input: &str) -> Result<(Host, Option<u16>), Error> {
    if let Some(rest) = input.strip_prefix('[') {
        let Some((inner, after)) = rest.split_once(']') else {
            return Err(Error::host(input, HostProblem::BracketedName));
        };
        let host = parse_bracketed(inner, input)?;
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(parse_port(p)?),
                None => return Err(Error::port(p)),
            },
        };
        return Ok((host, port));
    }
    match input.rsplit_once(':') {
        Some((host, port)) => {
            if host.contains(':') {
                // An IPv6 address must be bracketed in an authority.
                return Err(Error::host(input, HostProblem::BadByte));
            }
            Ok((Host::parse_wire(host)?, Some(parse_port(port)?)))
        }
        None => Ok((Host::parse_wire(input)?, None)),
    }
}

/// Parses a decimal port in 1..=65535 (no sign, no spaces, at most 5 digits).
pub(crate) fn parse_port(input: &str) -> Result<u16, Error> {
    if input.is_empty() || input.len() > 5 || !input.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::port(input));
    }
    match input.parse::<u32>() {
        Ok(p @ 1..=65535) => u16::try_from(p).map_err(|_| Error::port(input)),
        _ => Err(Error::port(input)),
    }
}
