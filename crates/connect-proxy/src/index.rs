//! The label index behind [`crate::AllowList`]: allow and deny entries in
//! one table, keyed by exact name, by suffix (`*.x.y`) and by the parts
//! around a middle `*`. A decision walks the host's labels once and costs a
//! few hash lookups, whatever the number of entries.

use net_vocab::{Host, HostPattern, PatternShape};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::IpAddr;

/// A fast multiplicative hash for the index. Its keys come only from
/// configuration, never from clients, so a flooding-resistant hash buys
/// nothing here; clients only choose what is looked up.
#[derive(Clone, Copy, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

type Map<V> = HashMap<String, V, BuildHasherDefault<FxHasher>>;
type IpMap<V> = HashMap<IpAddr, V, BuildHasherDefault<FxHasher>>;

/// Ports an entry applies to.
#[derive(Clone, Debug, Default)]
struct Ports {
    any: bool,
    list: Vec<u16>,
}

impl Ports {
    fn add(&mut self, port: Option<u16>) {
        match port {
            None => self.any = true,
            Some(p) if !self.list.contains(&p) => self.list.push(p),
            Some(_) => {}
        }
    }

    fn admits(&self, port: u16) -> bool {
        self.any || self.list.contains(&port)
    }
}

/// What one key says, for allow and for deny.
#[derive(Clone, Debug, Default)]
struct Rule {
    allow: Ports,
    deny: Ports,
}

/// Which list an entry goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Allow,
    Deny,
}

/// The result of looking a host up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hit {
    None,
    Allow,
    Deny,
}

/// A bit per label count (1..=127) that some key of a map has, so lookups
/// for impossible lengths are skipped.
#[derive(Clone, Copy, Debug, Default)]
struct LabelCounts(u128);

impl LabelCounts {
    fn add(&mut self, key: &str) {
        let n = key.bytes().filter(|&b| b == b'.').count() + 1;
        self.0 |= 1u128 << n.min(127);
    }

    fn has(self, labels: usize) -> bool {
        labels < 128 && self.0 & (1u128 << labels) != 0
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Index {
    exact: Map<Rule>,
    /// Exact IP literals, apart from the names: an address is looked up as
    /// it is, never formatted as text first.
    exact_ip: IpMap<Rule>,
    suffix: Map<Rule>,
    suffix_counts: LabelCounts,
    middle: Map<Map<Rule>>,
    middle_counts: LabelCounts,
    allow_len: usize,
}

impl Index {
    /// Adds one entry. The index answers as [`HostPattern::matches_target`]
    /// would for every entry, with deny beating allow.
    pub(crate) fn insert(&mut self, pattern: &HostPattern, side: Side) {
        let rule = match pattern.shape() {
            PatternShape::Exact(Host::Ip(ip)) => self.exact_ip.entry(*ip).or_default(),
            PatternShape::Exact(Host::Name(name)) => self.exact.entry(name.clone()).or_default(),
            PatternShape::Suffix(s) => {
                self.suffix_counts.add(s);
                self.suffix.entry(s.to_owned()).or_default()
            }
            PatternShape::Middle { left, right } => {
                self.middle_counts.add(right);
                self.middle
                    .entry(right.to_owned())
                    .or_default()
                    .entry(left.to_owned())
                    .or_default()
            }
        };
        match side {
            Side::Allow => {
                self.allow_len += 1;
                rule.allow.add(pattern.port());
            }
            Side::Deny => rule.deny.add(pattern.port()),
        }
    }

    /// Number of allow entries inserted.
    pub(crate) fn allow_len(&self) -> usize {
        self.allow_len
    }

    /// Deny beats allow: any matching deny rule wins, else any allow rule.
    pub(crate) fn lookup(&self, host: &Host, port: u16) -> Hit {
        let mut allowed = false;
        let mut see = |rule: Option<&Rule>| -> bool {
            if let Some(r) = rule {
                if r.deny.admits(port) {
                    return true;
                }
                allowed |= r.allow.admits(port);
            }
            false
        };
        let denied = match host {
            Host::Ip(ip) => self.ip_rules(*ip).into_iter().any(&mut see),
            Host::Name(name) => self.name_rules(name, &mut see),
        };
        if denied {
            Hit::Deny
        } else if allowed {
            Hit::Allow
        } else {
            Hit::None
        }
    }

    /// True when a deny rule covers this address and port.
    pub(crate) fn denies_ip(&self, ip: IpAddr, port: u16) -> bool {
        self.ip_rules(ip)
            .into_iter()
            .flatten()
            .any(|r| r.deny.admits(port))
    }

    /// The exact rules for an address and, for an IPv4-mapped IPv6 address,
    /// for its IPv4 form.
    fn ip_rules(&self, ip: IpAddr) -> [Option<&Rule>; 2] {
        if self.exact_ip.is_empty() {
            return [None, None];
        }
        let mapped = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        [
            self.exact_ip.get(&ip),
            mapped.and_then(|m| self.exact_ip.get(&m)),
        ]
    }

    /// Feeds every rule that matches `name` to `see`; stops early when it
    /// returns true (a deny).
    fn name_rules(&self, name: &str, see: &mut impl FnMut(Option<&Rule>) -> bool) -> bool {
        if see(self.exact.get(name)) {
            return true;
        }
        let labels = name.bytes().filter(|&b| b == b'.').count() + 1;
        let mut prev: Option<usize> = None;
        for (i, (dot, _)) in name.match_indices('.').enumerate() {
            let right_labels = labels - i - 1;
            let right = &name[dot + 1..];
            if self.suffix_counts.has(right_labels) && see(self.suffix.get(right)) {
                return true;
            }
            if let Some(p) = prev
                && self.middle_counts.has(right_labels)
            {
                let by_left = self.middle.get(right);
                if see(by_left.and_then(|m| m.get(&name[..p]))) {
                    return true;
                }
            }
            prev = Some(dot);
        }
        false
    }
}
