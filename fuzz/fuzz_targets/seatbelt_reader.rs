//! Untrusted text into the SBPL reader and evaluator and the violation log
//! parser: nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    seatbelt_profile::fuzzing::untrusted_text(data);
});
