//! The HTTP proxy's request-head parser and target handling never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    connect_proxy::fuzzing::request_head(data);
});
