//! Under gVisor a command (on a terminal: below its leader) runs below a
//! tracer when
//! this gVisor refuses `statx` and `newfstatat` with `AT_NO_AUTOMOUNT`
//! (release 20221219 answers `EINVAL`, and coreutils passes the flag: `ls`,
//! `stat` and the like fail on every path but `.`). The tracer starts the
//! command with a filter that stops just those calls
//! ([`crate::filter::statx_trace`]), takes the flag out (a kernel without
//! automounts has nothing it would change) and lets them go on; the
//! command's processes are traced from their start. It ignores the signals
//! the agent sends the command's process group (they are the command's),
//! and ends as the command ended. A process the command leaves running
//! when it ends is no longer traced: those calls then fail with `ENOSYS`.

use crate::sys::trace::{self, EVENT_SECCOMP, EVENT_STOP, Stop};
use std::os::unix::ffi::OsStrExt;

/// The argument after the agent's flag that runs the tracer; the
/// command's argv follows it.
pub(crate) const TRACER_FLAG: &str = "--statx-tracer";

/// The signals the tracer ignores itself (the agent sends them to the
/// command's process group, the tracer's too).
const PASSED: [i32; 8] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGPIPE,
];

/// Whether this kernel refuses `statx` with `AT_NO_AUTOMOUNT` on `/`.
pub(crate) fn statx_refuses_no_automount() -> bool {
    matches!(
        rustix::fs::statx(
            rustix::fs::CWD,
            "/",
            rustix::fs::AtFlags::NO_AUTOMOUNT,
            rustix::fs::StatxFlags::BASIC_STATS,
        ),
        Err(rustix::io::Errno::INVAL)
    )
}

/// The numbers of `statx` and `newfstatat` here.
#[cfg(target_arch = "x86_64")]
const NRS: Option<(u32, u32)> = Some((332, 262));
#[cfg(target_arch = "aarch64")]
const NRS: Option<(u32, u32)> = Some((291, 79));
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const NRS: Option<(u32, u32)> = None;

/// Runs `argv` (program first) below the tracer to its end: its exit code,
/// or the tracer dies of the command's signal.
pub(crate) fn tracer_main(argv: &[std::ffi::OsString]) -> i32 {
    let (Some(abi), Some((statx, fstatat))) = (crate::syscalls::NATIVE, NRS) else {
        eprintln!("statx tracer: no system call table for this architecture");
        return 125;
    };
    let Ok(args) = argv
        .iter()
        .map(|a| std::ffi::CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
    else {
        return 125;
    };
    if args.is_empty() {
        return 125;
    }
    let before: Vec<crate::sys::Disposition> = PASSED
        .iter()
        .map(|s| crate::sys::ignore_signal(*s))
        .collect();
    let filter = crate::filter::statx_trace(abi, statx, fstatat);
    let child = match trace::fork_traced(&args, &filter, &before) {
        Ok(pid) => pid,
        Err(errno) => {
            eprintln!(
                "statx tracer: starting {}: {}",
                argv[0].to_string_lossy(),
                std::io::Error::from_raw_os_error(errno)
            );
            return 126;
        }
    };
    let nrs = (u64::from(statx), u64::from(fstatat));
    let bit = u64::from(crate::filter::AT_NO_AUTOMOUNT);
    // The tracees met so far: a new one's first stop is not a group stop.
    let mut seen: std::collections::HashSet<i32> = std::collections::HashSet::from([child]);
    loop {
        let stop = trace::wait_any();
        if let Ok(Stop::Stopped(pid, _, event)) = &stop
            && seen.insert(*pid)
            && *event == EVENT_STOP
        {
            trace::resume(*pid, 0);
            continue;
        }
        match stop {
            Err(_) => return 125,
            Ok(Stop::Ended(pid, status)) if pid == child => {
                if libc::WIFSIGNALED(status) {
                    crate::sys::die_of(libc::WTERMSIG(status));
                }
                return libc::WEXITSTATUS(status);
            }
            Ok(Stop::Ended(pid, _)) => {
                seen.remove(&pid);
            }
            Ok(Stop::Stopped(pid, _, EVENT_SECCOMP)) => {
                // A call changed or not, it goes on (a tracee gone
                // meanwhile is simply not resumed).
                let _ = trace::clear_stat_flag(pid, nrs, bit);
                trace::resume(pid, 0);
            }
            Ok(Stop::Stopped(pid, signal, EVENT_STOP)) => {
                if matches!(
                    signal,
                    libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
                ) {
                    // A group stop: it stays stopped until a SIGCONT.
                    trace::listen(pid);
                } else {
                    trace::resume(pid, 0);
                }
            }
            // Another event (a fork, a clone): no signal to deliver.
            Ok(Stop::Stopped(pid, _, event)) if event != 0 => trace::resume(pid, 0),
            // A signal for the tracee: delivered.
            Ok(Stop::Stopped(pid, signal, _)) => trace::resume(pid, signal),
        }
    }
}
