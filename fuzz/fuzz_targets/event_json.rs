//! An event read from JSON never panics, and what was read is written
//! back and read again to the same event (output bytes exact).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::SandboxEvent;

fuzz_target!(|data: &[u8]| {
    if let Ok(ev) = serde_json::from_slice::<SandboxEvent>(data) {
        let json = serde_json::to_string(&ev).expect("an event always serialises");
        let back: SandboxEvent = serde_json::from_str(&json).expect("its own JSON reads back");
        assert_eq!(back, ev);
    }
    // Raw bytes as output: always back byte for byte.
    let out = SandboxEvent::Stdout {
        data: data.to_vec(),
    };
    let json = serde_json::to_string(&out).expect("output always serialises");
    let back: SandboxEvent = serde_json::from_str(&json).expect("its own JSON reads back");
    assert_eq!(back, out);
});
