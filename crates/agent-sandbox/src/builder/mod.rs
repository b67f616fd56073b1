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

mod build;

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
