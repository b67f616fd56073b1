//! `IpPolicy`: which resolved addresses may be dialed.

use crate::error::{Error, ErrorKind, truncate};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// The class of an address, after looking through IPv4-mapped, NAT64, 6to4
/// and Teredo forms to the IPv4 address they carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddrClass {
    /// A public unicast address.
    Public,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918, `fc00::/7`, `fec0::/10`.
    Private,
    /// `100.64.0.0/10` (carrier-grade NAT).
    SharedCgnat,
    /// `169.254.0.0/16` (cloud metadata lives here), `fe80::/10`.
    LinkLocal,
    /// `0.0.0.0`, `::`.
    Unspecified,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// Documentation ranges (`192.0.2.0/24`, `2001:db8::/32`, ...).
    Documentation,
    /// Everything else that is not routable on the internet: `0.0.0.0/8`,
    /// `240.0.0.0/4`, benchmarking, IETF protocol assignments, discard
    /// prefixes, IPv6 outside `2000::/3`.
    Reserved,
    /// One of the proxy's own listeners.
    ProxyListener,
}

impl fmt::Display for AddrClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddrClass::Public => "public",
            AddrClass::Loopback => "loopback",
            AddrClass::Private => "private",
            AddrClass::SharedCgnat => "shared (CGNAT)",
            AddrClass::LinkLocal => "link-local",
            AddrClass::Unspecified => "unspecified",
            AddrClass::Multicast => "multicast",
            AddrClass::Broadcast => "broadcast",
            AddrClass::Documentation => "documentation",
            AddrClass::Reserved => "reserved",
            AddrClass::ProxyListener => "the proxy's own listener",
        })
    }
}

/// An address block, such as `10.0.0.0/8` or `fd00::/8`.
///
/// ```
/// use connect_proxy::Cidr;
/// let c: Cidr = "127.0.0.1/32".parse().unwrap();
/// assert!(c.contains("127.0.0.1".parse().unwrap()));
/// assert!("10.0.0.1/8".parse::<Cidr>().is_err()); // host bits set
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// True when `ip` is inside the block. An IPv4-mapped IPv6 address is
    /// compared as its IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(ip)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                prefix_eq(u128::from(net), u128::from(ip), self.prefix)
            }
            _ => false,
        }
    }
}

fn prefix_eq(a: u128, b: u128, prefix: u8) -> bool {
    if prefix == 0 {
        return true;
    }
    let shift = 128 - u32::from(prefix);
    (a >> shift) == (b >> shift)
}

impl FromStr for Cidr {
    type Err = Error;

    fn from_str(s: &str) -> Result<Cidr, Error> {
        let bad = |reason| {
            Error::from(ErrorKind::InvalidCidr {
                cidr: truncate(s),
                reason,
            })
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| bad("the address is not an IPv4 or IPv6 literal"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()) => p
                .parse::<u8>()
                .map_err(|_| bad("the prefix length is not a number"))?,
            Some(_) => return Err(bad("the prefix length is not a number")),
        };
        if prefix > max {
            return Err(bad("the prefix length is longer than the address"));
        }
        let cidr = Cidr { addr, prefix };
        let bits = match addr {
            IpAddr::V4(v4) => u128::from(u32::from(v4)) << 96,
            IpAddr::V6(v6) => u128::from(v6),
        };
        // IPv4 bits sit at the top of the u128, so one mask serves both.
        let keep = if prefix == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(prefix))
        };
        if bits & !keep != 0 {
            return Err(bad(
                "host bits are set beyond the prefix; write the network address",
            ));
        }
        Ok(cidr)
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Which resolved addresses may be dialed: public unicast only, unless a
/// block was granted with [`IpPolicy::allow_cidr`]. The proxy's own
/// listeners are refused even inside a granted block.
///
/// ```
/// use connect_proxy::{AddrClass, IpPolicy};
/// let mut policy = IpPolicy::new();
/// let local = "127.0.0.1:8080".parse().unwrap();
/// assert_eq!(policy.check(local), Err(AddrClass::Loopback));
/// policy.allow_cidr("127.0.0.1/32".parse().unwrap());
/// assert_eq!(policy.check(local), Ok(()));
/// assert_eq!(policy.check("[::ffff:169.254.169.254]:80".parse().unwrap()), Err(AddrClass::LinkLocal));
/// ```
#[derive(Clone, Debug, Default)]
pub struct IpPolicy {
    granted: Vec<Cidr>,
    listeners: Vec<SocketAddr>,
}

impl IpPolicy {
    /// The strict policy: public unicast addresses only.
    pub fn new() -> IpPolicy {
        IpPolicy::default()
    }

    /// Grants a block explicitly, whatever its class.
    pub fn allow_cidr(&mut self, cidr: Cidr) -> &mut Self {
        self.granted.push(cidr);
        self
    }

    /// The granted blocks.
    pub fn granted(&self) -> &[Cidr] {
        &self.granted
    }

    /// Marks an address as one of the proxy's own listeners.
    pub(crate) fn add_listener(&mut self, addr: SocketAddr) {
        self.listeners.push(addr);
    }

    /// `Ok` when `addr` may be dialed, else the class that refused it.
    pub fn check(&self, addr: SocketAddr) -> Result<(), AddrClass> {
        let ip = addr.ip().to_canonical();
        let own = self.listeners.iter().any(|l| {
            l.port() == addr.port()
                && (l.ip().to_canonical() == ip || ip.is_unspecified() || l.ip().is_unspecified())
        });
        if own {
            return Err(AddrClass::ProxyListener);
        }
        let class = classify(addr.ip());
        if class == AddrClass::Public || self.granted.iter().any(|c| c.contains(addr.ip())) {
            Ok(())
        } else {
            Err(class)
        }
    }
}

/// Classifies an address, looking through embedded IPv4 forms.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn in_v4(ip: u32, net: [u8; 4], prefix: u8) -> bool {
    prefix_eq(
        u128::from(ip) << 96,
        u128::from(u32::from(Ipv4Addr::from(net))) << 96,
        prefix,
    )
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    let n = u32::from(ip);
    if ip.is_unspecified() {
        AddrClass::Unspecified
    } else if ip.is_broadcast() {
        AddrClass::Broadcast
    } else if in_v4(n, [127, 0, 0, 0], 8) {
        AddrClass::Loopback
    } else if in_v4(n, [10, 0, 0, 0], 8)
        || in_v4(n, [172, 16, 0, 0], 12)
        || in_v4(n, [192, 168, 0, 0], 16)
    {
        AddrClass::Private
    } else if in_v4(n, [100, 64, 0, 0], 10) {
        AddrClass::SharedCgnat
    } else if in_v4(n, [169, 254, 0, 0], 16) {
        AddrClass::LinkLocal
    } else if in_v4(n, [224, 0, 0, 0], 4) {
        AddrClass::Multicast
    } else if in_v4(n, [192, 0, 2, 0], 24)
        || in_v4(n, [198, 51, 100, 0], 24)
        || in_v4(n, [203, 0, 113, 0], 24)
    {
        AddrClass::Documentation
    } else if in_v4(n, [0, 0, 0, 0], 8)
        || in_v4(n, [192, 0, 0, 0], 24)
        || in_v4(n, [192, 88, 99, 0], 24)
        || in_v4(n, [198, 18, 0, 0], 15)
        || in_v4(n, [240, 0, 0, 0], 4)
    {
        AddrClass::Reserved
    } else {
        AddrClass::Public
    }
}

fn in_v6(ip: u128, net: u128, prefix: u8) -> bool {
    prefix_eq(ip, net, prefix)
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    let n = u128::from(ip);
    let low32 = Ipv4Addr::from((n & 0xffff_ffff) as u32);
    if ip.is_unspecified() {
        return AddrClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddrClass::Loopback;
    }
    // IPv4-mapped ::ffff:0:0/96 and the NAT64 prefixes carry an IPv4 address
    // in their last 32 bits.
    if in_v6(n, 0xffff_0000_0000, 96)
        || in_v6(n, 0x0064_ff9b_u128 << 96, 96)
        || in_v6(n, 0x0064_ff9b_0001_u128 << 80, 48)
    {
        return classify_v4(low32);
    }
    // Teredo 2001::/32: server in bits 32..64, client inverted in the last 32.
    if in_v6(n, 0x2001_u128 << 112, 32) {
        let server = Ipv4Addr::from(((n >> 64) & 0xffff_ffff) as u32);
        let client = Ipv4Addr::from(!((n & 0xffff_ffff) as u32));
        return match (classify_v4(client), classify_v4(server)) {
            (AddrClass::Public, AddrClass::Public) => AddrClass::Public,
            (AddrClass::Public, other) | (other, _) => other,
        };
    }
    // 6to4 2002::/16 carries an IPv4 address in bits 16..48.
    if in_v6(n, 0x2002_u128 << 112, 16) {
        return classify_v4(Ipv4Addr::from(((n >> 80) & 0xffff_ffff) as u32));
    }
    if in_v6(n, 0xfc00_u128 << 112, 7) || in_v6(n, 0xfec0_u128 << 112, 10) {
        return AddrClass::Private;
    }
    if in_v6(n, 0xfe80_u128 << 112, 10) {
        return AddrClass::LinkLocal;
    }
    if in_v6(n, 0xff00_u128 << 112, 8) {
        return AddrClass::Multicast;
    }
    if in_v6(n, 0x2001_0db8_u128 << 96, 32) || in_v6(n, 0x3fff_u128 << 112, 20) {
        return AddrClass::Documentation;
    }
    // IETF protocol assignments 2001::/23 (Teredo handled above), the
    // discard prefix 100::/64, and everything outside global unicast 2000::/3
    // (which includes the deprecated IPv4-compatible ::/96).
    if in_v6(n, 0x2001_u128 << 112, 23)
        || in_v6(n, 0x0100_u128 << 112, 64)
        || !in_v6(n, 0x2000_u128 << 112, 3)
    {
        return AddrClass::Reserved;
    }
    AddrClass::Public
}
