//! The broker's request parser: slicing never changes the result, and every
//! request read re-frames into bytes that read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::fuzzing::request_head(data);
});
