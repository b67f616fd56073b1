//! The statx tracer's system calls: a child started under `PTRACE_SEIZE`
//! with a filter that stops some calls for the tracer, waiting for any
//! tracee, and the flag taken out of a stopped call's registers.

use super::spawn::SockFilter;
use super::{check, errno};
use std::ffi::CString;

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

/// The address argument of the requests that take none.
const NO_ADDR: *mut libc::c_void = std::ptr::null_mut();

/// The options every tracee gets: seccomp stops, and its new processes
/// traced from their start.
const OPTIONS: libc::c_int = libc::PTRACE_O_TRACESECCOMP
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE;

/// Forks a child that waits until this process traces it, installs
/// `filter` (its `no_new_privs` is inherited), restores `restore` and
/// execs `argv` (by `PATH`); returns its pid. A child that cannot exec
/// exits 127.
pub(crate) fn fork_traced(
    argv: &[CString],
    filter: &[SockFilter],
    restore: &[super::Disposition],
) -> Result<i32, i32> {
    let Some(program) = argv.first() else {
        return Err(libc::EINVAL);
    };
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let fprog = SockFprog {
        len: u16::try_from(filter.len()).map_err(|_| libc::EINVAL)?,
        filter: filter.as_ptr(),
    };
    let mut go = [0 as libc::c_int; 2];
    // SAFETY: `go` is an array of two descriptors for the kernel to fill.
    check(unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: this process is single-threaded (a tracer started for one
    // command), so the child may run any code; it still makes only system
    // calls on memory allocated before the fork, and ends in exec or
    // `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = errno();
        // SAFETY: closing the two descriptors just made.
        unsafe {
            libc::close(go[0]);
            libc::close(go[1]);
        }
        return Err(e);
    }
    if pid == 0 {
        // SAFETY: in the child: the pipe's descriptors, the program and
        // the argument vector live until the exec; nothing allocates.
        unsafe {
            libc::close(go[1]);
            let mut byte = 0u8;
            // Until the parent traces this process: a stop for a tracer
            // that is not there yet would fail the call with ENOSYS.
            if libc::read(go[0], (&mut byte as *mut u8).cast(), 1) != 1 {
                libc::_exit(126);
            }
            libc::close(go[0]);
            for d in restore {
                libc::signal(d.signal, d.handler);
            }
            if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog) != 0 {
                libc::_exit(126);
            }
            libc::execvp(program.as_ptr(), ptrs.as_ptr());
            libc::_exit(127);
        }
    }
    // SAFETY: closing the child's end in the parent.
    unsafe { libc::close(go[0]) };
    // SAFETY: integer arguments; the child is ours and not yet traced.
    let seized = unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, NO_ADDR, OPTIONS as libc::c_long) };
    let seize_err = if seized < 0 { Some(errno()) } else { None };
    // SAFETY: writing one byte from the stack to the pipe, then closing it.
    unsafe {
        if seize_err.is_none() {
            libc::write(go[1], b"g".as_ptr().cast(), 1);
        }
        libc::close(go[1]);
    }
    match seize_err {
        // The child reads end-of-file and exits 126.
        Some(e) => Err(e),
        None => Ok(pid),
    }
}

/// What a wait for any tracee saw.
pub(crate) enum Stop {
    /// A tracee ended: its pid and its wait status.
    Ended(i32, libc::c_int),
    /// A tracee stopped: its pid, the stop's signal and its ptrace event.
    Stopped(i32, i32, i32),
}

/// Waits for any child or tracee; `Err(ECHILD)` when there is none.
pub(crate) fn wait_any() -> Result<Stop, i32> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer for the call.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if libc::WIFSTOPPED(status) {
            return Ok(Stop::Stopped(pid, libc::WSTOPSIG(status), status >> 16));
        }
        return Ok(Stop::Ended(pid, status));
    }
}

/// Resumes a stopped tracee, delivering `signal` (0: none).
pub(crate) fn resume(pid: i32, signal: i32) {
    // SAFETY: integer arguments; a tracee gone meanwhile answers ESRCH.
    unsafe {
        libc::ptrace(libc::PTRACE_CONT, pid, NO_ADDR, signal as libc::c_long);
    }
}

/// Leaves a tracee in its group stop, still traced (`PTRACE_LISTEN`).
pub(crate) fn listen(pid: i32) {
    // SAFETY: integer arguments.
    unsafe {
        libc::ptrace(libc::PTRACE_LISTEN, pid, NO_ADDR, NO_ADDR);
    }
}

/// The ptrace event numbers the tracer reads.
pub(crate) const EVENT_SECCOMP: i32 = libc::PTRACE_EVENT_SECCOMP;
pub(crate) const EVENT_STOP: i32 = libc::PTRACE_EVENT_STOP;

/// At a seccomp stop of `pid`: clears `bit` in the flags of a `statx` (its
/// third argument) or `newfstatat` (its fourth); `Ok(true)` when it did.
#[cfg(target_arch = "x86_64")]
pub(crate) fn clear_stat_flag(
    pid: i32,
    (statx_nr, newfstatat_nr): (u64, u64),
    bit: u64,
) -> Result<bool, i32> {
    // SAFETY: an all-zero `user_regs_struct` is a valid value (integers).
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: `regs` is a valid out-pointer of the size the call writes.
    check(unsafe { libc::ptrace(libc::PTRACE_GETREGS, pid, NO_ADDR, &mut regs) } as libc::c_int)?;
    let flags = if regs.orig_rax == statx_nr {
        &mut regs.rdx
    } else if regs.orig_rax == newfstatat_nr {
        &mut regs.r10
    } else {
        return Ok(false);
    };
    *flags &= !bit;
    // SAFETY: `regs` is the tracee's register set, changed in one field.
    check(unsafe { libc::ptrace(libc::PTRACE_SETREGS, pid, NO_ADDR, &regs) } as libc::c_int)?;
    Ok(true)
}

/// At a seccomp stop of `pid`: clears `bit` in the flags of a `statx` (its
/// third argument) or `newfstatat` (its fourth); `Ok(true)` when it did.
#[cfg(target_arch = "aarch64")]
pub(crate) fn clear_stat_flag(
    pid: i32,
    (statx_nr, newfstatat_nr): (u64, u64),
    bit: u64,
) -> Result<bool, i32> {
    // SAFETY: an all-zero `user_regs_struct` is a valid value (integers).
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    regset(libc::PTRACE_GETREGSET, pid, &mut regs)?;
    let index = if regs.regs[8] == statx_nr {
        2
    } else if regs.regs[8] == newfstatat_nr {
        3
    } else {
        return Ok(false);
    };
    regs.regs[index] &= !bit;
    regset(libc::PTRACE_SETREGSET, pid, &mut regs)?;
    Ok(true)
}

/// `PTRACE_GETREGSET` or `PTRACE_SETREGSET` of `pid`'s general registers
/// into or from `regs`.
#[cfg(target_arch = "aarch64")]
fn regset(request: libc::c_uint, pid: i32, regs: &mut libc::user_regs_struct) -> Result<(), i32> {
    let mut iov = libc::iovec {
        iov_base: (regs as *mut libc::user_regs_struct).cast(),
        iov_len: std::mem::size_of::<libc::user_regs_struct>(),
    };
    // SAFETY: `iov` describes `regs`, which lives for the call and has the
    // size the kernel reads or writes.
    check(
        unsafe { libc::ptrace(request, pid, libc::NT_PRSTATUS as libc::c_long, &mut iov) }
            as libc::c_int,
    )?;
    Ok(())
}

/// Elsewhere no call is changed.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn clear_stat_flag(_pid: i32, _nrs: (u64, u64), _bit: u64) -> Result<bool, i32> {
    Ok(false)
}
