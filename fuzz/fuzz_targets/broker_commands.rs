//! The push rule's receive-pack command-list parser: see `push_rule::fuzzing::commands`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    push_rule::fuzzing::commands(data);
});
