//! `SandboxManager`: [`SandboxPort`] over the backend chosen at build. The
//! manager keeps the session table and the states; launching, running and
//! destroying are the backend's (`crate::backend`).

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

/// Workspaces (R-WORKSPACE): a task's own copy of a registered checkout.
impl SandboxManager {
    /// Launches a session for `spec` working in a workspace of its own
    /// made from `request`: the checkout's working tree and git directory
    /// as a view the session alone writes, on the request's branch,
    /// starting at the checkout's `HEAD` with its uncommitted changes. The
    /// view is mounted writable (read-only in the modes that make mounts
    /// read-only) and is the session's working directory unless `spec`
    /// names one; the checkout's object store is mounted read-only and the
    /// checkout itself is protected, so nothing of it (refs, packed-refs,
    /// index, worktrees, `info/`, objects, config, hooks) changes from
    /// inside. The session's work returns only through
    /// [`SandboxManager::collect`]. The layer lives in a directory of its
    /// own in the manager's temp dir, removed at `destroy` and swept like
    /// the session directories after a crash.
    ///
    /// The session id names the collected ref, so it must be 1 to 128 of
    /// `A-Z a-z 0-9 . _ -` ([`ErrorKind::BadWorkspaceName`]); a path that
    /// is not a main checkout with a commit is [`ErrorKind::NotACheckout`].
    pub async fn launch_in_workspace(
        &self,
        spec: SandboxSpec,
        request: &WorkspaceRequest,
    ) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        self.refuse_duplicate(&spec.session_id)?;
        let temp = self.workspace_temp_dir()?;
        let (request, id) = (request.clone(), spec.session_id.clone());
        let layering = self.workspace_layering(&temp);
        let workspace = blocking(move || Workspace::create(&request, &id, &temp, layering)).await?;
        #[cfg(target_os = "linux")]
        if let Some(why) = workspace.fallback() {
            (self.inner.settings.log)(&format!(
                "session {}: the workspace is a copy: its checkout cannot be an overlay's layer ({why})",
                spec.session_id
            ));
        }
        self.launch_with(spec, Some(Arc::new(workspace))).await
    }

    /// Launches a session for `spec` in a fork of `parent`'s workspace:
    /// what the parent's view holds now (its commits, its uncommitted
    /// changes) in a layer of its own, on the same branch name. Writes of
    /// either are never seen by the other or by another fork, and each
    /// collects on its own (`refs/sessions/<its session>/<branch>`).
    /// An overlay fork copies what the parent changed (its layer) and
    /// links the layers below, a copy fork the parent's whole view (see
    /// [`crate::WorkspaceLayering`]); a command of the parent's writing
    /// meanwhile may leave a file half written in the fork. A fork of a
    /// fork is at most 32 deep.
    pub async fn launch_fork(
        &self,
        parent: &SandboxHandle,
        spec: SandboxSpec,
    ) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        self.refuse_duplicate(&spec.session_id)?;
        let from = self.workspace_of(parent)?;
        let temp = self.workspace_temp_dir()?;
        let id = spec.session_id.clone();
        let workspace = blocking(move || from.fork(&id, &temp)).await?;
        self.launch_with(spec, Some(Arc::new(workspace))).await
    }

    /// Collects the session's branch into its registered checkout as
    /// `refs/sessions/<session>/<branch>`, through the push rule (a create,
    /// or a fast-forward of that ref; the push rule's object and size
    /// limits), and nothing else: no other ref, the index, a worktree or
    /// the config of the checkout changes. The session may go on working
    /// and collect again. Refused with [`ErrorKind::CollectRefused`] (the
    /// branch is gone or rewritten, an object is missing or damaged), the
    /// checkout unchanged. Merging is the host's to decide.
    pub async fn collect(&self, handle: &SandboxHandle) -> Result<CollectOutcome, Error> {
        let workspace = self.workspace_of(handle)?;
        let id = handle.session_id.clone();
        blocking(move || workspace.collect(&id)).await
    }

    /// The session's workspace, its disk use counted now; `None` for a
    /// session without one, or not live.
    pub fn workspace(&self, handle: &SandboxHandle) -> Option<WorkspaceInfo> {
        let sessions = self.inner.sessions.lock().ok()?;
        let ws = sessions.get(&handle.session_id)?.workspace.clone()?;
        drop(sessions);
        Some(ws.info())
    }

    fn workspace_of(&self, handle: &SandboxHandle) -> Result<Arc<Workspace>, Error> {
        let sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        let session = sessions.get(&handle.session_id).ok_or_else(|| {
            Error::from(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            })
        })?;
        session.workspace.clone().ok_or_else(|| {
            ErrorKind::NoWorkspace {
                session_id: handle.session_id.clone(),
            }
            .into()
        })
    }

    /// The overlay where the backend mounts one and this host can
    /// (tried once per process), else the copy.
    fn workspace_layering(&self, temp: &std::path::Path) -> crate::WorkspaceLayering {
        #[cfg(target_os = "linux")]
        if self.inner.backend.mounts_overlays(&self.inner.settings) {
            match crate::workspace::overlay_available(temp) {
                Ok(()) => return crate::WorkspaceLayering::Overlay,
                Err(why) => {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        (self.inner.settings.log)(&format!(
                            "workspaces are copies here (an overlay could not be mounted: {why})"
                        ));
                    });
                }
            }
        }
        let _ = temp;
        crate::WorkspaceLayering::Copy
    }

    fn workspace_temp_dir(&self) -> Result<std::path::PathBuf, Error> {
        self.inner.settings.temp_dir.clone().ok_or_else(|| {
            ErrorKind::MissingSetting {
                setting: "temp_dir",
                why: "a workspace's layer is made in the manager's temp dir",
            }
            .into()
        })
    }

    fn refuse_duplicate(&self, session_id: &str) -> Result<(), Error> {
        let sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        if sessions.contains_key(session_id) {
            return Err(ErrorKind::DuplicateSession {
                session_id: session_id.to_owned(),
            }
            .into());
        }
        Ok(())
    }

    /// Launches `spec`, in `workspace` when there is one.
    #[tracing::instrument(
        name = "agent_sandbox.launch",
        skip_all,
        err(Display),
        fields(
            session_id = %spec.session_id,
            backend = %self.inner.selection.backend,
            label = self.inner.selection.label,
            workspace = workspace.is_some(),
        )
    )]
    async fn launch_with(
        &self,
        mut spec: SandboxSpec,
        workspace: Option<Arc<Workspace>>,
    ) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        if let Some(ws) = &workspace {
            ws.amend(&mut spec)?;
        }
        self.refuse_duplicate(&spec.session_id)?;
        if let Some(path) =
            sandbox_core::git::writable_git_dir(&spec.bind_mounts, &*self.inner.settings.host)
        {
            return Err(ErrorKind::WritableGitDirectory {
                path: path.to_owned(),
            }
            .into());
        }
        let mut handle = SandboxHandle::new(spec.session_id.clone(), self.inner.selection.backend);
        handle
            .details
            .insert("label".into(), self.inner.selection.label.into());
        handle.details.insert(
            "limits".into(),
            self.inner.settings.cgroups.describe().into(),
        );
        // What the host hides in the checkout stays hidden in the view.
        let amended = workspace
            .as_deref()
            .and_then(|w| w.reads_in_view(&self.inner.settings.reads))
            .map(|reads| crate::settings::Settings {
                reads,
                ..self.inner.settings.clone()
            });
        let launched = self
            .inner
            .backend
            .launch(
                amended.as_ref().unwrap_or(&self.inner.settings),
                &spec,
                workspace.as_deref(),
            )
            .await?;
        for (key, value) in launched.details {
            handle.details.insert(key.into(), value.into());
        }
        for (key, value) in workspace.iter().flat_map(|w| w.details()) {
            handle.details.insert(key.into(), value.into());
        }
        handle.transition(SandboxState::Warm)?;
        let mut env = launched.env;
        let settings = &self.inner.settings;
        if let Some(var) =
            crate::unix_sockets::ssh_auth_sock(&settings.base_env, &settings.unix_sockets)
        {
            // The agent's socket is granted: its variable goes in too.
            env.retain(|(k, _)| *k != var.0);
            env.push(var);
        }
        let audit = settings.audit.as_ref().map(|sink| {
            crate::audit::SessionAudit::new(
                sink.clone(),
                &handle.session_id,
                self.inner.selection.label,
            )
        });
        if let Some(a) = &audit {
            a.lifecycle(true);
        }
        let session = Session {
            spec,
            env,
            backend: launched.session,
            running: None,
            runner: None,
            workspace,
            audit,
            commands: 0,
        };
        let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        sessions.insert(handle.session_id.clone(), session);
        Ok(handle)
    }
}

/// Runs blocking file and git work off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::io("a workspace task", std::io::Error::other(e.to_string())))?
}

fn poisoned() -> Error {
    Error::io("session table", std::io::Error::other("lock poisoned"))
}
