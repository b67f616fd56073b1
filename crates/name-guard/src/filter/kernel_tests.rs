//! The native program installed by the kernel: it accepts it, and a child
//! under it (with no supervisor listening) opens a file to read but cannot
//! make a directory.

use super::program;
use crate::sys::{self, ExitStatus};
use crate::syscalls::NATIVE;
use std::ffi::CString;

#[test]
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[cfg_attr(
    target_arch = "aarch64",
    ignore = "needs seccomp: qemu-user cannot provide it (on aarch64 hardware, run with --include-ignored)"
)]
fn the_kernel_runs_the_native_program() {
    let abi = NATIVE.expect("a native table");
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("x");
    // Exits 0 when the read succeeds and the mkdir fails.
    let argv: Vec<CString> = [
        "/bin/sh",
        "-c",
        "cat /dev/null && ! mkdir \"$0\" 2>&-",
        made.to_str().unwrap(),
    ]
    .into_iter()
    .map(|a| CString::new(a).unwrap())
    .collect();
    let (child, listener) = sys::spawn_filtered(
        &program(abi, sys::getpid(), super::Place::Bubblewrap),
        &argv,
        sys::Nesting::Bubblewrap,
        &[],
    )
    .unwrap();
    // No one answers: every notified call fails with ENOSYS.
    drop(listener);
    assert_eq!(sys::wait_child(child), Ok(ExitStatus::Code(0)));
    assert!(!made.exists());
}
