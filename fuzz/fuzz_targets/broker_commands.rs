//! The broker's receive-pack command-list parser: see `cred_broker::git_fuzzing::commands`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::git_fuzzing::commands(data);
});
