//! Starting one command: its argv (below a terminal leader or the statx
//! tracer under gVisor), its cgroup, its pipes or terminal, its
//! capabilities dropped; then passing its output on.

use super::*;

/// The window size of `rows` by `cols`.
pub(super) fn winsize(rows: u16, cols: u16) -> rustix::termios::Winsize {
    rustix::termios::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// A new terminal of this size: (master, slave).
pub(super) fn open_terminal(
    rows: u16,
    cols: u16,
) -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use rustix::pty::{OpenptFlags, grantpt, ioctl_tiocgptpeer, openpt, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    // gVisor's kernel has no TIOCGPTPEER: the slave is then opened by its
    // name.
    let slave = match ioctl_tiocgptpeer(&master, OpenptFlags::RDWR | OpenptFlags::NOCTTY) {
        Ok(s) => s,
        Err(rustix::io::Errno::NOTTY | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            let name = rustix::pty::ptsname(&master, Vec::new())?;
            rustix::fs::open(
                name.as_c_str(),
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?
        }
        Err(e) => return Err(e.into()),
    };
    rustix::termios::tcsetwinsize(&slave, winsize(rows, cols))?;
    Ok((master, slave))
}

/// Starts command `e` and says so, or why not.
pub(super) fn start(out: &Arc<Mutex<std::fs::File>>, state: &Shared, e: &VmExec) {
    let failed = |errno: i32| send(out, &FromGuest::Failed { id: e.id, errno });
    // Under gVisor a terminal command runs below its leader, which can
    // pass the terminal's signals to the foreground job.
    let leader = match (e.stdio, LEADER.get()) {
        (VmStdio::Terminal { .. }, Some((exe, leading)))
            if TERMINAL_SIGNALS.load(Ordering::SeqCst) =>
        {
            let mut argv = vec![exe.clone()];
            argv.extend(leading.iter().cloned());
            argv.push(VM_AGENT_FLAG.as_bytes().to_vec());
            argv.push(terminal_leader::LEADER_FLAG.as_bytes().to_vec());
            if STATX_TRACER.load(Ordering::SeqCst) {
                // The leader's command is the tracer, running the command.
                argv.push(exe.clone());
                argv.extend(leading.iter().cloned());
                argv.push(VM_AGENT_FLAG.as_bytes().to_vec());
                argv.push(statx_tracer::TRACER_FLAG.as_bytes().to_vec());
            }
            argv.extend(e.argv.iter().cloned());
            match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
                Ok(p) => Some((argv, p)),
                Err(err) => return failed(err.raw_os_error()),
            }
        }
        _ => None,
    };
    // Under a gVisor that refuses AT_NO_AUTOMOUNT a command without a
    // terminal runs below the statx tracer.
    let traced = match (e.stdio, LEADER.get()) {
        (VmStdio::Pipes, Some((exe, leading))) if STATX_TRACER.load(Ordering::SeqCst) => {
            let mut argv = vec![exe.clone()];
            argv.extend(leading.iter().cloned());
            argv.push(VM_AGENT_FLAG.as_bytes().to_vec());
            argv.push(statx_tracer::TRACER_FLAG.as_bytes().to_vec());
            argv.extend(e.argv.iter().cloned());
            Some(argv)
        }
        _ => None,
    };
    let argv = leader
        .as_ref()
        .map(|(a, _)| a)
        .or(traced.as_ref())
        .unwrap_or(&e.argv);
    let Some(mut c) = crate::request_command::command(argv, &e.env, &e.cwd) else {
        return;
    };
    let signals = match leader {
        Some((_, (read, write))) => {
            let fd = read.as_raw_fd();
            // SAFETY: the closure runs in the forked child before exec and
            // makes one async-signal-safe call (dup2) on a descriptor the
            // parent holds open until the spawn returned.
            #[allow(
                unsafe_code,
                reason = "the leader's control pipe goes to its fixed number between fork and exec; SAFETY comment above"
            )]
            unsafe {
                c.pre_exec(move || {
                    crate::sys::dup_onto(
                        std::os::fd::BorrowedFd::borrow_raw(fd),
                        terminal_leader::CONTROL_FD,
                    )
                    .map_err(std::io::Error::from_raw_os_error)
                });
            }
            Some((read, std::fs::File::from(write)))
        }
        None => None,
    };
    let cgroup = if e.limits.is_empty() {
        None
    } else {
        match cgroup::CommandCgroup::create(e.id, &e.limits) {
            Ok(cg) => Some(cg),
            Err(errno) => return failed(errno),
        }
    };
    if let Some(cg) = &cgroup {
        let procs = cg.procs().as_raw_fd();
        // SAFETY: the closure runs in the forked child before exec and
        // makes one async-signal-safe system call (write) on a descriptor
        // the parent holds open until the spawn returned; it allocates
        // nothing.
        #[allow(
            unsafe_code,
            reason = "a limited command joins its cgroup between fork and exec; SAFETY comment above"
        )]
        unsafe {
            c.pre_exec(move || {
                let fd = std::os::fd::BorrowedFd::borrow_raw(procs);
                rustix::io::write(fd, b"0")?;
                Ok(())
            });
        }
    }
    let mut master: Option<std::os::fd::OwnedFd> = None;
    match e.stdio {
        VmStdio::Pipes => {
            c.stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .process_group(0);
        }
        VmStdio::Terminal { rows, cols } => {
            let (m, slave) = match open_terminal(rows, cols) {
                Ok(p) => p,
                Err(err) => return failed(err.raw_os_error().unwrap_or(libc::EIO)),
            };
            let stdio = |fd: &std::os::fd::OwnedFd| fd.try_clone().map(std::process::Stdio::from);
            match (stdio(&slave), stdio(&slave), stdio(&slave)) {
                (Ok(i), Ok(o), Ok(er)) => {
                    c.stdin(i).stdout(o).stderr(er);
                }
                _ => return failed(libc::EMFILE),
            }
            // SAFETY: the closure runs in the forked child before exec and
            // makes only async-signal-safe system calls (setsid, ioctl
            // TIOCSCTTY and tcsetpgrp on descriptor 0); it allocates
            // nothing.
            #[allow(
                unsafe_code,
                reason = "a terminal command's session and controlling terminal are set between fork and exec; SAFETY comment above"
            )]
            unsafe {
                c.pre_exec(|| {
                    crate::sys::new_session().map_err(std::io::Error::from_raw_os_error)?;
                    rustix::process::ioctl_tiocsctty(std::os::fd::BorrowedFd::borrow_raw(0))?;
                    crate::sys::take_foreground(0).map_err(std::io::Error::from_raw_os_error)?;
                    Ok(())
                });
            }
            master = Some(m);
        }
    }
    // Every command runs with no capability and no new privileges, as a
    // native sandbox's does: it cannot unmount the guest's own `/proc` and
    // `/dev` to look at the file server's beneath them, make devices, load
    // modules, trace the agent or power the guest off.
    // SAFETY: the closure runs in the forked child before exec and makes
    // only async-signal-safe system calls (prctl, capget, capset) on values
    // on its stack; it allocates nothing.
    #[allow(
        unsafe_code,
        reason = "a command's capabilities are dropped between fork and exec; SAFETY comment above"
    )]
    unsafe {
        c.pre_exec(|| {
            crate::sys::drop_capabilities_except(0).map_err(std::io::Error::from_raw_os_error)?;
            rustix::thread::set_no_new_privs(true)?;
            Ok(())
        });
    }
    // Spawned under the lock: the reaper cannot take the end of a pid not
    // yet recorded.
    let (lock, cv) = &**state;
    let Ok(mut s) = lock.lock() else {
        return;
    };
    let mut child = match c.spawn() {
        Ok(c) => c,
        Err(err) => {
            drop(s);
            if let Some(cg) = cgroup {
                cg.finish();
            }
            return failed(err.raw_os_error().unwrap_or(libc::EIO));
        }
    };
    if let Some(cg) = &cgroup {
        cg.watch();
    }
    // The parent's copies of the slave close with `c`.
    drop(c);
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    send(
        out,
        &FromGuest::Started {
            id: e.id,
            pid: child.id(),
        },
    );
    let ended = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    let (outputs, stdin, terminal) = match master {
        Some(m) => {
            let m = Arc::new(m);
            let input = m.try_clone().ok().map(std::fs::File::from);
            let reading = m.try_clone().ok();
            (vec![(reading, false)], input, Some(m))
        }
        None => (
            vec![
                (child.stdout.take().map(std::os::fd::OwnedFd::from), false),
                (child.stderr.take().map(std::os::fd::OwnedFd::from), true),
            ],
            child
                .stdin
                .take()
                .map(|i| std::fs::File::from(std::os::fd::OwnedFd::from(i))),
            None,
        ),
    };
    for (pipe, is_err) in outputs {
        let Some(pipe) = pipe else { continue };
        let (out, ended, id) = (out.clone(), ended.clone(), e.id);
        if let Ok(h) = std::thread::Builder::new()
            .name("output".into())
            .spawn(move || pass_output(pipe, &out, &ended, id, is_err))
        {
            readers.push(h);
        }
    }
    s.by_pid.insert(pid, e.id);
    s.spawned += 1;
    cv.notify_all();
    s.by_id.insert(
        e.id,
        Running {
            pid,
            stdin,
            terminal,
            ended,
            readers,
            cgroup,
            signals: signals.map(|(_, w)| Arc::new(w)),
        },
    );
    // The reaper waits for every child; this handle is not waited on.
    drop(child);
}

/// Sends a command's output as it comes, until its end of file, or once
/// the command ended and [`OUTPUT_GRACE`] passed.
pub(super) fn pass_output(
    pipe: std::os::fd::OwnedFd,
    out: &Mutex<std::fs::File>,
    ended: &AtomicBool,
    id: u64,
    is_err: bool,
) {
    use rustix::event::{PollFd, PollFlags, poll};
    let mut buf = vec![0u8; MAX_DATA];
    let mut ended_at: Option<Instant> = None;
    let wait = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    };
    loop {
        if ended_at.is_none() && ended.load(Ordering::SeqCst) {
            ended_at = Some(Instant::now());
        }
        if ended_at.is_some_and(|t| t.elapsed() > OUTPUT_GRACE) {
            return;
        }
        let mut fds = [PollFd::new(&pipe, PollFlags::IN)];
        match poll(&mut fds, Some(&wait)) {
            Ok(0) => continue,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        // A terminal's master reads EIO once no process holds its slave.
        let n = match rustix::io::read(&pipe, &mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(_) => return,
        };
        let data = buf.get(..n).unwrap_or_default().to_vec();
        let msg = if is_err {
            FromGuest::Stderr { id, data }
        } else {
            FromGuest::Stdout { id, data }
        };
        send(out, &msg);
    }
}
