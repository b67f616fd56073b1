//! AllowList decisions at 10 entries and at 10,000 entries: the cost must
//! not grow with the list (lookups are indexed by label).

// A bench is a test harness: a bad fixture should stop it loudly, and
// criterion's macros generate undocumented items.
#![allow(
    clippy::unwrap_used,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use connect_proxy::{AllowList, Baseline, Host};
use criterion::{BenchmarkId, Criterion, black_box, criterion_group, criterion_main};

fn list(entries: usize) -> AllowList {
    let mut b = AllowList::builder();
    b.baseline(Baseline::Include);
    for i in 0..entries {
        match i % 3 {
            0 => b.allow(format!("api{i}.service{i}.example.com")),
            1 => b.allow(format!("*.tenant{i}.example.net")),
            _ => b.allow(format!("edge.*.region{i}.example.org:443")),
        };
    }
    b.build().unwrap()
}

fn decide(c: &mut Criterion) {
    let hosts = [
        ("exact-hit", "api9999.service9999.example.com"),
        ("suffix-hit", "a.b.tenant9997.example.net"),
        ("middle-hit", "edge.x.region9998.example.org"),
        ("miss", "www.unlisted.example.io"),
        ("denylisted", "metadata.google.internal"),
    ];
    let mut group = c.benchmark_group("allowlist_decide");
    for entries in [10usize, 10_000] {
        let list = list(entries);
        for (name, host) in hosts {
            let host = Host::parse_wire(host).unwrap();
            group.bench_with_input(BenchmarkId::new(name, entries), &host, |b, h| {
                b.iter(|| list.decide(black_box(h), black_box(443)))
            });
        }
    }
    group.finish();
    let host = "API9999.Service9999.Example.COM.";
    c.bench_function("canonical_host_parse", |b| {
        b.iter(|| Host::parse_wire(black_box(host)))
    });
}

criterion_group!(benches, decide);
criterion_main!(benches);
