//! Under gVisor a terminal command runs below a leader: gVisor's terminals
//! send no signal for a typed interrupt, quit or suspend character, and
//! answer no one outside the terminal's session which process group is in
//! its foreground. The leader is the session's leader with the terminal as
//! its controlling one (the agent made it so); it starts the command in a
//! process group of its own in the foreground, reads signal numbers from
//! the agent on descriptor 3, sends an interrupt, quit or suspend to the
//! terminal's foreground group (a job-control shell's foreground job) and
//! any other to the command's group, and ends as the command ended.

use std::io::Read;
use std::os::unix::process::CommandExt;

/// The argument after the agent's flag that runs the leader; the command's
/// argv follows it.
pub(crate) const LEADER_FLAG: &str = "--terminal-leader";
/// The descriptor the agent's signal numbers come on.
pub(crate) const CONTROL_FD: i32 = 3;

/// The signals the leader ignores itself (they are the command's).
const PASSED: [i32; 5] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// Runs `argv` (program first) to its end; the exit code, or the leader
/// dies of the command's signal.
pub(crate) fn leader_main(argv: &[std::ffi::OsString]) -> i32 {
    let Some((program, args)) = argv.split_first() else {
        return 125;
    };
    let before: Vec<crate::sys::Disposition> = PASSED
        .iter()
        .map(|s| crate::sys::ignore_signal(*s))
        .collect();
    // The control descriptor is the leader's alone: closed at the exec.
    // SAFETY: descriptor 3 is the control pipe the agent put there for this
    // process, owned by nothing else in it.
    #[allow(
        unsafe_code,
        reason = "the control pipe is taken from its fixed number; SAFETY comment above"
    )]
    let control = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(CONTROL_FD) };
    if let Err(e) = rustix::io::fcntl_setfd(&control, rustix::io::FdFlags::CLOEXEC) {
        eprintln!("terminal leader: {e}");
        return 125;
    }
    let mut c = std::process::Command::new(program);
    c.args(args).process_group(0);
    // SAFETY: the closure runs in the forked child before exec and makes
    // only async-signal-safe calls (signal, tcsetpgrp) on values copied
    // onto its stack; it allocates nothing.
    #[allow(
        unsafe_code,
        reason = "the command takes the terminal's foreground and its signals' dispositions back between fork and exec; SAFETY comment above"
    )]
    unsafe {
        c.pre_exec(move || {
            // While SIGTTOU is still ignored: a background group taking the
            // foreground would be stopped by it otherwise.
            crate::sys::take_foreground(0).map_err(std::io::Error::from_raw_os_error)?;
            for d in &before {
                crate::sys::restore_signal(*d);
            }
            Ok(())
        });
    }
    let child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => {
            eprintln!("terminal leader: {}: {e}", program.to_string_lossy());
            return if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
        }
    };
    let group = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let _ = std::thread::Builder::new()
        .name("control".into())
        .spawn(move || pass_signals(control, group));
    let mut child = child;
    match child.wait() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = status.signal() {
                crate::sys::die_of(sig);
            }
            status.code().unwrap_or(125)
        }
        Err(_) => 125,
    }
}

/// Sends each signal number read from the agent: a terminal's to the
/// foreground group, any other to the command's group.
fn pass_signals(mut control: std::fs::File, group: i32) {
    let mut buf = [0u8; 64];
    loop {
        let n = match control.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for &sig in buf.get(..n).unwrap_or_default() {
            let sig = i32::from(sig);
            let target = if PASSED.contains(&sig) {
                crate::sys::foreground_group(0).unwrap_or(group)
            } else {
                group
            };
            if let (Some(g), Some(s)) = (
                rustix::process::Pid::from_raw(target),
                rustix::process::Signal::from_named_raw(sig),
            ) {
                let _ = rustix::process::kill_process_group(g, s);
            }
        }
    }
}
