//! The one canonical host form used for matching and for dialing.

use crate::error::{Error, HostProblem};
use crate::idna;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The longest canonical host name accepted, in bytes.
pub const MAX_HOST_LEN: usize = 253;
/// The longest label accepted, in bytes.
pub const MAX_LABEL_LEN: usize = 63;
/// Input longer than this is refused before any work (IDNA input included).
pub const MAX_INPUT_LEN: usize = 1024;

/// A host in canonical form: a lower-case ASCII name without a trailing dot,
/// or an IP address.
///
/// Every numeric spelling the C library's `inet_aton` accepts
/// (`2852039166`, `0xa9fea9fe`, `0251.0376.0251.0376`, `169.254.43518`) is an
/// IP literal, so it is never handed to a resolver.
///
/// ```
/// use net_vocab::Host;
/// use std::net::Ipv4Addr;
/// assert_eq!(Host::parse_wire("API.Example.COM.").unwrap().to_string(), "api.example.com");
/// assert_eq!(
///     Host::parse_wire("0xa9fea9fe").unwrap(),
///     Host::Ip(Ipv4Addr::new(169, 254, 169, 254).into()),
/// );
/// assert!(Host::parse_wire("example.123").is_err());
/// assert_eq!(Host::parse_config("bücher.example").unwrap().to_string(), "xn--bcher-kva.example");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// A DNS name: lower-case ASCII labels (A-labels for IDNA names).
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl Host {
    /// Parses a host as it arrives from a client: ASCII only.
    pub fn parse_wire(input: &str) -> Result<Host, Error> {
        parse(input, Unicode::Refuse)
    }

    /// Parses raw bytes from the wire (a SOCKS5 domain); non-ASCII and NUL
    /// bytes are refused.
    pub fn parse_wire_bytes(input: &[u8]) -> Result<Host, Error> {
        match std::str::from_utf8(input) {
            Ok(s) => Host::parse_wire(s),
            Err(_) => Err(Error::host(
                &String::from_utf8_lossy(input),
                HostProblem::NonAscii,
            )),
        }
    }

    /// Parses a host from configuration: a name with non-ASCII characters
    /// or `xn--` labels goes through UTS #46 _ToASCII_ (non-transitional;
    /// full-width forms, NFC and case mapped; disallowed code points, bidi
    /// and joiner violations and invalid `xn--` labels refused as
    /// [`HostProblem::Idna`]), then through the same grammar as the wire.
    pub fn parse_config(input: &str) -> Result<Host, Error> {
        parse(input, Unicode::ToALabel)
    }

    /// The name, when this is not an IP literal.
    pub fn as_name(&self) -> Option<&str> {
        match self {
            Host::Name(name) => Some(name),
            Host::Ip(_) => None,
        }
    }

    /// The address, when this is an IP literal.
    pub fn ip(&self) -> Option<IpAddr> {
        match self {
            Host::Name(_) => None,
            Host::Ip(ip) => Some(*ip),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(name) => f.write_str(name),
            Host::Ip(ip) => ip.fmt(f),
        }
    }
}

/// Whether a configuration entry may hold Unicode (converted through
/// UTS #46) or must already be ASCII, as on the wire.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unicode {
    Refuse,
    ToALabel,
}

pub(crate) fn parse_bracketed(inner: &str, whole: &str) -> Result<Host, Error> {
    if inner.contains('%') {
        return Err(Error::host(whole, HostProblem::Percent));
    }
    match inner.parse::<Ipv6Addr>() {
        Ok(ip) => Ok(Host::Ip(IpAddr::V6(ip))),
        Err(_) => Err(Error::host(whole, HostProblem::BracketedName)),
    }
}

fn parse(input: &str, unicode: Unicode) -> Result<Host, Error> {
    if input.is_empty() {
        return Err(Error::host(input, HostProblem::Empty));
    }
    if input.len() > MAX_INPUT_LEN {
        return Err(Error::host(input, HostProblem::TooLong));
    }
    if input.contains('%') {
        return Err(Error::host(input, HostProblem::Percent));
    }
    if input.contains('@') {
        return Err(Error::host(input, HostProblem::Userinfo));
    }
    if let Some(rest) = input.strip_prefix('[') {
        return match rest.strip_suffix(']') {
            Some(inner) => parse_bracketed(inner, input),
            None => Err(Error::host(input, HostProblem::BracketedName)),
        };
    }
    if input.contains(':') {
        return match input.parse::<Ipv6Addr>() {
            Ok(ip) => Ok(Host::Ip(IpAddr::V6(ip))),
            Err(_) => Err(Error::host(input, HostProblem::BadByte)),
        };
    }
    // The common spelling of an IPv4 literal, four decimal parts without
    // leading zeros: what `inet_aton` reads it as, without building the
    // name first. Every other numeric form goes the long way below.
    if let Ok(ip) = input.parse::<Ipv4Addr>() {
        return Ok(Host::Ip(IpAddr::V4(ip)));
    }
    let name = canonical_labels(input, unicode)?;
    if last_label_is_numeric(&name) {
        return match inet_aton(&name) {
            Some(ip) => Ok(Host::Ip(IpAddr::V4(ip))),
            None => Err(Error::host(input, HostProblem::NumericLastLabel)),
        };
    }
    Ok(Host::Name(name))
}

/// Lower-cases, removes one trailing dot, applies UTS #46 to configuration
/// entries that need it (see `idna.rs`) and checks every label against the
/// grammar. Does not interpret numeric forms.
pub(crate) fn canonical_labels(input: &str, unicode: Unicode) -> Result<String, Error> {
    let fail = |problem| Err(Error::host(input, problem));
    if input.is_empty() {
        return fail(HostProblem::Empty);
    }
    if input.len() > MAX_INPUT_LEN {
        return fail(HostProblem::TooLong);
    }
    let converted;
    let text = match unicode {
        Unicode::ToALabel if idna::needs_processing(input) => {
            converted = match idna::to_ascii(idna::strip_root(input)) {
                Some(ascii) => ascii,
                None => return fail(HostProblem::Idna),
            };
            converted.as_str()
        }
        Unicode::Refuse if !input.is_ascii() => return fail(HostProblem::NonAscii),
        _ => input.strip_suffix('.').unwrap_or(input),
    };
    let mut out = String::with_capacity(text.len());
    for (i, label) in text.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if label.is_empty() {
            return fail(HostProblem::EmptyLabel);
        }
        for b in label.bytes() {
            if !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return fail(HostProblem::BadByte);
            }
            out.push(b.to_ascii_lowercase() as char);
        }
        if label.len() > MAX_LABEL_LEN {
            return fail(HostProblem::LabelTooLong);
        }
        if label.starts_with('-') || label.ends_with('-') {
            return fail(HostProblem::Hyphen);
        }
    }
    if out.len() > MAX_HOST_LEN {
        return fail(HostProblem::TooLong);
    }
    Ok(out)
}

/// True when the last label is a number in a form `inet_aton` reads
/// (decimal digits, or `0x` followed by hex digits).
pub(crate) fn last_label_is_numeric(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    is_numeric_part(last)
}

fn is_numeric_part(part: &str) -> bool {
    if let Some(hex) = part.strip_prefix("0x") {
        return hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit())
}

/// The C library's `inet_aton`: one to four parts, each decimal, octal
/// (leading `0`) or hex (`0x`); the last part fills the remaining bytes.
/// Expects lower-case input.
pub(crate) fn inet_aton(input: &str) -> Option<Ipv4Addr> {
    let mut parts = [0u64; 4];
    let mut count = 0;
    for part in input.split('.') {
        if count == 4 {
            return None;
        }
        parts[count] = parse_c_number(part)?;
        count += 1;
    }
    let (head, last) = (&parts[..count - 1], parts[count - 1]);
    if head.iter().any(|&p| p > 255) {
        return None;
    }
    let last_bits = 8 * (5 - count as u32);
    if last >= (1u64 << last_bits) {
        return None;
    }
    let mut value: u64 = 0;
    for (i, &p) in head.iter().enumerate() {
        value |= p << (24 - 8 * i as u32);
    }
    value |= last;
    u32::try_from(value).ok().map(Ipv4Addr::from)
}

fn parse_c_number(part: &str) -> Option<u64> {
    // Longer than any valid 32-bit number in any base: refuse early.
    if part.is_empty() || part.len() > 12 {
        return None;
    }
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x") {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        // "0x" alone reads as zero in the C library.
        return if radix == 16 { Some(0) } else { None };
    }
    u64::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_forms() {
        for s in [
            "2852039166",
            "0xa9fea9fe",
            "0251.0376.0251.0376",
            "169.254.43518",
            "169.16689662",
            "0XA9FEA9FE",
        ] {
            assert_eq!(
                Host::parse_wire(s).unwrap(),
                Host::Ip(Ipv4Addr::new(169, 254, 169, 254).into()),
                "{s}"
            );
        }
        assert!(Host::parse_wire("256.1.1.1").is_err());
        assert!(Host::parse_wire("1.2.3.4.5").is_err());
        assert!(Host::parse_wire("08.1.1.1").is_err());
    }

    /// The long way for a name of numeric labels: what `parse` did before
    /// its shortcut for dotted decimal.
    fn numeric_the_long_way(input: &str) -> Option<Ipv4Addr> {
        let name = canonical_labels(input, Unicode::Refuse).ok()?;
        inet_aton(&name)
    }

    proptest::proptest! {
        /// The dotted-decimal shortcut reads every numeric spelling as
        /// `inet_aton` does, and refuses none that it reads.
        #[test]
        fn the_ipv4_shortcut_agrees_with_inet_aton(
            parts in proptest::collection::vec("(0x)?[0-9a-f]{0,4}", 1..6),
            dot in proptest::bool::ANY,
        ) {
            let mut s = parts.join(".");
            if dot {
                s.push('.');
            }
            let long = numeric_the_long_way(&s).map(|ip| Host::Ip(ip.into()));
            match Host::parse_wire(&s) {
                Ok(Host::Ip(ip)) => proptest::prop_assert_eq!(Some(Host::Ip(ip)), long),
                _ => proptest::prop_assert_eq!(long, None),
            }
        }

        #[test]
        fn every_address_reads_back(ip in proptest::prelude::any::<u32>()) {
            let ip = Ipv4Addr::from(ip);
            proptest::prop_assert_eq!(Host::parse_wire(&ip.to_string()).ok(), Some(Host::Ip(ip.into())));
        }
    }
}
