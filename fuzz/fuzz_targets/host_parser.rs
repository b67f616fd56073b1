//! Host canonicalisation, connect targets and host patterns never panic,
//! canonical forms are fixed points and a pattern matches the hosts it is
//! written for; the allowlist's label index answers as the pattern does.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    net_vocab::fuzzing::host(data);
    connect_proxy::fuzzing::allowlist(data);
});
