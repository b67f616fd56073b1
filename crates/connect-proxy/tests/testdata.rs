//! Runs every behaviour table under `testdata/`: canonical hosts, entry
//! loading, matching, address classes and the egress gate (with a resolver
//! that counts lookups).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

use connect_proxy::{
    AllowList, Baseline, Cidr, Denial, Egress, ErrorKind, Host, IpPolicy, Network, Pattern,
    StaticResolver, Target, Verdict, classify,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn load<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    #[derive(Deserialize)]
    struct File<T> {
        case: Vec<T>,
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let file: File<T> = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!file.case.is_empty(), "{name} has no cases");
    file.case
}

fn variant<T: std::fmt::Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    s.split([' ', '(', '{']).next().unwrap().to_owned()
}

#[derive(Deserialize)]
struct Canonical {
    intent: String,
    input: String,
    #[serde(default)]
    mode: Option<String>,
    expect: Option<String>,
    error: Option<String>,
}

#[test]
fn canonical_hosts() {
    for c in load::<Canonical>("canonical.toml") {
        let got = match c.mode.as_deref() {
            Some("config") => Host::parse_config(&c.input),
            _ => Host::parse_wire(&c.input),
        };
        match (&c.expect, &c.error, got) {
            (Some(want), None, Ok(h)) => assert_eq!(&h.to_string(), want, "{}", c.intent),
            (None, Some(want), Err(e)) => match e.kind() {
                ErrorKind::InvalidHost { problem, .. } => {
                    assert_eq!(&variant(problem), want, "{}", c.intent)
                }
                other => panic!("{}: unexpected error {other:?}", c.intent),
            },
            (_, _, got) => panic!("{}: got {got:?}", c.intent),
        }
    }
}

#[derive(Deserialize)]
struct LoadCase {
    intent: String,
    entry: String,
    error: Option<String>,
    ok: Option<String>,
}

#[test]
fn entry_loading() {
    for c in load::<LoadCase>("load_errors.toml") {
        let got = Pattern::parse(&c.entry);
        match (&c.ok, &c.error, got) {
            (Some(want), None, Ok(p)) => assert_eq!(&p.to_string(), want, "{}", c.intent),
            (None, Some(want), Err(e)) => {
                assert_eq!(&variant(e.kind()), want, "{}: {e}", c.intent);
                // The builder refuses the same entry with the same kind.
                let built = AllowList::builder().allow(c.entry.clone()).build();
                assert_eq!(built.unwrap_err().kind(), e.kind(), "{}", c.intent);
            }
            (_, _, got) => panic!("{}: got {got:?}", c.intent),
        }
    }
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz-regressions");
    type Run = fn(&[u8]);
    let targets: [(&str, Run); 3] = [
        ("request_head", connect_proxy::fuzzing::request_head),
        ("socks_handshake", connect_proxy::fuzzing::socks_handshake),
        ("host", connect_proxy::fuzzing::host),
    ];
    for (dir, run) in targets {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            run(&bytes);
        }
    }
}
