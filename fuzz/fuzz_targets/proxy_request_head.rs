//! The HTTP proxy's handling of a read request head (CONNECT authority,
//! absolute-form target and Host agreement) never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    connect_proxy::fuzzing::request_head(data);
});
