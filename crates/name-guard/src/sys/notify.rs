//! The seccomp listener's ioctls: receive a notification, check that it is
//! still pending, answer it with a value or an error, or install a
//! descriptor in the caller and answer with its number.
#![allow(
    unsafe_code,
    reason = "a system-call module of the guard: every block carries its SAFETY comment"
)]

use super::check;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SeccompData {
    nr: i32,
    arch: u32,
    ip: u64,
    args: [u64; 6],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SeccompNotif {
    id: u64,
    pid: u32,
    flags: u32,
    data: SeccompData,
}

#[repr(C)]
struct SeccompNotifResp {
    id: u64,
    val: i64,
    error: i32,
    flags: u32,
}

#[repr(C)]
struct SeccompNotifAddfd {
    id: u64,
    flags: u32,
    srcfd: u32,
    newfd: u32,
    newfd_flags: u32,
}

const IOCTL_NOTIF_RECV: libc::c_ulong = 0xC050_2100;
const IOCTL_NOTIF_SEND: libc::c_ulong = 0xC018_2101;
const IOCTL_NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;
const IOCTL_NOTIF_ADDFD: libc::c_ulong = 0x4018_2103;
const ADDFD_FLAG_SEND: u32 = 1 << 1;
const IOCTL_NOTIF_SET_FLAGS: libc::c_ulong = 0x4008_2104;
const USER_NOTIF_FD_SYNC_WAKE_UP: libc::c_ulong = 1;

/// Asks the kernel (Linux 6.6 and later) to wake the supervisor for a
/// notification, and the caller for its answer, on the CPU that does the
/// waking: a round trip then costs no wake-up across CPUs. A speed hint
/// only; an older kernel refuses it (`EINVAL`) and nothing else changes.
pub(crate) fn notif_set_sync_wakeup(listener: RawFd) -> Result<(), i32> {
    // SAFETY: this ioctl takes its flags by value; no memory is passed.
    check(unsafe { libc::ioctl(listener, IOCTL_NOTIF_SET_FLAGS, USER_NOTIF_FD_SYNC_WAKE_UP) })
        .map(|_| ())
}

/// A received notification: the request id, the thread id, the system call
/// number and its six arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Notif {
    pub(crate) id: u64,
    pub(crate) pid: u32,
    pub(crate) nr: i64,
    pub(crate) args: [u64; 6],
}

/// Receive one notification (blocking).
pub(crate) fn notif_recv(listener: RawFd) -> Result<Notif, i32> {
    let mut n = SeccompNotif::default();
    // SAFETY: `n` is a zeroed, correctly sized `struct seccomp_notif` the
    // kernel fills in; the pointer is valid for the duration of the call.
    check(unsafe { libc::ioctl(listener, IOCTL_NOTIF_RECV, &mut n as *mut SeccompNotif) })?;
    Ok(Notif {
        id: n.id,
        pid: n.pid,
        nr: i64::from(n.data.nr),
        args: n.data.args,
    })
}

/// Whether the notification `id` is still pending (its thread is still
/// blocked in the same system call).
pub(crate) fn notif_id_valid(listener: RawFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: the ioctl reads one `u64` from a valid pointer.
    unsafe { libc::ioctl(listener, IOCTL_NOTIF_ID_VALID, &mut id as *mut u64) == 0 }
}

/// Answer a notification with a return value or an `errno`.
pub(crate) fn notif_send(listener: RawFd, id: u64, result: Result<i64, i32>) -> Result<(), i32> {
    let (val, error) = match result {
        Ok(v) => (v, 0),
        Err(e) => (0, -e.abs().max(1)),
    };
    send_resp(
        listener,
        SeccompNotifResp {
            id,
            val,
            error,
            flags: 0,
        },
    )
}

/// `SECCOMP_USER_NOTIF_FLAG_CONTINUE`.
const USER_NOTIF_FLAG_CONTINUE: u32 = 1;

/// Let the notified call go on in the kernel as the caller made it. Only
/// for a call whose arguments are all numbers (`umask`): one that points
/// at memory would be read again after the answer, when the caller may
/// have changed it.
pub(crate) fn notif_continue(listener: RawFd, id: u64) -> Result<(), i32> {
    send_resp(
        listener,
        SeccompNotifResp {
            id,
            val: 0,
            error: 0,
            flags: USER_NOTIF_FLAG_CONTINUE,
        },
    )
}

fn send_resp(listener: RawFd, mut resp: SeccompNotifResp) -> Result<(), i32> {
    // SAFETY: `resp` is a valid `struct seccomp_notif_resp` for the call.
    check(unsafe {
        libc::ioctl(
            listener,
            IOCTL_NOTIF_SEND,
            &mut resp as *mut SeccompNotifResp,
        )
    })
    .map(|_| ())
}

/// Install `fd` in the target and answer the notification with its number,
/// atomically (`SECCOMP_ADDFD_FLAG_SEND`).
pub(crate) fn notif_addfd_send(
    listener: RawFd,
    id: u64,
    fd: &OwnedFd,
    cloexec: bool,
) -> Result<i32, i32> {
    let src = u32::try_from(fd.as_raw_fd()).map_err(|_| libc::EBADF)?;
    let mut add = SeccompNotifAddfd {
        id,
        flags: ADDFD_FLAG_SEND,
        srcfd: src,
        newfd: 0,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: `add` is a valid `struct seccomp_notif_addfd` for the call.
    check(unsafe {
        libc::ioctl(
            listener,
            IOCTL_NOTIF_ADDFD,
            &mut add as *mut SeccompNotifAddfd,
        )
    })
}
