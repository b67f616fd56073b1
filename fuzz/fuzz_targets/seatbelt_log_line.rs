//! Lines of `log stream --style ndjson` (bytes from the system log, partly
//! written by the sandboxed program through the paths it touches): never
//! panic; a denial wrapped in an entry with arbitrary other fields reads
//! back with its action and target.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seatbelt_profile::{MAX_LOG_STREAM_LINE, parse_log_stream_line};

const TAG: &str = "agent-sandbox-7-0";

fuzz_target!(|data: &[u8]| {
    if let Some(v) = parse_log_stream_line(data, TAG) {
        assert!(data.len() <= MAX_LOG_STREAM_LINE);
        assert!(!v.action.is_empty());
    }
    // The bytes as a target path inside a well-formed entry.
    let target = String::from_utf8_lossy(data).replace(['\n', '\r'], " ");
    let target = target.trim();
    if target.is_empty() || target.len() > 1024 {
        return;
    }
    let message = format!("Sandbox: sh(12) deny(1) file-read-data {target} {TAG}");
    let entry = serde_json::json!({
        "eventMessage": message,
        "processImagePath": "/kernel",
        "extra": [target, {"nested": target}],
    });
    let line = serde_json::to_vec(&entry).unwrap_or_default();
    let v = parse_log_stream_line(&line, TAG).expect("a well-formed denial parses");
    assert_eq!(v.action, "file-read-data");
    assert_eq!(v.target, target);
});
