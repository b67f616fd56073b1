//! The raw system calls and ioctls the guard needs, in one place.
//!
//! Seccomp user notification, `process_vm_readv`, `fork`/`execvp`, file
//! descriptor passing and the `*at` calls the supervisor performs have no
//! safe wrapper in the dependencies this crate uses, so this module calls
//! them through `libc`. Every `unsafe` block carries a `SAFETY` comment; the
//! functions exported from here are safe to call and report failures as an
//! `errno` value.
#![allow(
    unsafe_code,
    reason = "the system-call module of the guard: every block carries its SAFETY comment"
)]

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SockFilter {
    pub(crate) code: u16,
    pub(crate) jt: u8,
    pub(crate) jf: u8,
    pub(crate) k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

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

const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
pub(crate) const FILTER_FLAG_NEW_LISTENER: u32 = 1 << 3;
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (Linux 5.19): once the
/// supervisor has received a notification, the caller waits for the answer
/// through every signal but a fatal one. Without it a signal (a profiler's
/// timer, a runtime's preemption signal) interrupts the wait after the
/// supervisor performed the call, the call restarts, and is performed twice:
/// `EEXIST` for an exclusive create that succeeded, `ENOENT` for a rename
/// that did.
pub(crate) const FILTER_FLAG_WAIT_KILLABLE_RECV: u32 = 1 << 5;
const IOCTL_NOTIF_RECV: libc::c_ulong = 0xC050_2100;
const IOCTL_NOTIF_SEND: libc::c_ulong = 0xC018_2101;
const IOCTL_NOTIF_ID_VALID: libc::c_ulong = 0x4008_2102;
const IOCTL_NOTIF_ADDFD: libc::c_ulong = 0x4018_2103;
const ADDFD_FLAG_SEND: u32 = 1 << 1;

/// A received notification: the request id, the thread id, the system call
/// number and its six arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Notif {
    pub(crate) id: u64,
    pub(crate) pid: u32,
    pub(crate) nr: i64,
    pub(crate) args: [u64; 6],
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(ret: libc::c_int) -> Result<libc::c_int, i32> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

fn owned(fd: libc::c_int) -> Result<OwnedFd, i32> {
    let fd = check(fd)?;
    // SAFETY: `fd` was just returned by the kernel as a new descriptor that
    // nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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

/// Answer a notification with a return value or an `errno` (never
/// "continue").
pub(crate) fn notif_send(listener: RawFd, id: u64, result: Result<i64, i32>) -> Result<(), i32> {
    let (val, error) = match result {
        Ok(v) => (v, 0),
        Err(e) => (0, -e.abs().max(1)),
    };
    let mut resp = SeccompNotifResp {
        id,
        val,
        error,
        flags: 0,
    };
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

fn cstr_ptr(s: &CStr) -> *const libc::c_char {
    s.as_ptr()
}

/// `openat(2)`.
pub(crate) fn openat(dir: RawFd, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    owned(unsafe { libc::openat(dir, cstr_ptr(path), flags | libc::O_CLOEXEC, mode) })
}

/// `mknodat(2)`.
pub(crate) fn mknodat(dir: RawFd, name: &CStr, mode: u32, dev: u64) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated and outlives the call.
    check(unsafe { libc::mknodat(dir, cstr_ptr(name), mode, dev) }).map(|_| ())
}

/// `renameat2(2)`.
pub(crate) fn renameat2(od: RawFd, on: &CStr, nd: RawFd, nn: &CStr, flags: u32) -> Result<(), i32> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    check(unsafe { libc::renameat2(od, cstr_ptr(on), nd, cstr_ptr(nn), flags) }).map(|_| ())
}

/// `linkat(2)`.
pub(crate) fn linkat(od: RawFd, on: &CStr, nd: RawFd, nn: &CStr, flags: i32) -> Result<(), i32> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    check(unsafe { libc::linkat(od, cstr_ptr(on), nd, cstr_ptr(nn), flags) }).map(|_| ())
}

/// `symlinkat(2)`.
pub(crate) fn symlinkat(target: &CStr, nd: RawFd, nn: &CStr) -> Result<(), i32> {
    // SAFETY: both strings are NUL-terminated and outlive the call.
    check(unsafe { libc::symlinkat(cstr_ptr(target), nd, cstr_ptr(nn)) }).map(|_| ())
}

/// `readlinkat(2)`, bounded by `limit` bytes (`ENAMETOOLONG` beyond).
pub(crate) fn readlinkat(dir: RawFd, name: &CStr, limit: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; limit + 1];
    // SAFETY: `buf` has `limit + 1` writable bytes; `name` is NUL-terminated.
    let n = unsafe { libc::readlinkat(dir, cstr_ptr(name), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(errno());
    }
    let n = n as usize;
    if n > limit {
        return Err(libc::ENAMETOOLONG);
    }
    buf.truncate(n);
    Ok(buf)
}

/// `mkdirat(2)`.
pub(crate) fn mkdirat(dir: RawFd, name: &CStr, mode: u32) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated and outlives the call.
    check(unsafe { libc::mkdirat(dir, cstr_ptr(name), mode) }).map(|_| ())
}

/// Set `FD_CLOEXEC` and `O_NONBLOCK` on `fd`; fails with `EBADF` when it is
/// not open.
pub(crate) fn set_cloexec_nonblock(fd: RawFd) -> Result<(), i32> {
    // SAFETY: fcntl with integer arguments on a descriptor number; an unknown
    // descriptor is reported as EBADF.
    unsafe {
        let fdfl = check(libc::fcntl(fd, libc::F_GETFD))?;
        check(libc::fcntl(fd, libc::F_SETFD, fdfl | libc::FD_CLOEXEC))?;
        let fl = check(libc::fcntl(fd, libc::F_GETFL))?;
        check(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Whether the directory `dir` is on procfs.
pub(crate) fn is_procfs(dir: RawFd) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `st` is a valid out pointer for one `struct statfs`, read only
    // when the call succeeded (it then initialised it).
    unsafe {
        libc::fstatfs(dir, st.as_mut_ptr()) == 0
            // PROC_SUPER_MAGIC
            && st.assume_init().f_type == 0x9fa0
    }
}

/// A close-on-exec duplicate of `fd`.
pub(crate) fn dup_cloexec(fd: RawFd) -> Result<OwnedFd, i32> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor number; the result is a
    // new descriptor this process owns, or -1 with errno.
    owned(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) })
}

/// Whether `name` in the directory `dir` is a FIFO (not following a
/// symbolic link at `name`).
pub(crate) fn is_fifo_at(dir: RawFd, name: &CStr) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated and outlives the call; `st` is a
    // valid out pointer for one `struct stat`, read only when the call
    // succeeded (it then initialised it).
    unsafe {
        libc::fstatat(
            dir,
            cstr_ptr(name),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        ) == 0
            && (st.assume_init().st_mode & libc::S_IFMT) == libc::S_IFIFO
    }
}

/// One `write(2)` of `buf` to `fd`; returns the number of bytes written.
pub(crate) fn write_once(fd: RawFd, buf: &[u8]) -> Result<usize, i32> {
    // SAFETY: `buf` is valid for `buf.len()` bytes for the call.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 { Err(errno()) } else { Ok(n as usize) }
}

/// Wait up to `ms` milliseconds for `fd` to accept output.
pub(crate) fn poll_out(fd: RawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: `p` is one valid `pollfd`.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && p.revents & libc::POLLOUT != 0
}

/// Set the process umask and return the previous one.
pub(crate) fn umask(mask: u32) -> u32 {
    // SAFETY: `umask` cannot fail and touches no memory.
    unsafe { libc::umask(mask & 0o777) }
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

/// `bind(2)` of `sock` to the raw address bytes `addr`.
pub(crate) fn bind_raw(sock: RawFd, addr: &[u8]) -> Result<(), i32> {
    let len = libc::socklen_t::try_from(addr.len()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `addr` is valid for `len` bytes for the call; the kernel copies
    // it and checks its family and length itself.
    check(unsafe { libc::bind(sock, addr.as_ptr().cast(), len) }).map(|_| ())
}

/// `pidfd_open(2)`.
pub(crate) fn pidfd_open(pid: i32) -> Result<OwnedFd, i32> {
    // SAFETY: integer arguments only.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    owned(libc::c_int::try_from(r).map_err(|_| libc::EOVERFLOW)?)
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

fn child_fail(msg: &[u8]) -> ! {
    // SAFETY: writing a static buffer to stderr and exiting without running
    // any destructor of the forked copy of the parent's state.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    }
}

/// Fork; in the child set `no_new_privs`, install `prog` with a new
/// listener, pass the listener to the parent over a socket pair, close it
/// and exec `argv` (searched in `PATH`). Returns the child pid and the
/// listener.
pub(crate) fn spawn_filtered(prog: &[SockFilter], argv: &[CString]) -> Result<(i32, OwnedFd), i32> {
    if argv.is_empty() {
        return Err(libc::EINVAL);
    }
    let len = u16::try_from(prog.len()).map_err(|_| libc::E2BIG)?;
    let fprog = SockFprog {
        len,
        filter: prog.as_ptr(),
    };
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut sv = [-1 as libc::c_int; 2];
    // SAFETY: `sv` has room for the two descriptors.
    check(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    })?;
    // SAFETY: both descriptors are new and owned here.
    let (parent_sock, child_sock) =
        unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    // SAFETY: after the fork the child only makes async-signal-safe calls
    // (prctl, seccomp, sendmsg, close, signal, execvp, write, _exit) on data prepared
    // before the fork, so it is sound even if the caller has other threads.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        // SAFETY: child side; raw calls on prepared, valid pointers, then exec
        // or `_exit`.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                child_fail(b"name-guard-exec: cannot set no_new_privs\n");
            }
            let mut listener = libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                FILTER_FLAG_NEW_LISTENER | FILTER_FLAG_WAIT_KILLABLE_RECV,
                &fprog as *const SockFprog,
            );
            // Kernels before 5.19 do not know the flag: the guard still
            // holds, but a signal can make a performed call run twice.
            if listener < 0 && *libc::__errno_location() == libc::EINVAL {
                listener = libc::syscall(
                    libc::SYS_seccomp,
                    SECCOMP_SET_MODE_FILTER,
                    FILTER_FLAG_NEW_LISTENER,
                    &fprog as *const SockFprog,
                );
            }
            if listener < 0 {
                child_fail(b"name-guard-exec: cannot install the seccomp filter\n");
            }
            let listener = listener as libc::c_int;
            if send_fd_raw(child_sock.as_raw_fd(), listener) != 0 {
                child_fail(b"name-guard-exec: cannot pass the listener\n");
            }
            libc::close(listener);
            libc::close(child_sock.as_raw_fd());
            // The launcher may ignore SIGPIPE (Rust programs do); the
            // command gets the default, as `std::process::Command` gives.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::execvp(ptrs[0], ptrs.as_ptr());
            child_fail(b"name-guard-exec: cannot execute the command\n");
        }
    }
    drop(child_sock);
    match recv_fd(&parent_sock) {
        Ok(fd) => Ok((pid, fd)),
        Err(e) => {
            let _ = wait_child(pid);
            Err(e)
        }
    }
}

/// Send one descriptor over a Unix socket; 0 on success. Async-signal-safe
/// (no allocation), so the forked child may call it.
fn send_fd_raw(sock: libc::c_int, fd: libc::c_int) -> libc::c_int {
    let mut byte = [0u8; 1];
    let mut cbuf = [0u64; 8];
    // SAFETY: every pointer refers to a local buffer of the stated size; the
    // control message fits in `cbuf` (CMSG_SPACE of one int is 24 bytes).
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return -1;
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        if libc::sendmsg(sock, &msg, 0) == 1 {
            0
        } else {
            -1
        }
    }
}

fn recv_fd(sock: &OwnedFd) -> Result<OwnedFd, i32> {
    let mut byte = [0u8; 1];
    let mut cbuf = [0u64; 8];
    // SAFETY: every pointer refers to a local buffer of the stated size; the
    // control message is read only after the kernel reports it present.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf);
        let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(errno());
        }
        if n == 0 {
            return Err(libc::EPIPE);
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(libc::EPROTO);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        owned(fd)
    }
}
