//! [`ManagerBuilder`]: the probe, the host view and every setting of a
//! [`SandboxManager`], decided once at [`ManagerBuilder::build`].

#[cfg(target_os = "linux")]
use crate::backend::bubblewrap;
use crate::backend::{Backend, seatbelt};
use crate::decide::{self, BackendChoice};
use crate::manager::SandboxManager;
use crate::settings::{EgressSettings, ExtraReads, Settings};
pub use crate::settings::{LogSink, SharedHostView, log_to_stderr};
use crate::{BrokerSettings, Cgroups, Error, ErrorKind, InnerBridge};
use bwrap_spec::{FilenameRules, NameGuardLauncher};
use connect_proxy::{Baseline, IpPolicy, Resolver};
use sandbox_core::{
    AmbientHost, BackendRequest, MicrovmRuntimeKind, NativeMechanism, ProbeReport, SandboxSwitch,
    Surface, select_backend,
};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the name-guard launcher comes from.
#[derive(Clone, Debug)]
enum LauncherSource {
    /// A launcher the host program gave.
    Given(NameGuardLauncher),
    /// The host program itself, with [`crate::NAME_GUARD_MARKER`].
    CurrentExe,
}

/// Builds a [`SandboxManager`]. [`ManagerBuilder::new`] takes the probe
/// result and the host view explicitly; [`ManagerBuilder::from_ambient`] is
/// the one constructor that reads the machine it runs on.
pub struct ManagerBuilder {
    probe: ProbeReport,
    host: SharedHostView,
    switch: SandboxSwitch,
    request: BackendRequest,
    surface: Surface,
    home: Option<PathBuf>,
    filename_rules: Option<FilenameRules>,
    name_guard: Option<LauncherSource>,
    mechanism: Option<NativeMechanism>,
    ip_policy: IpPolicy,
    extra_allow: Vec<String>,
    deny: Vec<String>,
    baseline: Baseline,
    reads: ExtraReads,
    resolver: Option<Arc<dyn Resolver>>,
    base_env: Vec<(OsString, OsString)>,
    temp_dir: Option<PathBuf>,
    tool_dirs: Vec<String>,
    log: Option<LogSink>,
    audit: Option<crate::audit::AuditSink>,
    inner_bridge: InnerBridge,
    isolation: crate::CommandIsolation,
    seatbelt_log_program: PathBuf,
    unix_sockets: Vec<crate::unix_sockets::Requested>,
    broker: Option<BrokerSettings>,
    cgroups: Cgroups,
    microvm_runtime: Option<RuntimeAsk>,
    hardware_vm: VmRequirement,
}

/// The microvm runtime a host program asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RuntimeAsk {
    /// Exactly this kind.
    Kind(MicrovmRuntimeKind),
    /// QEMU, on KVM or emulated as its canary finds.
    Qemu,
}

impl RuntimeAsk {
    #[cfg(target_os = "linux")]
    fn is_qemu(self) -> bool {
        matches!(
            self,
            RuntimeAsk::Qemu
                | RuntimeAsk::Kind(MicrovmRuntimeKind::QemuKvm | MicrovmRuntimeKind::QemuTcg)
        )
    }

    fn allows(self, found: Option<MicrovmRuntimeKind>) -> bool {
        match self {
            RuntimeAsk::Kind(k) => found == Some(k),
            RuntimeAsk::Qemu => matches!(
                found,
                Some(MicrovmRuntimeKind::QemuKvm | MicrovmRuntimeKind::QemuTcg)
            ),
        }
    }

    fn name(self) -> &'static str {
        match self {
            RuntimeAsk::Kind(k) => k.as_str(),
            RuntimeAsk::Qemu => "qemu",
        }
    }
}

/// Whether a `microvm` session may run on any kernel-boundary runtime or
/// only on a hardware VM ([`ManagerBuilder::require_hardware_vm`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum VmRequirement {
    /// Any kernel boundary: gVisor counts (the default).
    #[default]
    AnyKernelBoundary,
    /// Only a hardware VM: gVisor and emulation do not count.
    HardwareVm,
}

impl std::fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("switch", &self.switch)
            .finish_non_exhaustive()
    }
}

impl ManagerBuilder {
    /// A builder for a host described by `probe` (from `ProbeReport::probe`
    /// or `sandbox_core::probe_ambient`) whose paths are resolved through
    /// `host` at each launch. A native backend also needs
    /// [`ManagerBuilder::temp_dir`].
    pub fn new(probe: ProbeReport, host: SharedHostView) -> ManagerBuilder {
        ManagerBuilder {
            probe,
            host,
            switch: SandboxSwitch::On,
            request: BackendRequest::Unspecified,
            surface: Surface::Dispatch,
            home: None,
            filename_rules: None,
            name_guard: None,
            mechanism: None,
            ip_policy: IpPolicy::new(),
            extra_allow: Vec::new(),
            deny: Vec::new(),
            baseline: Baseline::Include,
            reads: ExtraReads::default(),
            resolver: None,
            base_env: Vec::new(),
            temp_dir: None,
            tool_dirs: sandbox_core::defaults::TOOL_OWNED_DIRS
                .iter()
                .map(|c| c.entry.to_string())
                .collect(),
            log: None,
            audit: None,
            inner_bridge: InnerBridge::HostSideListeners,
            isolation: crate::CommandIsolation::SessionSandbox,
            seatbelt_log_program: crate::backend::seatbelt_log::default_program(),
            unix_sockets: Vec::new(),
            broker: None,
            cgroups: Cgroups::none(),
            microvm_runtime: None,
            hardware_vm: VmRequirement::AnyKernelBoundary,
        }
    }

    /// A builder for the machine this process runs on: the cached ambient
    /// probe, the real file system as the host view, the system temp dir
    /// for session directories and this process's cgroups for limits. The
    /// only place the manager reads the ambient host; the environment is
    /// still passed in ([`ManagerBuilder::base_env`]).
    pub fn from_ambient() -> ManagerBuilder {
        let mut b = ManagerBuilder::new(
            sandbox_core::probe_ambient().clone(),
            Arc::new(AmbientHost::from_ambient_untimed()),
        );
        b.temp_dir(std::env::temp_dir())
            .cgroups(Cgroups::from_ambient());
        b
    }

    /// The names of the directories package managers own, below which the
    /// filename globs (`.env`, `*.key`, `*.pem`) do not hold, so that a
    /// virtualenv's or `node_modules`' own `cacert.pem` can be installed;
    /// the path rules (the mandatory write-deny set, protected paths) still
    /// hold there, and a rename into or out of one fails with `EXDEV`, so
    /// such a file leaves only by a copy made under the rules. Replaces the
    /// default, [`sandbox_core::defaults::TOOL_OWNED_DIRS`]
    /// (`site-packages`, `dist-packages`, `node_modules`); an empty list
    /// makes the globs hold everywhere. Each is one directory name (a bad
    /// one is refused at the first launch).
    pub fn tool_owned_dirs<I, S>(&mut self, names: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tool_dirs = names.into_iter().map(Into::into).collect();
        self
    }

    /// The `--sandbox` switch (default on).
    pub fn switch(&mut self, switch: SandboxSwitch) -> &mut Self {
        self.switch = switch;
        self
    }
    /// The backend request (default unspecified) and the surface (default
    /// dispatch).
    pub fn request(&mut self, request: BackendRequest, surface: Surface) -> &mut Self {
        self.request = request;
        self.surface = surface;
        self
    }
    /// The run's home directory (required): secrets are denied under it and
    /// inside the sandbox it is a private, empty directory unless mounted.
    pub fn home(&mut self, home: impl Into<PathBuf>) -> &mut Self {
        self.home = Some(home.into());
        self
    }
    /// How filename-glob denies are handled on Linux. Unset (the default),
    /// the name guard enforces them when a launcher was set with
    /// [`ManagerBuilder::name_guard_launcher`] and the probe found a kernel
    /// that can run it; otherwise a launch that needs them is refused
    /// (R-DISPATCH-3). [`FilenameRules::EnforcedByNameGuard`] set explicitly
    /// makes `build` fail when the guard cannot run;
    /// [`FilenameRules::DropFilenameGlobDenies`] is the logged opt-out.
    pub fn filename_rules(&mut self, rules: FilenameRules) -> &mut Self {
        self.filename_rules = Some(rules);
        self
    }
    /// The name-guard launcher (R-NAMEGUARD-1): a host executable that is
    /// bound read-only into each sandbox and runs the command under
    /// creation-time filename rules, reporting each refusal as a
    /// `file-write-create` violation. Either the `name-guard-exec` binary
    /// ([`NameGuardLauncher::new`]) or the host program itself when it
    /// calls `name_guard::launcher_main` for a marker argument
    /// ([`NameGuardLauncher::multi_call`]).
    pub fn name_guard_launcher(&mut self, launcher: NameGuardLauncher) -> &mut Self {
        self.name_guard = Some(LauncherSource::Given(launcher));
        self
    }
    /// Makes the host program itself the program of every inner role (the
    /// name guard, a warm session's init, a microvm's agent): this
    /// executable (`std::env::current_exe`, found at build) is bound
    /// read-only into each sandbox and started there with
    /// [`crate::NAME_GUARD_MARKER`] first. The program must call
    /// [`crate::run_inner_role_if_launched`] as the first statement of
    /// `main`, before any thread exists (build the async runtime after it),
    /// as the crate's example does.
    pub fn inner_roles_from_current_exe(&mut self) -> &mut Self {
        self.name_guard = Some(LauncherSource::CurrentExe);
        self
    }
    /// The former name of [`ManagerBuilder::inner_roles_from_current_exe`].
    #[deprecated(since = "0.1.0", note = "renamed inner_roles_from_current_exe")]
    pub fn name_guard_from_current_exe(&mut self) -> &mut Self {
        self.inner_roles_from_current_exe()
    }
    /// Asks for one native mechanism (default: the probe's choice,
    /// bubblewrap where it works, else Landlock). An explicit choice that
    /// cannot run here makes [`ManagerBuilder::build`] fail with
    /// [`ErrorKind::MechanismUnavailable`], never another mechanism.
    /// [`NativeMechanism::Landlock`] also runs where bubblewrap works (to
    /// test it, or to have no namespaces): it needs a kernel with Landlock
    /// ABI 6 ([`sandbox_core::HostView::try_landlock`]), the name guard's kernel and a
    /// launcher ([`ManagerBuilder::name_guard_launcher`]).
    pub fn native_mechanism(&mut self, mechanism: NativeMechanism) -> &mut Self {
        self.mechanism = Some(mechanism);
        self
    }
    /// Address rules for the proxies; grant local origins with
    /// `IpPolicy::allow_cidr`.
    pub fn ip_policy(&mut self, policy: IpPolicy) -> &mut Self {
        self.ip_policy = policy;
        self
    }
    /// Allowlist entries added to every session's list.
    pub fn allow(&mut self, entry: impl Into<String>) -> &mut Self {
        self.extra_allow.push(entry.into());
        self
    }
    /// Deny entries added to every session's list.
    pub fn deny(&mut self, entry: impl Into<String>) -> &mut Self {
        self.deny.push(entry.into());
        self
    }
    /// Whether every session's allowlist starts from the baseline sets (LLM
    /// providers, git hosting, package registries, GitHub; the default) or
    /// holds only the spec's and [`ManagerBuilder::allow`]'s entries
    /// ([`Baseline::Exclude`], for a policy that must list every host).
    pub fn baseline(&mut self, baseline: Baseline) -> &mut Self {
        self.baseline = baseline;
        self
    }
    /// Hides `path` (`~` allowed) from reading, besides the curated secret
    /// set: a directory becomes empty, a file reads as empty. Under
    /// bubblewrap only paths the sandbox shows need it; Seatbelt denies
    /// the reads in its profile (its terminal profile refuses extra denies
    /// at launch). On Linux `path` may be a glob (`/w/certs/*.pem`: `*` and
    /// `?` within one name, ASCII case ignored): the matches that exist at
    /// each launch are hidden, and wherever something is writable the name
    /// guard refuses creating a new match (dropped, and logged, with the
    /// filename rules' opt-out), so no match can be read; a glob whose
    /// matches cannot all be listed refuses the launch.
    pub fn read_deny(&mut self, path: impl Into<String>) -> &mut Self {
        self.reads.deny.push(path.into());
        self
    }
    /// Makes `path`, inside one of the [`ManagerBuilder::read_deny`] paths,
    /// readable again (read-only): a denied directory with some of its
    /// contents allowed back. A path reaching into the curated secret set
    /// is refused at launch.
    /// Widens what a [`ManagerBuilder::read_deny`] hides, nothing else.
    pub fn allow_read_within_denies(&mut self, path: impl Into<String>) -> &mut Self {
        self.reads.again.push(path.into());
        self
    }
    /// The proxies' resolver (default: the host's, with a timeout).
    pub fn resolver(&mut self, resolver: Arc<dyn Resolver>) -> &mut Self {
        self.resolver = Some(resolver);
        self
    }
    /// The environment sanitised for each command (pass the host program's
    /// own, e.g. `std::env::vars_os().collect()`, explicitly). Without a
    /// `PATH` in it, the commands get [`DEFAULT_PATH`](crate::DEFAULT_PATH),
    /// never none.
    pub fn base_env(&mut self, env: Vec<(OsString, OsString)>) -> &mut Self {
        self.base_env = env;
        self
    }
    /// Where session directories (sockets, CA bundle, temp dir) are
    /// created. Required for a native backend;
    /// [`ManagerBuilder::from_ambient`] sets the system temp dir. On Linux,
    /// `build` removes the session directories there that a host process
    /// killed before its teardown left behind (its own uid's, whose owner,
    /// by pid and start time, no longer runs), and logs them.
    pub fn temp_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.temp_dir = Some(dir.into());
        self
    }
    /// Brokers chosen hosts through the credential broker (R-BROKER): every
    /// session gets its own CA, lease and phantom token; the lease is
    /// revoked at `destroy`.
    pub fn broker(&mut self, settings: BrokerSettings) -> &mut Self {
        self.broker = Some(settings);
        self
    }
    /// How the proxies are reached inside (default
    /// [`InnerBridge::HostSideListeners`]).
    pub fn inner_bridge(&mut self, bridge: InnerBridge) -> &mut Self {
        self.inner_bridge = bridge;
        self
    }

    /// How native sessions run their commands (default
    /// [`crate::CommandIsolation::SessionSandbox`]: one sandbox per session);
    /// [`crate::CommandIsolation::FreshSandboxPerCommand`] builds a new one
    /// for every command.
    pub fn command_isolation(&mut self, isolation: crate::CommandIsolation) -> &mut Self {
        self.isolation = isolation;
        self
    }

    /// The program a Seatbelt session streams its denials from (macOS's
    /// `log`, `/usr/bin/log` by default):
    /// run as `PROGRAM stream --style ndjson --predicate ...` for the life
    /// of each session. If it cannot start or ends early, a log line says
    /// so and the session's denials go unreported; the launch goes on.
    pub fn seatbelt_log_program(&mut self, program: impl Into<PathBuf>) -> &mut Self {
        self.seatbelt_log_program = program.into();
        self
    }

    /// Lets every session connect to the Unix socket at `path` (absolute,
    /// on the host): under bubblewrap that socket alone is bound into the
    /// sandbox at its path and the name guard allows it; under Seatbelt the
    /// profile allows connecting to exactly that path. `SSH_AUTH_SOCK`
    /// passes into the sandbox when it names a granted socket. A socket
    /// that gives control of the host ([`crate::ROOT_EQUIVALENT_SOCKETS`],
    /// by path or through a link) is refused at build: see
    /// [`ManagerBuilder::allow_root_equivalent_unix_socket`].
    pub fn allow_unix_socket(&mut self, path: impl Into<String>) -> &mut Self {
        self.unix_sockets.push(crate::unix_sockets::Requested {
            path: path.into(),
            root_equivalent_allowed: false,
        });
        self
    }

    /// Like [`ManagerBuilder::allow_unix_socket`], for a socket that gives
    /// control of the host (a container engine's, the system bus): every
    /// session may then act as root on the host through it. Logged as a
    /// warning at build.
    pub fn allow_root_equivalent_unix_socket(&mut self, path: impl Into<String>) -> &mut Self {
        self.unix_sockets.push(crate::unix_sockets::Requested {
            path: path.into(),
            root_equivalent_allowed: true,
        });
        self
    }

    /// Where commands' cgroups are made for their limits (default none: a
    /// command with a limit is refused).
    pub fn cgroups(&mut self, cgroups: Cgroups) -> &mut Self {
        self.cgroups = cgroups;
        self
    }
    /// Asks for one microvm runtime by kind (default: the probe's). One the
    /// probe did not find working makes [`ManagerBuilder::build`] fail with
    /// [`ErrorKind::MicrovmRuntimeUnavailable`], never another runtime.
    ///
    /// Asking for [`MicrovmRuntimeKind::QemuKvm`] or
    /// [`MicrovmRuntimeKind::QemuTcg`] probes QEMU as
    /// [`ManagerBuilder::microvm_runtime_qemu`] does, and then takes only
    /// that accelerator.
    pub fn microvm_runtime(&mut self, kind: MicrovmRuntimeKind) -> &mut Self {
        self.microvm_runtime = Some(RuntimeAsk::Kind(kind));
        self
    }
    /// Asks for the VM runtime: QEMU's `microvm` machine booting a kernel
    /// installed on the host, on KVM where its canary guest boots, else
    /// emulated (TCG: a kernel boundary, slow, never a hardware VM). At
    /// [`ManagerBuilder::build`] a canary guest is booted once per process
    /// (about 2 s emulated, cached): this reads the ambient machine
    /// (`qemu-system-x86_64`, a kernel in `/boot`, `/dev/kvm`, bubblewrap and
    /// `virtiofsd`). It needs the name-guard launcher
    /// ([`ManagerBuilder::name_guard_launcher`] or
    /// [`ManagerBuilder::inner_roles_from_current_exe`]): that program is the
    /// guest's agent. Where no guest runs, `build` fails with
    /// [`ErrorKind::MicrovmRuntimeUnavailable`] and the probe's reason.
    pub fn microvm_runtime_qemu(&mut self) -> &mut Self {
        self.microvm_runtime = Some(RuntimeAsk::Qemu);
        self
    }
    /// Requires a hardware VM for this manager's sessions: a `microvm` on
    /// gVisor (a user-space kernel) or emulation, or any backend that is
    /// not `microvm`, makes [`ManagerBuilder::build`] fail with
    /// [`ErrorKind::HardwareVmRequired`].
    pub fn require_hardware_vm(&mut self, requirement: VmRequirement) -> &mut Self {
        self.hardware_vm = requirement;
        self
    }
    /// Where log lines go (default: stderr, [`log_to_stderr`]).
    pub fn log(&mut self, sink: LogSink) -> &mut Self {
        self.log = Some(sink);
        self
    }
    /// Writes an audit trail to `sink`: one OCSF record (JSON, one line)
    /// per session launched or destroyed, command started or ended, and
    /// refusal (see [`audit`](crate::audit) for the classes;
    /// [`audit_to_file`](crate::audit::audit_to_file) appends them to a
    /// file). Default: none.
    pub fn audit(&mut self, sink: crate::audit::AuditSink) -> &mut Self {
        self.audit = Some(sink);
        self
    }

    /// Selects the backend and builds the manager. Logs the probe's start-up
    /// line and any downgrade.
    #[tracing::instrument(name = "agent_sandbox.build", skip_all, err(Display))]
    pub fn build(&mut self) -> Result<SandboxManager, Error> {
        let asked = self.asked_mechanism()?;
        let probe = asked.as_ref().unwrap_or(&self.probe);
        let log = crate::settings::traced(self.log.clone().unwrap_or_else(log_to_stderr));
        let name_guard = self.launcher()?;
        // The VM runtime, when asked for: its probe boots a canary, and its
        // verdict is the report's microvm section.
        #[cfg(target_os = "linux")]
        let qemu = self.probe_qemu(name_guard.as_ref())?;
        // The VM runtime's probe line: what it booted, on what, and why not
        // on KVM (R-MICROVM-1).
        #[cfg(target_os = "linux")]
        if let Some(line) = qemu
            .as_ref()
            .and_then(|q| q.microvm.note.clone().or_else(|| q.microvm.reason.clone()))
        {
            log(&line);
        }
        #[cfg(target_os = "linux")]
        let with_qemu = qemu.as_ref().map(|q| {
            let mut p = probe.clone();
            p.microvm = q.microvm.clone();
            p
        });
        #[cfg(target_os = "linux")]
        let probe = with_qemu.as_ref().unwrap_or(probe);
        let native_line = probe.startup_line(self.switch);
        let selection = match select_backend(self.request, self.switch, self.surface, probe) {
            Ok(s) => s,
            Err(e) => {
                log(&native_line);
                return Err(e.into());
            }
        };
        // The one start-up line names the session's backend: a microvm
        // manager's is its runtime's label, and the native probe's line
        // follows as what it is, never as the session's.
        let startup = match selection.backend {
            sandbox_core::SandboxBackend::Microvm if self.switch == SandboxSwitch::On => {
                format!("{}: {}", sandbox_core::probe::LINE_ON, selection.label)
            }
            _ => native_line.clone(),
        };
        log(&startup);
        if startup != native_line {
            log(&format!(
                "native mechanism probed (not this manager's sessions): {}",
                native_line
                    .strip_prefix(sandbox_core::probe::LINE_ON)
                    .map(|l| l.trim_start_matches(": "))
                    .unwrap_or(&native_line)
            ));
        }
        if let Some(dir) = &self.temp_dir {
            let removed = crate::session_dir::remove_left_behind_in(dir);
            if !removed.is_empty() {
                let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
                log(&format!(
                    "removed {} session directories left by host processes that are gone: {}",
                    removed.len(),
                    names.join(" ")
                ));
            }
        }
        if let Some(line) = decide::selection_line(&startup, self.surface, &selection) {
            log(&line);
        }
        let home = self.home.clone().ok_or_else(|| {
            Error::from(ErrorKind::MissingSetting {
                setting: "home",
                why: "every backend anchors the secret set and the write denies at the run's \
                      home directory; set it with ManagerBuilder::home (from_ambient does not \
                      read HOME)",
            })
        })?;
        self.check_microvm(&selection, probe)?;
        let choice = decide::backend_choice(&selection, probe, cfg!(target_os = "linux"))?;
        if self.broker.is_some() && matches!(choice, BackendChoice::None) {
            return Err(ErrorKind::BrokerNeedsSandbox {
                backend: selection.backend,
                why: selection
                    .log_line
                    .clone()
                    .unwrap_or_else(|| selection.label.to_owned()),
            }
            .into());
        }
        let decision = decide::filename_rules(
            self.filename_rules,
            matches!(
                choice,
                BackendChoice::Bubblewrap { .. } | BackendChoice::Landlock
            ),
            name_guard.is_some(),
            &probe.native.filename_rules,
        )?;
        if let Some(line) = &decision.log_line {
            log(line);
        }
        let temp_dir = || {
            self.temp_dir.clone().ok_or_else(|| {
                Error::from(ErrorKind::MissingSetting {
                    setting: "temp_dir",
                    why: "a native session needs a directory for its sockets and CA bundle",
                })
            })
        };
        let (unix_sockets, warnings) = crate::unix_sockets::check(&self.unix_sockets, &*self.host)?;
        for w in &warnings {
            log(&format!("agent-sandbox: {w}"));
        }
        let backend = match choice {
            BackendChoice::None => Backend::None,
            BackendChoice::Unavailable(reason) => Backend::Unavailable(reason),
            #[cfg(target_os = "linux")]
            BackendChoice::Gvisor { runsc, version } => {
                let Some(agent) = name_guard.clone() else {
                    return Err(ErrorKind::MicrovmRuntimeUnavailable {
                        runtime: "gvisor",
                        reason: "the sandbox's agent is the name-guard launcher: call \
                                 ManagerBuilder::inner_roles_from_current_exe (and \
                                 agent_sandbox::run_inner_role_if_launched first in main) or \
                                 ManagerBuilder::name_guard_launcher"
                            .into(),
                    }
                    .into());
                };
                let filename_rules = match self.filename_rules {
                    Some(FilenameRules::DropFilenameGlobDenies) => {
                        log(
                            "filename-glob write denies (.env, *.key, *.pem) are DROPPED under gVisor (opt-out --no-filename-rules): nothing inside it can refuse new names",
                        );
                        FilenameRules::DropFilenameGlobDenies
                    }
                    Some(FilenameRules::EnforcedByNameGuard) => {
                        return Err(ErrorKind::NameGuardUnavailable {
                            reason: "the name guard's seccomp filter cannot be installed inside this gVisor release".into(),
                        }
                        .into());
                    }
                    _ => FilenameRules::Refuse,
                };
                Backend::Microvm(Arc::new(crate::backend::microvm::Runtime::Gvisor(
                    crate::backend::microvm::gvisor::Config {
                        runsc,
                        version,
                        agent,
                        temp_dir: temp_dir()?,
                        filename_rules,
                    },
                )))
            }
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Gvisor { .. } => {
                Backend::Unavailable("gVisor runs only on Linux".to_owned())
            }
            #[cfg(target_os = "linux")]
            BackendChoice::Qemu => {
                // The guest's agent is the launcher, so the guard is always
                // there to run around the guest's file server.
                let filename_rules = match self.filename_rules {
                    Some(FilenameRules::DropFilenameGlobDenies) => {
                        log(
                            "filename-glob write denies (.env, *.key, *.pem) are DROPPED for the QEMU guest (opt-out --no-filename-rules)",
                        );
                        FilenameRules::DropFilenameGlobDenies
                    }
                    Some(FilenameRules::Refuse) => FilenameRules::Refuse,
                    _ => {
                        log(
                            "filename-glob write denies (.env, *.key, *.pem) enforced at creation by name-guard around the guest's file server, on the host",
                        );
                        FilenameRules::EnforcedByNameGuard
                    }
                };
                let config = match &qemu {
                    Some(q) => q.config(temp_dir()?, filename_rules),
                    None => Err("the VM runtime was not probed".to_owned()),
                }
                .map_err(|reason| ErrorKind::MicrovmRuntimeUnavailable {
                    runtime: "qemu",
                    reason,
                })?;
                Backend::Microvm(Arc::new(crate::backend::microvm::Runtime::Qemu(Box::new(
                    config,
                ))))
            }
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Qemu => Backend::Unavailable("QEMU guests run only on Linux".to_owned()),
            BackendChoice::Seatbelt => Backend::Seatbelt(seatbelt::Config {
                temp_dir: temp_dir()?,
                log_program: self.seatbelt_log_program.clone(),
            }),
            #[cfg(target_os = "linux")]
            BackendChoice::Bubblewrap { bwrap, socat } => {
                // Asked for explicitly, the bridges are not a fallback:
                // without socat they cannot be honoured.
                if self.inner_bridge == crate::InnerBridge::Socat && socat.is_none() {
                    return Err(bubblewrap::socat_missing());
                }
                Backend::Bubblewrap(Arc::new(bubblewrap::Config {
                    bwrap,
                    socat,
                    temp_dir: temp_dir()?,
                    filename_rules: decision.rules,
                    // Only where it can run: a launcher the kernel cannot
                    // run would fail every launch.
                    name_guard: name_guard.clone().filter(|_| decision.guard_runs),
                    launcher_set: match name_guard {
                        Some(_) => bubblewrap::LauncherSet::Yes,
                        None => bubblewrap::LauncherSet::No,
                    },
                    inner_bridge: self.inner_bridge,
                }))
            }
            #[cfg(target_os = "linux")]
            BackendChoice::Landlock => {
                let Some(launcher) = name_guard.clone().filter(|_| decision.guard_runs) else {
                    return Err(ErrorKind::MechanismUnavailable {
                        mechanism: NativeMechanism::Landlock.as_str(),
                        reason: "it runs every command under the name guard: call \
                                 ManagerBuilder::inner_roles_from_current_exe (and \
                                 agent_sandbox::run_inner_role_if_launched first in main) or \
                                 ManagerBuilder::name_guard_launcher, on a kernel that runs it"
                            .into(),
                    }
                    .into());
                };
                Backend::Landlock(crate::backend::landlock::Config {
                    temp_dir: temp_dir()?,
                    filename_rules: decision.rules,
                    launcher,
                })
            }
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Landlock => {
                Backend::Unavailable("Landlock runs only on Linux".to_owned())
            }
            // `backend_choice` picks bubblewrap only on Linux.
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Bubblewrap { .. } => {
                Backend::Unavailable("bubblewrap runs only on Linux".to_owned())
            }
        };
        let settings = Settings {
            surface: self.surface,
            isolation: self.isolation,
            home,
            base_env: self.base_env.clone(),
            host: self.host.clone(),
            log,
            audit: self.audit.clone(),
            egress: EgressSettings {
                ip_policy: self.ip_policy.clone(),
                extra_allow: self.extra_allow.clone(),
                deny: self.deny.clone(),
                baseline: self.baseline,
                resolver: self.resolver.clone(),
                broker: self.broker.clone(),
                audit: self
                    .audit
                    .clone()
                    .map(|sink| (sink, selection.label.to_owned())),
            },
            cgroups: self.cgroups.clone(),
            unix_sockets,
            reads: self.reads.clone(),
            startup_line: startup,
            temp_dir: self.temp_dir.clone(),
            tool_dirs: self.tool_dirs.clone(),
            #[cfg(target_os = "linux")]
            repo_records: crate::repo_records::RepoRecords::default(),
        };
        Ok(SandboxManager::new(selection, settings, backend))
    }

    /// The launcher asked for, with the current executable found.
    fn launcher(&self) -> Result<Option<NameGuardLauncher>, Error> {
        Ok(match &self.name_guard {
            None => None,
            Some(LauncherSource::Given(l)) => Some(l.clone()),
            Some(LauncherSource::CurrentExe) => {
                let exe = std::env::current_exe().map_err(|e| {
                    Error::io(
                        "finding this program for ManagerBuilder::inner_roles_from_current_exe",
                        e,
                    )
                })?;
                Some(NameGuardLauncher::multi_call(
                    exe,
                    [crate::NAME_GUARD_MARKER],
                ))
            }
        })
    }

    /// The VM runtime's probe (cached per process and launcher) when a QEMU
    /// runtime was asked for; `None` otherwise. Needs the launcher (the
    /// guest's agent) and a temp dir (the canary's files). Reads the
    /// ambient machine.
    #[cfg(target_os = "linux")]
    fn probe_qemu(
        &self,
        launcher: Option<&NameGuardLauncher>,
    ) -> Result<Option<crate::backend::microvm::qemu::runtime::Probing>, Error> {
        if !self.microvm_runtime.is_some_and(RuntimeAsk::is_qemu) {
            return Ok(None);
        }
        let Some(launcher) = launcher else {
            return Err(ErrorKind::MicrovmRuntimeUnavailable {
                runtime: "qemu",
                reason: "the guest's agent is the name-guard launcher: call \
                         ManagerBuilder::inner_roles_from_current_exe or \
                         ManagerBuilder::name_guard_launcher"
                    .into(),
            }
            .into());
        };
        let Some(temp_dir) = &self.temp_dir else {
            return Err(ErrorKind::MissingSetting {
                setting: "temp_dir",
                why: "the VM runtime's probe writes its guest image and canary there",
            }
            .into());
        };
        Ok(Some(
            crate::backend::microvm::qemu::runtime::probe_cached_ambient(
                launcher,
                temp_dir,
                self.microvm_runtime == Some(RuntimeAsk::Kind(MicrovmRuntimeKind::QemuTcg)),
            ),
        ))
    }

    /// Refuses a selection the microvm settings do not allow: a hardware VM
    /// required where the runtime is not one (or the backend is not
    /// `microvm`), a runtime asked for by kind that the probe did not find.
    fn check_microvm(
        &self,
        selection: &sandbox_core::Selection,
        probe: &ProbeReport,
    ) -> Result<(), Error> {
        let microvm = selection.backend == sandbox_core::SandboxBackend::Microvm;
        if self.hardware_vm == VmRequirement::HardwareVm
            && !(microvm && probe.microvm.is_hardware_vm())
        {
            let found = match (&probe.microvm.note, &probe.microvm.reason) {
                _ if !microvm => format!("not used: the backend is {}", selection.backend),
                (Some(note), _) => note.clone(),
                (None, Some(reason)) => reason.clone(),
                (None, None) => "unknown".to_owned(),
            };
            return Err(ErrorKind::HardwareVmRequired { found }.into());
        }
        if let Some(ask) = self.microvm_runtime
            && (!microvm || !ask.allows(probe.microvm.kind) || !probe.microvm.available)
        {
            let reason = match (&probe.microvm.note, &probe.microvm.reason) {
                _ if !microvm => format!("the backend is {}, not microvm", selection.backend),
                (Some(note), _) => format!("the probe found {note}"),
                (None, Some(reason)) => reason.clone(),
                (None, None) => "the probe found no microvm runtime".to_owned(),
            };
            return Err(ErrorKind::MicrovmRuntimeUnavailable {
                runtime: ask.name(),
                reason,
            }
            .into());
        }
        Ok(())
    }

    /// The probe as an explicit mechanism request makes it: `None` when
    /// nothing was asked or the probe already chose it; the probe with
    /// Landlock offered when Landlock was asked for and can run; an error
    /// when the mechanism asked for cannot run.
    fn asked_mechanism(&self) -> Result<Option<ProbeReport>, Error> {
        let Some(asked) = self.mechanism else {
            return Ok(None);
        };
        if self.probe.native.mechanism == Some(asked) {
            return Ok(None);
        }
        let unavailable = |reason: String| -> Error {
            ErrorKind::MechanismUnavailable {
                mechanism: asked.as_str(),
                reason,
            }
            .into()
        };
        if asked != NativeMechanism::Landlock {
            return Err(unavailable(match self.probe.native.mechanism {
                Some(m) => format!("the probe found {} here", m.as_str()),
                None => self
                    .probe
                    .native
                    .hint
                    .clone()
                    .unwrap_or_else(|| "the probe found no native sandbox".into()),
            }));
        }
        if !cfg!(target_os = "linux") {
            return Err(unavailable("Landlock is a Linux security module".into()));
        }
        if !self.probe.native.filename_rules.is_enforceable() {
            return Err(unavailable("the kernel cannot run the name guard".into()));
        }
        self.host.try_landlock().map_err(unavailable)?;
        let mut probe = self.probe.clone();
        probe.native.available = true;
        probe.native.mechanism = Some(NativeMechanism::Landlock);
        probe.native.note = Some(format!(
            "{}; asked for explicitly; {}",
            sandbox_core::NOTE_LANDLOCK,
            sandbox_core::probe::NOTE_NAME_GUARD
        ));
        probe.native.hint = None;
        probe.native.requires_install = false;
        Ok(Some(probe))
    }
}

impl SandboxManager {
    /// A builder for a host described by `probe` whose paths are resolved
    /// through `host` ([`ManagerBuilder::new`]); for the machine this
    /// process runs on, [`ManagerBuilder::from_ambient`].
    pub fn builder(probe: ProbeReport, host: SharedHostView) -> ManagerBuilder {
        ManagerBuilder::new(probe, host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated, reason = "the former name is what is checked")]
    fn the_former_name_of_the_inner_roles_setting_still_sets_it() {
        let mut b = ManagerBuilder::from_ambient();
        b.name_guard_from_current_exe();
        assert!(matches!(b.name_guard, Some(LauncherSource::CurrentExe)));
    }
}
