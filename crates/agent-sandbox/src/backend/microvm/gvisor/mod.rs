//! The `microvm` backend on gVisor (`runsc`): a kernel boundary without
//! hardware virtualization. The command's system calls are served by
//! gVisor's user-space kernel, never by the host's; gVisor itself runs as
//! host processes under its own seccomp filter. It is not a hardware VM and
//! no label says it is.
//!
//! One sandbox per session, kept warm:
//!
//! - `launch` starts the session's proxies (Unix sockets only, as under
//!   bubblewrap), builds the bubblewrap plan of the spec and reads its file
//!   system as an OCI bundle (`oci.rs`): an empty read-only root, the
//!   system directories read-only, the mounts per mode, a private home and
//!   `/tmp`, the secret set masked, protected paths and the write-deny set
//!   read-only. `runsc --network=none --host-uds=open run --detach` starts
//!   the sandbox with a long-lived first process that runs the two relays
//!   (`socat`, read-only from the host's `/usr`): 127.0.0.1:3128 and
//!   127.0.0.1:1080 inside, each forwarding to its proxy's Unix socket. The
//!   sandbox has loopback only, so the proxies are the only way out.
//!   runsc's state, the bundle and checkpoints live in a private directory
//!   of the session's, removed at destroy. The terminal surface instead
//!   gets the terminal profile's plan, the host's network
//!   (`--network=host`, as that profile shares it) and no proxies.
//! - `exec` runs `runsc exec` with a process file (argv, the session's
//!   sanitised environment, working directory, the caller's uid and gid, no
//!   capabilities): stdin, stdout and stderr are the host pipes, signals
//!   sent to `runsc exec` are passed on to the command, and a kill
//!   (the host's, a timeout, destroy) ends the command's process inside.
//!   What a command leaves running in the background stays for the next.
//! - `destroy` kills every process of the sandbox and deletes it.
//! - `suspend` checkpoints the sandbox into the session's directory (its
//!   processes and memory leave the host) and `resume` restores it.
//!
//! What this release of gVisor cannot do, refused rather than weakened:
//! the name guard cannot install its filter inside it, so a launch whose
//! policy needs filename rules is refused unless they were dropped
//! explicitly; per-command limits are refused. A command on a terminal
//! gets one made on the host, handed to gVisor as runsc's stdio. A Unix
//! socket that a host process makes inside a writable mount can be
//! connected to from inside (`--host-uds=open` is what reaches the
//! proxies): said in the handle's `weaker` detail.

mod oci;
mod runsc;

use super::dispatch_plan::{DispatchPlan, dispatch_plan};
use super::layout;

use crate::backend::common::host_repos::{ReposAtLaunch, log_repos_made_inside};
use crate::egress::{Egress, Listen, plain_env};
use crate::inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT};
use crate::running::{CommandIo, prepare, run_child};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::session_dir::SessionDir;
use crate::settings::Settings;
use crate::{Error, ErrorKind};
use bwrap_spec::{BridgePlan, BwrapBuilder, FilenameRules, PlaceholderFiles};
use runsc::{Network, Runsc};
use sandbox_core::{SandboxSpec, Surface};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What the gVisor runtime needs besides the shared settings.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) runsc: PathBuf,
    /// gVisor's release, for the handle's details.
    pub(crate) version: String,
    /// The relays' program inside the sandbox (the host's, read-only).
    pub(crate) socat: PathBuf,
    pub(crate) temp_dir: PathBuf,
    /// `Refuse` or the explicit `DropFilenameGlobDenies`: the name guard
    /// cannot run inside this gVisor.
    pub(crate) filename_rules: FilenameRules,
}

/// The handle detail that says what is weaker than the plan.
pub(crate) const WEAKER: &str = "a Unix socket a host process makes inside a writable mount can be connected to from inside (runsc --host-uds=open carries the proxies' sockets)";

/// How long a command's `runsc exec` may be gone before its process
/// inside is killed: a command whose `runsc exec` was killed (the host's
/// kill, a timeout, destroy) would otherwise run on, holding its output.
const ORPHAN_GRACE: Duration = Duration::from_millis(150);

/// A gVisor session.
pub(crate) struct Session {
    shared: Arc<Shared>,
    /// A dispatch's proxies (the terminal surface has none).
    egress: Option<Egress>,
    writable: Vec<String>,
    repos_at_launch: ReposAtLaunch,
    _placeholders: PlaceholderFiles,
}

/// What a running command and a suspend need of the session.
pub(crate) struct Shared {
    runsc: Runsc,
    /// The session's private runtime directory: `bundle/`, `state/`,
    /// `checkpoint/`, the process files and `runtime.log`.
    dir: SessionDir,
    ids: (u32, u32),
    suspended: AtomicBool,
    /// `destroy` deleted the sandbox; otherwise dropping the session does
    /// (a host that drops its manager, or panics, without destroying).
    deleted: AtomicBool,
    /// One lifecycle step at a time (suspend, resume, destroy).
    step: tokio::sync::Mutex<()>,
    execs: AtomicU64,
}

impl Shared {
    fn bundle(&self) -> PathBuf {
        self.dir.path().join("bundle")
    }
    fn image(&self) -> PathBuf {
        self.dir.path().join("checkpoint")
    }
    fn log(&self) -> PathBuf {
        self.dir.path().join("runtime.log")
    }

    /// Whether the session is checkpointed to disk.
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::SeqCst)
    }
}

/// The caller's uid and gid: the sandbox's processes run as them.
fn caller_ids() -> (u32, u32) {
    (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    )
}

/// Whether this process may read or write `path`, or search it when it
/// is a directory (the real uid's permissions: `access(2)`). Anything but
/// a refusal of each (a path gone, say) counts as reachable.
fn caller_reaches(path: &str) -> bool {
    use rustix::fs::{Access, access};
    let mut asked = vec![Access::READ_OK, Access::WRITE_OK];
    if std::path::Path::new(path).is_dir() {
        asked.push(Access::EXEC_OK);
    }
    asked
        .into_iter()
        .any(|a| !matches!(access(path, a), Err(rustix::io::Errno::ACCESS)))
}

pub(crate) async fn launch(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
) -> Result<Launched<Session>, Error> {
    let host = &*settings.host;
    if settings.surface == Surface::Terminal {
        return launch_terminal(config, settings, spec, host).await;
    }
    let egress = Egress::start(
        &settings.egress,
        spec,
        &config.temp_dir,
        Listen::Unbound,
        None,
    )
    .await?;
    match launch_with(config, settings, spec, host, &egress).await {
        Ok((shared, placeholders, writable, repos, details, env)) => Ok(Launched {
            session: Session {
                shared,
                egress: Some(egress),
                writable,
                repos_at_launch: repos,
                _placeholders: placeholders,
            },
            env,
            details,
        }),
        Err(e) => {
            egress.shutdown().await;
            Err(e)
        }
    }
}

/// Everything a launch makes once the proxies run.
type Made = (
    Arc<Shared>,
    PlaceholderFiles,
    Vec<String>,
    ReposAtLaunch,
    Vec<(&'static str, String)>,
    Vec<(OsString, OsString)>,
);

async fn launch_with(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
    host: &(dyn sandbox_core::HostView + Send + Sync),
    egress: &Egress,
) -> Result<Made, Error> {
    let DispatchPlan {
        plan,
        bridges,
        writable,
        repos,
        ..
    } = dispatch_plan(
        settings,
        spec,
        egress,
        config.filename_rules,
        None,
        "under gVisor nothing can refuse new names (the name guard's seccomp filter cannot be \
         installed inside this gVisor release)",
    )?;
    let guest = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let env = egress.env(
        settings,
        spec,
        crate::broker::guest_bundle_path(),
        (guest(GUEST_HTTP_PORT), guest(GUEST_SOCKS_PORT)),
        None,
    )?;
    let (shared, placeholders) =
        start_sandbox(config, &plan, host, Some(&bridges), Network::None).await?;
    let details = vec![
        ("runtime", "gvisor".to_string()),
        ("runtimeVersion", config.version.clone()),
        ("hardwareVm", "no".to_string()),
        (
            "kernelBoundary",
            "gVisor user-space kernel (not a hardware VM)".to_string(),
        ),
        ("httpProxy", format!("127.0.0.1:{GUEST_HTTP_PORT}")),
        ("socksProxy", format!("127.0.0.1:{GUEST_SOCKS_PORT}")),
        ("sessionDir", shared.dir.path().display().to_string()),
        ("weaker", WEAKER.to_string()),
    ];
    Ok((shared, placeholders, writable, repos, details, env))
}

/// The terminal surface in a gVisor sandbox: the fixed terminal profile of
/// the same spec (the host's network, no proxies, the terminal's secret
/// directories hidden) behind gVisor's kernel, a shell's commands in the
/// specification's "station" rather than on the host.
async fn launch_terminal(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
    host: &(dyn sandbox_core::HostView + Send + Sync),
) -> Result<Launched<Session>, Error> {
    let mut builder = BwrapBuilder::new(spec, &settings.home);
    builder
        .profile(bwrap_spec::Profile::Terminal)
        .read_deny(settings.reads.deny.iter().cloned())
        .read_reopen(settings.reads.again.iter().cloned());
    for s in &settings.unix_sockets {
        builder.allow_unix_socket(s.clone());
    }
    let plan = builder.build(host)?;
    let (shared, placeholders) = start_sandbox(config, &plan, host, None, Network::Host).await?;
    let details = vec![
        ("runtime", "gvisor".to_string()),
        ("runtimeVersion", config.version.clone()),
        ("hardwareVm", "no".to_string()),
        (
            "kernelBoundary",
            "gVisor user-space kernel (not a hardware VM)".to_string(),
        ),
        ("network", "host".to_string()),
        ("sessionDir", shared.dir.path().display().to_string()),
        ("weaker", WEAKER.to_string()),
    ];
    Ok(Launched {
        session: Session {
            shared,
            egress: None,
            writable: Vec::new(),
            repos_at_launch: ReposAtLaunch::default(),
            _placeholders: placeholders,
        },
        env: plain_env(settings)?,
        details,
    })
}

/// Makes the session's directory and bundle from `plan` and starts its
/// gVisor sandbox (`relays` to the proxies in its first process, when it
/// has proxies). Without root the masks over paths the caller cannot reach
/// are left out ([`layout::without_unreachable_masks`]).
async fn start_sandbox(
    config: &Config,
    plan: &bwrap_spec::BwrapPlan,
    host: &(dyn sandbox_core::HostView + Send + Sync),
    relays: Option<&BridgePlan>,
    network: Network,
) -> Result<(Arc<Shared>, PlaceholderFiles), Error> {
    let mut layout = layout::layout_from_bwrap_args(plan.args(), |p| host.exists(Path::new(p)))?;
    let rootless = caller_ids().0 != 0;
    if rootless {
        layout::without_unreachable_masks(&mut layout, caller_reaches);
    }
    let placeholders = PlaceholderFiles::create_on_host(plan.placeholders())?;
    let dir = SessionDir::create_in(&config.temp_dir)?;
    static SESSIONS: AtomicU64 = AtomicU64::new(0);
    let shared = Arc::new(Shared {
        runsc: Runsc {
            binary: config.runsc.clone(),
            state_dir: dir.path().join("state"),
            id: runsc::container_id(SESSIONS.fetch_add(1, Ordering::Relaxed)),
            rootless,
            network,
        },
        dir,
        // Without root, runsc maps the caller to root inside and nothing
        // else: the caller's files are root's there, so the commands run as
        // that root (with no capability), which is the caller on the host.
        ids: if rootless { (0, 0) } else { caller_ids() },
        suspended: AtomicBool::new(false),
        deleted: AtomicBool::new(false),
        step: tokio::sync::Mutex::new(()),
        execs: AtomicU64::new(0),
    });
    write_bundle(&shared, &layout, relays, &config.socat)?;
    let bundle = shared.bundle();
    let bundle = bundle.to_string_lossy();
    shared
        .runsc
        .step(
            "run",
            &["run", "--detach", "--bundle", &bundle, &shared.runsc.id],
            &shared.log(),
        )
        .await?;
    Ok((shared, placeholders))
}

/// Writes `bundle/config.json` and the empty root with its directories
/// and symlinks. The first process starts the relays, then waits forever.
fn write_bundle(
    shared: &Shared,
    layout: &layout::Layout,
    relays: Option<&BridgePlan>,
    socat: &Path,
) -> Result<(), Error> {
    let io = |what: String| move |e| Error::io(what, e);
    let bundle = shared.bundle();
    let rootfs = bundle.join("rootfs");
    std::fs::create_dir_all(&rootfs).map_err(io(format!("creating {}", rootfs.display())))?;
    std::fs::create_dir_all(&shared.runsc.state_dir)
        .map_err(io("creating runsc's state".into()))?;
    for d in &layout.root_dirs {
        let p = rootfs.join(d.trim_start_matches('/'));
        std::fs::create_dir_all(&p).map_err(io(format!("creating {}", p.display())))?;
    }
    for (target, link) in &layout.root_symlinks {
        let p = rootfs.join(link.trim_start_matches('/'));
        std::os::unix::fs::symlink(target, &p).map_err(io(format!("linking {}", p.display())))?;
    }
    let socat = oci::utf8(socat.as_os_str(), "the relay program's path")?;
    let wait = ["/bin/sh", "-c", "while :; do sleep 3600; done"];
    let init: Vec<OsString> = match relays {
        Some(bridges) => bridges.inner_command("/bin/sh", &socat, wait),
        None => wait.iter().map(OsString::from).collect(),
    };
    let init: Vec<String> = init
        .iter()
        .map(|a| oci::utf8(a, "the first process's argv"))
        .collect::<Result<_, _>>()?;
    let init = oci::process_json(
        &init,
        &["PATH=/usr/bin:/bin".to_owned()],
        "/",
        shared.ids,
        false,
    );
    let config = oci::config_json(layout, init, shared.runsc.network);
    let path = bundle.join("config.json");
    std::fs::write(&path, config.to_string()).map_err(io(format!("writing {}", path.display())))
}

impl Session {
    /// The state the manager reports between commands.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub(crate) fn exec(
        &self,
        request: ExecRequest<'_>,
        mut io: CommandIo,
    ) -> Result<CommandTask, Error> {
        if !request.cgroup_procs.is_empty() {
            return Err(ErrorKind::LimitUnavailable {
                limit: "memory, process or CPU",
                reason: "under gVisor a command's processes live in the sandbox's own kernel, \
                         outside any per-command cgroup of the host"
                    .into(),
            }
            .into());
        }
        let shared = &self.shared;
        let n = shared.execs.fetch_add(1, Ordering::Relaxed);
        let process_file = shared.dir.path().join(format!("exec-{n}.json"));
        let pid_file = shared.dir.path().join(format!("exec-{n}.pid"));
        let argv: Vec<String> = request
            .argv
            .iter()
            .map(|a| oci::utf8(a, "the command's argv"))
            .collect::<Result<_, _>>()?;
        let env: Vec<String> = request
            .env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.clone();
                kv.push("=");
                kv.push(v);
                oci::utf8(&kv, "the command's environment")
            })
            .collect::<Result<_, _>>()?;
        let process = oci::process_json(
            &argv,
            &env,
            &request.workdir,
            shared.ids,
            request.terminal.is_some(),
        );
        write_private(&process_file, process.to_string().as_bytes())?;
        let mut c = shared.runsc.command();
        prepare(&mut c, &request);
        // runsc itself needs none of the command's variables.
        c.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .current_dir("/");
        if let Some(size) = request.terminal {
            // A terminal made on the host becomes runsc's stdio and
            // controlling terminal; with `terminal` in the process spec,
            // gVisor gives it to the command as its own terminal (the
            // sandbox's kernel runs its line discipline calls against it),
            // and runsc passes the terminal's signals (a resize's SIGWINCH)
            // on to the command. Only the terminal crosses: no host
            // descriptor but these three.
            io.terminal = Some(crate::running::attach_host_terminal(&mut c, size)?);
        }
        let process_arg = format!("--process={}", process_file.display());
        let pid_arg = format!("--internal-pid-file={}", pid_file.display());
        c.args(["exec", &process_arg, &pid_arg, &shared.runsc.id]);
        let child = match c.spawn() {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_file(&process_file);
                return Err(Error::io(
                    format!("starting {}", shared.runsc.binary.display()),
                    e,
                ));
            }
        };
        let done = Arc::new(AtomicBool::new(false));
        let watcher = child.id().and_then(|pid| {
            let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
            let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()?;
            Some(tokio::spawn(end_orphan(
                fd,
                shared.runsc.clone(),
                pid_file.clone(),
                done.clone(),
            )))
        });
        let violations = self.egress.as_ref().map(|e| e.violations(None));
        Ok(Box::pin(async move {
            run_child(child, io, violations, Vec::new()).await;
            done.store(true, Ordering::SeqCst);
            if let Some(w) = watcher {
                w.abort();
            }
            let _ = std::fs::remove_file(&process_file);
            let _ = std::fs::remove_file(&pid_file);
        }))
    }

    /// Kills every process of the sandbox and deletes it, with its state
    /// and checkpoint; stops the proxies. The session's directories go when
    /// `self` is dropped.
    pub(crate) async fn destroy(self, settings: &Settings, session_id: &str) {
        let shared = &self.shared;
        {
            let _step = shared.step.lock().await;
            let log = shared.log();
            if !shared.is_suspended() {
                let _ = shared
                    .runsc
                    .step("kill", &["kill", "--all", &shared.runsc.id, "KILL"], &log)
                    .await;
            }
            match shared
                .runsc
                .step("delete", &["delete", "--force", &shared.runsc.id], &log)
                .await
            {
                Ok(()) => shared.deleted.store(true, Ordering::SeqCst),
                // Tried again when the session is dropped.
                Err(e) => (settings.log)(&format!("session {session_id}: {e}")),
            }
        }
        log_repos_made_inside(settings, session_id, &self.writable, &self.repos_at_launch);
        if let Some(e) = &self.egress {
            e.shutdown().await;
        }
    }
}

/// A session dropped without `destroy` (the host dropped its manager, or
/// panicked): its sandbox, started detached, would run on with no owner,
/// so it is killed and deleted here, blocking (runsc's own steps, bounded
/// by nothing but runsc), before the session's directory goes with it.
impl Drop for Shared {
    fn drop(&mut self) {
        if self.deleted.load(Ordering::SeqCst) {
            return;
        }
        let id = self.runsc.id.as_str();
        let mut steps: Vec<Vec<&str>> = vec![vec!["delete", "--force", id]];
        if !self.is_suspended() {
            steps.insert(0, vec!["kill", "--all", id, "KILL"]);
        }
        for step in steps {
            let _ = std::process::Command::new(&self.runsc.binary)
                .args(self.runsc.global_args())
                .args(step)
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .current_dir("/")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

impl Shared {
    /// Checkpoints the sandbox into the session's directory; the sandbox
    /// and its memory are gone from the host afterwards.
    pub(crate) async fn suspend(&self, session_id: &str) -> Result<(), Error> {
        if self.runsc.rootless {
            // Refused before the checkpoint, which would end the sandbox
            // for a restore that cannot happen.
            return Err(ErrorKind::NotSupported {
                what: "suspend without root under gVisor (this runsc cannot restore a rootless \
                       sandbox, so the session could never be resumed)",
            }
            .into());
        }
        let _step = self.step.lock().await;
        if self.is_suspended() {
            return Err(ErrorKind::Suspended {
                session_id: session_id.to_owned(),
            }
            .into());
        }
        let image = self.image();
        let _ = std::fs::remove_dir_all(&image);
        std::fs::create_dir(&image)
            .map_err(|e| Error::io(format!("creating {}", image.display()), e))?;
        let image_arg = format!("--image-path={}", image.display());
        self.runsc
            .step(
                "checkpoint",
                &["checkpoint", &image_arg, &self.runsc.id],
                &self.log(),
            )
            .await?;
        // The container's record goes; restore makes it again. runsc may
        // return from the checkpoint before the container's state says
        // stopped (a plain delete then failed, once in CI): the checkpoint
        // is written, so the delete is forced.
        self.runsc
            .step(
                "delete",
                &["delete", "--force", &self.runsc.id],
                &self.log(),
            )
            .await?;
        self.suspended.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Restores the checkpointed sandbox; its processes go on where they
    /// were. The image is removed once restored.
    pub(crate) async fn resume(&self, session_id: &str) -> Result<(), Error> {
        let _step = self.step.lock().await;
        if !self.is_suspended() {
            return Err(ErrorKind::NotSuspended {
                session_id: session_id.to_owned(),
            }
            .into());
        }
        let image = self.image();
        let image_arg = format!("--image-path={}", image.display());
        let bundle = self.bundle();
        let bundle = bundle.to_string_lossy();
        self.runsc
            .step(
                "restore",
                &[
                    "restore",
                    "--detach",
                    &image_arg,
                    "--bundle",
                    &bundle,
                    &self.runsc.id,
                ],
                &self.log(),
            )
            .await?;
        self.suspended.store(false, Ordering::SeqCst);
        let _ = std::fs::remove_dir_all(&image);
        Ok(())
    }

    /// The checkpoint's size on disk while suspended, in bytes.
    pub(crate) fn checkpoint_bytes(&self) -> u64 {
        std::fs::read_dir(self.image())
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }
}

/// Writes a file only this user may read (the process file holds the
/// command's environment).
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
    f.write_all(bytes)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Waits for a command's `runsc exec` to end (its pidfd readable, on a
/// blocking thread); if the command's task has not finished
/// [`ORPHAN_GRACE`] later (`done`), the process inside is still running:
/// the host's kill, a timeout or destroy ended `runsc exec` alone. It is
/// killed in the sandbox, which ends its output.
async fn end_orphan(
    pidfd: rustix::fd::OwnedFd,
    runsc: Runsc,
    pid_file: PathBuf,
    done: Arc<AtomicBool>,
) {
    let ended = tokio::task::spawn_blocking(move || {
        use rustix::fd::AsFd;
        use rustix::process::{WaitId, WaitIdOptions, waitid};
        // Waits without reaping (tokio reaps); a child tokio already
        // reaped answers ECHILD: ended all the same.
        let opts = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
        loop {
            match waitid(WaitId::PidFd(pidfd.as_fd()), opts) {
                Ok(_) | Err(rustix::io::Errno::CHILD) => return true,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return false,
            }
        }
    })
    .await;
    if !matches!(ended, Ok(true)) {
        return;
    }
    tokio::time::sleep(ORPHAN_GRACE).await;
    if done.load(Ordering::SeqCst) {
        return;
    }
    let Ok(pid) = std::fs::read_to_string(&pid_file) else {
        return;
    };
    let pid = pid.trim();
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return;
    };
    // The command and everything it started that still descends from it
    // (a shell's `sleep` holds the output as long as the shell would).
    let mut ps = runsc.command();
    ps.args(["ps", &runsc.id])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let table = match tokio::time::timeout(runsc::STEP_LIMIT, ps.output()).await {
        Ok(Ok(out)) => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => String::new(),
    };
    for victim in descendants(&table, pid) {
        let pid_arg = format!("--pid={victim}");
        let mut c = runsc.command();
        c.args(["kill", &pid_arg, &runsc.id, "KILL"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Ok(mut child) = c.spawn() {
            let _ = tokio::time::timeout(runsc::STEP_LIMIT, child.wait()).await;
        }
    }
}

/// `root` and every process below it in `runsc ps`'s table (columns UID,
/// PID, PPID, ...), `root` first.
fn descendants(table: &str, root: u32) -> Vec<u32> {
    let pairs: Vec<(u32, u32)> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace().skip(1);
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while let Some(&p) = out.get(i) {
        for (child, parent) in &pairs {
            if *parent == p && !out.contains(child) && out.len() < 4096 {
                out.push(*child);
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::descendants;

    #[test]
    fn a_command_and_what_it_started_but_not_the_rest() {
        let table = "UID PID PPID C TTY STIME TIME CMD\n\
                     0 1 0 0 ? 09:05 0s sh\n\
                     0 7 1 0 ? 09:05 0s socat\n\
                     0 30 0 0 ? 09:16 0s sh\n\
                     0 31 30 0 ? 09:16 0s sleep\n\
                     0 32 31 0 ? 09:16 0s sleep\n";
        assert_eq!(descendants(table, 30), [30, 31, 32]);
        assert_eq!(descendants(table, 99), [99]);
    }
}
