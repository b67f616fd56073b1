//! NUL-separated `NAME=VALUE` records: parsing and the whole env-guard
//! pipeline never panic, and the output keeps its invariants.
#![no_main]

use env_guard::{EnvGuard, Inherit, ProxyEnv, parse_records, write_records};
use libfuzzer_sys::fuzz_target;
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    let Ok(records) = parse_records(data) else {
        return;
    };
    assert_eq!(
        parse_records(&write_records(&records)).ok(),
        Some(records.clone())
    );
    for inherit in [Inherit::Core, Inherit::All] {
        let mut builder = EnvGuard::builder();
        builder.inherit(inherit).proxy(ProxyEnv {
            http: ([127, 0, 0, 1], 3128).into(),
            socks: ([127, 0, 0, 1], 1080).into(),
        });
        let Ok(guard) = builder.build() else {
            return;
        };
        let out = guard.apply(records.iter().cloned());
        let names: HashSet<_> = out.vars.iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), out.vars.len());
        for (name, value) in &records {
            let kept = out.vars.iter().any(|(n, v)| n == name && v == value);
            assert!(kept || out.dropped.iter().any(|d| &d.name == name));
        }
    }
});
