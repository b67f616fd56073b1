//! The broker's pack reader and fast-forward walk: see `cred_broker::git_fuzzing::pack_walk`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::git_fuzzing::pack_walk(data);
});
