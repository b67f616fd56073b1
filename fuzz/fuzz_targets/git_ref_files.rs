//! A workspace layer's loose and packed ref files (written by a sandboxed
//! run, read by the host at collect): never panic, and an id read is one
//! of the format.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| push_rule::fuzzing::ref_files(data));
