//! This process and the guarded one: reading the caller's memory,
//! capabilities, dumpability, signals, pidfds, polling and waiting.
#![allow(
    unsafe_code,
    reason = "a system-call module of the guard: every block carries its SAFETY comment"
)]

use super::{check, errno, owned};
use std::os::fd::{OwnedFd, RawFd};

/// Read `len` bytes at `addr` in process `pid`; a short read is an error.
pub(crate) fn read_target(pid: u32, addr: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; len];
    if len == 0 {
        return Ok(buf);
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: len,
    };
    let pid = libc::pid_t::try_from(pid).map_err(|_| libc::ESRCH)?;
    // SAFETY: `local` points to `len` writable bytes owned by `buf`; the
    // remote range is only read by the kernel in the other process.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(errno());
    }
    if n as usize != len {
        return Err(libc::EFAULT);
    }
    Ok(buf)
}

/// This process id.
pub(crate) fn getpid() -> i32 {
    // SAFETY: `getpid` cannot fail.
    unsafe { libc::getpid() }
}

/// Make this process non-dumpable, so that a process with the same uid and
/// no capabilities can neither trace it nor read or write its memory.
pub(crate) fn set_non_dumpable() -> Result<(), i32> {
    // SAFETY: plain prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) }).map(|_| ())
}

/// Gives up every capability, for good: the bounding set (where this
/// process may change it), the ambient set, and the effective, permitted
/// and inheritable sets. Called before the fork, so the supervisor and the
/// guarded command hold the same credentials: the supervisor can do nothing
/// on the command's behalf that the command could not, and a command
/// without `CAP_SYS_PTRACE` cannot read or write the non-dumpable
/// supervisor's memory.
pub(crate) fn drop_all_capabilities() -> Result<(), i32> {
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl with integer arguments; dropping from the bounding set
    // needs CAP_SETPCAP and fails harmlessly (EPERM) without it, in which
    // case the capset below still leaves nothing to raise.
    unsafe {
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) == 1 {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
    }
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset with a valid version-3 header and two data words, as
    // the version requires; both outlive the call.
    check(unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        ) as libc::c_int
    })
    .map(|_| ())
}

/// Ignore a signal in this process.
pub(crate) fn ignore_signal(sig: i32) {
    // SAFETY: installing SIG_IGN has no handler code to run.
    unsafe {
        libc::signal(sig, libc::SIG_IGN);
    }
}

/// A duplicate of descriptor `fd` of the process behind `pidfd`
/// (`pidfd_getfd(2)`, needs the right to trace it).
pub(crate) fn pidfd_getfd(pidfd: RawFd, fd: i32) -> Result<OwnedFd, i32> {
    // SAFETY: integer arguments; on success the result is a new descriptor
    // this process owns.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) };
    if r < 0 {
        return Err(errno());
    }
    owned(r as libc::c_int)
}

/// `pidfd_open(2)`.
pub(crate) fn pidfd_open(pid: i32) -> Result<OwnedFd, i32> {
    // SAFETY: integer arguments only.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    owned(libc::c_int::try_from(r).map_err(|_| libc::EOVERFLOW)?)
}

/// A descriptor that stays bound to the task `tid`: `pidfd_open(2)`, for a
/// thread that leads no process with `PIDFD_THREAD` (Linux 6.9; older
/// kernels refuse it with `EINVAL`).
pub(crate) fn pidfd_open_task(tid: i32, leader: bool) -> Result<OwnedFd, i32> {
    // PIDFD_THREAD has the value of O_EXCL.
    let flags = if leader { 0 } else { libc::O_EXCL };
    // SAFETY: integer arguments only.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, flags) };
    owned(libc::c_int::try_from(r).map_err(|_| libc::EOVERFLOW)?)
}

/// Whether the task behind `pidfd` has exited (the descriptor polls
/// readable then), asked without waiting. An error counts as exited.
pub(crate) fn pidfd_exited(pidfd: RawFd) -> bool {
    let mut fds = [libc::pollfd {
        fd: pidfd,
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: `fds` is a valid array of one `pollfd` for the call.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) };
    r != 0
}

/// Poll two descriptors for input, without timeout; returns both `revents`.
pub(crate) fn poll2(a: Option<RawFd>, b: RawFd, timeout_ms: i32) -> Result<(i16, i16), i32> {
    let mut fds = [
        libc::pollfd {
            fd: a.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: b,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two `pollfd`.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
        if r >= 0 {
            return Ok((fds[0].revents, fds[1].revents));
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// Wait for `pid` to end.
pub(crate) fn wait_child(pid: i32) -> Result<ExitStatus, i32> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = errno();
        if r < 0 && e != libc::EINTR {
            return Err(e);
        }
    }
    if libc::WIFEXITED(status) {
        Ok(ExitStatus::Code(libc::WEXITSTATUS(status)))
    } else {
        Ok(ExitStatus::Signal(libc::WTERMSIG(status)))
    }
}
