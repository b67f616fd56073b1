//! `Egress`: policy first, then one lookup, then every address vetted, then
//! a dial to a vetted address. Shared by both proxies.

use crate::ip_policy::{AddrClass, IpPolicy};
use crate::policy::{DenyReason, EgressPolicy, Verdict};
use crate::resolver::{ResolveError, Resolver};
use net_vocab::{Host, Target};
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// Why a connection was not made. [`Denial::is_violation`] tells policy
/// refusals (reported as violations) from network failures.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Denial {
    /// The name-level policy refused the target; nothing was resolved.
    Policy(DenyReason),
    /// Every address was refused; the first refusal is reported.
    Address {
        /// The refused address.
        addr: IpAddr,
        /// Its class.
        class: AddrClass,
    },
    /// A resolved address is on the policy's denylist.
    DenylistedAddress(IpAddr),
    /// The request or target was malformed.
    Malformed(String),
    /// The name does not resolve.
    NotFound,
    /// The lookup timed out.
    DnsTimeout,
    /// No vetted address answered within the connect timeout.
    ConnectTimeout,
    /// The upstream refused the connection.
    Refused,
    /// The upstream could not be reached.
    Unreachable(String),
    /// The client is not the session's: a Unix peer of another uid, or a
    /// client without the session's proxy credentials.
    Unauthenticated(String),
}

impl Denial {
    /// True when the policy allowed the target and the network then failed
    /// it (no such name, a lookup or connect timeout, refused,
    /// unreachable). Reported as `network-outbound` events too, with the
    /// reason in `raw`, so the host learns why an allowed host was not
    /// reached.
    pub fn is_upstream_failure(&self) -> bool {
        matches!(
            self,
            Denial::NotFound
                | Denial::DnsTimeout
                | Denial::ConnectTimeout
                | Denial::Refused
                | Denial::Unreachable(_)
        )
    }

    /// True for refusals by policy (name, address or malformed target), which
    /// are reported as `network-outbound` violations.
    pub fn is_violation(&self) -> bool {
        matches!(
            self,
            Denial::Policy(_)
                | Denial::Address { .. }
                | Denial::DenylistedAddress(_)
                | Denial::Malformed(_)
                | Denial::Unauthenticated(_)
        )
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::Policy(r) => r.fmt(f),
            Denial::Address { addr, class } => write!(f, "address {addr} is {class}"),
            Denial::DenylistedAddress(a) => write!(f, "address {a} is on the denylist"),
            Denial::Malformed(m) => write!(f, "malformed request: {m}"),
            Denial::NotFound => f.write_str("name not found"),
            Denial::DnsTimeout => f.write_str("name lookup timed out"),
            Denial::ConnectTimeout => f.write_str("upstream connect timed out"),
            Denial::Refused => f.write_str("upstream refused the connection"),
            Denial::Unreachable(m) => write!(f, "upstream unreachable: {m}"),
            Denial::Unauthenticated(m) => write!(f, "not the session's client: {m}"),
        }
    }
}

/// The egress gate: asks the [`EgressPolicy`], resolves allowed names once
/// through the [`Resolver`], vets every address with the [`IpPolicy`], and
/// dials only vetted addresses.
#[derive(Clone)]
pub struct Egress {
    policy: Arc<dyn EgressPolicy>,
    ip_policy: IpPolicy,
    resolver: Arc<dyn Resolver>,
    resolve_timeout: Duration,
    connect_timeout: Duration,
}

impl fmt::Debug for Egress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Egress")
            .field("ip_policy", &self.ip_policy)
            .field("resolve_timeout", &self.resolve_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl Egress {
    /// A gate with the given parts and timeouts.
    pub fn new(
        policy: Arc<dyn EgressPolicy>,
        ip_policy: IpPolicy,
        resolver: Arc<dyn Resolver>,
        resolve_timeout: Duration,
        connect_timeout: Duration,
    ) -> Egress {
        Egress {
            policy,
            ip_policy,
            resolver,
            resolve_timeout,
            connect_timeout,
        }
    }

    pub(crate) fn ip_policy_mut(&mut self) -> &mut IpPolicy {
        &mut self.ip_policy
    }

    /// The addresses `target` may be dialed at, in resolver order, or why
    /// not. A denied name is never resolved; an IP literal never is.
    pub async fn vet(&self, target: &Target) -> Result<Vec<SocketAddr>, Denial> {
        if let Verdict::Deny(reason) = self.policy.decide(target) {
            return Err(Denial::Policy(reason));
        }
        let literal;
        let resolved;
        let ips: &[IpAddr] = match &target.host {
            Host::Ip(ip) => {
                literal = [*ip];
                &literal
            }
            Host::Name(name) => {
                let lookup = self.resolver.resolve(name);
                resolved = match tokio::time::timeout(self.resolve_timeout, lookup).await {
                    Err(_) | Ok(Err(ResolveError::Timeout)) => return Err(Denial::DnsTimeout),
                    Ok(Err(_)) => return Err(Denial::NotFound),
                    Ok(Ok(ips)) => ips,
                };
                &resolved
            }
        };
        let mut vetted = Vec::with_capacity(ips.len());
        let mut first_refusal = None;
        for &ip in ips {
            let addr = SocketAddr::new(ip, target.port);
            if self.policy.refuses_address(ip, target.port) {
                first_refusal.get_or_insert(Denial::DenylistedAddress(ip));
                continue;
            }
            match self.ip_policy.check(addr) {
                Ok(()) => vetted.push(addr),
                Err(class) => {
                    first_refusal.get_or_insert(Denial::Address { addr: ip, class });
                }
            }
        }
        if vetted.is_empty() {
            return Err(first_refusal.unwrap_or(Denial::NotFound));
        }
        Ok(vetted)
    }

    /// Dials vetted addresses in order until one answers, within the
    /// connect timeout overall. Sets `TCP_NODELAY`. Returns the stream and
    /// the address that answered.
    pub async fn dial(&self, addrs: &[SocketAddr]) -> Result<(TcpStream, SocketAddr), Denial> {
        let attempt = async {
            let mut last = Denial::Unreachable("no address".to_owned());
            for addr in addrs {
                match crate::dial::connect(*addr).await {
                    Ok(stream) => return Ok((stream, *addr)),
                    Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                        last = Denial::Refused;
                    }
                    Err(e) => last = Denial::Unreachable(e.kind().to_string()),
                }
            }
            Err(last)
        };
        match tokio::time::timeout(self.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(Denial::ConnectTimeout),
        }
    }
}
