//! Which descriptors a spawned program gets: none of the host process's
//! own (every descriptor from 3 up is closed on exec), and only the ones a
//! launch passes on explicitly. Also the rest of the state a spawn sets
//! before exec: the command's cgroup, a session of its own, and the
//! job-control signals at their defaults (a shell may have left the host
//! ignoring them).
//!
//! Only `pre_exec` is unsafe here: the closures run between fork and exec,
//! so they make only async-signal-safe system calls on values prepared
//! before the fork and do not allocate.
//!
//! Unix only. On Windows there is nothing of this to do: the standard
//! library and tokio open every handle non-inheritable, so a child gets
//! only the standard handles its spawn sets, and no cgroup exists to join
//! (a limit was refused with [`crate::ErrorKind::LimitUnavailable`] before
//! the spawn).

use rustix::fd::{BorrowedFd, RawFd};

/// Marks every descriptor from 3 up close-on-exec in the spawned program,
/// so nothing the host process inherited or opened without `O_CLOEXEC` (a
/// directory, a socket, a pipe) reaches the sandbox; bubblewrap passes
/// whatever it gets to the command. Register it before [`inherit_fds`],
/// whose descriptors it would otherwise close.
pub(crate) fn close_inherited_fds(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes system calls (close_range, getrlimit, fcntl) on integers; it
    // does not allocate or touch memory shared with other threads.
    #[allow(
        unsafe_code,
        reason = "descriptor hygiene needs pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        cmd.pre_exec(|| {
            #[cfg(target_os = "linux")]
            {
                let r = libc::syscall(
                    libc::SYS_close_range,
                    3u32,
                    u32::MAX,
                    libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
                );
                if r == 0 {
                    return Ok(());
                }
            }
            // Kernels before 5.11 and other systems: every descriptor below
            // the soft limit (at most 65,536 of them).
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur.min(65_536) as libc::c_int
            } else {
                65_536
            };
            for fd in 3..top {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
            Ok(())
        });
    }
}

/// Gives the spawned program SIGINT and SIGQUIT at their defaults. A shell
/// starts a background job (`host &` in a script) with both ignored, and
/// an ignored signal stays ignored across exec: the command, in a session
/// of its own, would then shrug off Ctrl-C on its own terminal and the
/// host's `CommandControl` signals alike. Handled signals are
/// reset by exec itself; other ignored ones (`nohup`'s SIGHUP) are left as
/// the host chose them.
pub(crate) fn default_job_signals(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and makes
    // two system calls (sigaction through signal(3), async-signal-safe) on
    // constants; nothing is allocated.
    #[allow(
        unsafe_code,
        reason = "resetting signal dispositions needs pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT] {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

#[cfg_attr(
    not(target_os = "linux"),
    allow(dead_code, reason = "used by the bubblewrap backend (Linux)")
)]
/// Lets the spawned program inherit `fds` (opened close-on-exec) across
/// exec. The caller keeps the descriptors open until the spawn returned.
pub(crate) fn inherit_fds<const N: usize>(cmd: &mut tokio::process::Command, fds: [RawFd; N]) {
    // SAFETY: the closure runs in the forked child before exec. It only
    // calls fcntl(F_SETFD) on descriptors that are open in the parent (and
    // so in the child) until the spawn returns, as the callers guarantee;
    // it does not allocate (the array is copied into the closure).
    #[allow(
        unsafe_code,
        reason = "descriptor hygiene needs pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        cmd.pre_exec(move || {
            for fd in fds {
                let fd = BorrowedFd::borrow_raw(fd);
                rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
            }
            Ok(())
        });
    }
}

/// Moves the spawned program into the cgroups whose `cgroup.procs` files
/// are given, before it runs (so everything it starts is in them too).
/// Writing `0` to `cgroup.procs` moves the writing process, in v1 and v2.
/// A failure fails the spawn: a limit is never silently dropped.
pub(crate) fn join_cgroups(cmd: &mut tokio::process::Command, procs: Vec<std::ffi::CString>) {
    if procs.is_empty() {
        return;
    }
    // SAFETY: the closure runs in the forked child before exec and only
    // makes system calls (open, write, close) on paths prepared before the
    // fork; it does not allocate (the vector is moved in, only borrowed).
    #[allow(
        unsafe_code,
        reason = "descriptor hygiene needs pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        cmd.pre_exec(move || {
            for path in &procs {
                let fd = rustix::fs::open(
                    path.as_c_str(),
                    rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )?;
                rustix::io::write(&fd, b"0")?;
            }
            Ok(())
        });
    }
}

/// Makes the spawned program a session leader without a controlling
/// terminal: `/dev/tty` opens none of the host's.
#[cfg(target_os = "linux")]
pub(crate) fn own_session(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and makes one
    // system call (setsid); nothing is allocated.
    #[allow(
        unsafe_code,
        reason = "descriptor hygiene needs pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
}

/// Makes the spawned program a session leader whose controlling terminal
/// is its stdin (a PTY slave the caller set as its stdio): job control
/// works, and no terminal of the host process is reachable.
pub(crate) fn own_terminal_session(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes two system calls (setsid, ioctl TIOCSCTTY on descriptor 0,
    // which the spawn has set to the slave by then); nothing is allocated.
    #[allow(
        unsafe_code,
        reason = "descriptor hygiene needs pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
            Ok(())
        });
    }
}
