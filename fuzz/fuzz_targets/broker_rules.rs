//! The broker's rule-file loader (TOML and JSON) and rule compiler never
//! panic, and a loaded file written back loads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::fuzzing::rules(data);
});
