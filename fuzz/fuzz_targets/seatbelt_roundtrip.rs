//! Builds a dispatch profile from fuzz bytes, renders it, reads it back:
//! the same rules must come out and compile.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(why) = seatbelt_profile::fuzzing::render_read_back(data) {
        panic!("{why}");
    }
});
