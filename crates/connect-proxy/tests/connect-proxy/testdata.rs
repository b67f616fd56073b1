//! Runs every behaviour table under `testdata/`: matching, address
//! classes and the egress gate (with a resolver that counts lookups); the
//! label index against the host-pattern matcher it stands for; the fuzz
//! regressions.

use connect_proxy::{
    AllowList, Baseline, Cidr, Denial, Egress, ErrorKind, Host, HostPattern, IpPolicy, Network,
    StaticResolver, Target, Verdict, classify,
};
use proptest::prelude::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn load<T: serde::de::DeserializeOwned>(name: &str) -> Vec<T> {
    test_support::cases::load(test_support::testdata_dir!(), name)
}

fn variant<T: std::fmt::Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    s.split([' ', '(', '{']).next().unwrap().to_owned()
}

fn list(allow: &[String], deny: &[String], baseline: bool, network: Option<&str>) -> AllowList {
    let mut b = AllowList::builder();
    b.baseline(if baseline {
        Baseline::Include
    } else {
        Baseline::Exclude
    })
    .network(match network {
        Some("off") => Network::Disabled,
        _ => Network::Enabled,
    })
    .allow_all(allow.iter().cloned());
    for d in deny {
        b.deny(d.clone());
    }
    b.build().unwrap()
}

#[derive(Deserialize)]
struct MatchCase {
    intent: String,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    baseline: bool,
    network: Option<String>,
    host: String,
    port: Option<u16>,
    expect: String,
}

#[test]
fn matching() {
    for c in load::<MatchCase>("matching.toml") {
        let l = list(&c.allow, &c.deny, c.baseline, c.network.as_deref());
        let got = match l.decide_str(&c.host, c.port.unwrap_or(443)) {
            Verdict::Allow => "allow".to_owned(),
            Verdict::Deny(r) => {
                let v = variant(&r);
                match v.as_str() {
                    "NotAllowed" => "not-allowed".to_owned(),
                    "Denylisted" => "denylisted".to_owned(),
                    "NetworkDisabled" => "network-disabled".to_owned(),
                    "InvalidHost" => "invalid-host".to_owned(),
                    _ => v,
                }
            }
            other => format!("{other:?}"),
        };
        assert_eq!(got, c.expect, "{}", c.intent);
    }
}

#[derive(Deserialize)]
struct AddrCase {
    intent: String,
    addr: IpAddr,
    class: String,
    #[serde(default)]
    allow_cidr: Vec<String>,
    allowed: bool,
}

#[test]
fn address_classes() {
    for c in load::<AddrCase>("addresses.toml") {
        assert_eq!(variant(&classify(c.addr)), c.class, "{}", c.intent);
        let mut policy = IpPolicy::new();
        for cidr in &c.allow_cidr {
            policy.allow_cidr(cidr.parse::<Cidr>().unwrap());
        }
        let got = policy.check(SocketAddr::new(c.addr, 443));
        assert_eq!(got.is_ok(), c.allowed, "{}: {got:?}", c.intent);
    }
}

#[derive(Deserialize)]
struct EgressCase {
    intent: String,
    #[serde(default)]
    allow: Vec<String>,
    network: Option<String>,
    #[serde(default)]
    allow_cidr: Vec<String>,
    #[serde(default)]
    resolve: BTreeMap<String, Vec<IpAddr>>,
    #[serde(default)]
    stall: Vec<String>,
    target: String,
    expect: String,
    #[serde(default)]
    vetted: Vec<SocketAddr>,
    lookups: usize,
}

#[test]
fn egress_gate() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for c in load::<EgressCase>("egress.toml") {
        let resolver = Arc::new(StaticResolver::new());
        for (name, addrs) in &c.resolve {
            resolver.insert(name, addrs.iter().copied());
        }
        for name in &c.stall {
            resolver.stall(name);
        }
        let mut ip = IpPolicy::new();
        for cidr in &c.allow_cidr {
            ip.allow_cidr(cidr.parse().unwrap());
        }
        let policy = Arc::new(list(&c.allow, &[], false, c.network.as_deref()));
        let gate = Egress::new(
            policy,
            ip,
            resolver.clone(),
            Duration::from_millis(50),
            Duration::from_secs(1),
        );
        let target = Target::parse_authority(&c.target).unwrap();
        let got = rt.block_on(gate.vet(&target));
        let label = match &got {
            Ok(_) => "ok".to_owned(),
            Err(Denial::Policy(_)) => "policy".to_owned(),
            Err(Denial::Address { class, .. }) => format!("address:{}", variant(class)),
            Err(Denial::DenylistedAddress(_)) => "denylisted-address".to_owned(),
            Err(Denial::NotFound) => "not-found".to_owned(),
            Err(Denial::DnsTimeout) => "dns-timeout".to_owned(),
            Err(other) => format!("{other:?}"),
        };
        assert_eq!(label, c.expect, "{}", c.intent);
        if let Ok(addrs) = got {
            assert_eq!(addrs, c.vetted, "{}", c.intent);
        }
        assert_eq!(resolver.lookups(), c.lookups, "{}: lookups", c.intent);
    }
}

/// Inputs that once crashed a fuzz target stay fixed.
#[test]
fn fuzz_regressions() {
    let replayed = test_support::cases::replay_fuzz_regressions(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("request_head", connect_proxy::fuzzing::request_head),
            ("socks_handshake", connect_proxy::fuzzing::socks_handshake),
            ("allowlist", connect_proxy::fuzzing::allowlist),
        ],
    );
    assert!(replayed > 0, "no fuzz regressions replayed");
}

#[test]
fn entries_the_builder_refuses_carry_the_pattern_error() {
    for entry in [
        "*.*.example.com",
        "fd00::1",
        "https://api.example.com",
        "example.123",
        "api.example.com:0",
        "*.com",
    ] {
        let want = HostPattern::parse(entry).unwrap_err();
        for side in ["allow", "deny"] {
            let mut b = AllowList::builder();
            if side == "allow" {
                b.allow(entry);
            } else {
                b.deny(entry);
            }
            let got = b.build().unwrap_err();
            match got.kind() {
                ErrorKind::InvalidEntry { reason } => assert_eq!(reason, &want, "{entry}"),
                other => panic!("{entry} ({side}): {other:?}"),
            }
            assert!(got.to_string().contains(&want.to_string()), "{got}");
        }
    }
}

/// The sources of the UTS #46 conformance file (`net-vocab`'s copy) that
/// need no unescaping.
fn idna_sources() -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../net-vocab/testdata/idna/IdnaTestV2.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter_map(|line| line.split('#').next())
        .filter_map(|data| data.split(';').next())
        .map(str::trim)
        .filter(|source| !source.is_empty() && !source.contains('\\'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn internationalised_entries_through_the_label_index() {
    // Every conformance source as an entry: the index answers as the
    // pattern's own matcher for the hosts it is written for.
    let sources = idna_sources();
    assert!(sources.len() > 2500, "only {} sources", sources.len());
    for source in &sources {
        connect_proxy::fuzzing::allowlist(source.as_bytes());
        connect_proxy::fuzzing::allowlist(format!("*.{source}").as_bytes());
    }
}

/// Entries and hosts over a few labels, so that they often meet.
fn label() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a", "b", "x", "example", "com", "org", "0"])
}

fn entry() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(label(), 1..5),
        any::<prop::sample::Index>(),
        any::<bool>(),
        prop::sample::select(vec!["", ":443", ":80"]),
    )
        .prop_map(|(mut labels, at, star, port)| {
            if star {
                let i = at.index(labels.len());
                labels[i] = "*";
            }
            format!("{}{port}", labels.join("."))
        })
}

proptest! {
    #[test]
    fn the_label_index_answers_as_the_matcher(
        entry in entry(),
        host in prop::collection::vec(label(), 1..6),
        port in prop::sample::select(vec![443u16, 80, 8080]),
    ) {
        let Ok(pattern) = HostPattern::parse(&entry) else {
            return Ok(());
        };
        let Ok(host) = Host::parse_wire(&host.join(".")) else {
            return Ok(());
        };
        agrees_with_the_matcher(&entry, &pattern, &host, port)?;
    }
}

/// An allowlist of `entry` alone decides `host:port` as `pattern` matches it.
fn agrees_with_the_matcher(
    entry: &str,
    pattern: &HostPattern,
    host: &Host,
    port: u16,
) -> Result<(), TestCaseError> {
    let list = AllowList::builder()
        .baseline(Baseline::Exclude)
        .allow(entry.to_owned())
        .build()
        .unwrap();
    let want = if pattern.matches_target(&Target::new(host.clone(), port)) {
        Verdict::Allow
    } else {
        Verdict::Deny(connect_proxy::DenyReason::NotAllowed)
    };
    prop_assert_eq!(
        list.decide(host, port),
        want,
        "{} on {}:{}",
        entry,
        host,
        port
    );
    Ok(())
}

/// Address literals that meet: plain, IPv4-mapped, loopback and not.
fn address() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "127.0.0.1",
        "10.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:10.0.0.1]",
        "[2001:db8::1]",
    ])
}

proptest! {
    #[test]
    fn the_address_index_answers_as_the_matcher(
        entry in address(),
        entry_port in prop::sample::select(vec!["", ":443", ":80"]),
        host in address(),
        port in prop::sample::select(vec![443u16, 80]),
    ) {
        let entry = format!("{entry}{entry_port}");
        let pattern = HostPattern::parse(&entry).unwrap();
        let host = Host::parse_wire(host.trim_start_matches('[').trim_end_matches(']')).unwrap();
        agrees_with_the_matcher(&entry, &pattern, &host, port)?;
    }
}
