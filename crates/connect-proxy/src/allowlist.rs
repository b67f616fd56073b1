//! `AllowList`: compiled once from baseline, GitHub and spec entries, then
//! asked many times. Lookups are indexed by label, so a decision costs a few
//! hash lookups per label of the host, whatever the number of entries.

use crate::baseline::{
    BASELINE_GIT_HOSTING, BASELINE_LLM_PROVIDERS, BASELINE_PACKAGE_REGISTRIES, DENYLIST, GITHUB,
};
use crate::error::Error;
use crate::index::{Hit, Index, Side};
use crate::policy::{DenyReason, EgressPolicy, Verdict};
use net_vocab::{Host, HostPattern, Target};
use sandbox_core::SandboxSpec;
use std::net::IpAddr;

/// Whether the curated baseline sets (LLM providers, Git hosting, package
/// registries, GitHub) are part of the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Baseline {
    /// Include the baseline sets (the default).
    #[default]
    Include,
    /// Only the entries given with [`AllowListBuilder::allow`].
    Exclude,
}

/// Whether the session has network access at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Network {
    /// Decisions follow the list (the default).
    #[default]
    Enabled,
    /// Every connection is denied; the proxies still run.
    Disabled,
}

impl Network {
    /// `Enabled` for true, `Disabled` for false (the spec's
    /// `network_enabled`).
    pub fn from_enabled(enabled: bool) -> Network {
        if enabled {
            Network::Enabled
        } else {
            Network::Disabled
        }
    }
}

/// The session's egress allowlist, compiled once.
///
/// The fixed [`DENYLIST`] is checked first and beats every allow entry;
/// then the allow entries; everything else is denied. With
/// [`Network::Disabled`] every decision is a denial.
///
/// ```
/// use connect_proxy::{AllowList, Baseline, DenyReason, Verdict};
/// let list = AllowList::builder()
///     .baseline(Baseline::Exclude)
///     .allow("*.example.com")
///     .allow("bedrock.*.amazonaws.com:443")
///     .build()
///     .unwrap();
/// assert_eq!(list.decide_str("a.b.example.com", 443), Verdict::Allow);
/// assert_eq!(list.decide_str("example.com", 443), Verdict::Deny(DenyReason::NotAllowed));
/// assert_eq!(list.decide_str("bedrock.us-east-1.amazonaws.com", 443), Verdict::Allow);
/// assert_eq!(
///     list.decide_str("bedrock.evil.attacker.amazonaws.com", 443),
///     Verdict::Deny(DenyReason::NotAllowed),
/// );
/// assert_eq!(list.decide_str("169.254.169.254", 80), Verdict::Deny(DenyReason::Denylisted));
/// ```
#[derive(Clone, Debug)]
pub struct AllowList {
    network: Network,
    index: Index,
}

/// Collects entries for an [`AllowList`]; [`AllowListBuilder::build`]
/// checks them all and reports the first bad one.
#[derive(Clone, Debug, Default)]
pub struct AllowListBuilder {
    baseline: Baseline,
    network: Network,
    allow: Vec<String>,
    deny: Vec<String>,
}

impl AllowListBuilder {
    /// Includes or excludes the baseline sets.
    pub fn baseline(&mut self, baseline: Baseline) -> &mut Self {
        self.baseline = baseline;
        self
    }

    /// Enables or disables the network for the session.
    pub fn network(&mut self, network: Network) -> &mut Self {
        self.network = network;
        self
    }

    /// Adds an allow entry.
    pub fn allow(&mut self, entry: impl Into<String>) -> &mut Self {
        self.allow.push(entry.into());
        self
    }

    /// Adds allow entries.
    pub fn allow_all<I, S>(&mut self, entries: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allow.extend(entries.into_iter().map(Into::into));
        self
    }

    /// Adds a deny entry, on top of the fixed [`DENYLIST`].
    pub fn deny(&mut self, entry: impl Into<String>) -> &mut Self {
        self.deny.push(entry.into());
        self
    }

    /// Checks every entry and compiles the list.
    pub fn build(&self) -> Result<AllowList, Error> {
        let mut index = Index::default();
        for entry in DENYLIST
            .iter()
            .copied()
            .chain(self.deny.iter().map(String::as_str))
        {
            index.insert(&HostPattern::parse(entry)?, Side::Deny);
        }
        let baseline: &[&[&str]] = match self.baseline {
            Baseline::Include => &[
                BASELINE_LLM_PROVIDERS,
                BASELINE_GIT_HOSTING,
                BASELINE_PACKAGE_REGISTRIES,
                GITHUB,
            ],
            Baseline::Exclude => &[],
        };
        let base = baseline.iter().flat_map(|set| set.iter().copied());
        for entry in base.chain(self.allow.iter().map(String::as_str)) {
            let pattern = HostPattern::parse(entry)?;
            if self.network == Network::Enabled {
                index.insert(&pattern, Side::Allow);
            }
        }
        Ok(AllowList {
            network: self.network,
            index,
        })
    }
}

impl AllowList {
    /// A builder: baseline included, network enabled, no extra entries.
    pub fn builder() -> AllowListBuilder {
        AllowListBuilder::default()
    }

    /// A list that denies everything.
    pub fn deny_all() -> AllowList {
        AllowList {
            network: Network::Disabled,
            index: Index::default(),
        }
    }

    /// The list a spec asks for: the baseline, GitHub and the spec's
    /// `egress_allowlist`; empty when `network_enabled` is false.
    pub fn for_spec(spec: &SandboxSpec) -> Result<AllowList, Error> {
        AllowList::builder()
            .network(Network::from_enabled(spec.network_enabled))
            .allow_all(spec.egress_allowlist.iter().cloned())
            .build()
    }

    /// Number of allow entries compiled (0 when the network is disabled).
    pub fn len(&self) -> usize {
        self.index.allow_len()
    }

    /// True when nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.index.allow_len() == 0 || self.network == Network::Disabled
    }

    /// Decides for a canonical host and port.
    pub fn decide(&self, host: &Host, port: u16) -> Verdict {
        if self.network == Network::Disabled {
            return Verdict::Deny(DenyReason::NetworkDisabled);
        }
        match self.index.lookup(host, port) {
            Hit::Deny => Verdict::Deny(DenyReason::Denylisted),
            Hit::Allow => Verdict::Allow,
            Hit::None => Verdict::Deny(DenyReason::NotAllowed),
        }
    }

    /// Parses `host` in wire form and decides; a host that does not parse
    /// is denied with [`DenyReason::InvalidHost`].
    pub fn decide_str(&self, host: &str, port: u16) -> Verdict {
        match Host::parse_wire(host) {
            Ok(h) => self.decide(&h, port),
            Err(_) => Verdict::Deny(DenyReason::InvalidHost),
        }
    }

    /// True when a resolved address is on the denylist.
    pub fn denylists_address(&self, ip: IpAddr, port: u16) -> bool {
        self.index.denies_ip(ip, port)
    }
}

impl EgressPolicy for AllowList {
    fn decide(&self, target: &Target) -> Verdict {
        AllowList::decide(self, &target.host, target.port)
    }

    fn refuses_address(&self, ip: IpAddr, port: u16) -> bool {
        self.denylists_address(ip, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn leading_wildcard_never_matches_the_apex(
            sub in "[a-z]{1,8}(\\.[a-z]{1,8}){0,3}",
            base in "[a-z]{1,8}\\.[a-z]{2,6}",
        ) {
            let list = AllowList::builder()
                .baseline(Baseline::Exclude)
                .allow(format!("*.{base}"))
                .build()
                .unwrap();
            prop_assert_eq!(list.decide_str(&format!("{sub}.{base}"), 443), Verdict::Allow);
            prop_assert_eq!(list.decide_str(&base, 443), Verdict::Deny(DenyReason::NotAllowed));
        }

        #[test]
        fn middle_wildcard_takes_exactly_one_label(
            label in "[a-z0-9]{1,8}",
            extra in "[a-z0-9]{1,8}",
        ) {
            let list = AllowList::builder()
                .baseline(Baseline::Exclude)
                .allow("edge.*.example.com")
                .build()
                .unwrap();
            let one = format!("edge.{label}.example.com");
            let two = format!("edge.{label}.{extra}.example.com");
            prop_assert_eq!(list.decide_str(&one, 443), Verdict::Allow);
            prop_assert_eq!(list.decide_str(&two, 443), Verdict::Deny(DenyReason::NotAllowed));
        }

        #[test]
        fn exact_entries_match_any_case_and_a_trailing_dot(name in "[a-z]{1,10}\\.[a-z]{2,6}") {
            let list = AllowList::builder()
                .baseline(Baseline::Exclude)
                .allow(name.clone())
                .build()
                .unwrap();
            prop_assert_eq!(list.decide_str(&format!("{}.", name.to_uppercase()), 80), Verdict::Allow);
        }
    }
}
