//! The broker's request parser (net-vocab's head reader, then the broker's
//! own checks and body framing): slicing never changes the result, and
//! every request read re-frames into bytes that read back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::fuzzing::request_head(data);
});
