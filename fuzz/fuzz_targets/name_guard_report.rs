//! The name guard's report lines (bytes that cross out of the sandbox) and
//! its rule and argument parsers: never panic; a formatted line reads back,
//! and so does a command line that parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use name_guard::{DeniedCall, Invocation, Rules, format_denial_line, parse_denial_line};
use sandbox_core::NameGuardInvocation;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

fuzz_target!(|data: &[u8]| {
    let _ = parse_denial_line(data);
    if let Some((&sel, rest)) = data.split_first() {
        let call = match sel % 9 {
            0 => DeniedCall::Open,
            1 => DeniedCall::Creat,
            2 => DeniedCall::Mknod,
            3 => DeniedCall::Rename,
            4 => DeniedCall::Link,
            5 => DeniedCall::Symlink,
            6 => DeniedCall::Mkdir,
            7 => DeniedCall::Bind,
            _ => DeniedCall::Connect,
        };
        let line = format_denial_line(call, rest);
        assert!(line.len() <= name_guard::MAX_REPORT_LINE);
        match parse_denial_line(&line) {
            Ok(d) => {
                assert_eq!(d.call, call);
                if line.len() < name_guard::MAX_REPORT_LINE - 16 {
                    assert_eq!(d.path, String::from_utf8_lossy(rest));
                }
            }
            Err(_) => assert!(rest.is_empty()),
        }
    }
    let text = String::from_utf8_lossy(data);
    let mut parts = text.split('\n');
    let rules: Vec<&str> = parts.by_ref().take(8).collect();
    if let Ok(r) = Rules::new(&rules) {
        for p in parts {
            let _ = r.denies_name(p.as_bytes());
            let _ = r.denies_path(p.as_bytes());
        }
    }
    let _ = Invocation::parse(text.split(' ').map(str::to_string));
    // Raw bytes, not only UTF-8: what parses is written back the same.
    let args = data
        .split(|&b| b == b' ')
        .map(|a| OsString::from_vec(a.to_vec()));
    if let Ok(line) = NameGuardInvocation::parse(args) {
        assert_eq!(NameGuardInvocation::parse(line.to_args()).ok(), Some(line));
    }
});
