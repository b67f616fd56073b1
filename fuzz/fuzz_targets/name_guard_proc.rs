//! The name guard's readers of `/proc` text, which a sandboxed process
//! partly writes (its name) or makes large (its sockets): never panic,
//! keep their limits.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = name_guard::fuzzing::proc_stat(data);
    let _ = name_guard::fuzzing::proc_status(data);
    let _ = name_guard::fuzzing::proc_net_tcp(data);
});
