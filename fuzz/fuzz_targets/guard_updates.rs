//! The rules a running name guard reads while it runs: never panic, keep
//! the line limit, and every accepted update writes back to its own line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::{MAX_UPDATE_LINE, UpdateReader};

fuzz_target!(|data: &[u8]| {
    let mut reader = UpdateReader::new();
    for chunk in data.chunks(11) {
        for update in reader.feed(chunk).into_iter().flatten() {
            let line = update.to_line();
            assert!(line.is_some_and(|l| l.len() <= MAX_UPDATE_LINE + 1));
        }
    }
});
