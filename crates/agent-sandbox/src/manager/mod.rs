//! `SandboxManager`: [`SandboxPort`] over the backend chosen at build. The
//! manager keeps the session table and the states; launching, running and
//! destroying are the backend's (`crate::backend`).

mod launch;
mod workspace;

use crate::backend::{Backend, BackendSession, process_overhead};
use crate::cgroup::CommandCgroup;
use crate::control::{Control, ControlState};
use crate::events::ReceiverStream;
use crate::runner::Runner;
use crate::running::CommandIo;
use crate::seam::ExecRequest;
use crate::settings::Settings;
use crate::workspace::Workspace;
use crate::{CollectOutcome, Error, ErrorKind, WorkspaceInfo, WorkspaceRequest};
use sandbox_core::{
    RunningCommand, SandboxCommand, SandboxEvent, SandboxHandle, SandboxPort, SandboxSpec,
    SandboxState, Selection, Stdin, Stdout, Terminal,
};
use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// Runs commands under the backend the probe and selection chose, with the
/// session's proxies, bridges and a sanitised environment. Implements
/// [`SandboxPort`].
///
/// A session is launched once and runs many commands, one at a time
/// (`warm -> active -> warm`): an `exec` while a command runs is refused
/// with [`ErrorKind::Busy`]. A command's event stream ends only once its
/// teardown is done (processes reaped, cgroup removed, listeners closed),
/// so the next `exec` issued right after the stream ended is never
/// refused, on any runtime; `destroy` ends the running command (reported
/// as `killed`, destroy) and everything it started. Each command may have
/// piped stdin or a terminal, its own variables, a timeout and limits; the
/// returned [`RunningCommand`] streams its events and carries its controls.
///
/// On Windows (the `none` backend) a command asking for a terminal is
/// refused with [`ErrorKind::NotOnThisPlatform`], a limit with
/// [`ErrorKind::LimitUnavailable`] (there are no cgroups), and of the
/// signals only `Kill` can be sent.
#[derive(Clone)]
pub struct SandboxManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SandboxManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxManager")
            .field("backend", &self.inner.selection.backend)
            .finish_non_exhaustive()
    }
}

struct Inner {
    selection: Selection,
    settings: Settings,
    backend: Backend,
    sessions: Mutex<HashMap<String, Session>>,
}

/// One live session: its spec, environment and backend state, and the
/// command it runs, if any.
struct Session {
    spec: SandboxSpec,
    env: Vec<(OsString, OsString)>,
    backend: BackendSession,
    running: Option<oneshot::Sender<()>>,
    runner: Option<Runner>,
    /// The session's workspace; its layer goes when the last holder (the
    /// session, or a collection under way) lets go of it.
    workspace: Option<Arc<Workspace>>,
    /// Where the session's audit records go, when the manager has a sink.
    audit: Option<crate::audit::SessionAudit>,
    /// How many commands the session has started.
    commands: u64,
}

impl SandboxManager {
    pub(crate) fn new(
        selection: Selection,
        settings: Settings,
        backend: Backend,
    ) -> SandboxManager {
        SandboxManager {
            inner: Arc::new(Inner {
                selection,
                settings,
                backend,
                sessions: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Launches a session for `spec` ([`SandboxPort::launch`]; no trait
    /// import needed). The handle names the backend and is `warm`.
    pub async fn launch(&self, spec: SandboxSpec) -> Result<SandboxHandle, Error> {
        <Self as SandboxPort>::launch(self, spec).await
    }

    /// Starts `command` in the session of `handle` ([`SandboxPort::exec`]):
    /// its events and controls. Refused with [`ErrorKind::Busy`] while the
    /// session's previous command still runs, never once its stream ended.
    pub async fn exec(
        &self,
        handle: &SandboxHandle,
        command: SandboxCommand,
    ) -> Result<RunningCommand, Error> {
        <Self as SandboxPort>::exec(self, handle, command).await
    }

    /// A one-shot confined run, as `std::process::Command::output`:
    /// launches a session for `spec`, runs `command` in it to its end,
    /// collects its output, and destroys the session (whether or not the
    /// command could start). The output's `violations` are the command's
    /// refusals.
    ///
    /// ```no_run
    /// # async fn demo(m: agent_sandbox::SandboxManager) -> Result<(), agent_sandbox::Error> {
    /// use agent_sandbox::{SandboxCommand, SandboxSpec};
    /// let mut cmd = SandboxCommand::new("git");
    /// cmd.arg("status");
    /// let out = m.output(SandboxSpec::new("one-shot", "w"), cmd).await?;
    /// println!("{:?}: {}", out.status, String::from_utf8_lossy(&out.stdout));
    /// # Ok(()) }
    /// ```
    pub async fn output(
        &self,
        spec: SandboxSpec,
        command: SandboxCommand,
    ) -> Result<sandbox_core::CommandOutput, Error> {
        let mut handle = self.launch(spec).await?;
        let ran = match self.exec(&handle, command).await {
            Ok(running) => Ok(running.output().await),
            Err(e) => Err(e),
        };
        let destroyed = self.destroy(&mut handle).await;
        let out = ran?;
        destroyed?;
        Ok(out)
    }

    /// Tears the session down ([`SandboxPort::destroy`]): a running command
    /// ends as `killed` (destroy), and nothing of the session is left.
    pub async fn destroy(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        <Self as SandboxPort>::destroy(self, handle).await
    }

    /// Checkpoints the session to disk ([`SandboxPort::suspend`]): on gVisor
    /// the handle is `suspended`; other backends answer
    /// `sandbox_core::ErrorKind::SuspendUnsupported`.
    pub async fn suspend(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        <Self as SandboxPort>::suspend(self, handle).await
    }

    /// Restores a suspended session ([`SandboxPort::resume`]): its processes
    /// go on where they were and the handle is `warm`.
    pub async fn resume(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        <Self as SandboxPort>::resume(self, handle).await
    }

    /// The backend every session of this manager gets, with its label.
    pub fn selection(&self) -> &Selection {
        &self.inner.selection
    }

    /// The start-up line (R-PROBE-1), as logged at build: `agent sandbox
    /// ON` with what the sessions run under (the native mechanism's note,
    /// or for a `microvm` manager its runtime's label, such as `microvm:
    /// gVisor user-space kernel (kernel boundary, not a hardware VM)`), `no
    /// OS-native agent sandbox on this host` with the install hint, or
    /// `agent sandbox DISABLED by --sandbox off`. A `microvm` manager logs
    /// the native probe's note after it, as the mechanism probed and not
    /// its sessions'.
    pub fn startup_line(&self) -> &str {
        &self.inner.settings.startup_line
    }

    /// The live state of a session (R-SPEC-4): `active` while a command
    /// runs or is torn down, `warm` between commands (from the moment its
    /// event stream ended), `None` once destroyed (or for a
    /// handle this manager did not launch). `exec` takes the handle by
    /// reference, so the handle itself keeps the state `launch` gave it.
    pub fn state(&self, handle: &SandboxHandle) -> Option<SandboxState> {
        let sessions = self.inner.sessions.lock().ok()?;
        let session = sessions.get(&handle.session_id)?;
        if session.backend.is_suspended() {
            return Some(SandboxState::Suspended);
        }
        Some(match &session.runner {
            Some(r) if r.is_running() => SandboxState::Active,
            _ => SandboxState::Warm,
        })
    }

    /// The Seatbelt profile of a live macOS session (for inspection).
    pub fn seatbelt_profile(
        &self,
        handle: &SandboxHandle,
    ) -> Option<seatbelt_profile::RenderedProfile> {
        let sessions = self.inner.sessions.lock().ok()?;
        sessions.get(&handle.session_id)?.backend.seatbelt_profile()
    }

    /// The bubblewrap options of a live native session (for inspection).
    pub fn bwrap_args(&self, handle: &SandboxHandle) -> Option<Vec<OsString>> {
        let sessions = self.inner.sessions.lock().ok()?;
        sessions.get(&handle.session_id)?.backend.bwrap_args()
    }
}

impl SandboxPort for SandboxManager {
    type Error = Error;

    async fn launch(&self, spec: SandboxSpec) -> Result<SandboxHandle, Error> {
        self.launch_with(spec, None).await
    }

    #[tracing::instrument(
        name = "agent_sandbox.exec",
        skip_all,
        err(Display),
        fields(
            session_id = %handle.session_id,
            backend = %self.inner.selection.backend,
            program = %command.program.to_string_lossy(),
        )
    )]
    async fn exec(
        &self,
        handle: &SandboxHandle,
        command: SandboxCommand,
    ) -> Result<RunningCommand, Error> {
        command.validate()?;
        // Terminals are Unix's: elsewhere the request is refused here,
        // before anything runs.
        #[cfg(not(unix))]
        if matches!(command.terminal, Terminal::Pty(_)) {
            return Err(ErrorKind::NotOnThisPlatform { what: "a terminal" }.into());
        }
        let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        let session = sessions.get_mut(&handle.session_id).ok_or_else(|| {
            Error::from(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            })
        })?;
        if let Some(r) = &session.runner
            && r.is_running()
        {
            return Err(ErrorKind::Busy {
                session_id: handle.session_id.clone(),
            }
            .into());
        }
        if session.backend.is_suspended() {
            return Err(ErrorKind::Suspended {
                session_id: handle.session_id.clone(),
            }
            .into());
        }
        let stdout_sink = match &command.stdout {
            Stdout::Events => None,
            Stdout::PassTo(sink) => Some(sink.clone()),
            _ => {
                return Err(ErrorKind::NotSupported {
                    what: "this kind of stdout",
                }
                .into());
            }
        };
        let env = crate::env::with_command_env(&session.env, &command.env)?;
        // The command's own, else the spec's, else the first mount (the
        // worktree a host mounts first), else the home.
        let workdir = command
            .workdir
            .clone()
            .or_else(|| session.spec.guest_workdir.clone())
            .or_else(|| {
                session
                    .spec
                    .bind_mounts
                    .first()
                    .map(|m| m.guest_path.clone())
            })
            .unwrap_or_else(|| self.inner.settings.home.display().to_string());
        let program = command.program.to_string_lossy().into_owned();
        let mut argv: Vec<OsString> = vec![command.program.clone()];
        argv.extend(command.args.iter().cloned());
        let (tx, rx) = mpsc::channel(256);
        let (kill_tx, kill_rx) = oneshot::channel();
        // The stream opens with `starting`; `ready` follows once the command
        // runs (inside the sandbox, after its proxy listeners exist).
        let _ = tx.try_send(SandboxEvent::Starting);
        session.commands += 1;
        let audit = session
            .audit
            .as_ref()
            .map(|a| a.command(session.commands, &program));
        let tx = crate::audit::EventTx::new(tx, audit);
        let terminal = match command.terminal {
            Terminal::Pty(size) => Some(size),
            _ => None,
        };
        // On a terminal, input is typed into it; the process's own stdin is
        // the terminal's slave, never a pipe.
        let control = Arc::new(ControlState::new(
            command.stdin == Stdin::Piped || terminal.is_some(),
        ));
        let stdin = if terminal.is_some() {
            Stdin::Null
        } else {
            command.stdin
        };
        // A `microvm` sandbox holds its commands' limits itself: they run in
        // its own kernel, outside any host cgroup of theirs.
        let cgroup = if session.backend.holds_limits_inside() {
            None
        } else {
            CommandCgroup::create(
                &self.inner.settings.cgroups,
                &command.limits,
                process_overhead(&session.backend),
            )?
        };
        let request = ExecRequest {
            env: &env,
            argv,
            workdir,
            stdin,
            terminal,
            limits: command.limits,
            cgroup_procs: cgroup
                .as_ref()
                .map(CommandCgroup::procs_files)
                .unwrap_or_default(),
            guard_to_session: None,
            pass_fd: None,
            guard_updates: None,
            guard_notes: None,
        };
        // Held until the command's task has finished: the stream ends after
        // its teardown, never before.
        let held = tx.sender();
        let io = CommandIo {
            tx,
            kill_rx,
            control: control.clone(),
            timeout: command.timeout,
            cgroup,
            terminal: None,
            stdout_sink,
        };
        let task = session.backend.exec(&self.inner.settings, request, io)?;
        session.running = Some(kill_tx);
        // The command's span lives until its end, below the exec's.
        let span = tracing::info_span!(
            "agent_sandbox.command",
            session_id = %handle.session_id,
            program = %program,
        );
        session.runner = Some(Runner::spawn(task, held, span));
        Ok(RunningCommand::new(
            Box::pin(ReceiverStream(rx)),
            Arc::new(Control(control)),
        ))
    }

    #[tracing::instrument(
        name = "agent_sandbox.destroy",
        skip_all,
        err(Display),
        fields(session_id = %handle.session_id, backend = %self.inner.selection.backend)
    )]
    async fn destroy(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        let session = {
            let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
            sessions.remove(&handle.session_id)
        };
        let Some(mut session) = session else {
            return Err(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            }
            .into());
        };
        if let Some(kill) = session.running.take() {
            let _ = kill.send(());
        }
        if let Some(runner) = session.runner.take() {
            runner.join().await;
        }
        session
            .backend
            .destroy(&self.inner.settings, &handle.session_id)
            .await;
        if let Some(a) = &session.audit {
            a.lifecycle(false);
        }
        handle.transition(SandboxState::Destroyed)?;
        Ok(())
    }

    /// Checkpoints a `microvm` session on gVisor to its session directory:
    /// its processes and memory leave the host and the handle is
    /// `suspended`. A command must not be running ([`ErrorKind::Busy`]);
    /// other backends answer `SuspendUnsupported`.
    #[tracing::instrument(
        name = "agent_sandbox.suspend",
        skip_all,
        err(Display),
        fields(session_id = %handle.session_id, backend = %self.inner.selection.backend)
    )]
    async fn suspend(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        handle.state.transition(SandboxState::Suspended)?;
        self.checkpoint(handle, Checkpoint::Suspend).await?;
        handle.transition(SandboxState::Suspended)?;
        Ok(())
    }

    /// Restores a suspended session: its processes go on where they were
    /// and the handle is `warm`.
    #[tracing::instrument(
        name = "agent_sandbox.resume",
        skip_all,
        err(Display),
        fields(session_id = %handle.session_id, backend = %self.inner.selection.backend)
    )]
    async fn resume(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        self.checkpoint(handle, Checkpoint::Resume).await?;
        if handle.state == SandboxState::Suspended {
            handle.transition(SandboxState::Warm)?;
        }
        Ok(())
    }
}

/// Which way a checkpoint goes.
#[derive(Clone, Copy)]
enum Checkpoint {
    Suspend,
    Resume,
}

impl Checkpoint {
    fn as_str(self) -> &'static str {
        match self {
            Checkpoint::Suspend => "suspend",
            Checkpoint::Resume => "resume",
        }
    }
}

impl SandboxManager {
    /// Suspends or resumes the session of `handle` (gVisor).
    #[cfg(target_os = "linux")]
    async fn checkpoint(&self, handle: &SandboxHandle, way: Checkpoint) -> Result<(), Error> {
        let s = self.suspender(handle, way.as_str())?;
        match way {
            Checkpoint::Suspend => s.suspend(&handle.session_id).await,
            Checkpoint::Resume => s.resume(&handle.session_id).await,
        }
    }

    /// No backend off Linux can suspend a session.
    #[cfg(not(target_os = "linux"))]
    async fn checkpoint(&self, _handle: &SandboxHandle, way: Checkpoint) -> Result<(), Error> {
        Err(self.unsupported(way.as_str()))
    }

    /// The session's suspender, outside the table's lock: an error when
    /// the session is unknown or its backend cannot.
    #[cfg(target_os = "linux")]
    fn suspender(
        &self,
        handle: &SandboxHandle,
        operation: &'static str,
    ) -> Result<Arc<crate::backend::microvm::gvisor::Shared>, Error> {
        let sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        let session = sessions.get(&handle.session_id).ok_or_else(|| {
            Error::from(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            })
        })?;
        // A running command carries on after the resume (its terminal
        // too): the backend's suspend waits until it has taken its input.
        if let Some(what) = session.backend.suspend_refusal() {
            return Err(ErrorKind::NotSupported { what }.into());
        }
        session
            .backend
            .suspender()
            .ok_or_else(|| self.unsupported(operation))
    }

    fn unsupported(&self, operation: &'static str) -> Error {
        Error::from(sandbox_core::Error::from(
            sandbox_core::ErrorKind::SuspendUnsupported {
                operation,
                backend: self.inner.selection.label.to_owned(),
            },
        ))
    }

    /// The size in bytes of a suspended session's checkpoint on disk
    /// (`None` when the session is not suspended or not on gVisor).
    pub fn checkpoint_bytes(&self, handle: &SandboxHandle) -> Option<u64> {
        #[cfg(target_os = "linux")]
        {
            let sessions = self.inner.sessions.lock().ok()?;
            let s = sessions.get(&handle.session_id)?.backend.suspender()?;
            s.is_suspended().then(|| s.checkpoint_bytes())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = handle;
            None
        }
    }
}

fn poisoned() -> Error {
    Error::io("session table", std::io::Error::other("lock poisoned"))
}
