//! A warm native session: one sandbox for the whole session, whose first
//! process is our session init (`name_guard`'s `--session-init`), and each
//! command started by that init: a fork and an exec inside, not a new
//! sandbox.
//!
//! The backend launches the init as it would launch a command (so the
//! bubblewrap plan, its bridges, the name guard and Landlock are exactly
//! the per-command path's), with one end of a socket pair inherited; the
//! init's own event stream is only logged. The name guard's report reader
//! is the session's and is lent to each command in turn. A command's stdio
//! (pipes made here, or a terminal made on the host) and its cgroup files
//! (opened here, so the host's credentials decide the move) travel to the
//! init beside the request (a terminal in the sandbox's own devpts under
//! bubblewrap); its exit comes back as a wait status. Signals
//! go to the command's process group through the init.
//!
//! A command the host ends (its `Kill`, a timeout, destroy) gets `SIGKILL`
//! on its process group through the init; if it has not ended
//! [`crate::control::ControlState::END_GRACE`] later (the init stopped or
//! stuck: processes inside may signal it), the whole session's sandbox
//! ends, and later commands are refused with
//! [`ErrorKind::SessionSandboxEnded`].
//!
//! What a command leaves running stays in the session (as in a shell) and
//! ends at destroy; its output after the command ended is not read (the
//! pipes close [`OUTPUT_GRACE`] after the exit). A command with limits has
//! a cgroup of its own, and whatever it left in it ends with it.

mod frames;
mod remote_child;

use super::name_guard_reports::ReportReader;
use crate::control::ControlState;
use crate::process::{ChildStdio, CommandProcess};
use crate::running::{CommandIo, run_process};
use crate::seam::{CommandTask, ExecRequest};
use crate::settings::Settings;
use crate::violations::{GuardPipe, Violations};
use crate::{Error, ErrorKind};
use frames::{read_replies, write_frames};
use remote_child::{RemoteChild, pipe};
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use sandbox_core::SandboxEvent;
use sandbox_core::session_wire::{self, FrameReader, MAX_REPLY_LEN, Reply, Request};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How long a command's output is still read after it exited, when
/// processes it left running hold its pipes open.
pub(crate) const OUTPUT_GRACE: Duration = Duration::from_millis(100);

/// The handle's `isolation` detail of a warm session.
pub(crate) const ISOLATION_SESSION: &str =
    "session sandbox: one sandbox for the session, each command started inside by its init";
/// The detail when each command gets a sandbox of its own, as asked.
pub(crate) const ISOLATION_PER_COMMAND: &str = "fresh sandbox per command";
/// The detail when a warm session was asked for but no launcher was set.
pub(crate) const ISOLATION_NO_LAUNCHER: &str = "fresh sandbox per command: no name-guard launcher was set to run the session's init (ManagerBuilder::name_guard_launcher)";

/// How long a launch waits for the init's hello.
const INIT_HELLO: Duration = Duration::from_secs(20);

/// A frame for the init and the descriptors that go with it.
type Outgoing = (Vec<u8>, Vec<OwnedFd>);

/// The host's side of the init's socket.
struct Channel {
    /// Frames to send, in order (a task writes them).
    out: mpsc::UnboundedSender<Outgoing>,
    /// Each running command's replies.
    waiters: Mutex<HashMap<u64, mpsc::UnboundedSender<Reply>>>,
    /// Why the init can no longer be reached, once it cannot.
    ended: Mutex<Option<String>>,
}

impl Channel {
    fn end(&self, why: String) {
        if let Ok(mut e) = self.ended.lock()
            && e.is_none()
        {
            *e = Some(why);
        }
        // Every waiter sees its replies end.
        if let Ok(mut w) = self.waiters.lock() {
            w.clear();
        }
    }

    fn ended(&self) -> Option<String> {
        self.ended.lock().ok().and_then(|e| e.clone())
    }

    fn signal(&self, id: u64, signal: i32) {
        let _ = self
            .out
            .send((Request::Signal { id, signal }.encode(), Vec::new()));
    }
}

/// A warm session's init and what its commands share.
pub(crate) struct WarmInit {
    channel: Arc<Channel>,
    next_id: AtomicU64,
    /// The name guard's reports, lent to the running command.
    guard: Arc<Mutex<Option<ReportReader>>>,
    /// Ends the init (and with it the sandbox and every process in it).
    kill: Arc<Mutex<Option<oneshot::Sender<()>>>>,
    init_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The init's controls: where its sandbox's pid namespace starts.
    init_control: Arc<ControlState>,
    /// Where rules added to the session's name guard are written.
    guard_updates: OwnedFd,
}

/// The init's half of the socket pair and the argv tail that starts it,
/// and the socket pair the session's name guard reads added rules from.
pub(crate) struct InitSocket {
    host: OwnedFd,
    init: OwnedFd,
    updates_host: OwnedFd,
    updates_guard: OwnedFd,
}

impl InitSocket {
    pub(crate) fn new() -> Result<InitSocket, Error> {
        let (host, init) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| Error::io("creating the session init's socket", e.into()))?;
        let (updates_host, updates_guard) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| Error::io("creating the session guard's rules socket", e.into()))?;
        rustix::net::shutdown(&updates_guard, rustix::net::Shutdown::Write)
            .map_err(|e| Error::io("creating the session guard's rules socket", e.into()))?;
        Ok(InitSocket {
            host,
            init,
            updates_host,
            updates_guard,
        })
    }

    /// The descriptor the session's name guard reads added rules from
    /// (`--updates-fd`), inherited at the same number.
    pub(crate) fn guard_updates_fd(&self) -> i32 {
        self.updates_guard.as_raw_fd()
    }

    /// The descriptor the init inherits (the same number inside).
    pub(crate) fn init_fd(&self) -> i32 {
        self.init.as_raw_fd()
    }

    /// The arguments after the launcher's own leading ones.
    pub(crate) fn init_args(&self) -> [OsString; 2] {
        [
            name_guard::SESSION_INIT_FLAG.into(),
            self.init_fd().to_string().into(),
        ]
    }
}

/// Starts the session's init through `start`, which runs `request` as the
/// backend runs a command and returns its task. `argv` is the init's
/// command line (the launcher and [`InitSocket::init_args`]).
pub(crate) async fn start_init(
    settings: &Settings,
    session_id: &str,
    env: &[(OsString, OsString)],
    workdir: String,
    argv: Vec<OsString>,
    socket: InitSocket,
    start: impl FnOnce(ExecRequest<'_>, CommandIo) -> Result<CommandTask, Error>,
) -> Result<WarmInit, Error> {
    let (guard_tx, mut guard_rx) = oneshot::channel();
    let request = ExecRequest {
        env,
        argv,
        workdir,
        stdin: sandbox_core::Stdin::Null,
        terminal: None,
        limits: sandbox_core::Limits::default(),
        cgroup_procs: Vec::new(),
        guard_to_session: Some(guard_tx),
        pass_fd: Some(socket.init_fd()),
        guard_updates: Some(socket.guard_updates_fd()),
        guard_notes: None,
    };
    let (tx, mut rx) = mpsc::channel(64);
    let (kill_tx, kill_rx) = oneshot::channel();
    let init_control = Arc::new(ControlState::new(false));
    let io = CommandIo {
        tx: crate::audit::EventTx::new(tx, None),
        kill_rx,
        control: init_control.clone(),
        timeout: None,
        cgroup: None,
        terminal: None,
        stdout_sink: None,
    };
    let task = start(request, io)?;
    // Kept open until the init said hello: a fallback (the socat bridges
    // under bubblewrap) spawns the sandbox again later, inheriting this
    // descriptor by its number.
    let init_end = socket.init;
    let updates_guard_end = socket.updates_guard;
    let guard_updates = socket.updates_host;
    let guard = guard_rx.try_recv().ok();
    let stream = std::os::unix::net::UnixStream::from(socket.host);
    stream
        .set_nonblocking(true)
        .map_err(|e| Error::io("setting up the session init's socket", e))?;
    let stream = Arc::new(
        tokio::net::UnixStream::from_std(stream)
            .map_err(|e| Error::io("setting up the session init's socket", e))?,
    );
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    // Command 0 is the init's hello.
    let (hello_tx, mut hello_rx) = mpsc::unbounded_channel();
    let channel = Arc::new(Channel {
        out: out_tx,
        waiters: Mutex::new(HashMap::from([(0, hello_tx)])),
        ended: Mutex::new(None),
    });
    tokio::spawn(write_frames(stream.clone(), out_rx, channel.clone()));
    tokio::spawn(read_replies(stream, channel.clone()));
    // Until the sandbox runs (under bubblewrap: its namespaces are made
    // and the proxies' listeners bound), so that the session is ready
    // when `launch` returns.
    let mut init_task = tokio::spawn(task);
    let mut said = String::new();
    loop {
        match rx.recv().await {
            Some(SandboxEvent::Ready) => break,
            Some(SandboxEvent::Stderr { data } | SandboxEvent::Stdout { data }) => {
                said.push_str(&String::from_utf8_lossy(&data));
            }
            Some(_) => {}
            None => {
                let _ = (&mut init_task).await;
                return Err(ErrorKind::SessionSandboxEnded {
                    reason: format!("its init did not start: {}", said.trim_end()),
                }
                .into());
            }
        }
    }
    // The init's hello: its sandbox is up and it takes commands. Its end
    // (its events stop) is a failure.
    let hello = async {
        loop {
            tokio::select! {
                r = hello_rx.recv() => match r {
                    Some(Reply::Started { .. }) => return true,
                    Some(_) => {}
                    None => return false,
                },
                ev = rx.recv() => match ev {
                    Some(SandboxEvent::Stderr { data } | SandboxEvent::Stdout { data }) => {
                        said.push_str(&String::from_utf8_lossy(&data));
                    }
                    Some(SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) | None => {
                        return false;
                    }
                    Some(_) => {}
                },
            }
        }
    };
    let said_hello = tokio::time::timeout(INIT_HELLO, hello)
        .await
        .unwrap_or(false);
    // Ours would keep the host's reads from ever seeing the init's end
    // (and a rule sent from a guard that is gone from failing).
    drop((init_end, updates_guard_end));
    if let Ok(mut w) = channel.waiters.lock() {
        w.remove(&0);
    }
    if !said_hello {
        // Ended as destroy ends it, so that nothing of it is left.
        let _ = kill_tx.send(());
        let _ = init_task.await;
        while let Ok(ev) = rx.try_recv() {
            if let SandboxEvent::Stderr { data } | SandboxEvent::Stdout { data } = ev {
                said.push_str(&String::from_utf8_lossy(&data));
            }
        }
        return Err(ErrorKind::SessionSandboxEnded {
            reason: format!(
                "its init did not say hello (waited at most {} s){}: {}",
                INIT_HELLO.as_secs(),
                channel
                    .ended()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
                said.trim_end()
            ),
        }
        .into());
    }
    // The init's own events: its stderr is logged, its end ends the
    // session's commands.
    let log = settings.log.clone();
    let id = session_id.to_owned();
    let watcher = channel.clone();
    let init_task = tokio::spawn(async move {
        let events = async move {
            while let Some(ev) = rx.recv().await {
                match ev {
                    SandboxEvent::Stderr { data } | SandboxEvent::Stdout { data } => {
                        log(&format!(
                            "session {id}: init: {}",
                            String::from_utf8_lossy(&data).trim_end()
                        ));
                    }
                    SandboxEvent::Exit { exit_code } => {
                        watcher.end(format!("its init exited with {exit_code}"));
                    }
                    SandboxEvent::Killed { signal, .. } => {
                        watcher.end(format!("its init was killed (signal {signal:?})"));
                    }
                    _ => {}
                }
            }
        };
        let _ = tokio::join!(init_task, events);
    });
    Ok(WarmInit {
        channel,
        next_id: AtomicU64::new(1),
        guard: Arc::new(Mutex::new(guard)),
        kill: Arc::new(Mutex::new(Some(kill_tx))),
        init_task: Mutex::new(Some(init_task)),
        init_control,
        guard_updates,
    })
}

impl WarmInit {
    /// The pid, on the host, of the first process of the session's
    /// sandbox (under bubblewrap; `None` under Landlock).
    pub(crate) fn namespace_init(&self) -> Option<u32> {
        self.init_control.namespace_init()
    }

    /// Gives the session's name guard `updates` before the next command
    /// starts (it reads them before it answers that command's first
    /// guarded call). Fails when the guard is gone or not reading: then
    /// the next command must not run.
    pub(crate) fn send_guard_updates(
        &self,
        updates: &[sandbox_core::GuardUpdate],
    ) -> Result<(), Error> {
        let mut bytes = Vec::new();
        for u in updates {
            let line = u.to_line().ok_or_else(|| {
                Error::from(ErrorKind::NotSupported {
                    what: "a path with a newline among the denies of a repository made in the session",
                })
            })?;
            bytes.extend_from_slice(&line);
        }
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            match rustix::net::send(
                &self.guard_updates,
                rest,
                rustix::net::SendFlags::NOSIGNAL | rustix::net::SendFlags::DONTWAIT,
            ) {
                Ok(n) => rest = rest.get(n..).unwrap_or_default(),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(ErrorKind::SessionSandboxEnded {
                        reason: format!(
                            "its name guard did not take the denies of a repository made in it: {e}"
                        ),
                    }
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Starts `request` in the session: its violations are the proxies'
    /// (from `proxied`) and the guard's lent reader.
    pub(crate) fn exec(
        &self,
        request: ExecRequest<'_>,
        mut io: CommandIo,
        mut violations: Violations,
    ) -> Result<CommandTask, Error> {
        if let Some(reason) = self.channel.ended() {
            return Err(ErrorKind::SessionSandboxEnded { reason }.into());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let bytes = |s: &OsString| s.as_bytes().to_vec();
        let mut fds: Vec<OwnedFd> = Vec::new();
        let (stdio, mut ours) = match request.terminal {
            Some(size) => {
                let err = |e| Error::io("opening a terminal for the command", e);
                // Under bubblewrap in the sandbox's own devpts (`tty` names
                // it inside); else (Landlock) on the host.
                let (master, slave) = match self.init_control.namespace_init() {
                    Some(pid) => crate::pty::open_pair_in_sandbox(pid, size),
                    None => crate::pty::open_on_host(size),
                }
                .map_err(err)?;
                io.terminal = Some(Arc::new(crate::pty::PtyMaster::new(master).map_err(err)?));
                fds.push(slave);
                (session_wire::Stdio::Terminal, (None, None, None))
            }
            None => {
                let stdin = match request.stdin {
                    sandbox_core::Stdin::Piped => {
                        let (r, w) = pipe()?;
                        fds.push(r);
                        Some(w)
                    }
                    _ => {
                        let null = std::fs::File::open("/dev/null")
                            .map_err(|e| Error::io("opening /dev/null", e))?;
                        fds.push(null.into());
                        None
                    }
                };
                let (out_r, out_w) = pipe()?;
                let (err_r, err_w) = pipe()?;
                fds.push(out_w);
                fds.push(err_w);
                (
                    session_wire::Stdio::Pipes,
                    (stdin, Some(out_r), Some(err_r)),
                )
            }
        };
        for path in &request.cgroup_procs {
            let fd = rustix::fs::open(
                path.as_c_str(),
                rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(|e| Error::io("opening the command's cgroup", e.into()))?;
            fds.push(fd);
        }
        let exec = session_wire::Exec {
            id,
            argv: request.argv.iter().map(bytes).collect(),
            env: request
                .env
                .iter()
                .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
                .collect(),
            cwd: request.workdir.as_bytes().to_vec(),
            stdio,
            cgroups: u8::try_from(request.cgroup_procs.len()).unwrap_or(u8::MAX),
        };
        let frame = Request::Exec(exec);
        frame.check().map_err(|e| {
            Error::io(
                "starting the command in the session",
                std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
            )
        })?;
        let as_io = |e: std::io::Error| Error::io("setting up the command's pipes", e);
        let stdio = (
            ours.0
                .take()
                .map(|w| tokio::process::ChildStdin::from_std(std::process::ChildStdin::from(w)))
                .transpose()
                .map_err(as_io)?,
            ours.1
                .take()
                .map(|r| tokio::process::ChildStdout::from_std(std::process::ChildStdout::from(r)))
                .transpose()
                .map_err(as_io)?,
            ours.2
                .take()
                .map(|r| tokio::process::ChildStderr::from_std(std::process::ChildStderr::from(r)))
                .transpose()
                .map_err(as_io)?,
        );
        let (reply_tx, replies) = mpsc::unbounded_channel();
        if let Ok(mut w) = self.channel.waiters.lock() {
            w.insert(id, reply_tx);
        }
        let signals = self.channel.clone();
        io.control
            .remote_started(Box::new(move |sig| signals.signal(id, sig)));
        if self.channel.out.send((frame.encode(), fds)).is_err() {
            return Err(ErrorKind::SessionSandboxEnded {
                reason: "its init's socket closed".into(),
            }
            .into());
        }
        let child = RemoteChild {
            id,
            replies,
            channel: self.channel.clone(),
            end_session: self.kill.clone(),
            stdio,
        };
        let lent = self.guard.clone();
        violations.guard = lent.lock().ok().and_then(|mut g| g.take());
        violations.guard_pipe = GuardPipe::EndsWithSession;
        Ok(Box::pin(async move {
            let back = run_process(child, io, Some(violations), Vec::new()).await;
            if let Some(reader) = back.and_then(|v| v.guard)
                && let Ok(mut g) = lent.lock()
            {
                *g = Some(reader);
            }
        }))
    }

    /// Ends the init, and with it every process of the session, and waits
    /// until its task is over.
    pub(crate) async fn destroy(&self) {
        let kill = self.kill.lock().ok().and_then(|mut k| k.take());
        if let Some(k) = kill {
            let _ = k.send(());
        }
        let task = self.init_task.lock().ok().and_then(|mut t| t.take());
        if let Some(t) = task {
            let _ = t.await;
        }
    }
}
