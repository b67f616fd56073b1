//! The readers of a process stamp: a `/proc/PID/stat` line (whose command
//! name another process chose) and a session directory's owner record.
//! Never panic, keep their limits, and a stamp read back is the stamp.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::ProcessStamp;

fuzz_target!(|data: &[u8]| {
    if let Some(s) = ProcessStamp::from_stat(1, data) {
        assert!(data.len() <= sandbox_core::MAX_PROC_STAT_LEN);
        assert_eq!(s.pid, 1);
    }
    if let Some(s) = ProcessStamp::parse(data) {
        assert!(data.len() <= sandbox_core::MAX_STAMP_LEN);
        assert_eq!(ProcessStamp::parse(s.to_string().as_bytes()), Some(s));
    }
});
