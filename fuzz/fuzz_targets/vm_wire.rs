//! The microvm channel, both ways: the host reads what a guest wrote (a
//! guest taken over may write anything), the agent reads the host's. Never
//! panic, keep the limits, and what decodes encodes back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::vm_wire::{
    FrameReader, FromGuest, MAX_DATA, MAX_FROM_GUEST_LEN, MAX_TO_GUEST_LEN, ToGuest,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = FromGuest::decode(data) {
        assert!(data.len() <= MAX_FROM_GUEST_LEN);
        assert_eq!(&m.encode()[4..], data);
        if let FromGuest::Stdout { data, .. } | FromGuest::TcpData { data, .. } = &m {
            assert!(data.len() <= MAX_DATA);
        }
    }
    if let Ok(m) = ToGuest::decode(data) {
        assert!(data.len() <= MAX_TO_GUEST_LEN);
        assert_eq!(&m.encode()[4..], data);
    }
    let mut frames = FrameReader::new(MAX_FROM_GUEST_LEN);
    for chunk in data.chunks(5) {
        frames.push(chunk);
        while let Ok(Some(body)) = frames.next_body() {
            assert!(body.len() <= MAX_FROM_GUEST_LEN);
            let _ = FromGuest::decode(&body);
        }
    }
});
