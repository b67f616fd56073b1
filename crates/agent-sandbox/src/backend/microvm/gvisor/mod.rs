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
//!   read-only. `runsc --network=none run --detach` starts the sandbox with
//!   our agent as its first process (the launcher program, bound
//!   read-only), speaking [`sandbox_core::vm_wire`] on its stdin and stdout
//!   as in a QEMU guest. The agent listens on 127.0.0.1:3128 and
//!   127.0.0.1:1080 inside and each connection is carried over the channel
//!   to the session's proxy: the sandbox has loopback only, so the proxies
//!   are the only way out. runsc's state, the bundle and checkpoints live in
//!   a private directory of the session's, removed at destroy. The
//!   terminal surface instead gets the terminal profile's plan, the host's
//!   network (`--network=host`, as that profile shares it) and no proxies.
//! - `exec` asks the agent to start the command (argv, the session's
//!   sanitised environment, working directory; pipes, or a terminal of
//!   gVisor's own mirrored on the host), as the sandbox's root without any
//!   capability and with no new privileges. Signals go to the command's
//!   process group inside. What a command leaves running stays for the
//!   next.
//! - Limits: each limited command runs in a cgroup of gVisor's kernel that
//!   the agent makes; the process limit is gVisor's, the memory limit is
//!   watched by the agent (every 5 ms; the command ends once past it, so it
//!   can go past it by what it allocates within one interval). gVisor's
//!   kernel does not enforce CPU quotas: the sandbox's host processes live
//!   in a host cgroup of the session's, whose quota is the command's while
//!   it runs (so whatever else runs in the sandbox shares that share:
//!   stricter, never weaker); without root, or where no CPU controller is
//!   writable, a CPU limit is refused.
//! - `destroy` ends the agent and every process, and deletes the sandbox.
//! - `suspend` waits until the agent has taken everything sent to it,
//!   checkpoints the sandbox into the session's directory (its processes
//!   and memory leave the host) and `resume` restores it with new pipes as
//!   the agent's stdio: running commands, their terminals and the streams
//!   to the proxies carry on where they were.
//!
//! gVisor's terminals send no signal for a typed interrupt, quit or suspend
//! character and tell no one outside the terminal's session which process
//! group is in the foreground: a terminal command runs below a leader of
//! the agent's (the session's leader), which sends those signals to the
//! foreground group, a job-control shell's foreground job included.
//!
//! What this release of gVisor cannot do, refused rather than weakened:
//! the name guard cannot install its filter inside it, so a launch whose
//! policy needs filename rules is refused unless they were dropped
//! explicitly. The terminal surface may connect to the host's Unix sockets
//! its profile lets through (`--host-uds=open`), said in its handle's
//! `weaker` detail.

mod launch;
mod oci;
mod runsc;

use super::agent_link::Link;
use super::agent_link::channel::{Channel, RelayTarget, Relays, Writer};
use super::agent_link::command::start_command;
use super::dispatch_plan::{DispatchPlan, dispatch_plan};
use super::layout;

use crate::backend::common::host_repos::{ReposAtLaunch, log_repos_made_inside};
use crate::egress::{Egress, Listen, plain_env};
use crate::inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT};
use crate::running::{CommandIo, run_process};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::session_dir::SessionDir;
use crate::settings::Settings;
use crate::{Error, ErrorKind};
use bwrap_spec::{BwrapBuilder, FilenameRules, NameGuardLauncher, PlaceholderFiles};
pub(crate) use launch::launch;
use launch::{channel_pipes, release_cpu};
use runsc::{Network, Runsc};
use sandbox_core::vm_wire::{FrameReader, MAX_FROM_GUEST_LEN, ToGuest, VmLimits};
use sandbox_core::{SandboxSpec, Surface};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
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
    /// The agent: the launcher program, bound read-only into the sandbox.
    pub(crate) agent: NameGuardLauncher,
    pub(crate) temp_dir: PathBuf,
    /// `Refuse` or the explicit `DropFilenameGlobDenies`: the name guard
    /// cannot run inside this gVisor.
    pub(crate) filename_rules: FilenameRules,
}

/// The terminal surface's handle detail that says what is weaker than the
/// plan.
pub(crate) const WEAKER: &str = "a Unix socket a host process makes inside a writable mount can be connected to from inside (runsc --host-uds=open carries the sockets the terminal profile lets through)";

/// Where the agent program is bound inside the sandbox.
const AGENT_DIR: &str = "/.agent-sandbox";
const AGENT_PATH: &str = "/.agent-sandbox/agent";
/// The capabilities the agent keeps in gVisor's kernel (mounting its
/// cgroups and terminals, moving a command into its cgroup, dropping the
/// bounding set for its commands); its commands get none.
const AGENT_CAPS: [&str; 5] = [
    "CAP_SYS_ADMIN",
    "CAP_SETPCAP",
    "CAP_KILL",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
];
/// How long the agent may take to take what was sent before a checkpoint.
const SYNC_WAIT: Duration = Duration::from_secs(5);

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
    /// `checkpoint/` and `runtime.log`.
    dir: SessionDir,
    ids: (u32, u32),
    suspended: AtomicBool,
    /// `destroy` deleted the sandbox; otherwise dropping the session does
    /// (a host that drops its manager, or panics, without destroying).
    deleted: AtomicBool,
    /// One lifecycle step at a time (suspend, resume, destroy).
    step: tokio::sync::Mutex<()>,
    /// The agent's channel, once it said hello.
    link: std::sync::OnceLock<Arc<Link>>,
    /// Where the host's CPU cgroups can be made (none without root).
    cgroups: crate::cgroup::Cgroups,
    /// The host cgroup holding the sandbox's processes, made at the first
    /// CPU-limited command, whose quota such a command sets while it runs;
    /// with whether the sandbox's current processes are in it (a restore
    /// makes new ones).
    cpu: std::sync::Mutex<(Option<crate::cgroup::SandboxCpu>, bool)>,
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
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended.load(Ordering::SeqCst)
    }
    /// Holds the whole sandbox to `millis` of a CPU: its host processes
    /// (its kernel's process and the ones below it, which run the
    /// commands' code) go into a host cgroup of the session's, made on
    /// first use. Blocks on `runsc state` the first time after a launch or
    /// a restore.
    fn hold_cpu(&self, millis: u32) -> Result<(), Error> {
        let unavailable = || {
            Error::from(ErrorKind::LimitUnavailable {
                limit: "CPU",
                reason: "gVisor's kernel does not enforce CPU quotas, and the host cgroup that \
                         would hold the sandbox is not writable here (it takes root and a CPU \
                         controller)"
                    .into(),
            })
        };
        let mut held = self.cpu.lock().map_err(|_| unavailable())?;
        if held.0.is_none() {
            held.0 = crate::cgroup::SandboxCpu::create(&self.cgroups)?;
        }
        let (Some(cpu), confined) = (&held.0, held.1) else {
            return Err(unavailable());
        };
        if !confined {
            let pid = self.sandbox_pid()?;
            cpu.adopt(pid)?;
            for p in name_guard::processes_below_ambient(pid) {
                // One that exited meanwhile is no error.
                let _ = cpu.adopt(p);
            }
        }
        cpu.set(Some(millis))?;
        held.1 = true;
        Ok(())
    }

    /// Lifts the quota once the CPU-limited command ended.
    fn release_cpu(&self) {
        if let Ok(held) = self.cpu.lock()
            && let Some(cpu) = &held.0
        {
            let _ = cpu.set(None);
        }
    }

    /// The sandbox's process on the host, from `runsc state`.
    fn sandbox_pid(&self) -> Result<u32, Error> {
        let out = self
            .runsc
            .blocking_command()
            .args(["state", &self.runsc.id])
            .stdout(std::process::Stdio::piped())
            .output()
            .map_err(|e| Error::io("asking runsc for the sandbox's state", e))?;
        let state: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        state["pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .ok_or_else(|| {
                ErrorKind::Runtime {
                    step: "state",
                    said: "no pid in runsc's state".into(),
                }
                .into()
            })
    }

    fn link(&self) -> Result<&Arc<Link>, Error> {
        self.link.get().ok_or_else(|| {
            ErrorKind::GuestUnavailable {
                reason: "the gVisor sandbox's agent never answered".into(),
            }
            .into()
        })
    }
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
        // gVisor's kernel takes CPU quotas and does nothing: the host holds
        // the whole sandbox to the command's share while it runs.
        let cpu = match request.limits.cpu_millis {
            None => None,
            Some(millis) => {
                self.shared.hold_cpu(millis)?;
                Some(self.shared.clone())
            }
        };
        let limits = VmLimits {
            memory_bytes: request.limits.memory_bytes,
            max_processes: request.limits.max_processes,
            cpu_millis: None,
        };
        let link = self.shared.link()?;
        let child = match start_command(link, &request, &mut io, limits) {
            Ok(c) => c,
            Err(e) => {
                release_cpu(cpu.as_ref());
                return Err(e);
            }
        };
        let violations = self.egress.as_ref().map(|e| e.violations(None));
        Ok(Box::pin(async move {
            run_process(child, io, violations, Vec::new()).await;
            release_cpu(cpu.as_ref());
        }))
    }

    /// Ends the agent and every process of the sandbox and deletes it, with
    /// its state and checkpoint; stops the proxies. The session's
    /// directories go when `self` is dropped.
    pub(crate) async fn destroy(self, settings: &Settings, session_id: &str) {
        let shared = &self.shared;
        {
            let _step = shared.step.lock().await;
            let log = shared.log();
            if let Some(link) = shared.link.get() {
                if shared.is_suspended() {
                    link.channel.close();
                } else {
                    let _ = link.channel.send(&ToGuest::PowerOff);
                }
            }
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
            let _ = self.runsc.blocking_command().args(step).status();
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
        // Nothing sent to the agent may be left in the old pipe: it has
        // taken everything before the checkpoint, and what comes meanwhile
        // waits for the restored sandbox.
        let link = self.link()?;
        link.channel
            .pause(SYNC_WAIT)
            .await
            .map_err(|e| ErrorKind::GuestUnavailable { reason: e.0 })?;
        if let Err(e) = self
            .runsc
            .step(
                "checkpoint",
                &["checkpoint", &image_arg, &self.runsc.id],
                &self.log(),
            )
            .await
        {
            link.channel.unpause();
            return Err(e);
        }
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

    /// Restores the checkpointed sandbox with new pipes as the agent's
    /// stdio; its processes go on where they were, and the channel over
    /// the new pipes. The image is removed once restored.
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
        let link = self.link()?;
        let (theirs, (read, write)) = channel_pipes()?;
        self.runsc
            .step_with_channel(
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
                Some(theirs),
            )
            .await?;
        link.channel.resume(Box::new(read), write);
        self.suspended.store(false, Ordering::SeqCst);
        // The restored sandbox is new host processes.
        if let Ok(mut held) = self.cpu.lock() {
            held.1 = false;
        }
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
