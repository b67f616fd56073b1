//! The two NetworkPolicies: the agent pod reaches only the egress pod's
//! proxy ports; the egress pod takes connections only from the agent pod
//! and reaches the Internet without the private, link-local and metadata
//! ranges, plus the cluster's DNS.

use crate::profile::ClusterProfile;
use serde_json::{Value, json};

/// IPv4 ranges the egress pod may never reach: this network, private,
/// shared address space (CGNAT, also Alibaba's metadata address),
/// loopback, link-local (the cloud metadata endpoints), IETF protocol
/// assignments, benchmarking, multicast and reserved.
pub const EXCEPT_V4: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
];

/// IPv6 ranges the egress pod may never reach: unspecified and loopback,
/// IPv4-mapped, NAT64, discard, Teredo, 6to4 (each can carry a private
/// IPv4 address), unique local (AWS's IPv6 metadata address among them),
/// link-local and multicast.
pub const EXCEPT_V6: &[&str] = &[
    "::/127",
    "::ffff:0:0/96",
    "64:ff9b::/96",
    "100::/64",
    "2001::/32",
    "2002::/16",
    "fc00::/7",
    "fe80::/10",
    "ff00::/8",
];

fn tcp_ports(profile: &ClusterProfile) -> Value {
    json!([
        {"protocol": "TCP", "port": profile.http_port},
        {"protocol": "TCP", "port": profile.socks_port},
    ])
}

/// The agent pod's policy: no ingress; egress to the egress pod's proxy
/// ports only (no DNS: the proxies resolve names).
pub(crate) fn agent_spec(profile: &ClusterProfile, agent: &Value, egress: &Value) -> Value {
    json!({
        "podSelector": {"matchLabels": agent},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [],
        "egress": [{
            "to": [{"podSelector": {"matchLabels": egress}}],
            "ports": tcp_ports(profile),
        }],
    })
}

/// The egress pod's policy: ingress from the agent pod on the proxy ports;
/// egress to public addresses, and to the cluster DNS.
pub(crate) fn egress_spec(profile: &ClusterProfile, agent: &Value, egress: &Value) -> Value {
    json!({
        "podSelector": {"matchLabels": egress},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{
            "from": [{"podSelector": {"matchLabels": agent}}],
            "ports": tcp_ports(profile),
        }],
        "egress": [
            {"to": [
                {"ipBlock": {"cidr": "0.0.0.0/0", "except": EXCEPT_V4}},
                {"ipBlock": {"cidr": "::/0", "except": EXCEPT_V6}},
            ]},
            {
                "to": [{
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                }],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            },
        ],
    })
}
