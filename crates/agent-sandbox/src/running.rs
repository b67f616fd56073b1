//! One running command: its process, its output and violations as events,
//! its exit. Every backend spawns through [`prepare`] and hands the child
//! to [`run_child`].

use crate::cgroup::CommandCgroup;
use crate::control::ControlState;
use crate::pass_stdout::{Passed, pass_on};
use crate::process::CommandProcess;
use crate::pty::PtyMaster;
use crate::seam::ExecRequest;
use crate::violations::Violations;
use sandbox_core::{KillReason, OutputSink, SandboxEvent};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

/// The largest read of a command's stdout (one `stdout` event at most).
const OUTPUT_READ_SIZE: usize = 256 * 1024;

/// Where a command's events go, how the host asks it to stop, its
/// controls' state and its timeout.
pub(crate) struct CommandIo {
    pub(crate) tx: crate::audit::EventTx,
    pub(crate) kill_rx: oneshot::Receiver<()>,
    pub(crate) control: Arc<ControlState>,
    pub(crate) timeout: Option<Duration>,
    /// The command's cgroup (for its limits), removed at its end.
    pub(crate) cgroup: Option<CommandCgroup>,
    /// The command's terminal, when it runs on one (set by the backend once
    /// it is open): read as its output, typed into through the controls.
    pub(crate) terminal: Option<Arc<PtyMaster>>,
    /// The host file stdout is passed into, when it does not become events
    /// ([`sandbox_core::Stdout::PassTo`]).
    pub(crate) stdout_sink: Option<OutputSink>,
}

impl CommandIo {
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the bubblewrap backend (Linux)")
    )]
    /// Reports a command that could not be started after its stream opened.
    pub(crate) async fn failed_to_start(self, what: &str, err: &std::io::Error) {
        self.control.finished().await;
        let msg = format!("agent-sandbox: {what} failed: {err}\n");
        let _ = self
            .tx
            .send(SandboxEvent::Stderr {
                data: msg.into_bytes(),
            })
            .await;
        let _ = self
            .tx
            .send(SandboxEvent::Killed {
                reason: None,
                signal: None,
            })
            .await;
    }
}

/// Clears the environment to the session's, pipes the output (and stdin
/// when piped, else `/dev/null`), moves the child into the command's
/// cgroup, gives it SIGINT and SIGQUIT at their defaults and keeps every
/// other inherited descriptor from it (descriptors
/// the sandbox needs are passed on after this, with
/// `process_fds::inherit_fds`). On Windows handles are not inherited
/// unless asked for and there are no cgroups (see `process_fds`).
pub(crate) fn prepare<'c>(
    cmd: &'c mut tokio::process::Command,
    request: &ExecRequest<'_>,
) -> &'c mut tokio::process::Command {
    #[cfg(unix)]
    {
        crate::process_fds::close_inherited_fds(cmd);
        crate::process_fds::default_job_signals(cmd);
        crate::process_fds::join_cgroups(cmd, request.cgroup_procs.clone());
        for fd in [request.pass_fd, request.guard_updates, request.guard_notes]
            .into_iter()
            .flatten()
        {
            crate::process_fds::inherit_fds(cmd, [fd]);
        }
    }
    let env = request.env;
    let stdin = match request.stdin {
        sandbox_core::Stdin::Piped => Stdio::piped(),
        _ => Stdio::null(),
    };
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
}

/// Spawns `argv` itself (the `none` backend; Seatbelt's `sandbox-exec`
/// line) in the request's working directory, prepared, on a host terminal
/// when the request asks for one (refused where there are no terminals).
pub(crate) fn spawn_direct(
    argv: &[std::ffi::OsString],
    request: &ExecRequest<'_>,
    io: &mut CommandIo,
) -> Result<tokio::process::Child, crate::Error> {
    let (program, args) = argv.split_first().ok_or_else(|| {
        crate::Error::io("starting a command", std::io::Error::other("no program"))
    })?;
    let mut c = tokio::process::Command::new(program);
    c.args(args)
        .current_dir(std::path::Path::new(&request.workdir));
    prepare(&mut c, request);
    if let Some(size) = request.terminal {
        io.terminal = Some(attach_host_terminal(&mut c, size)?);
    }
    c.spawn()
        .map_err(|e| crate::Error::io(format!("starting {program:?}"), e))
}

/// Runs the command `cmd` will spawn on a fresh terminal of `size` made on
/// the host (the `none` and Seatbelt backends): the slave becomes its
/// stdin, stdout, stderr and controlling terminal; the master is returned.
/// Call after [`prepare`], whose pipes this replaces.
#[cfg(unix)]
pub(crate) fn attach_host_terminal(
    cmd: &mut tokio::process::Command,
    size: sandbox_core::PtySize,
) -> Result<Arc<PtyMaster>, crate::Error> {
    let err = |e: std::io::Error| crate::Error::io("opening a terminal for the command", e);
    let (master, slave) = crate::pty::open_on_host(size).map_err(err)?;
    let dup = |fd: &rustix::fd::OwnedFd| fd.try_clone().map_err(err);
    cmd.stdin(Stdio::from(dup(&slave)?))
        .stdout(Stdio::from(dup(&slave)?))
        .stderr(Stdio::from(slave));
    crate::process_fds::own_terminal_session(cmd);
    Ok(Arc::new(PtyMaster::new(master).map_err(err)?))
}

/// Without terminals (Windows): a command asking for one is refused.
#[cfg(not(unix))]
pub(crate) fn attach_host_terminal(
    _cmd: &mut tokio::process::Command,
    _size: sandbox_core::PtySize,
) -> Result<Arc<PtyMaster>, crate::Error> {
    Err(crate::ErrorKind::NotOnThisPlatform { what: "a terminal" }.into())
}

/// One of a command's two output streams.
#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// Reads from `r` while it is open, appending to `buf` (which is empty and
/// has room); never ready once it is closed.
async fn read_some<R: tokio::io::AsyncRead + Unpin>(
    r: &mut Option<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    match r {
        Some(r) => r.read_buf(buf).await,
        None => std::future::pending().await,
    }
}

/// Reads what the terminal shows while it is open.
async fn read_terminal(t: &Option<Arc<PtyMaster>>, buf: &mut [u8]) -> std::io::Result<usize> {
    match t {
        Some(m) => m.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Passes on what one read gave: the guard's reports already in its pipe
/// first, then the output, `data` (what was read; taken only when the read
/// gave bytes). End of file or an error closes the stream.
async fn forward<R>(
    read: std::io::Result<usize>,
    stream: &mut Option<R>,
    data: impl FnOnce() -> Vec<u8>,
    which: Stream,
    tx: &crate::audit::EventTx,
    violations: &mut Option<Violations>,
) {
    match read {
        Ok(0) | Err(_) => {
            *stream = None;
            return;
        }
        Ok(_) => {}
    }
    if let Some(v) = violations.as_mut() {
        for violation in v.take_ready_guard() {
            trace_violation(&violation);
            let _ = tx.send(SandboxEvent::Violation { violation }).await;
        }
    }
    let data = data();
    let _ = tx
        .send(match which {
            Stream::Stdout => SandboxEvent::Stdout { data },
            Stream::Stderr => SandboxEvent::Stderr { data },
        })
        .await;
}

/// Waits for passing stdout on to end, while it runs.
async fn passed(p: &mut Option<Passed>) -> std::io::Result<u64> {
    match p {
        Some(p) => p.ended().await,
        None => std::future::pending().await,
    }
}

/// The bytes read into `buf` (which becomes the event's data as it is, no
/// copy), leaving it empty with the same room for the next read.
fn take_read(buf: &mut Vec<u8>) -> Vec<u8> {
    let room = buf.capacity();
    std::mem::replace(buf, Vec::with_capacity(room))
}

pub(crate) async fn run_child(
    child: tokio::process::Child,
    io: CommandIo,
    violations: Option<Violations>,
    forwarders: Vec<AbortHandle>,
) {
    let _ = run_process(child, io, violations, forwarders).await;
}

/// Follows `child` to its end as [`run_child`] does, giving back its
/// violation sources (a warm session lends its guard's reader to each
/// command in turn).
pub(crate) async fn run_process<P: CommandProcess>(
    mut child: P,
    io: CommandIo,
    mut violations: Option<Violations>,
    forwarders: Vec<AbortHandle>,
) -> Option<Violations> {
    let CommandIo {
        tx,
        mut kill_rx,
        control,
        timeout,
        cgroup,
        terminal,
        stdout_sink,
    } = io;
    let (stdin, mut stdout, mut stderr) = child.take_stdio();
    control.started(stdin, child.host_pid()).await;
    if let Some(m) = &terminal {
        control.terminal_started(m.clone()).await;
    }
    let mut terminal = terminal;
    let mut tbuf = vec![0u8; 64 * 1024];
    let _ = tx.send(SandboxEvent::Ready).await;
    let mut passing = match (stdout_sink, stdout.take()) {
        (Some(sink), Some(out)) => Some(pass_on(out, sink)),
        (None, out) => {
            stdout = out;
            None
        }
        (Some(_), None) => None,
    };
    // Large reads: fewer, larger events for bulk output. (A larger pipe
    // too was slower here: 0.4 against 0.9 GB/s.)
    let (mut obuf, mut ebuf) = (
        Vec::with_capacity(OUTPUT_READ_SIZE),
        Vec::with_capacity(16 * 1024),
    );
    let mut cgroup = cgroup;
    let mut killed: Option<KillReason> = None;
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    // Armed when the host ends the command: if it has not exited
    // `END_GRACE` later, it is forced (`force_end`).
    let forced = tokio::time::sleep(std::time::Duration::ZERO);
    tokio::pin!(forced);
    let mut force_armed = false;
    // Armed at the exit when the output may be held open by processes the
    // command left running (a warm session): the pipes close then.
    let grace = tokio::time::sleep(std::time::Duration::ZERO);
    tokio::pin!(grace);
    let mut grace_armed = false;
    // Until the command has exited and both its output pipes are at end of
    // file. Output is read here, not in tasks of its own, so that the name
    // guard's reports already written are passed on before it.
    let mut status = None;
    while status.is_none()
        || stdout.is_some()
        || stderr.is_some()
        || terminal.is_some()
        || passing.is_some()
    {
        tokio::select! {
            st = child.wait(), if status.is_none() => {
                control.finished().await;
                if killed.is_none() && control.killed_by_host() {
                    killed = Some(KillReason::Manual);
                }
                if killed.is_none() {
                    killed = child.limit_killed();
                }
                if let Some(cg) = cgroup.take() {
                    if killed.is_none() && cg.oom_killed() {
                        killed = Some(KillReason::Oom);
                    }
                    // Whatever the command left behind in its cgroup ends
                    // with it (and lets go of the output pipes).
                    cg.remove().await;
                }
                // The listeners keep the sandbox's network namespace alive:
                // close them.
                for f in &forwarders {
                    f.abort();
                }
                if let Some(g) = child.output_grace() {
                    grace.as_mut().reset(tokio::time::Instant::now() + g);
                    grace_armed = true;
                }
                status = Some(st);
            }
            () = &mut grace, if grace_armed => {
                grace_armed = false;
                stdout = None;
                stderr = None;
                terminal = None;
                // What the pipe holds now is passed on, the rest not: the
                // command's exit comes after its last byte passed on.
                if let Some(p) = passing.as_mut() {
                    p.stop();
                }
            }
            r = read_some(&mut stdout, &mut obuf) => {
                forward(r, &mut stdout, || take_read(&mut obuf), Stream::Stdout, &tx, &mut violations).await;
            }
            r = passed(&mut passing) => {
                passing = None;
                // A reader that went away is what a broken pipe says to
                // the command itself; anything else is worth a line.
                if let Err(e) = r
                    && e.kind() != std::io::ErrorKind::BrokenPipe
                {
                    let data = format!("agent-sandbox: passing stdout on stopped: {e}\n");
                    let _ = tx.send(SandboxEvent::Stderr { data: data.into_bytes() }).await;
                }
            }
            r = read_some(&mut stderr, &mut ebuf) => {
                forward(r, &mut stderr, || take_read(&mut ebuf), Stream::Stderr, &tx, &mut violations).await;
            }
            r = read_terminal(&terminal, &mut tbuf) => {
                let n = *r.as_ref().unwrap_or(&0);
                let shown = || tbuf.get(..n).map(<[u8]>::to_vec).unwrap_or_default();
                forward(r, &mut terminal, shown, Stream::Stdout, &tx, &mut violations).await;
            }
            // Where the controls cannot signal the process themselves
            // (Windows), their kill is carried out here, on the child.
            () = control.kill_requested(), if killed.is_none() && status.is_none() => {
                control.end(&mut child);
                forced.as_mut().reset(tokio::time::Instant::now() + ControlState::END_GRACE);
                force_armed = true;
            }
            _ = &mut kill_rx, if killed.is_none() && status.is_none() => {
                killed = Some(KillReason::Destroy);
                control.end(&mut child);
                forced.as_mut().reset(tokio::time::Instant::now() + ControlState::END_GRACE);
                force_armed = true;
            }
            () = &mut deadline, if killed.is_none() && status.is_none() => {
                killed = Some(KillReason::Timeout);
                control.end(&mut child);
                forced.as_mut().reset(tokio::time::Instant::now() + ControlState::END_GRACE);
                force_armed = true;
            }
            // The host's kill went to a supervisor, which ends the tree
            // itself unless it is stopped or stuck.
            () = control.supervisor_ending(), if !force_armed && status.is_none() => {
                forced.as_mut().reset(tokio::time::Instant::now() + ControlState::END_GRACE);
                force_armed = true;
            }
            () = &mut forced, if force_armed && status.is_none() => {
                force_armed = false;
                control.force_end(&mut child).await;
            }
            Some(v) = async {
                match violations.as_mut() {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                trace_violation(&v);
                let _ = tx.send(SandboxEvent::Violation { violation: v }).await;
            }
        }
    }
    let status = status.unwrap_or_else(|| Err(std::io::Error::other("no exit status")));
    if let Some(s) = violations.as_mut() {
        for v in s.drain().await {
            trace_violation(&v);
            let _ = tx.send(SandboxEvent::Violation { violation: v }).await;
        }
    }
    let ev = match status {
        Ok(st) => exit_event(st.code(), exit_signal(&st), killed),
        // Not started: the shell's codes, with the likely causes named.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ) && killed.is_none() =>
        {
            let (code, why) = match e.kind() {
                std::io::ErrorKind::NotFound => (
                    127,
                    "command not found: its program is not on the sandbox's PATH, or the \
                     working directory does not exist inside the sandbox (is it in a mount?)",
                ),
                _ => (
                    126,
                    "permission denied: the program, or the working directory, is not \
                     executable or readable inside the sandbox",
                ),
            };
            let data = format!("agent-sandbox: the command could not be started: {why} ({e})\n");
            let _ = tx
                .send(SandboxEvent::Stderr {
                    data: data.into_bytes(),
                })
                .await;
            SandboxEvent::Exit { exit_code: code }
        }
        Err(e) => {
            let data = format!("agent-sandbox: the command's end was not seen: {e}\n");
            let _ = tx
                .send(SandboxEvent::Stderr {
                    data: data.into_bytes(),
                })
                .await;
            SandboxEvent::Killed {
                reason: killed,
                signal: None,
            }
        }
    };
    match &ev {
        SandboxEvent::Exit { exit_code } => tracing::info!(exit_code, "the command exited"),
        SandboxEvent::Killed { reason, signal } => {
            tracing::warn!(reason = ?reason, signal = ?signal, "the command was killed")
        }
        _ => {}
    }
    let _ = tx.send(ev).await;
    violations
}

/// A refusal as a `tracing` event, in the command's span: what and where
/// (hosts and paths; the raw line, which may quote more, is left out).
fn trace_violation(v: &sandbox_core::SandboxViolation) {
    tracing::warn!(action = %v.action, target = %v.target, "refused");
}

/// The signal that ended the process, if one did (Unix).
#[cfg(unix)]
fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// Windows has no signals: a process always ends with a code.
#[cfg(not(unix))]
fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The last event of a command from how it ended: its exit code, unless
/// the host stopped it (`killed` with the host's reason: manual, timeout)
/// or a signal ended it (`killed`, signal, with the number).
fn exit_event(code: Option<i32>, signal: Option<i32>, killed: Option<KillReason>) -> SandboxEvent {
    match (code, signal, killed) {
        (Some(code), _, None) => SandboxEvent::Exit { exit_code: code },
        (code, signal, reason) => SandboxEvent::Killed {
            reason: Some(reason.unwrap_or(KillReason::Signal)),
            // bubblewrap reports a command a signal ended as 128 + N.
            signal: signal.or(code.filter(|c| (129..=192).contains(c)).map(|c| c - 128)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_a_command_ended_table() {
        let killed = |reason, signal| SandboxEvent::Killed {
            reason: Some(reason),
            signal,
        };
        let manual = Some(KillReason::Manual);
        let cases = [
            (
                "a plain exit keeps its code",
                Some(3),
                None,
                None,
                SandboxEvent::Exit { exit_code: 3 },
            ),
            (
                "exit 0 is an exit",
                Some(0),
                None,
                None,
                SandboxEvent::Exit { exit_code: 0 },
            ),
            (
                "a signal is a kill with its number",
                None,
                Some(9),
                None,
                killed(KillReason::Signal, Some(9)),
            ),
            (
                "the host's stop is manual, with the signal",
                None,
                Some(9),
                manual,
                killed(KillReason::Manual, Some(9)),
            ),
            (
                "the host's stop wins over an exit code that raced it",
                Some(0),
                None,
                manual,
                killed(KillReason::Manual, None),
            ),
            (
                "a timeout says so",
                None,
                Some(9),
                Some(KillReason::Timeout),
                killed(KillReason::Timeout, Some(9)),
            ),
            (
                "the host's kill through bubblewrap (128 + 9)",
                Some(137),
                None,
                manual,
                killed(KillReason::Manual, Some(9)),
            ),
        ];
        for (intent, code, signal, by_host, want) in cases {
            assert_eq!(exit_event(code, signal, by_host), want, "{intent}");
        }
    }
}
