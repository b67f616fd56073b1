//! A session on the VM runtime: one guest per session, kept warm.
//!
//! - `launch` starts the session's proxies (Unix sockets, as under gVisor),
//!   reads the bubblewrap plan of the spec as a [`Layout`], starts the file
//!   server that serves it ([`FileServer`]) and boots the guest with that
//!   share as its root. The guest has no network card: its agent listens
//!   on 127.0.0.1:3128 and 127.0.0.1:1080 inside and each connection is
//!   carried over the channel to the session's proxy, the only way out.
//! - `exec` asks the agent to start the command (argv, the session's
//!   sanitised environment, working directory; pipes, or a terminal of the
//!   guest's own). Its output comes back over the channel into host pipes
//!   (or a host terminal that mirrors the guest's), so the command's events
//!   are exactly the other backends'. Signals go to the command's process
//!   group in the guest. What a command leaves running stays for the next.
//! - `destroy` powers the guest off (QEMU is killed if it does not end)
//!   and stops the file server and the proxies.
//!
//! Filename rules (R-NAMEGUARD-1) hold where the files are made: the file
//! server runs under the name guard in its jail, so a denied name is
//! refused on the host, whatever the guest's kernel does, and reported as
//! the command's violation (the guard's reader is lent to each command).
//!
//! Refused rather than weakened: per-command limits (the guest's processes
//! are in the guest's kernel, outside any host cgroup of the command);
//! `suspend` (QEMU cannot save a guest while a virtio-fs share is
//! attached).

use super::channel::{Channel, RelayTarget, Relays};
use super::fileserver::FileServer;
use super::vm::{Accel, Vm, VmConfig};
use crate::backend::common::host_repos::{ReposAtLaunch, log_repos_made_inside};
use crate::backend::common::name_guard_reports::{ReportPipe, ReportReader};
use crate::backend::microvm::dispatch_plan::{DispatchPlan, dispatch_plan};
use crate::backend::microvm::layout::{Layout, layout_from_bwrap_args};
use crate::egress::{Egress, Listen};
use crate::inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT};
use crate::process::CommandProcess;
use crate::running::{CommandIo, run_process};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::session_dir::SessionDir;
use crate::settings::Settings;
use crate::violations::GuardPipe;
use crate::{Error, ErrorKind};
use bwrap_spec::{FilenameRules, GuardFds, NameGuardLauncher, PlaceholderFiles};
use rustix::fd::OwnedFd;
use sandbox_core::vm_wire::{FromGuest, MAX_DATA, ToGuest, VmExec, VmStdio};
use sandbox_core::{SandboxSpec, Surface};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Why a session on this runtime cannot be suspended, and what it would
/// take.
pub(crate) const SUSPEND_REFUSAL: &str = "suspend on the QEMU runtime: QEMU cannot save a guest \
     while a virtio-fs share is attached (the file server's state is outside the VM); it would \
     take a file sharing that can be saved with the guest (a disk image of the session's files, \
     or a file server whose state migrates)";
/// How long a guest may take to power off before QEMU is killed.
const POWER_OFF_WAIT: Duration = Duration::from_secs(5);
/// How often a terminal's size is compared with the guest's.
const RESIZE_POLL: Duration = Duration::from_millis(50);

/// What the VM runtime needs besides the shared settings: the probe's
/// guest (its QEMU, kernel and accelerator, and the image it built), the
/// jail's and the file server's programs.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) vm: VmConfig,
    pub(crate) initrd: PathBuf,
    /// Holds the guest image while the manager lives.
    pub(crate) _image_dir: Arc<SessionDir>,
    pub(crate) bwrap: PathBuf,
    pub(crate) virtiofsd: PathBuf,
    pub(crate) temp_dir: PathBuf,
    /// `EnforcedByNameGuard` (the file server runs under the guard), or
    /// the explicit `DropFilenameGlobDenies`.
    pub(crate) filename_rules: FilenameRules,
    /// The name guard's launcher (also the guest's agent).
    pub(crate) name_guard: NameGuardLauncher,
    /// How long a guest may take to answer.
    pub(crate) boot_wait: Duration,
}

/// A guest session.
pub(crate) struct Session {
    guest: Arc<Guest>,
    /// The file server's name guard's reports, lent to the running command.
    guard: Arc<std::sync::Mutex<Option<ReportReader>>>,
    vm: tokio::sync::Mutex<Option<Vm>>,
    fileserver: tokio::sync::Mutex<Option<FileServer>>,
    egress: Egress,
    writable: Vec<String>,
    repos_at_launch: ReposAtLaunch,
    _placeholders: PlaceholderFiles,
    /// The guest's files (its sockets, console and the file server's log).
    _dir: SessionDir,
}

/// What a running command needs of the guest.
struct Guest {
    channel: Arc<Channel>,
    next_id: AtomicU64,
    /// QEMU's process (or its jail's), to end the guest when its agent no
    /// longer ends a command.
    qemu: Option<OwnedFd>,
}

impl Guest {
    /// Ends the guest at once: every command's replies end with it.
    fn kill(&self) {
        if let Some(fd) = &self.qemu {
            let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
        }
    }
}

pub(crate) async fn launch(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
) -> Result<Launched<Session>, Error> {
    if settings.surface == Surface::Terminal {
        return Err(ErrorKind::NotSupported {
            what: "the terminal surface on the VM runtime (its profile shares the host's network, \
                   which a guest without a network card does not have)",
        }
        .into());
    }
    let egress = Egress::start(
        &settings.egress,
        spec,
        &config.temp_dir,
        Listen::Unbound,
        None,
    )
    .await?;
    match launch_with(config, settings, spec, &egress).await {
        Ok(made) => Ok(Launched {
            session: Session {
                guest: made.guest,
                guard: Arc::new(std::sync::Mutex::new(made.guard)),
                vm: tokio::sync::Mutex::new(Some(made.vm)),
                fileserver: tokio::sync::Mutex::new(Some(made.fileserver)),
                egress,
                writable: made.writable,
                repos_at_launch: made.repos,
                _placeholders: made.placeholders,
                _dir: made.dir,
            },
            env: made.env,
            details: made.details,
        }),
        Err(e) => {
            egress.shutdown().await;
            Err(e)
        }
    }
}

/// Everything a launch makes once the proxies run.
struct Made {
    guest: Arc<Guest>,
    guard: Option<ReportReader>,
    vm: Vm,
    fileserver: FileServer,
    writable: Vec<String>,
    repos: ReposAtLaunch,
    placeholders: PlaceholderFiles,
    dir: SessionDir,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    details: Vec<(&'static str, String)>,
}

async fn launch_with(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
    egress: &Egress,
) -> Result<Made, Error> {
    let host = &*settings.host;
    let DispatchPlan {
        plan,
        proxies,
        writable,
        repos,
        ..
    } = dispatch_plan(
        settings,
        spec,
        egress,
        config.filename_rules,
        (config.filename_rules == FilenameRules::EnforcedByNameGuard).then_some(&config.name_guard),
        "this manager runs the QEMU guest's file server without the name guard \
         (FilenameRules::Refuse)",
    )?;
    let relays: Relays = proxies
        .into_iter()
        .map(|(port, socket)| (port, RelayTarget::Unix(socket)))
        .collect();
    let layout: Layout = layout_from_bwrap_args(plan.args(), |p| host.exists(Path::new(p)))?;
    let guest_addr = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let env = egress.env(
        settings,
        spec,
        crate::broker::guest_bundle_path(),
        (guest_addr(GUEST_HTTP_PORT), guest_addr(GUEST_SOCKS_PORT)),
        None,
    )?;
    let placeholders = PlaceholderFiles::create_on_host(plan.placeholders())?;
    let dir = SessionDir::create_in(&config.temp_dir)?;
    let rootless = !rustix::process::geteuid().is_root();
    // Under the name guard when the rules ask: its reports come back on
    // a pipe of the session's.
    let reports = match plan.is_guarded() {
        true => Some(
            ReportPipe::new().map_err(|e| Error::io("creating the name guard's report pipe", e))?,
        ),
        false => None,
    };
    let report_fd = reports.as_ref().map(ReportPipe::write_fd);
    let virtiofsd = &config.virtiofsd;
    let mut fileserver = FileServer::start(
        &config.bwrap,
        |fd| {
            let mut argv = plan.guarded_command_with(
                super::fileserver::virtiofsd_args(virtiofsd, fd),
                GuardFds {
                    report: report_fd,
                    updates: None,
                    notify: None,
                },
            );
            if plan.is_guarded() {
                // The guard's options follow the launcher and its leading
                // arguments: the file server keeps what it needs to make
                // files as the guest's users, and the guard with it.
                let at = (1 + config.name_guard.leading_args().len()).min(argv.len());
                let keep = super::fileserver::KEPT_CAPABILITIES
                    .iter()
                    .flat_map(|c| ["--keep-capability".into(), std::ffi::OsString::from(c)]);
                argv.splice(at..at, keep);
            }
            argv
        },
        &layout,
        dir.path(),
        rootless,
        report_fd,
    )
    .map_err(|reason| ErrorKind::GuestUnavailable { reason })?;
    let guard = match reports {
        Some(p) => {
            let (write_end, reader) = p
                .start()
                .map_err(|e| Error::io("reading the name guard's reports", e))?;
            drop(write_end);
            Some(reader)
        }
        None => None,
    };
    let vm = match Vm::boot(
        &config.vm,
        &config.initrd,
        dir.path(),
        config.boot_wait,
        relays,
        Some(&fileserver.socket),
    )
    .await
    {
        Ok(vm) => vm,
        Err(e) => {
            let server = fileserver.ended().unwrap_or_default();
            fileserver.stop().await;
            return Err(ErrorKind::GuestUnavailable {
                reason: format!("{}; {server}", e.0),
            }
            .into());
        }
    };
    let guest = Arc::new(Guest {
        channel: vm.channel(),
        next_id: AtomicU64::new(1 << 32),
        qemu: vm.pidfd(),
    });
    let accel = config.vm.accel;
    let details = vec![
        ("runtime", "qemu".to_string()),
        (
            "accelerator",
            match accel {
                Accel::Kvm => "kvm",
                Accel::Tcg => "tcg",
            }
            .to_string(),
        ),
        (
            "hardwareVm",
            if accel == Accel::Kvm { "yes" } else { "no" }.to_string(),
        ),
        ("kernelBoundary", accel.label().to_string()),
        ("guestKernel", vm.release.clone()),
        (
            "fileSharing",
            "virtio-fs: virtiofsd in a bubblewrap jail holding the session's mounts".to_string(),
        ),
        ("httpProxy", format!("127.0.0.1:{GUEST_HTTP_PORT}")),
        ("socksProxy", format!("127.0.0.1:{GUEST_SOCKS_PORT}")),
        ("sessionDir", dir.path().display().to_string()),
    ];
    Ok(Made {
        guest,
        guard,
        vm,
        fileserver,
        writable,
        repos,
        placeholders,
        dir,
        env,
        details,
    })
}

/// A new pipe, both ends close-on-exec: (read, write).
fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| Error::io("creating a command's pipe", e.into()))
}

impl Session {
    pub(crate) fn exec(
        &self,
        request: ExecRequest<'_>,
        mut io: CommandIo,
    ) -> Result<CommandTask, Error> {
        if !request.cgroup_procs.is_empty() {
            return Err(ErrorKind::LimitUnavailable {
                limit: "memory, process or CPU",
                reason: "in a guest a command's processes live in the guest's own kernel, \
                         outside any per-command cgroup of the host"
                    .into(),
            }
            .into());
        }
        let guest = self.guest.clone();
        let id = guest.next_id.fetch_add(1, Ordering::Relaxed);
        let text = |v: &std::ffi::OsStr| v.as_bytes().to_vec();
        let exec = VmExec {
            id,
            argv: request.argv.iter().map(|a| text(a)).collect(),
            env: request
                .env
                .iter()
                .map(|(k, v)| {
                    let mut kv = text(k);
                    kv.push(b'=');
                    kv.extend_from_slice(v.as_bytes());
                    kv
                })
                .collect(),
            cwd: request.workdir.as_bytes().to_vec(),
            stdio: match request.terminal {
                Some(size) => VmStdio::Terminal {
                    rows: size.rows(),
                    cols: size.cols(),
                },
                None => VmStdio::Pipes,
            },
        };
        let exec = ToGuest::Exec(exec);
        exec.check().map_err(|e| {
            Error::io(
                "passing the command to the guest",
                std::io::Error::other(e.to_string()),
            )
        })?;
        let replies = guest.channel.command(id);
        let (status_tx, status_rx) = oneshot::channel();
        let child = match request.terminal {
            Some(size) => {
                let err = |e: std::io::Error| Error::io("opening a terminal for the command", e);
                let (master, slave) = crate::pty::open_on_host(size).map_err(err)?;
                io.terminal = Some(Arc::new(crate::pty::PtyMaster::new(master).map_err(err)?));
                // The relay's end: it only carries bytes between the host's
                // master and the guest's terminal, whose own line discipline
                // echoes, edits lines and sends the signals.
                let slave = crate::pty::PtyMaster::new(slave).map_err(err)?;
                slave.make_raw().map_err(err)?;
                tokio::spawn(terminal_pump(id, guest.clone(), slave, replies, status_tx));
                GuestChild {
                    id,
                    guest: guest.clone(),
                    status: status_rx,
                    stdio: (None, None, None),
                }
            }
            None => {
                let (out_r, out_w) = pipe()?;
                let (err_r, err_w) = pipe()?;
                let io_err = |e: std::io::Error| Error::io("creating a command's pipe", e);
                let out_w = tokio::net::unix::pipe::Sender::from_owned_fd(out_w).map_err(io_err)?;
                let err_w = tokio::net::unix::pipe::Sender::from_owned_fd(err_w).map_err(io_err)?;
                let stdin = match request.stdin {
                    sandbox_core::Stdin::Piped => {
                        let (in_r, in_w) = pipe()?;
                        let in_r = tokio::net::unix::pipe::Receiver::from_owned_fd(in_r)
                            .map_err(io_err)?;
                        tokio::spawn(stdin_pump(id, guest.clone(), in_r));
                        Some(
                            tokio::process::ChildStdin::from_std(std::process::ChildStdin::from(
                                in_w,
                            ))
                            .map_err(io_err)?,
                        )
                    }
                    _ => None,
                };
                tokio::spawn(output_pump(
                    replies,
                    (out_w, err_w),
                    status_tx,
                    guest.clone(),
                ));
                GuestChild {
                    id,
                    guest: guest.clone(),
                    status: status_rx,
                    stdio: (
                        stdin,
                        Some(
                            tokio::process::ChildStdout::from_std(std::process::ChildStdout::from(
                                out_r,
                            ))
                            .map_err(io_err)?,
                        ),
                        Some(
                            tokio::process::ChildStderr::from_std(std::process::ChildStderr::from(
                                err_r,
                            ))
                            .map_err(io_err)?,
                        ),
                    ),
                }
            }
        };
        guest
            .channel
            .send(&exec)
            .map_err(|e| ErrorKind::GuestUnavailable { reason: e.0 })?;
        if request.stdin != sandbox_core::Stdin::Piped && request.terminal.is_none() {
            // Its input ends at once.
            let _ = guest.channel.send(&ToGuest::Stdin {
                id,
                data: Vec::new(),
            });
        }
        let signals = guest.clone();
        io.control.remote_started(Box::new(move |signal| {
            let _ = signals.channel.send(&ToGuest::Signal { id, signal });
        }));
        let mut violations = self.egress.violations(None);
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

    /// Powers the guest off (killing QEMU if it does not end), stops the
    /// file server and the proxies. The guest's directory goes when `self`
    /// is dropped.
    pub(crate) async fn destroy(self, settings: &Settings, session_id: &str) {
        if let Some(vm) = self.vm.lock().await.take() {
            vm.power_off(POWER_OFF_WAIT).await;
        }
        if let Some(fs) = self.fileserver.lock().await.take() {
            fs.stop().await;
        }
        log_repos_made_inside(settings, session_id, &self.writable, &self.repos_at_launch);
        self.egress.shutdown().await;
    }
}

/// Carries what the host writes to the command's stdin into the guest;
/// its end ends the guest command's input.
async fn stdin_pump(id: u64, guest: Arc<Guest>, mut r: tokio::net::unix::pipe::Receiver) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; MAX_DATA];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let data = buf.get(..n).unwrap_or_default().to_vec();
                if guest
                    .channel
                    .send_data(&ToGuest::Stdin { id, data })
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
    let _ = guest
        .channel
        .send_data(&ToGuest::Stdin {
            id,
            data: Vec::new(),
        })
        .await;
}

/// The command's end as the host sees a process's: its wait status, or
/// why it has none.
type Ended = std::io::Result<std::process::ExitStatus>;

/// What the guest said of a command, to the command's end.
fn ended_with(m: &FromGuest) -> Option<Ended> {
    use std::os::unix::process::ExitStatusExt;
    match m {
        FromGuest::Ended { wait_status, .. } => {
            Some(Ok(std::process::ExitStatus::from_raw(*wait_status)))
        }
        FromGuest::Failed { errno, .. } => Some(Err(std::io::Error::from_raw_os_error(*errno))),
        _ => None,
    }
}

fn guest_gone() -> Ended {
    Err(std::io::Error::other(
        "the guest ended before the command did",
    ))
}

/// Writes the command's output from the guest into the host pipes, in
/// order, then closes them and reports its end.
async fn output_pump(
    mut replies: mpsc::Receiver<FromGuest>,
    (mut out, mut err): (
        tokio::net::unix::pipe::Sender,
        tokio::net::unix::pipe::Sender,
    ),
    status: oneshot::Sender<Ended>,
    _guest: Arc<Guest>,
) {
    let ended = loop {
        let Some(m) = replies.recv().await else {
            break guest_gone();
        };
        match &m {
            FromGuest::Stdout { data, .. } => {
                let _ = out.write_all(data).await;
            }
            FromGuest::Stderr { data, .. } => {
                let _ = err.write_all(data).await;
            }
            _ => {
                if let Some(e) = ended_with(&m) {
                    break e;
                }
            }
        }
    };
    drop((out, err));
    let _ = status.send(ended);
}

/// Carries a terminal command's screen from the guest to the host
/// terminal's slave, what is typed on the host to the guest, and the host
/// terminal's size to the guest's (compared every [`RESIZE_POLL`]).
async fn terminal_pump(
    id: u64,
    guest: Arc<Guest>,
    slave: crate::pty::PtyMaster,
    mut replies: mpsc::Receiver<FromGuest>,
    status: oneshot::Sender<Ended>,
) {
    let mut size = slave.size().ok();
    let mut buf = vec![0u8; MAX_DATA];
    let mut tick = tokio::time::interval(RESIZE_POLL);
    let ended = loop {
        tokio::select! {
            m = replies.recv() => {
                let Some(m) = m else { break guest_gone() };
                match &m {
                    FromGuest::Stdout { data, .. } | FromGuest::Stderr { data, .. } => {
                        // A host terminal that is gone shows nothing.
                        let _ = slave.write_all(data).await;
                    }
                    _ => if let Some(e) = ended_with(&m) { break e },
                }
            }
            r = slave.read(&mut buf) => {
                match r {
                    Ok(n) if n > 0 => {
                        // A resize made before this was typed reaches the
                        // guest first.
                        resize_if_changed(&slave, &mut size, id, &guest);
                        let data = buf.get(..n).unwrap_or_default().to_vec();
                        let _ = guest.channel.send_data(&ToGuest::Stdin { id, data }).await;
                    }
                    // Nothing more is typed; the screen still comes.
                    _ => tokio::time::sleep(RESIZE_POLL).await,
                }
            }
            _ = tick.tick() => resize_if_changed(&slave, &mut size, id, &guest),
        }
    };
    // The master reads what is left, then the end of the terminal.
    drop(slave);
    let _ = status.send(ended);
}

/// Sends the host terminal's size to the guest's when it changed since
/// `size` (the size last sent).
fn resize_if_changed(
    slave: &crate::pty::PtyMaster,
    size: &mut Option<(u16, u16)>,
    id: u64,
    guest: &Guest,
) {
    let now = slave.size().ok();
    if let Some((rows, cols)) = now
        && now != *size
    {
        *size = now;
        let _ = guest.channel.send(&ToGuest::Resize { id, rows, cols });
    }
}

/// A command in the guest as the runner task follows it.
struct GuestChild {
    id: u64,
    guest: Arc<Guest>,
    status: oneshot::Receiver<Ended>,
    stdio: (
        Option<tokio::process::ChildStdin>,
        Option<tokio::process::ChildStdout>,
        Option<tokio::process::ChildStderr>,
    ),
}

impl CommandProcess for GuestChild {
    fn host_pid(&self) -> Option<u32> {
        None
    }

    fn take_stdio(
        &mut self,
    ) -> (
        Option<tokio::process::ChildStdin>,
        Option<tokio::process::ChildStdout>,
        Option<tokio::process::ChildStderr>,
    ) {
        (
            self.stdio.0.take(),
            self.stdio.1.take(),
            self.stdio.2.take(),
        )
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match (&mut self.status).await {
            Ok(ended) => ended,
            Err(_) => guest_gone(),
        }
    }

    fn start_kill(&mut self) -> std::io::Result<()> {
        let _ = self.guest.channel.send(&ToGuest::Signal {
            id: self.id,
            signal: libc::SIGKILL,
        });
        Ok(())
    }

    fn force_kill(&mut self) -> std::io::Result<()> {
        // The agent did not end it within the grace: the guest ends, every
        // process in it with it, and later commands are refused.
        self.guest.kill();
        Ok(())
    }
}
