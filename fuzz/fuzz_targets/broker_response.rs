//! Upstream response framing: never panics; slicing never changes where a
//! chunked body ends.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::fuzzing::response(data);
});
