//! The strict request-head reader never panics, gives the same answer
//! however the bytes arrive, and an accepted head written out again reads
//! back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    net_vocab::fuzzing::request_head(data);
});
