//! The broker's chunked decoder: whole and byte-at-a-time decoding agree,
//! and a decoded body re-encoded decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::fuzzing::chunked(data);
});
