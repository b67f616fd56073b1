//! A sandbox-runtime settings file read as our policy never panics, and
//! every path of a policy it gives is absolute.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::srt::SrtPolicy;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(p) = SrtPolicy::parse(text, Path::new("/w/proj"), Path::new("/home/u"))
    {
        for path in p.writable.iter().chain(&p.read_deny).chain(&p.protect) {
            assert!(path.starts_with('/'), "{path}");
        }
    }
});
