//! Leaf certificates from the session CA: minting for a host not seen
//! before (cold) and serving one from the cache (cached). The target is
//! a new host's leaf in under 1 ms.

// A bench is a test harness: a bad fixture should stop it loudly, and
// criterion's macros generate undocumented items.
#![allow(
    clippy::unwrap_used,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use cred_broker::SessionCa;
use criterion::{Criterion, black_box, criterion_group, criterion_main};
use std::time::SystemTime;

fn leaf_mint(c: &mut Criterion) {
    let ca = SessionCa::builder("bench")
        .cache_capacity(1024)
        .build()
        .unwrap();
    let now = SystemTime::now();
    let mut group = c.benchmark_group("leaf_mint");
    let mut n = 0u64;
    group.bench_function("cold", |b| {
        b.iter(|| {
            n += 1;
            let host = format!("h{n}.example.com");
            black_box(ca.leaf(&host, now).unwrap())
        })
    });
    ca.leaf("api.example.com", now).unwrap();
    group.bench_function("cached", |b| {
        b.iter(|| black_box(ca.leaf(black_box("api.example.com"), now).unwrap()))
    });
    group.finish();
    c.bench_function("session_ca_build", |b| {
        b.iter(|| black_box(SessionCa::builder("bench").build().unwrap()))
    });
}

criterion_group!(benches, leaf_mint);
criterion_main!(benches);
