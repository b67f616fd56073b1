//! The raw system calls and ioctls the guard needs, in one place.
//!
//! Seccomp user notification, `process_vm_readv`, `fork`/`execvp`, file
//! descriptor passing and the `*at` calls the supervisor performs have no
//! safe wrapper in the dependencies this crate uses, so these modules call
//! them through `libc`: [`notify`] (the listener's ioctls), [`fs`] (the
//! calls performed for the guarded process), [`process`] (this process and
//! the guarded one: memory, capabilities, signals, waiting), [`spawn`] (the
//! fork that installs the filter and passes the listener back). Every
//! `unsafe` block carries a `SAFETY` comment; the functions exported from
//! here are safe to call and report failures as an `errno` value.
#![allow(
    unsafe_code,
    reason = "a system-call module of the guard: every block carries its SAFETY comment"
)]

mod fs;
mod notify;
mod process;
mod spawn;
#[cfg(target_os = "linux")]
pub(crate) mod trace;

pub(crate) use fs::{
    bind_raw, connect_raw, dup_cloexec, file_id, getdents, ipv6_only, is_fifo_at, is_nonblocking,
    is_procfs, is_regular_at, linkat, mkdirat, mknodat, open_socket, openat, poll_out, pread_start,
    read_once, readlinkat, renameat2, set_cloexec_nonblock, socket_id, symlinkat, truncate,
    unlinkat, with_umask, write_once,
};
pub(crate) use notify::{
    Notif, notif_addfd_send, notif_continue, notif_id_valid, notif_recv, notif_send,
    notif_set_sync_wakeup,
};
pub(crate) use process::{
    Disposition, ExitStatus, SignalFd, die_of, drop_capabilities_except, dup_onto, exited_child,
    foreground_group, getpid, getppid, ignore_signal, kill, kill_every_other_process, loopback_up,
    new_session, pidfd_exited, pidfd_getfd, pidfd_open, pidfd_open_task, poll_in, read_target,
    reap, restore_signal, set_child_subreaper, set_non_dumpable, take_foreground, wait_child,
    write_target,
};
pub(crate) use spawn::{FILTER_FLAG_NEW_LISTENER, Nesting, SockFilter, spawn_filtered};

use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};

/// The calling thread's `errno`.
fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A `-1` return as its `errno`.
fn check(ret: libc::c_int) -> Result<libc::c_int, i32> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

/// A new descriptor returned by the kernel, owned.
fn owned(fd: libc::c_int) -> Result<OwnedFd, i32> {
    let fd = check(fd)?;
    // SAFETY: `fd` was just returned by the kernel as a new descriptor that
    // nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The pointer a C call takes.
fn cstr_ptr(s: &CStr) -> *const libc::c_char {
    s.as_ptr()
}
