//! The push rule's pack reader and fast-forward walk: see `push_rule::fuzzing::pack_walk`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    push_rule::fuzzing::pack_walk(data);
});
