//! The SOCKS5 greeting and request parsers never panic, whole or byte by
//! byte, and never claim more bytes than they were given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    connect_proxy::fuzzing::socks_handshake(data);
});
