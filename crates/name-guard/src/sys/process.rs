//! This process and the guarded one: reading the caller's memory,
//! capabilities, dumpability, signals, pidfds, polling and waiting.
#![allow(
    unsafe_code,
    reason = "a system-call module of the guard: every block carries its SAFETY comment"
)]

use super::{check, errno, owned};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

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

/// Gives up every capability but those in `keep` (a mask of capability
/// numbers, empty but for the VM runtime's file server), for good: the
/// bounding set (where this process may change it), the ambient set, and
/// the effective, permitted and inheritable sets. Called before the fork,
/// so the supervisor and the guarded command hold the same credentials:
/// the supervisor can do nothing on the command's behalf that the command
/// could not, and a command without `CAP_SYS_PTRACE` (never kept) cannot
/// read or write the non-dumpable supervisor's memory. A kept capability
/// survives the command's exec only for a root user (of the namespace);
/// with no new privileges the exec grants nothing more.
pub(crate) fn drop_capabilities_except(keep: u64) -> Result<(), i32> {
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
            if keep & (1u64 << cap) != 0 {
                continue;
            }
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
    // Kept only where this process holds it.
    let mut held = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if keep != 0 {
        // SAFETY: capget with a valid version-3 header and room for two
        // data words, as the version requires; both outlive the call.
        check(unsafe {
            libc::syscall(
                libc::SYS_capget,
                &mut header as *mut CapHeader,
                held.as_mut_ptr(),
            ) as libc::c_int
        })?;
    }
    let word = |i: usize, held: u32| (keep >> (32 * i)) as u32 & held;
    let data = [
        CapData {
            effective: word(0, held[0].permitted),
            permitted: word(0, held[0].permitted),
            inheritable: 0,
        },
        CapData {
            effective: word(1, held[1].permitted),
            permitted: word(1, held[1].permitted),
            inheritable: 0,
        },
    ];
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

/// What a signal did in this process before it was ignored: a child
/// forked afterwards puts it back before its exec.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Disposition {
    pub(crate) signal: i32,
    pub(crate) handler: libc::sighandler_t,
}

/// Ignore a signal in this process; returns what it did before.
pub(crate) fn ignore_signal(sig: i32) -> Disposition {
    // SAFETY: installing SIG_IGN has no handler code to run.
    let before = unsafe { libc::signal(sig, libc::SIG_IGN) };
    Disposition {
        signal: sig,
        // A refused call changed nothing: the command gets the default.
        handler: if before == libc::SIG_ERR {
            libc::SIG_DFL
        } else {
            before
        },
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

/// Orphans of the guarded tree come to this process instead of `init`
/// (`PR_SET_CHILD_SUBREAPER`), so that none leaves it by a double fork.
pub(crate) fn set_child_subreaper() -> Result<(), i32> {
    // SAFETY: plain prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }).map(|_| ())
}

/// The parent process's id.
pub(crate) fn getppid() -> i32 {
    // SAFETY: `getppid` cannot fail.
    unsafe { libc::getppid() }
}

/// Sends `sig` to process `pid`; a process already gone is not an error.
pub(crate) fn kill(pid: i32, sig: i32) {
    if pid > 0 {
        // SAFETY: integer arguments only; `pid` is positive, never a group
        // or every process.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Sends `SIGKILL` to every process the caller may signal but itself
/// (`kill(-1)`): a guest's process 1 ending its guest.
pub(crate) fn kill_every_other_process() {
    // SAFETY: integer arguments only.
    unsafe {
        libc::kill(-1, libc::SIGKILL);
    }
}

/// Brings the loopback interface `lo` up (a guest's process 1 does it: no
/// one else would).
pub(crate) fn loopback_up() -> Result<(), i32> {
    // SAFETY: a plain socket call with integer arguments.
    let sock =
        owned(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `ifreq` is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: `req` is a valid `ifreq` for both calls, which read and write
    // only it; the descriptor is open.
    unsafe {
        check(libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req))?;
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        check(libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req))?;
    }
    Ok(())
}

/// A child that has exited, if any, without reaping it: `Ok(None)` when
/// children run and none has exited, `Err(ECHILD)` when there are none.
pub(crate) fn exited_child() -> Result<Option<i32>, i32> {
    // SAFETY: `siginfo_t` is plain data for which all zeroes is a valid
    // value; `waitid` writes into it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `info` is a valid out-pointer for the call.
        let r = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == 0 {
            // SAFETY: after a successful waitid the pid field is set (0
            // when no child has exited).
            let pid = unsafe { info.si_pid() };
            return Ok((pid > 0).then_some(pid));
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// Reaps `pid` if it has exited; never waits.
pub(crate) fn reap(pid: i32) {
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a valid out-pointer.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

/// Signals delivered through a descriptor instead of handlers: blocked in
/// this process (and unblocked again in the guarded child before it runs
/// the command, see [`super::spawn_filtered`]).
pub(crate) struct SignalFd(OwnedFd);

impl SignalFd {
    /// Blocks `signals` and opens a descriptor that reads them.
    pub(crate) fn new(signals: &[i32]) -> Result<SignalFd, i32> {
        // SAFETY: `sigset_t` is plain data; sigemptyset initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset for each call; the signal numbers
        // are valid ones given by the caller.
        unsafe {
            libc::sigemptyset(&mut set);
            for s in signals {
                libc::sigaddset(&mut set, *s);
            }
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(errno());
            }
        }
        // SAFETY: `set` is initialised; a new descriptor is returned.
        let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        owned(fd).map(SignalFd)
    }

    /// The descriptor to poll.
    pub(crate) fn raw(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.0.as_raw_fd()
    }

    /// The next pending signal, if any.
    pub(crate) fn next(&self) -> Option<i32> {
        // SAFETY: `signalfd_siginfo` is plain data for which all zeroes is
        // a valid value.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: the buffer is `size` writable bytes owned by `info`.
        let n = unsafe {
            libc::read(
                self.raw(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size,
            )
        };
        (n == size as isize).then_some(info.ssi_signo as i32)
    }
}

/// Polls `fds` (negative entries are skipped) for input; returns each
/// `revents`.
pub(crate) fn poll_in<const N: usize>(fds: [RawFd; N], timeout_ms: i32) -> Result<[i16; N], i32> {
    let mut p = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    loop {
        // SAFETY: `p` is a valid array of N `pollfd`.
        let r = unsafe { libc::poll(p.as_mut_ptr(), N as libc::nfds_t, timeout_ms) };
        if r >= 0 {
            return Ok(p.map(|f| f.revents));
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// Writes `data` at `addr` in process `pid`; a short write is an error.
pub(crate) fn write_target(pid: u32, addr: u64, data: &[u8]) -> Result<(), i32> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: data.len(),
    };
    let pid = libc::pid_t::try_from(pid).map_err(|_| libc::ESRCH)?;
    // SAFETY: `local` points to `data.len()` readable bytes owned by `data`
    // (the kernel only reads them); the remote range is written by the
    // kernel in the other process, which checks it.
    let n = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(errno());
    }
    if n as usize != data.len() {
        return Err(libc::EFAULT);
    }
    Ok(())
}

/// Makes descriptor number `to` a copy of `from` (`dup2`), closing what
/// `to` was.
pub(crate) fn dup_onto(from: std::os::fd::BorrowedFd<'_>, to: i32) -> Result<(), i32> {
    use std::os::fd::AsRawFd;
    // SAFETY: integer arguments only; `from` is open for the call, and the
    // caller owns descriptor `to` (one of its stdio).
    let r = unsafe { libc::dup2(from.as_raw_fd(), to) };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(())
}

/// Starts a new session (`setsid`), async-signal-safe. The session's id is
/// not read: gVisor's kernel answers 0 where Linux gives the caller's pid.
pub(crate) fn new_session() -> Result<(), i32> {
    // SAFETY: no arguments; only the return value is read.
    let r = unsafe { libc::setsid() };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(())
}

/// Makes this process's group the foreground one of its controlling
/// terminal on `fd`, async-signal-safe (a kernel that does not do it at
/// `TIOCSCTTY`, as gVisor's, then sends the terminal's signals to it).
pub(crate) fn take_foreground(fd: i32) -> Result<(), i32> {
    // SAFETY: integer arguments only.
    let r = unsafe { libc::tcsetpgrp(fd, libc::getpgrp()) };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(())
}

/// Puts `d` back (async-signal-safe: one `signal` call).
pub(crate) fn restore_signal(d: Disposition) {
    // SAFETY: the handler is what this process had before ignoring it.
    unsafe {
        libc::signal(d.signal, d.handler);
    }
}

/// The foreground process group of the terminal on `fd`, this process's
/// controlling terminal.
pub(crate) fn foreground_group(fd: i32) -> Result<i32, i32> {
    // SAFETY: integer argument only.
    let r = unsafe { libc::tcgetpgrp(fd) };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(r)
}

/// Ends this process with signal `sig` (its default action), as the child
/// whose status it passes on did; exits with 128 + `sig` where the signal
/// does not end it.
pub(crate) fn die_of(sig: i32) -> ! {
    // SAFETY: integer arguments; the default action of the signal runs.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
