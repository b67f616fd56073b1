//! The warm session's framing, both ways: the init reads the host's
//! requests, the host reads replies a process inside the sandbox could
//! have written. Never panic, keep the limits, and what decodes encodes
//! back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::session_wire::{FrameReader, MAX_REPLY_LEN, MAX_REQUEST_LEN, Reply, Request};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = Request::decode(data) {
        assert!(data.len() <= MAX_REQUEST_LEN);
        assert_eq!(&r.encode()[4..], data);
    }
    if let Ok(r) = Reply::decode(data) {
        assert!(data.len() <= MAX_REPLY_LEN);
        assert_eq!(&r.encode()[4..], data);
    }
    let mut frames = FrameReader::new(MAX_REPLY_LEN);
    for chunk in data.chunks(7) {
        frames.push(chunk);
        while let Ok(Some(body)) = frames.next_body() {
            assert!(body.len() <= MAX_REPLY_LEN);
            let _ = Reply::decode(&body);
        }
    }
});
