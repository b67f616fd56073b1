//! The broker's git pkt-line reader: see `cred_broker::git_fuzzing::pktline`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::git_fuzzing::pktline(data);
});
