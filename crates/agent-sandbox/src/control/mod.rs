//! The host's controls of one running command ([`CommandControl`]): its
//! stdin and its signals.
//!
//! The runner task installs the process once it runs (for bubblewrap, the
//! sandbox's first process once bubblewrap reported it) and marks the
//! command finished at its exit; from then on writes fail with
//! [`ControlError::Finished`] and signals are no-ops.
//!
//! Where the signals go: with the sandbox's first process known (its pid
//! namespace), `Interrupt` and `Terminate` go to every process in that
//! namespace except the first (the whole job, as a terminal's Ctrl-C
//! reaches its foreground group) and `Kill` ends the first process, which
//! takes the namespace with it. Otherwise (the `none` and Seatbelt
//! backends, where the command is the child itself) they go to the child.
//!
//! Windows has no signals. There `Kill` is handed to the runner task, which
//! ends the child through its handle (as `destroy` does) and reports it as
//! `killed` (manual); `Interrupt` and `Terminate` are
//! [`ControlError::SignalUnavailable`] and nothing is sent.

use crate::pty::PtyMaster;
use sandbox_core::{CommandControl, CommandSignal, ControlError, ControlFuture, PtySize};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

/// What a running command's controls act on.
#[derive(Default)]
pub(crate) struct ControlState {
    stdin: tokio::sync::Mutex<StdinState>,
    /// Woken when the stdin leaves [`StdinState::Pending`], so that a write
    /// or close made before the command runs goes on at its start instead
    /// of polling for it.
    stdin_ready: tokio::sync::Notify,
    target: Mutex<Target>,
    /// The host sent `Kill`: the command ends as `killed` (manual).
    killed: AtomicBool,
    /// Where the controls cannot signal the process (Windows): the host's
    /// `Kill`, for the runner task to carry out on the child.
    #[cfg(not(unix))]
    kill_request: tokio::sync::Notify,
    /// The host's `Kill` went to a supervisor as its end signal: the runner
    /// task gives it [`ControlState::END_GRACE`], then forces the end.
    #[cfg(unix)]
    supervisor_ending: tokio::sync::Notify,
    /// A warm session's command: what passes a signal to its init, which
    /// sends it to the command's process group.
    #[cfg(target_os = "linux")]
    remote: std::sync::OnceLock<RemoteSignals>,
}

/// Passes a signal number to a warm session's init for one command.
#[cfg(target_os = "linux")]
pub(crate) type RemoteSignals = Box<dyn Fn(i32) + Send + Sync>;

#[derive(Default)]
enum StdinState {
    /// `/dev/null`.
    #[default]
    NotPiped,
    /// Piped or a terminal, the process not started yet: writes wait.
    Pending,
    Open(ChildStdin),
    /// The command's terminal: input is typed into it.
    Terminal(Arc<PtyMaster>),
    Closed,
    Finished,
}

#[derive(Default, Clone, Copy)]
enum Target {
    #[default]
    NotStarted,
    /// The command is this process.
    #[cfg_attr(
        not(unix),
        allow(
            dead_code,
            reason = "off Unix the runner task ends the child by its handle"
        )
    )]
    Child(u32),
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the bubblewrap backend (Linux)")
    )]
    /// The command runs in the pid namespace whose first process is this.
    Namespace {
        init: u32,
    },
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the Landlock mechanism (Linux)")
    )]
    /// The command runs under the name guard's supervisor on the host (the
    /// Landlock mechanism), which is this process: it passes `Interrupt`
    /// and `Terminate` on to every process the command started, and ends
    /// them all on [`END_TREE`] (a `SIGKILL` would end the supervisor
    /// alone).
    Supervisor(u32),
    /// The command runs in a warm session: signals go through its init
    /// ([`ControlState::remote`]) to the command's process group.
    #[cfg(target_os = "linux")]
    Remote,
    Finished,
}

impl ControlState {
    /// The state of a command whose stdin is piped or a terminal (or
    /// neither).
    pub(crate) fn new(piped: bool) -> ControlState {
        ControlState {
            stdin: tokio::sync::Mutex::new(if piped {
                StdinState::Pending
            } else {
                StdinState::NotPiped
            }),
            stdin_ready: tokio::sync::Notify::new(),
            target: Mutex::new(Target::NotStarted),
            killed: AtomicBool::new(false),
            #[cfg(not(unix))]
            kill_request: tokio::sync::Notify::new(),
            #[cfg(unix)]
            supervisor_ending: tokio::sync::Notify::new(),
            #[cfg(target_os = "linux")]
            remote: std::sync::OnceLock::new(),
        }
    }

    /// The command runs in a warm session: signals go through `signals`.
    #[cfg(target_os = "linux")]
    pub(crate) fn remote_started(&self, signals: RemoteSignals) {
        let _ = self.remote.set(signals);
        if let Ok(mut t) = self.target.lock()
            && matches!(*t, Target::NotStarted)
        {
            *t = Target::Remote;
        }
    }

    /// Ready once the host's `Kill` was sent to a supervisor as its end
    /// signal, which a stopped or stuck supervisor would never act on: the
    /// runner task then forces the end after [`ControlState::END_GRACE`]
    /// as it does for a timeout. Never elsewhere than Unix.
    pub(crate) async fn supervisor_ending(&self) {
        #[cfg(unix)]
        self.supervisor_ending.notified().await;
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    }

    /// Ready once the host's `Kill` is for the runner task to carry out
    /// (Windows); never on Unix, where the controls signal the process.
    pub(crate) async fn kill_requested(&self) {
        #[cfg(unix)]
        std::future::pending::<()>().await;
        #[cfg(not(unix))]
        self.kill_request.notified().await;
    }

    /// The first process of the sandbox's pid namespace, once known
    /// (bubblewrap).
    #[cfg(target_os = "linux")]
    pub(crate) fn namespace_init(&self) -> Option<u32> {
        match self.target.lock().map(|t| *t) {
            Ok(Target::Namespace { init }) => Some(init),
            _ => None,
        }
    }

    /// Whether the host killed the command through its controls.
    pub(crate) fn killed_by_host(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// The process runs: its stdin (when piped) and pid.
    pub(crate) async fn started(&self, stdin: Option<ChildStdin>, pid: Option<u32>) {
        {
            let mut s = self.stdin.lock().await;
            if let (StdinState::Pending, Some(w)) = (&*s, stdin) {
                *s = StdinState::Open(w);
            }
        }
        self.stdin_ready.notify_waiters();
        if let (Ok(mut t), Some(pid)) = (self.target.lock(), pid)
            && matches!(*t, Target::NotStarted)
        {
            *t = Target::Child(pid);
        }
    }

    /// The command's terminal is open: input, end of file, resizes and
    /// interrupts go through it.
    pub(crate) async fn terminal_started(&self, master: Arc<PtyMaster>) {
        let mut s = self.stdin.lock().await;
        if matches!(*s, StdinState::Pending) {
            *s = StdinState::Terminal(master);
        }
        drop(s);
        self.stdin_ready.notify_waiters();
    }

    /// The terminal, once open and until the command ended.
    async fn terminal(&self) -> Option<Arc<PtyMaster>> {
        match &*self.stdin.lock().await {
            StdinState::Terminal(m) => Some(m.clone()),
            _ => None,
        }
    }

    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the bubblewrap backend (Linux)")
    )]
    /// The sandbox's first process is known: signals go to its namespace.
    pub(crate) fn sandbox_started(&self, init: u32) {
        if let Ok(mut t) = self.target.lock()
            && !matches!(*t, Target::Finished)
        {
            *t = Target::Namespace { init };
        }
    }

    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the Landlock mechanism (Linux)")
    )]
    /// The child is the name guard's supervisor on the host: signals go
    /// through it to the whole tree.
    pub(crate) fn supervisor_started(&self, pid: u32) {
        if let Ok(mut t) = self.target.lock()
            && matches!(*t, Target::NotStarted)
        {
            *t = Target::Supervisor(pid);
        }
    }

    /// Ends the running command and everything it started, for the host
    /// (destroy, timeout): the supervisor's [`END_TREE`] where the command
    /// runs under one, else a kill of the child (whose namespace, if any,
    /// goes with it).
    pub(crate) fn end(&self, child: &mut impl crate::process::CommandProcess) {
        #[cfg(unix)]
        match self.target.lock().map(|t| *t) {
            Ok(Target::Supervisor(pid)) => {
                send(pid, END_TREE);
                return;
            }
            // The namespace's first process too: bubblewrap's promise that
            // it dies with its parent does not hold while it is still
            // setting the sandbox up (seen: a sandbox ended right after it
            // started lived on, its parent gone).
            Ok(Target::Namespace { init }) => send(init, rustix::process::Signal::KILL),
            _ => {}
        }
        let _ = child.start_kill();
    }

    /// How long [`ControlState::end`] is given before
    /// [`ControlState::force_end`]: the supervisor's own deadline for ending
    /// its tree, and a second more.
    pub(crate) const END_GRACE: std::time::Duration = std::time::Duration::from_secs(6);

    /// The host's last resort, [`ControlState::END_GRACE`] after
    /// [`ControlState::end`] when the command still has not exited: a
    /// supervisor that did not end its tree (stopped, or stuck) has every
    /// process below it killed, then is killed itself; any other child is
    /// killed again.
    pub(crate) async fn force_end(&self, child: &mut impl crate::process::CommandProcess) {
        #[cfg(target_os = "linux")]
        {
            let target = self.target.lock().map(|t| *t).ok();
            if let Some(Target::Supervisor(pid)) = target {
                let _ = tokio::task::spawn_blocking(move || name_guard::kill_tree_below(pid)).await;
            }
        }
        let _ = child.force_kill();
    }

    /// The command has exited: nothing more to write to or signal.
    pub(crate) async fn finished(&self) {
        if let Ok(mut t) = self.target.lock() {
            *t = Target::Finished;
        }
        let mut s = self.stdin.lock().await;
        if !matches!(*s, StdinState::NotPiped) {
            *s = StdinState::Finished;
        }
        drop(s);
        self.stdin_ready.notify_waiters();
    }

    /// Waits, holding the stdin's lock `s` only until the wait is
    /// registered, for the stdin to leave [`StdinState::Pending`]. Every
    /// change of state is made under that lock and announced after it, so
    /// none is missed between the check and the wait.
    async fn until_stdin_ready(&self, s: tokio::sync::MutexGuard<'_, StdinState>) {
        let ready = self.stdin_ready.notified();
        tokio::pin!(ready);
        ready.as_mut().enable();
        drop(s);
        ready.await;
    }
}

/// [`CommandControl`] over a shared [`ControlState`].
pub(crate) struct Control(pub(crate) std::sync::Arc<ControlState>);

impl CommandControl for Control {
    fn write_stdin<'a>(&'a self, data: &'a [u8]) -> ControlFuture<'a> {
        Box::pin(async move {
            loop {
                let mut s = self.0.stdin.lock().await;
                match &mut *s {
                    StdinState::NotPiped => return Err(ControlError::StdinNotPiped),
                    StdinState::Closed => return Err(ControlError::StdinClosed),
                    StdinState::Finished => return Err(ControlError::Finished),
                    StdinState::Pending => {
                        self.0.until_stdin_ready(s).await;
                    }
                    StdinState::Terminal(m) => {
                        let m = m.clone();
                        drop(s);
                        return m.write_all(data).await.map_err(|source| ControlError::Io {
                            what: "typing into the command's terminal",
                            source,
                        });
                    }
                    StdinState::Open(w) => {
                        return match w.write_all(data).await {
                            Ok(()) => Ok(()),
                            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                                *s = StdinState::Finished;
                                Err(ControlError::Finished)
                            }
                            Err(source) => Err(ControlError::Io {
                                what: "writing to the command's stdin",
                                source,
                            }),
                        };
                    }
                }
            }
        })
    }

    fn close_stdin(&self) -> ControlFuture<'_> {
        Box::pin(async move {
            loop {
                let mut s = self.0.stdin.lock().await;
                match &*s {
                    StdinState::NotPiped => return Err(ControlError::StdinNotPiped),
                    StdinState::Closed => return Err(ControlError::StdinClosed),
                    // The reader is gone: end of file is what it has.
                    StdinState::Finished => return Ok(()),
                    StdinState::Pending => {
                        self.0.until_stdin_ready(s).await;
                    }
                    StdinState::Open(_) => {
                        *s = StdinState::Closed;
                        return Ok(());
                    }
                    // A terminal stays open: end of file is typed (Ctrl-D).
                    StdinState::Terminal(m) => {
                        let m = m.clone();
                        drop(s);
                        return m
                            .write_all(&[0x04])
                            .await
                            .map_err(|source| ControlError::Io {
                                what: "typing end of file",
                                source,
                            });
                    }
                }
            }
        })
    }

    fn resize(&self, size: PtySize) -> Result<(), ControlError> {
        let Ok(s) = self.0.stdin.try_lock() else {
            // A write holds the lock for a moment: resize through a task.
            let state = self.0.clone();
            tokio::spawn(async move {
                if let Some(m) = state.terminal().await {
                    let _ = m.resize(size);
                }
            });
            return Ok(());
        };
        match &*s {
            StdinState::Terminal(m) => m.resize(size).map_err(|source| ControlError::Io {
                what: "resizing the command's terminal",
                source,
            }),
            // Ended: nothing to resize.
            StdinState::Finished => Ok(()),
            _ => Err(ControlError::NoTerminal),
        }
    }

    fn signal(&self, signal: CommandSignal) -> Result<(), ControlError> {
        let target = self.0.target.lock().map(|t| *t).unwrap_or(Target::Finished);
        // On a terminal, Ctrl-C is typed: the terminal sends SIGINT to its
        // foreground job (and a program in raw mode reads the byte).
        if signal == CommandSignal::Interrupt
            && !matches!(target, Target::Finished)
            && let Ok(s) = self.0.stdin.try_lock()
            && let StdinState::Terminal(m) = &*s
        {
            if !m.try_type(0x03) {
                let m = m.clone();
                tokio::spawn(async move {
                    let _ = m.write_all(&[0x03]).await;
                });
            }
            return Ok(());
        }
        deliver(&self.0, target, signal)
    }
}

/// Sends `signal` to the command's process (or its namespace).
#[cfg(unix)]
fn deliver(
    state: &ControlState,
    target: Target,
    signal: CommandSignal,
) -> Result<(), ControlError> {
    let sig = match signal {
        CommandSignal::Interrupt => rustix::process::Signal::INT,
        CommandSignal::Terminate => rustix::process::Signal::TERM,
        _ => rustix::process::Signal::KILL,
    };
    if sig == rustix::process::Signal::KILL
        && matches!(target, Target::Child(_) | Target::Namespace { .. })
    {
        state.killed.store(true, Ordering::SeqCst);
    }
    match target {
        Target::NotStarted | Target::Finished => Ok(()),
        Target::Child(pid) => {
            send(pid, sig);
            Ok(())
        }
        Target::Supervisor(pid) if sig == rustix::process::Signal::KILL => {
            state.killed.store(true, Ordering::SeqCst);
            send(pid, END_TREE);
            state.supervisor_ending.notify_one();
            Ok(())
        }
        Target::Supervisor(pid) => {
            send(pid, sig);
            Ok(())
        }
        Target::Namespace { init } if sig == rustix::process::Signal::KILL => {
            send(init, sig);
            Ok(())
        }
        Target::Namespace { init } => signal_namespace(init, sig),
        #[cfg(target_os = "linux")]
        Target::Remote => {
            if let Some(r) = state.remote.get() {
                r(sig.as_raw());
            }
            if sig == rustix::process::Signal::KILL {
                state.killed.store(true, Ordering::SeqCst);
                // The init may be stopped or stuck: the runner task forces
                // the end after the grace.
                state.supervisor_ending.notify_one();
            }
            Ok(())
        }
    }
}

/// Hands a `Kill` to the runner task, which ends the child through its
/// handle; Windows has no interrupt or terminate to send.
#[cfg(not(unix))]
fn deliver(
    state: &ControlState,
    target: Target,
    signal: CommandSignal,
) -> Result<(), ControlError> {
    match (target, signal) {
        (Target::NotStarted | Target::Finished, _) => Ok(()),
        (_, CommandSignal::Interrupt) => Err(ControlError::SignalUnavailable {
            signal: "an interrupt",
        }),
        (_, CommandSignal::Terminate) => Err(ControlError::SignalUnavailable {
            signal: "a termination request",
        }),
        (Target::Child(_) | Target::Namespace { .. } | Target::Supervisor(_), _) => {
            state.killed.store(true, Ordering::SeqCst);
            state.kill_request.notify_one();
            Ok(())
        }
    }
}

/// What the name guard's supervisor on the host takes as "kill": it ends
/// the command and everything it started (`name_guard::END_TREE_SIGNAL`).
#[cfg(unix)]
const END_TREE: rustix::process::Signal = rustix::process::Signal::USR1;

#[cfg(unix)]
/// Sends `sig` to `pid`; a process that is already gone is not an error.
fn send(pid: u32, sig: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

#[cfg(unix)]
/// Sends `sig` to every process in the pid namespace of `init` except
/// `init` itself.
fn signal_namespace(init: u32, sig: rustix::process::Signal) -> Result<(), ControlError> {
    let io = |source| ControlError::Io {
        what: "finding the sandbox's processes",
        source,
    };
    let Ok(ns) = std::fs::read_link(format!("/proc/{init}/ns/pid")) else {
        // The sandbox is gone.
        return Ok(());
    };
    for entry in std::fs::read_dir("/proc").map_err(io)? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == init {
            continue;
        }
        if std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|p| p == ns) {
            send(pid, sig);
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests;
