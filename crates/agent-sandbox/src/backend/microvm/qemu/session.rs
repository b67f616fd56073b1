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
//! Per-command limits are held by the guest's kernel: the agent runs each
//! limited command in a cgroup v2 of its own (`memory.max` without swap,
//! `pids.max`, `cpu.max`) and reports an out-of-memory end.
//!
//! Refused rather than weakened: `suspend` (QEMU cannot save a guest while
//! a virtio-fs share is attached).

use super::fileserver::FileServer;
use super::vm::{Accel, Vm, VmConfig};
use crate::backend::common::host_repos::{ReposAtLaunch, log_repos_made_inside};
use crate::backend::common::name_guard_reports::{ReportPipe, ReportReader};
use crate::backend::microvm::agent_link::Link;
use crate::backend::microvm::agent_link::channel::{RelayTarget, Relays};
use crate::backend::microvm::agent_link::command::start_command;
use crate::backend::microvm::dispatch_plan::{DispatchPlan, dispatch_plan};
use crate::backend::microvm::layout::{Layout, layout_from_bwrap_args};
use crate::egress::{Egress, Listen};
use crate::inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT};
use crate::running::{CommandIo, run_process};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::session_dir::SessionDir;
use crate::settings::Settings;
use crate::violations::GuardPipe;
use crate::{Error, ErrorKind};
use bwrap_spec::{FilenameRules, GuardFds, NameGuardLauncher, PlaceholderFiles};
use rustix::fd::OwnedFd;
use sandbox_core::vm_wire::VmLimits;
use sandbox_core::{SandboxSpec, Surface};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Why a session on this runtime cannot be suspended, and what it would
/// take.
pub(crate) const SUSPEND_REFUSAL: &str = "suspend on the QEMU runtime: QEMU cannot save a guest \
     while a virtio-fs share is attached (the file server's state is outside the VM); it would \
     take a file sharing that can be saved with the guest (a disk image of the session's files, \
     or a file server whose state migrates)";
/// How long a guest may take to power off before QEMU is killed.
const POWER_OFF_WAIT: Duration = Duration::from_secs(5);

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
    guest: Arc<Link>,
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

/// Ends the guest at once (QEMU's process, or its jail's): every
/// command's replies end with it.
fn guest_killer(qemu: Option<OwnedFd>) -> Box<dyn Fn() + Send + Sync> {
    Box::new(move || {
        if let Some(fd) = &qemu {
            let _ = rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL);
        }
    })
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
    guest: Arc<Link>,
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
    let guest = Arc::new(Link {
        channel: vm.channel(),
        next_id: AtomicU64::new(1 << 32),
        kill: guest_killer(vm.pidfd()),
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

impl Session {
    pub(crate) fn exec(
        &self,
        request: ExecRequest<'_>,
        mut io: CommandIo,
    ) -> Result<CommandTask, Error> {
        // The guest's kernel holds them: a cgroup v2 of the agent's per
        // limited command.
        let limits = VmLimits {
            memory_bytes: request.limits.memory_bytes,
            max_processes: request.limits.max_processes,
            cpu_millis: request.limits.cpu_millis,
        };
        let child = start_command(&self.guest, &request, &mut io, limits)?;
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
