//! The push rule's pkt-line reader: see `push_rule::fuzzing::pktline`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    push_rule::fuzzing::pktline(data);
});
