//! Path-set resolution and spec loading never panic on arbitrary input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::{FakeHost, Os, PathSet, SandboxSpec};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let mut host = FakeHost::new(Os::MacOs);
        host.symlink("/tmp", "/private/tmp")
            .symlink("/loop", "/loop")
            .file("/private/tmp/x");
        let _ = PathSet::resolve(text.split('\n'), Path::new("/Users/u"), &host);
        if let Ok(spec) = serde_json::from_str::<SandboxSpec>(text) {
            let _ = spec.validate();
        }
    }
});
