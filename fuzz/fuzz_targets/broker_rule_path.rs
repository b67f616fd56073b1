//! The rules' path normal form: it never grows a path and is a fixed
//! point.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    cred_broker::fuzzing::rule_path(data);
});
