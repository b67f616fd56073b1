//! Host canonicalisation and allowlist entries never panic, and canonical
//! forms are fixed points.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    connect_proxy::fuzzing::host(data);
});
