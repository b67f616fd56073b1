//! The agent inside a `microvm` guest: its first process (`/init` of the
//! initramfs the host builds, started by the kernel with `--vm-agent`).
//!
//! It mounts the guest's `/proc`, `/sys`, `/dev` and `/tmp`, loads the
//! kernel modules listed in `/modules.order` (the virtio transport and
//! console drivers of a distribution kernel), finds the virtio-serial
//! port named [`PORT_NAME`] and speaks [`sandbox_core::vm_wire`] on it:
//! it says hello (with the guest's kernel release), starts each command
//! the host asks for in a process group of its own, with pipes for its
//! stdio carried as data frames, passes signals to the group, and reports
//! each command's end after its output. As the guest's process 1 it reaps
//! every orphan. When the host's end closes or it asks, every process is
//! killed and the guest powers off.
//!
//! A guest's process 1 must not end or panic (the kernel panics): every
//! failure is reported on the console and, where the host can be told, on
//! the port.
//!
//! Under gVisor the same agent is the sandbox's first process
//! ([`STDIO_FLAG`]): gVisor's runtime has made the file system already, and
//! the channel is the agent's own stdin and stdout, which gVisor binds anew
//! to the restoring runtime's after a checkpoint, so the agent, its
//! commands and their terminals carry on over a new channel. At the
//! channel's end it kills every process and exits.
//!
//! Limits ([`sandbox_core::vm_wire::VmLimits`]) are held by a cgroup of the
//! guest's kernel per command (`cgroup.rs`).

mod boot;
mod cgroup;
mod start;
mod statx_tracer;
mod streams;
mod terminal_leader;

use boot::{
    find_port, hide_host_facing_devices, load_modules, mount_basics, mount_terminals_if_missing,
    switch_to_host_share,
};
use start::{start, winsize};
use streams::Streams;

use sandbox_core::vm_wire::{
    FrameReader, FromGuest, MAX_DATA, MAX_TO_GUEST_LEN, ToGuest, VERSION, VmExec, VmStdio,
};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The argument that starts the launcher program as the guest's agent.
pub const VM_AGENT_FLAG: &str = "--vm-agent";
/// The argument after [`VM_AGENT_FLAG`] that makes the agent take the
/// host's virtio-fs share tagged `ROOT_TAG` (`root`) as the guest's root (once
/// its port is found, before its hello): the session's file system.
pub const ROOT_FLAG: &str = "--root-from-host";
/// The argument after [`VM_AGENT_FLAG`] that makes the agent speak on its
/// stdin and stdout (the first process of a gVisor sandbox) instead of a
/// guest's port.
pub const STDIO_FLAG: &str = "--channel-on-stdio";
/// The tag of the share the agent takes as its root.
const ROOT_TAG: &str = "root";
/// The name the host gives the agent's virtio-serial port.
pub const PORT_NAME: &str = "agent-sandbox.0";
/// How long a command's output is still read after it ended, when
/// processes it left running hold its pipes open.
const OUTPUT_GRACE: Duration = Duration::from_millis(100);
/// How long the agent looks for its port (the driver may load late).
const PORT_WAIT: Duration = Duration::from_secs(10);

/// Runs the agent when `args` (the arguments after the program name, and
/// after a multi-call launcher's marker) are [`VM_AGENT_FLAG`], alone or
/// followed by [`ROOT_FLAG`]; `None` else. Only a guest's first process
/// calls it with these. Returns only when it could not start (it powers the
/// guest off at its end).
pub fn run_if_asked(args: &[std::ffi::OsString]) -> Option<i32> {
    if let [flag, leader, command @ ..] = args
        && flag.as_bytes() == VM_AGENT_FLAG.as_bytes()
        && leader.as_bytes() == terminal_leader::LEADER_FLAG.as_bytes()
    {
        return Some(terminal_leader::leader_main(command));
    }
    if let [flag, tracer, command @ ..] = args
        && flag.as_bytes() == VM_AGENT_FLAG.as_bytes()
        && tracer.as_bytes() == statx_tracer::TRACER_FLAG.as_bytes()
    {
        return Some(statx_tracer::tracer_main(command));
    }
    let (flag, root) = match args {
        [flag] => (flag, Root::Initramfs),
        [flag, root] if root.as_bytes() == ROOT_FLAG.as_bytes() => (flag, Root::HostShare),
        [flag, stdio] if stdio.as_bytes() == STDIO_FLAG.as_bytes() => (flag, Root::Sandbox),
        _ => return None,
    };
    if flag.as_bytes() != VM_AGENT_FLAG.as_bytes() {
        return None;
    }
    Some(match root {
        Root::Sandbox => sandbox_main(),
        _ => agent_main(root),
    })
}

/// The guest's root file system.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Root {
    /// The initramfs (a guest without a share: the probe's canary).
    Initramfs,
    /// The host's share tagged [`ROOT_TAG`].
    HostShare,
    /// A gVisor sandbox's, made by its runtime; the channel on stdio.
    Sandbox,
}

/// The first process of a gVisor sandbox: the channel is stdin and stdout.
fn sandbox_main() -> i32 {
    // Stderr goes to the runtime's log; stdin and stdout are the channel.
    let dup = |fd: i32| {
        // SAFETY: 0 and 1 are this process's stdio, open for its life; the
        // borrow lasts only for the duplication.
        #[allow(
            unsafe_code,
            reason = "the channel's descriptors are the process's stdio; SAFETY comment above"
        )]
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        rustix::io::fcntl_dupfd_cloexec(fd, 3).map(std::fs::File::from)
    };
    let (port, out) = match (dup(0), dup(1)) {
        (Ok(i), Ok(o)) => (i, Arc::new(Mutex::new(o))),
        _ => {
            eprintln!("vm-agent: no channel on stdio");
            return 1;
        }
    };
    // Commands must not inherit the channel as their stdio by accident.
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsFd;
        let _ = crate::sys::dup_onto(null.as_fd(), 0);
        let _ = crate::sys::dup_onto(null.as_fd(), 1);
    }
    mount_terminals_if_missing();
    TERMINAL_SIGNALS.store(true, Ordering::SeqCst);
    if statx_tracer::statx_refuses_no_automount() {
        STATX_TRACER.store(true, Ordering::SeqCst);
    }
    // The leader is this program again: its path, and the arguments before
    // the agent's flag (a multi-call launcher's marker).
    let exe = std::env::current_exe().ok();
    let all: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let leading: Vec<Vec<u8>> = all
        .iter()
        .skip(1)
        .take_while(|a| a.as_bytes() != VM_AGENT_FLAG.as_bytes())
        .map(|a| a.as_bytes().to_vec())
        .collect();
    if let Some(exe) = exe {
        let _ = LEADER.set((exe.as_os_str().as_bytes().to_vec(), leading));
    }
    if let Err(errno) = crate::sys::set_non_dumpable() {
        eprintln!("vm-agent: {}", std::io::Error::from_raw_os_error(errno));
    }
    serve_all(port, &out);
    crate::sys::kill_every_other_process();
    0
}

fn agent_main(root: Root) -> i32 {
    mount_basics();
    load_modules();
    if let Err(errno) = crate::sys::loopback_up() {
        eprintln!(
            "vm-agent: bringing up lo: {}",
            std::io::Error::from_raw_os_error(errno)
        );
    }
    let port = match find_port() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("vm-agent: no port named {PORT_NAME}: {e}");
            power_off();
            return 1;
        }
    };
    // No command (they have no capability) may trace or read the agent.
    if let Err(errno) = crate::sys::set_non_dumpable() {
        eprintln!("vm-agent: {}", std::io::Error::from_raw_os_error(errno));
    }
    if root == Root::HostShare
        && let Err(e) = switch_to_host_share()
    {
        // The host sees no hello, and the console's last line says why.
        eprintln!("vm-agent: taking the host's share as the root: {e}");
        power_off();
        return 1;
    }
    hide_host_facing_devices();
    let out = match port.try_clone() {
        Ok(o) => Arc::new(Mutex::new(o)),
        Err(e) => {
            eprintln!("vm-agent: {e}");
            power_off();
            return 1;
        }
    };
    serve_all(port, &out);
    power_off();
    0
}

/// Says hello, then serves the host's messages until the channel ends.
fn serve_all(port: std::fs::File, out: &Arc<Mutex<std::fs::File>>) {
    let kernel = rustix::system::uname().release().to_bytes().to_vec();
    send(
        out,
        &FromGuest::Hello {
            version: VERSION,
            kernel,
        },
    );
    let state: Shared = Arc::new((Mutex::new(Commands::default()), Condvar::new()));
    {
        let (out, state) = (out.clone(), state.clone());
        if let Err(e) = std::thread::Builder::new()
            .name("reaper".into())
            .spawn(move || reap(&out, &state))
        {
            eprintln!("vm-agent: {e}");
        }
    }
    let streams = Streams::default();
    serve(port, out, &state, &streams);
}

/// Sends one message; a host that is gone is noticed by the reading loop.
pub(super) fn send(out: &Mutex<std::fs::File>, msg: &FromGuest) {
    if let Ok(mut o) = out.lock() {
        let _ = o.write_all(&msg.encode());
    }
}

/// One running command.
struct Running {
    pid: i32,
    /// Its input, while open: a pipe, or its terminal's master.
    stdin: Option<std::fs::File>,
    /// Its terminal's master (for resizes), when it runs on one.
    terminal: Option<Arc<std::os::fd::OwnedFd>>,
    /// Set at its end: its output readers stop after the grace.
    ended: Arc<AtomicBool>,
    /// Its output readers, joined before its end is reported.
    readers: Vec<std::thread::JoinHandle<()>>,
    /// Its cgroup, when it has limits.
    cgroup: Option<cgroup::CommandCgroup>,
    /// Its leader's control pipe (a terminal command under gVisor): the
    /// signals for it go there.
    signals: Option<Arc<std::fs::File>>,
}

#[derive(Default)]
struct Commands {
    by_id: HashMap<u64, Running>,
    by_pid: HashMap<i32, u64>,
    /// Commands started so far (the reaper, without children, waits for
    /// the next).
    spawned: u64,
}

/// The commands, and the signal of a new one for the reaper.
type Shared = Arc<(Mutex<Commands>, Condvar)>;

/// Reads the host's messages until its end closes (or it asks to end).
fn serve(
    mut port: std::fs::File,
    out: &Arc<Mutex<std::fs::File>>,
    state: &Shared,
    streams: &Streams,
) {
    let mut frames = FrameReader::new(MAX_TO_GUEST_LEN);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match port.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("vm-agent: reading the port: {e}");
                return;
            }
        };
        frames.push(buf.get(..n).unwrap_or_default());
        loop {
            let body = match frames.next_body() {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(e) => {
                    eprintln!("vm-agent: {e}");
                    return;
                }
            };
            match ToGuest::decode(&body) {
                Ok(ToGuest::Exec(e)) => start(out, state, &e),
                Ok(ToGuest::Stdin { id, data }) => write_stdin(state, id, &data),
                Ok(ToGuest::Signal { id, signal }) => {
                    let found = state
                        .0
                        .lock()
                        .ok()
                        .and_then(|s| s.by_id.get(&id).map(|r| (r.pid, r.signals.clone())));
                    // A leader passes it on to the command's group; it is
                    // killed with it where that is a kill.
                    if let Some((_, Some(control))) = &found
                        && let Ok(byte) = u8::try_from(signal)
                    {
                        use std::io::Write as _;
                        let _ = (&**control).write_all(&[byte]);
                        if signal != libc::SIGKILL {
                            continue;
                        }
                    }
                    let pid = found.map(|(pid, _)| pid);
                    let sig = rustix::process::Signal::from_named_raw(signal);
                    if let (Some(pid), Some(sig)) =
                        (pid.and_then(rustix::process::Pid::from_raw), sig)
                    {
                        let _ = rustix::process::kill_process_group(pid, sig);
                    }
                }
                Ok(ToGuest::Resize { id, rows, cols }) => {
                    let master = state
                        .0
                        .lock()
                        .ok()
                        .and_then(|s| s.by_id.get(&id).and_then(|r| r.terminal.clone()));
                    if let Some(m) = master {
                        let _ = rustix::termios::tcsetwinsize(&*m, winsize(rows, cols));
                    }
                }
                Ok(ToGuest::Listen { port }) => streams.listen(port, out),
                Ok(ToGuest::TcpData { conn, data }) => streams.data(conn, &data),
                Ok(ToGuest::TcpClose { conn }) => streams.close(conn),
                Ok(ToGuest::PowerOff) => return,
                Ok(ToGuest::Sync { n }) => send(out, &FromGuest::Synced { n }),
                Err(e) => {
                    eprintln!("vm-agent: {e}");
                    return;
                }
            }
        }
    }
}

/// Writes input to command `id` (blocking: a command that does not read
/// its input holds the host's later messages back, as a full pipe would).
fn write_stdin(state: &Shared, id: u64, data: &[u8]) {
    let taken = state.0.lock().ok().and_then(|mut s| {
        let r = s.by_id.get_mut(&id)?;
        Some((
            r.stdin.take()?,
            r.terminal.clone(),
            r.pid,
            r.signals.clone(),
        ))
    });
    let Some((mut stdin, terminal, pid, signals)) = taken else {
        return;
    };
    let written = match terminal {
        Some(master) if TERMINAL_SIGNALS.load(Ordering::SeqCst) => {
            type_on_terminal(&mut stdin, &master, (pid, signals.as_deref()), data)
        }
        _ => !data.is_empty() && stdin.write_all(data).is_ok(),
    };
    if !written {
        return; // closed
    }
    if let Ok(mut s) = state.0.lock()
        && let Some(r) = s.by_id.get_mut(&id)
    {
        r.stdin = Some(stdin);
    }
}

/// How to start this program as a terminal command's leader under gVisor:
/// its path and its leading arguments.
static LEADER: std::sync::OnceLock<(Vec<u8>, Vec<Vec<u8>>)> = std::sync::OnceLock::new();

/// Whether commands run below the statx tracer (a
/// gVisor that refuses `AT_NO_AUTOMOUNT`: see [`statx_tracer`]).
static STATX_TRACER: AtomicBool = AtomicBool::new(false);

/// Whether the agent sends a terminal's signals itself: gVisor's line
/// discipline (release 20221219) echoes an interrupt character typed on a
/// terminal but sends no signal.
static TERMINAL_SIGNALS: AtomicBool = AtomicBool::new(false);

/// Writes what was typed to a terminal whose kernel sends no signals for
/// it: with `ISIG` set, each interrupt, quit or suspend character is taken
/// out and its signal sent to the terminal's foreground process group, as
/// Linux's line discipline does: through the command's leader, which can
/// read that group (gVisor answers the agent neither `TIOCGPGRP` on the
/// master nor `tpgid` in `/proc`); without a leader, to the group the
/// terminal names, else the command's own. Whether the terminal is still
/// open.
fn type_on_terminal(
    stdin: &mut std::fs::File,
    master: &std::os::fd::OwnedFd,
    (pid, leader): (i32, Option<&std::fs::File>),
    data: &[u8],
) -> bool {
    use rustix::process::Signal;
    use rustix::termios::{LocalModes, SpecialCodeIndex, tcgetattr};
    if data.is_empty() {
        return false;
    }
    let Some(t) = tcgetattr(master)
        .ok()
        .filter(|t| t.local_modes.contains(LocalModes::ISIG))
    else {
        return stdin.write_all(data).is_ok();
    };
    let codes = [
        (t.special_codes[SpecialCodeIndex::VINTR], Signal::INT),
        (t.special_codes[SpecialCodeIndex::VQUIT], Signal::QUIT),
        (t.special_codes[SpecialCodeIndex::VSUSP], Signal::TSTP),
    ];
    let mut rest = data;
    while let Some(at) = rest
        .iter()
        .position(|b| *b != 0 && codes.iter().any(|(c, _)| c == b))
    {
        let (before, after) = rest.split_at(at);
        if !before.is_empty() && stdin.write_all(before).is_err() {
            return false;
        }
        let Some((&byte, after)) = after.split_first() else {
            break;
        };
        if let Some((_, sig)) = codes.iter().find(|(c, _)| *c == byte) {
            // The leader knows the foreground group; without one, the
            // terminal may say, else the command's own group.
            let passed = leader.is_some_and(|mut l| {
                u8::try_from(sig.as_raw()).is_ok_and(|b| l.write_all(&[b]).is_ok())
            });
            if !passed
                && let Some(g) = rustix::termios::tcgetpgrp(master)
                    .ok()
                    .or_else(|| rustix::process::Pid::from_raw(pid))
            {
                let _ = rustix::process::kill_process_group(g, *sig);
            }
        }
        rest = after;
    }
    rest.is_empty() || stdin.write_all(rest).is_ok()
}

/// Reaps every process; a command's end is reported after its output.
fn reap(out: &Arc<Mutex<std::fs::File>>, state: &Shared) {
    let (lock, cv) = &**state;
    loop {
        // Read before the wait: a command started after this is waited
        // for, even when it started before `ECHILD` was seen.
        let Ok(seen) = lock.lock().map(|s| s.spawned) else {
            return;
        };
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) => {
                let running = lock.lock().ok().and_then(|mut s| {
                    let id = s.by_pid.remove(&pid.as_raw_nonzero().get())?;
                    s.by_id.remove(&id).map(|r| (id, r))
                });
                let Some((id, r)) = running else { continue };
                r.ended.store(true, Ordering::SeqCst);
                let out = out.clone();
                let wait_status = status.as_raw();
                // What it left in its cgroup ends, then its output comes
                // (up to the grace), then its end.
                let _ = std::thread::Builder::new()
                    .name("ended".into())
                    .spawn(move || {
                        let over = r.cgroup.map(cgroup::CommandCgroup::finish);
                        for h in r.readers {
                            let _ = h.join();
                        }
                        if over == Some(true) {
                            send(&out, &FromGuest::OutOfMemory { id });
                        }
                        send(&out, &FromGuest::Ended { id, wait_status });
                    });
            }
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            // No child at all: only a new command makes one.
            Err(_) => {
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

/// Kills every process and powers the guest off (the host's QEMU then
/// exits). Never returns where the call works.
fn power_off() {
    // Every process but this one.
    crate::sys::kill_every_other_process();
    rustix::fs::sync();
    if let Err(e) = rustix::system::reboot(rustix::system::RebootCommand::PowerOff) {
        eprintln!("vm-agent: powering off: {e}");
    }
}
