//! The session init: the first process of a warm native session, inside
//! its sandbox (under the guard and its supervisor when the session has
//! one). It starts each command the host asks for and tells the host when
//! it started and how it ended, so a command costs a fork and an exec
//! inside the sandbox, not a new sandbox.
//!
//! It says hello first (`started` for command 0, its own pid). The host
//! talks to it over one stream socket, given as a descriptor
//! number (`--session-init FD`), in the frames of
//! [`sandbox_core::session_wire`]; the command's stdio (pipes or a
//! terminal's slave) and `cgroup.procs` files come beside the bytes. Each
//! command gets a process group of its own, which the host's signals
//! reach; on a terminal, or with limits, a session of its own too (the
//! terminal its controlling one), and it joins its cgroups before it runs.
//! The init is the subreaper of everything below it, so processes a command leaves running stay in the
//! session and are reaped here. When the host's end closes, the init
//! kills every command's process group and exits; the sandbox ends with
//! it.

use sandbox_core::session_wire::{
    self, FrameReader, MAX_REQUEST_LEN, Reply, Request, Stdio as WireStdio,
};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::sync::{Arc, Condvar, Mutex};

/// The argument that starts the launcher program as the session init,
/// followed by the socket's descriptor number.
pub const SESSION_INIT_FLAG: &str = "--session-init";

/// Most descriptors one read takes with it.
const MAX_FDS_PER_READ: usize = 16;

/// What the reaper and the request loop share.
struct State {
    /// Running commands: pid to the host's id, and back.
    by_pid: HashMap<i32, u64>,
    by_id: HashMap<u64, i32>,
    /// Commands started so far (the reaper waits for the next).
    spawned: u64,
    /// The socket's writing side.
    out: std::fs::File,
}

/// Runs the init when `args` (the launcher's arguments after its name) are
/// [`SESSION_INIT_FLAG`] and a descriptor number: its exit code. `None`
/// when they are anything else (the guard's own command line).
pub fn run_if_asked(args: &[std::ffi::OsString]) -> Option<i32> {
    let [flag, fd] = args else {
        return None;
    };
    if flag.as_bytes() != SESSION_INIT_FLAG.as_bytes() {
        return None;
    }
    let fd = fd.to_str().and_then(|s| s.parse::<RawFd>().ok());
    Some(match fd {
        Some(fd) if fd > 2 => session_init_main(fd),
        _ => {
            eprintln!("session-init: {SESSION_INIT_FLAG} takes a descriptor number above 2");
            125
        }
    })
}

/// Runs the init on the socket `fd` until the host closes it: the exit
/// code (0 then, 2 after a frame the init cannot read, 125 when the
/// descriptor is not a socket).
fn session_init_main(fd: RawFd) -> i32 {
    // SAFETY: `fd` names the descriptor the host left open for us (the
    // first thing this program does, before anything else could open or
    // close one); it is checked to be a socket before use and owned only
    // here from now on.
    #[allow(
        unsafe_code,
        reason = "taking ownership of an inherited descriptor; SAFETY comment above"
    )]
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    if rustix::net::sockopt::socket_type(&sock).is_err() {
        eprintln!("session-init: descriptor {fd} is not a socket");
        return 125;
    }
    // Not for the commands.
    let _ = rustix::io::fcntl_setfd(&sock, rustix::io::FdFlags::CLOEXEC);
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let out = match sock.try_clone() {
        Ok(o) => std::fs::File::from(o),
        Err(e) => {
            eprintln!("session-init: {e}");
            return 125;
        }
    };
    let state = Arc::new((
        Mutex::new(State {
            by_pid: HashMap::new(),
            by_id: HashMap::new(),
            spawned: 0,
            out,
        }),
        Condvar::new(),
    ));
    let reaper = state.clone();
    if let Err(e) = std::thread::Builder::new()
        .name("reaper".into())
        .spawn(move || reap(&reaper))
    {
        eprintln!("session-init: {e}");
        return 125;
    }
    // The hello: the host's launch returns once the init runs.
    if let Ok(mut s) = state.0.lock() {
        let pid = u32::try_from(rustix::process::getpid().as_raw_nonzero().get()).unwrap_or(0);
        send(&mut s.out, Reply::Started { id: 0, pid });
    }
    let code = serve(&sock, &state);
    // The host is gone (or spoke nonsense): every command ends.
    if let Ok(s) = state.0.lock() {
        for pid in s.by_pid.keys() {
            kill_group(*pid, rustix::process::Signal::KILL);
        }
    }
    code
}

/// Reads requests until the host's end closes.
fn serve(sock: &OwnedFd, state: &Arc<(Mutex<State>, Condvar)>) -> i32 {
    let mut frames = FrameReader::new(MAX_REQUEST_LEN);
    let mut fds: VecDeque<OwnedFd> = VecDeque::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let mut space =
            [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS_PER_READ))];
        let mut cmsg = rustix::net::RecvAncillaryBuffer::new(&mut space);
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let got = match rustix::net::recvmsg(
            sock,
            &mut iov,
            &mut cmsg,
            rustix::net::RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(r) => r.bytes,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                eprintln!("session-init: reading the host's requests: {e}");
                return 2;
            }
        };
        for msg in cmsg.drain() {
            if let rustix::net::RecvAncillaryMessage::ScmRights(rights) = msg {
                fds.extend(rights);
            }
        }
        if got == 0 {
            return 0;
        }
        frames.push(buf.get(..got).unwrap_or_default());
        loop {
            let body = match frames.next_body() {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => {
                    eprintln!("session-init: {e}");
                    return 2;
                }
            };
            match Request::decode(&body) {
                Ok(Request::Exec(e)) => {
                    let n = e.fds();
                    if fds.len() < n {
                        eprintln!("session-init: a command came without its descriptors");
                        return 2;
                    }
                    let mine: Vec<OwnedFd> = fds.drain(..n).collect();
                    start(state, &e, mine);
                }
                Ok(Request::Signal { id, signal }) => {
                    let pid = state.0.lock().ok().and_then(|s| s.by_id.get(&id).copied());
                    let sig = rustix::process::Signal::from_named_raw(signal);
                    if let (Some(pid), Some(sig)) = (pid, sig) {
                        kill_group(pid, sig);
                    }
                }
                Err(e) => {
                    eprintln!("session-init: {e}");
                    return 2;
                }
            }
        }
    }
}

fn kill_group(pid: i32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(p, sig);
    }
}

/// Writes one reply; a host that is gone is noticed by the request loop.
fn send(out: &mut std::fs::File, reply: Reply) {
    let _ = out.write_all(&reply.encode());
}

/// Starts command `e` with its descriptors `fds` (stdio first, then the
/// cgroup files) and says so, or why not.
fn start(state: &Arc<(Mutex<State>, Condvar)>, e: &session_wire::Exec, fds: Vec<OwnedFd>) {
    let (stdio, cgroups) = fds.split_at(e.stdio.fds().min(fds.len()));
    let Some(mut c) = crate::request_command::command(&e.argv, &e.env, &e.cwd) else {
        return;
    };
    let dup = |fd: Option<&OwnedFd>| -> std::io::Result<std::process::Stdio> {
        let fd = fd.ok_or_else(|| std::io::Error::from_raw_os_error(libc::EBADF))?;
        Ok(std::process::Stdio::from(fd.try_clone()?))
    };
    let pick = |i: usize| match e.stdio {
        WireStdio::Pipes => stdio.get(i),
        WireStdio::Terminal => stdio.first(),
    };
    let stdio_set = (|| -> std::io::Result<()> {
        c.stdin(dup(pick(0))?)
            .stdout(dup(pick(1))?)
            .stderr(dup(pick(2))?);
        Ok(())
    })();
    let terminal = e.stdio == WireStdio::Terminal;
    if !terminal && cgroups.is_empty() {
        // A group of its own, and nothing else between fork and exec: the
        // standard library then spawns with `posix_spawn` (no copy of this
        // process's page tables). The init's own session has no
        // controlling terminal, so the command has none either.
        c.process_group(0);
    } else {
        let cgroup_fds: Vec<RawFd> = cgroups.iter().map(AsRawFd::as_raw_fd).collect();
        // SAFETY: the closure runs in the forked child before exec. It
        // makes only async-signal-safe system calls (setsid, ioctl
        // TIOCSCTTY on descriptor 0, write on descriptors that stay open in
        // the parent until the spawn returned) and does not allocate: the
        // descriptor numbers were collected before the fork.
        #[allow(
            unsafe_code,
            reason = "a command's session, terminal and cgroups are set between fork and exec; SAFETY comment above"
        )]
        unsafe {
            c.pre_exec(move || {
                rustix::process::setsid()?;
                if terminal {
                    rustix::process::ioctl_tiocsctty(std::os::fd::BorrowedFd::borrow_raw(0))?;
                }
                for fd in &cgroup_fds {
                    rustix::io::write(std::os::fd::BorrowedFd::borrow_raw(*fd), b"0")?;
                }
                Ok(())
            });
        }
    }
    let (lock, cv) = &**state;
    let Ok(mut s) = lock.lock() else {
        return;
    };
    // Spawned under the lock: the reaper cannot take the exit of a pid not
    // yet recorded, and `started` is written before `ended`.
    let spawned = stdio_set.and_then(|()| c.spawn());
    match spawned {
        Ok(child) => {
            let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
            s.by_pid.insert(pid, e.id);
            s.by_id.insert(e.id, pid);
            s.spawned += 1;
            let reply = Reply::Started {
                id: e.id,
                pid: child.id(),
            };
            send(&mut s.out, reply);
            cv.notify_all();
        }
        Err(err) => {
            let errno = err.raw_os_error().unwrap_or(libc::EIO);
            send(&mut s.out, Reply::Failed { id: e.id, errno });
        }
    }
    drop(s);
    // The parent's copies of the command's descriptors close here, so its
    // pipes end when the command's copies do.
    drop(fds);
}

/// Reaps every child and orphan; a command's end is reported.
fn reap(state: &Arc<(Mutex<State>, Condvar)>) {
    let (lock, cv) = &**state;
    loop {
        // Read before the wait: a command started after this is waited
        // for, even when it started before `ECHILD` was seen.
        let Ok(seen) = lock.lock().map(|s| s.spawned) else {
            return;
        };
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) => {
                let Ok(mut s) = lock.lock() else {
                    return;
                };
                if let Some(id) = s.by_pid.remove(&pid.as_raw_nonzero().get()) {
                    s.by_id.remove(&id);
                    let wait_status = status.as_raw();
                    send(&mut s.out, Reply::Ended { id, wait_status });
                }
            }
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => {
                // No child at all: only a new command makes one.
                let Ok(s) = lock.lock() else {
                    return;
                };
                let Ok(_s) = cv.wait_while(s, |s| s.spawned == seen) else {
                    return;
                };
            }
        }
    }
}
