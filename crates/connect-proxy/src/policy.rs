//! The egress decision trait the proxies ask before any lookup.

use net_vocab::Target;
use std::fmt;
use std::net::IpAddr;

/// Why a name-level policy denied a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DenyReason {
    /// The session's network is disabled.
    NetworkDisabled,
    /// The target is on the fixed or configured denylist.
    Denylisted,
    /// No allow entry matches.
    NotAllowed,
    /// The host is not in the accepted grammar.
    InvalidHost,
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DenyReason::NetworkDisabled => "network is disabled for this session",
            DenyReason::Denylisted => "host is on the denylist",
            DenyReason::NotAllowed => "host is not in the allowlist",
            DenyReason::InvalidHost => "host is malformed",
        })
    }
}

/// A name-level decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// The target may be resolved and dialed (addresses are still vetted).
    Allow,
    /// The target is refused before any lookup.
    Deny(DenyReason),
}

/// "May this session reach `host:port`?"
///
/// The proxies ask [`EgressPolicy::decide`] before any DNS lookup, and
/// [`EgressPolicy::refuses_address`] for every resolved address (on top of
/// the [`crate::IpPolicy`]). [`crate::AllowList`] implements it; a host
/// program can wrap or replace it.
pub trait EgressPolicy: Send + Sync + 'static {
    /// The decision for a canonical target.
    fn decide(&self, target: &Target) -> Verdict;

    /// True when a resolved address must be refused whatever the IP policy
    /// says (for example a metadata address on the denylist).
    fn refuses_address(&self, ip: IpAddr, port: u16) -> bool {
        let _ = (ip, port);
        false
    }
}
