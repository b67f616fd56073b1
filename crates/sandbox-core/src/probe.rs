//! The host probe (R-PROBE): which backends this host can offer, computed
//! once at start-up and reused.

use crate::host::{HostView, Os, find_on_path};
use crate::{SandboxBackend, SandboxSwitch};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What kind of host the probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Platform {
    /// Linux, not under WSL.
    Linux,
    /// Linux under WSL2 (a real kernel; namespaces work).
    Wsl2,
    /// Linux under WSL1 (a syscall translation layer; no namespaces).
    Wsl1,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
    /// Anything else.
    Other,
}

impl Platform {
    /// A short name for logs: `linux`, `wsl2`, `wsl1`, `macos`, `windows`, `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::Linux => "linux",
            Platform::Wsl2 => "wsl2",
            Platform::Wsl1 => "wsl1",
            Platform::MacOs => "macos",
            Platform::Windows => "windows",
            Platform::Other => "other",
        }
    }
}

/// The OS-native mechanism a host offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NativeMechanism {
    /// macOS Seatbelt through `sandbox-exec`.
    Seatbelt,
    /// bubblewrap (socat, when installed, only as the proxy bridges'
    /// fallback).
    Bubblewrap,
    /// Landlock and the name guard's seccomp supervisor, with no
    /// namespaces: for Linux hosts where bubblewrap is missing or cannot
    /// make its namespaces (see [`NOTE_LANDLOCK`] for what is weaker).
    Landlock,
}

impl NativeMechanism {
    /// A short name for logs and handle details: `seatbelt`, `bubblewrap`,
    /// `landlock`.
    pub fn as_str(self) -> &'static str {
        match self {
            NativeMechanism::Seatbelt => "seatbelt",
            NativeMechanism::Bubblewrap => "bubblewrap",
            NativeMechanism::Landlock => "landlock",
        }
    }
}

/// The note for a macOS host.
pub const NOTE_SEATBELT: &str = "sandbox-exec (Seatbelt): namespace isolation, no kernel boundary";
/// The note for a Linux or WSL2 host where bubblewrap runs.
pub const NOTE_BUBBLEWRAP: &str = "bubblewrap: namespace isolation, no kernel boundary";
/// The note for a Linux host where bubblewrap is missing or cannot run and
/// Landlock can: what it enforces, and each way it is weaker than
/// bubblewrap.
pub const NOTE_LANDLOCK: &str = "landlock: Landlock file, TCP and scope rules with the name guard's seccomp supervisor, no namespaces; weaker than bubblewrap: other processes are visible in /proc, no private /tmp, the names of secret paths can be seen (not their contents), a server the session starts listens on the host's loopback (where the host's other processes can reach it)";
/// The hint on a Linux host that runs the Landlock mechanism because
/// bubblewrap is not installed: how to get the stronger one.
pub const HINT_INSTALL_BUBBLEWRAP: &str =
    "install bubblewrap for namespace isolation: sudo apt-get install bubblewrap";
/// The lowest Landlock ABI the Landlock mechanism runs on: 4 brought TCP
/// rules, 5 device ioctls, 6 the abstract Unix socket and signal scopes
/// (Linux 6.12). An older ABI cannot keep the command from signalling a host
/// process, so it is not offered.
pub const LANDLOCK_MIN_ABI: u32 = 6;
/// The lowest Linux release whose seccomp user notification can inject a
/// descriptor and answer in one step (`SECCOMP_ADDFD_FLAG_SEND`, 5.14) and
/// keep a notified caller waiting through non-fatal signals
/// (`SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`, 5.19), which the name guard
/// needs: without the latter a signal can make a call the guard performed
/// run a second time.
pub const NAME_GUARD_MIN_KERNEL: (u32, u32) = (5, 19);
/// Appended to the bubblewrap note when the kernel can run the name guard.
pub const NOTE_NAME_GUARD: &str = "filename rules at creation by name-guard (seccomp)";
/// The hint for a platform with no native sandbox.
pub const HINT_UNSUPPORTED: &str = "native sandbox is not offered on this platform";
/// Where macOS keeps `sandbox-exec`.
pub const SANDBOX_EXEC_PATH: &str = "/usr/bin/sandbox-exec";

/// The start-up line prefix when a native sandbox is on.
pub const LINE_ON: &str = "agent sandbox ON";
/// The start-up line prefix when the host has no native sandbox.
pub const LINE_NONE: &str = "no OS-native agent sandbox on this host";
/// The start-up line when the sandbox is switched off.
pub const LINE_DISABLED: &str = "agent sandbox DISABLED by --sandbox off";

/// A tool the Linux native backend uses, with the Debian package that has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequiredTool {
    /// The executable's name on `PATH`.
    pub binary: &'static str,
    /// The package that installs it.
    pub package: &'static str,
}

/// The tools the bubblewrap mechanism needs, in the order hints name them.
pub const LINUX_REQUIRED_TOOLS: [RequiredTool; 1] = [RequiredTool {
    binary: "bwrap",
    package: "bubblewrap",
}];

/// Tools the bubblewrap mechanism uses only on a fallback path, looked up
/// and reported in [`NativeProbe::tools`] but never required: `socat`
/// bridges the proxies where their listeners cannot be bound inside the
/// sandbox's network namespace (a launch that needs it and lacks it fails
/// with the install line).
pub const LINUX_FALLBACK_TOOLS: [RequiredTool; 1] = [RequiredTool {
    binary: "socat",
    package: "socat",
}];

/// The gVisor runtime's executable, looked up on `PATH` unless a path is
/// configured ([`ProbeOptions::runsc`]).
pub const RUNSC_BINARY: &str = "runsc";
/// The install hint for the gVisor runtime.
pub const RUNSC_INSTALL_HINT: &str = "sudo apt-get install runsc";

/// What the probe looks for beyond the native sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The `runsc` executable to try (absolute), instead of the first
    /// `runsc` on `PATH`.
    pub runsc: Option<PathBuf>,
}

/// The kernel-boundary runtime behind the `microvm` backend (R-MICROVM-1).
/// Only [`MicrovmRuntimeKind::QemuKvm`] is a hardware VM; gVisor is a
/// user-space kernel and QEMU TCG an emulated machine: each a kernel
/// boundary, neither hardware virtualization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MicrovmRuntimeKind {
    /// gVisor (`runsc`): the command's system calls are served by a kernel
    /// written in Go that runs as host processes.
    Gvisor,
    /// QEMU on KVM: a hardware VM.
    QemuKvm,
    /// QEMU with emulation (TCG): a VM with a kernel of its own, slow, and
    /// not hardware virtualization.
    QemuTcg,
}

impl MicrovmRuntimeKind {
    /// The name a host program asks for it by: `gvisor`, `qemu-kvm`,
    /// `qemu-tcg`.
    pub fn as_str(self) -> &'static str {
        match self {
            MicrovmRuntimeKind::Gvisor => "gvisor",
            MicrovmRuntimeKind::QemuKvm => "qemu-kvm",
            MicrovmRuntimeKind::QemuTcg => "qemu-tcg",
        }
    }

    /// Parses [`MicrovmRuntimeKind::as_str`]'s names (exact).
    pub fn from_name(name: &str) -> Option<MicrovmRuntimeKind> {
        [
            MicrovmRuntimeKind::Gvisor,
            MicrovmRuntimeKind::QemuKvm,
            MicrovmRuntimeKind::QemuTcg,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }

    /// Whether the runtime is a VM on hardware virtualization.
    pub fn is_hardware_vm(self) -> bool {
        matches!(self, MicrovmRuntimeKind::QemuKvm)
    }

    /// What the runtime is, for notes and labels.
    pub fn describe(self) -> &'static str {
        match self {
            MicrovmRuntimeKind::Gvisor => "user-space kernel (kernel boundary, not a hardware VM)",
            MicrovmRuntimeKind::QemuKvm => "hardware VM (kernel boundary)",
            MicrovmRuntimeKind::QemuTcg => "emulated VM (kernel boundary, not a hardware VM, slow)",
        }
    }
}

pub use crate::gvisor_version::gvisor_release;

/// How this host can enforce creation-time filename rules (new `.env`,
/// `*.key`, `*.pem` files inside writable mounts, R-DISPATCH-3).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilenameRuleSupport {
    /// Seatbelt refuses new names matching a regex itself (macOS).
    Seatbelt,
    /// The kernel can run the name guard (seccomp user notification with
    /// descriptor injection and signal-safe waits, Linux 5.19 or later,
    /// x86-64).
    NameGuard,
    /// Nothing here enforces them; the reason, for the note and errors.
    Unavailable(String),
}

impl FilenameRuleSupport {
    /// Whether some mechanism enforces them.
    pub fn is_enforceable(&self) -> bool {
        !matches!(self, FilenameRuleSupport::Unavailable(_))
    }
}

/// The `(major, minor)` of a Linux release string (`uname -r`, such as
/// `6.1.0-18-amd64` or `5.14.0-284.el9.x86_64`): decimal digits, a dot,
/// decimal digits, then anything. `None` for anything else (a sign, a
/// missing minor, a number over `u32`).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    fn number(s: &str) -> Option<(u32, &str)> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            return None;
        }
        Some((s[..end].parse().ok()?, &s[end..]))
    }
    let (major, rest) = number(release.trim())?;
    let (minor, _) = number(rest.strip_prefix('.')?)?;
    Some((major, minor))
}

/// Whether a Linux release string names a kernel that can run the name
/// guard: at least [`NAME_GUARD_MIN_KERNEL`]. The one place this is
/// decided; the probe and the `name-guard` crate both ask it. A release
/// [`kernel_version`] cannot read is `false`.
pub fn kernel_runs_name_guard(release: &str) -> bool {
    kernel_version(release).is_some_and(|v| v >= NAME_GUARD_MIN_KERNEL)
}

/// Whether a Linux release can run the name guard on this build's
/// architecture.
fn name_guard_support(release: &str) -> FilenameRuleSupport {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return FilenameRuleSupport::Unavailable(
            "the name guard has system call tables for x86-64 and aarch64 only".to_string(),
        );
    }
    if kernel_runs_name_guard(release) {
        return FilenameRuleSupport::NameGuard;
    }
    let (maj, min) = NAME_GUARD_MIN_KERNEL;
    match kernel_version(release) {
        Some((a, b)) => FilenameRuleSupport::Unavailable(format!(
            "kernel {a}.{b} is older than {maj}.{min} (seccomp user notification with descriptor injection and killable waits)"
        )),
        None => FilenameRuleSupport::Unavailable(
            "kernel release unknown (need Linux 5.19 or later)".to_string(),
        ),
    }
}

/// What the probe found about the native sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NativeProbe {
    /// Whether the native backend can run here.
    pub available: bool,
    /// The mechanism, when available.
    pub mechanism: Option<NativeMechanism>,
    /// Resolved paths of the tools found (`bwrap`, `socat`, `sandbox-exec`).
    pub tools: Vec<(String, PathBuf)>,
    /// The human note when available.
    pub note: Option<String>,
    /// True when installing packages would make it available, or make a
    /// stronger mechanism available than the one offered.
    pub requires_install: bool,
    /// The packages that are missing, in hint order.
    pub missing_packages: Vec<String>,
    /// The hint: why nothing is available, or, when a weaker mechanism
    /// runs because a package is missing, how to get the stronger one.
    pub hint: Option<String>,
    /// How creation-time filename rules can be enforced here.
    pub filename_rules: FilenameRuleSupport,
}

/// What the probe found about microVMs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MicrovmProbe {
    /// Whether a kernel-boundary runtime started a trial sandbox here.
    pub available: bool,
    /// The runtime's executable, when one was found.
    pub runtime: Option<PathBuf>,
    /// The runtime's kind, when one was found.
    pub kind: Option<MicrovmRuntimeKind>,
    /// The runtime's release (gVisor: `20221219`), when known.
    pub version: Option<String>,
    /// The line that names the runtime when available: `microvm: gVisor
    /// runsc 20221219: user-space kernel (kernel boundary, not a hardware
    /// VM)`.
    pub note: Option<String>,
    /// Why not, when not available.
    pub reason: Option<String>,
}

impl MicrovmProbe {
    /// Whether the runtime found is a hardware VM (false when none is).
    pub fn is_hardware_vm(&self) -> bool {
        self.available && self.kind.is_some_and(MicrovmRuntimeKind::is_hardware_vm)
    }
}

/// The note of an available gVisor runtime of release `version`.
pub fn gvisor_note(version: &str) -> String {
    format!(
        "microvm: gVisor runsc {version}: {}",
        MicrovmRuntimeKind::Gvisor.describe()
    )
}

/// The probe's result: computed once, reused for every run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeReport {
    /// The host kind.
    pub platform: Platform,
    /// The native sandbox.
    pub native: NativeProbe,
    /// MicroVM support.
    pub microvm: MicrovmProbe,
}

impl ProbeReport {
    /// Probes `host` with the default options.
    pub fn probe<H: HostView + ?Sized>(host: &H) -> ProbeReport {
        ProbeReport::probe_with(host, &ProbeOptions::default())
    }

    /// Probes `host`: platform, native tools, microVM runtime.
    pub fn probe_with<H: HostView + ?Sized>(host: &H, options: &ProbeOptions) -> ProbeReport {
        let platform = detect_platform(host);
        let path_var = host.var_os("PATH");
        let native = match platform {
            Platform::MacOs => {
                let exec = Path::new(SANDBOX_EXEC_PATH);
                if host.is_executable_file(exec) {
                    NativeProbe {
                        available: true,
                        mechanism: Some(NativeMechanism::Seatbelt),
                        tools: vec![("sandbox-exec".into(), exec.to_path_buf())],
                        note: Some(NOTE_SEATBELT.into()),
                        requires_install: false,
                        missing_packages: Vec::new(),
                        hint: None,
                        filename_rules: FilenameRuleSupport::Seatbelt,
                    }
                } else {
                    unavailable(format!("{SANDBOX_EXEC_PATH} is missing"))
                }
            }
            Platform::Linux | Platform::Wsl2 => probe_linux(host, path_var.as_ref()),
            Platform::Wsl1 => unavailable(format!(
                "{HINT_UNSUPPORTED} (WSL1 has no namespaces; use WSL2)"
            )),
            Platform::Windows | Platform::Other => unavailable(HINT_UNSUPPORTED.into()),
        };
        let microvm = probe_microvm(host, platform, path_var.as_ref(), options);
        ProbeReport {
            platform,
            native,
            microvm,
        }
    }

    /// The one start-up line (R-PROBE-1) for this report under `switch`:
    /// `agent sandbox ON: <note>`, `no OS-native agent sandbox on this
    /// host: <hint>`, or `agent sandbox DISABLED by --sandbox off`.
    pub fn startup_line(&self, switch: SandboxSwitch) -> String {
        match switch {
            SandboxSwitch::Off => LINE_DISABLED.to_string(),
            SandboxSwitch::On => {
                match (&self.native.available, &self.native.note, &self.native.hint) {
                    (true, Some(note), _) => format!("{LINE_ON}: {note}"),
                    (true, None, _) => LINE_ON.to_string(),
                    (false, _, Some(hint)) => format!("{LINE_NONE}: {hint}"),
                    (false, _, None) => LINE_NONE.to_string(),
                }
            }
        }
    }

    /// The backend a dispatch gets under `switch`, without any request:
    /// `native` when available and on, else `none`.
    pub fn dispatch_backend(&self, switch: SandboxSwitch) -> SandboxBackend {
        if switch == SandboxSwitch::On && self.native.available {
            SandboxBackend::Native
        } else {
            SandboxBackend::None
        }
    }
}

/// The Linux and WSL2 probe. Selection order: bubblewrap where it runs
/// (one trial launch), else Landlock with the name guard, else nothing,
/// with the hint. Only `bwrap` is required for bubblewrap; `socat` is
/// looked up for the bridges' fallback.
fn probe_linux<H: HostView + ?Sized>(
    host: &H,
    path_var: Option<&std::ffi::OsString>,
) -> NativeProbe {
    let release = host
        .read_small_file(Path::new("/proc/sys/kernel/osrelease"))
        .unwrap_or_default();
    let filename_rules = name_guard_support(&release);
    let mut tools = Vec::new();
    let mut missing = Vec::new();
    for tool in LINUX_REQUIRED_TOOLS {
        match find_on_path(host, path_var, tool.binary) {
            Some(found) => tools.push((tool.binary.to_string(), found)),
            None => missing.push(tool.package.to_string()),
        }
    }
    for tool in LINUX_FALLBACK_TOOLS {
        if let Some(found) = find_on_path(host, path_var, tool.binary) {
            tools.push((tool.binary.to_string(), found));
        }
    }
    // Installed is not enough: one trial launch shows whether this host
    // lets bubblewrap make its namespaces.
    // `None`: not installed; `Some(why)`: installed, and the trial failed.
    let bubblewrap_failed = match tools.iter().find(|(name, _)| name == "bwrap") {
        Some((_, bwrap)) => host.try_bubblewrap(bwrap).err().map(Some),
        None => Some(None),
    };
    let Some(bubblewrap_failed) = bubblewrap_failed else {
        let note = match &filename_rules {
            FilenameRuleSupport::NameGuard => format!("{NOTE_BUBBLEWRAP}; {NOTE_NAME_GUARD}"),
            FilenameRuleSupport::Unavailable(why) => format!(
                "{NOTE_BUBBLEWRAP}; filename rules not enforceable ({why}): launches with writable mounts are refused"
            ),
            FilenameRuleSupport::Seatbelt => NOTE_BUBBLEWRAP.to_string(),
        };
        return NativeProbe {
            available: true,
            mechanism: Some(NativeMechanism::Bubblewrap),
            tools,
            note: Some(note),
            requires_install: false,
            missing_packages: Vec::new(),
            hint: None,
            filename_rules,
        };
    };
    let landlock = match (&filename_rules, host.try_landlock()) {
        (FilenameRuleSupport::NameGuard, Ok(())) => Ok(()),
        (FilenameRuleSupport::NameGuard, Err(why)) => Err(why),
        (FilenameRuleSupport::Unavailable(why), _) => {
            Err(format!("the name guard cannot run ({why})"))
        }
        (FilenameRuleSupport::Seatbelt, _) => Err("not Linux".to_owned()),
    };
    let requires_install = !missing.is_empty();
    match (bubblewrap_failed, landlock) {
        (None, Ok(())) => NativeProbe {
            available: true,
            mechanism: Some(NativeMechanism::Landlock),
            tools,
            note: Some(format!(
                "{NOTE_LANDLOCK}; bubblewrap is not installed; {NOTE_NAME_GUARD}; {HINT_INSTALL_BUBBLEWRAP}"
            )),
            requires_install,
            missing_packages: missing,
            hint: Some(HINT_INSTALL_BUBBLEWRAP.to_string()),
            filename_rules,
        },
        (Some(why), Ok(())) => NativeProbe {
            available: true,
            mechanism: Some(NativeMechanism::Landlock),
            tools,
            note: Some(format!(
                "{NOTE_LANDLOCK}; bubblewrap cannot make its namespaces here ({why}); {NOTE_NAME_GUARD}"
            )),
            requires_install: false,
            missing_packages: Vec::new(),
            hint: None,
            filename_rules,
        },
        (None, Err(no_landlock)) => NativeProbe {
            available: false,
            mechanism: None,
            tools,
            note: None,
            requires_install,
            hint: Some(format!(
                "install the missing packages: sudo apt-get install {}; nor can Landlock confine here ({no_landlock})",
                missing.join(" ")
            )),
            missing_packages: missing,
            filename_rules,
        },
        (Some(why), Err(no_landlock)) => NativeProbe {
            available: false,
            mechanism: None,
            tools,
            note: None,
            requires_install: false,
            missing_packages: Vec::new(),
            hint: Some(format!(
                "bwrap is installed but cannot make its namespaces on this host ({why}); user namespaces may be disabled or restricted here; nor can Landlock confine here ({no_landlock})"
            )),
            filename_rules,
        },
    }
}

fn unavailable(hint: String) -> NativeProbe {
    NativeProbe {
        available: false,
        mechanism: None,
        tools: Vec::new(),
        note: None,
        requires_install: false,
        missing_packages: Vec::new(),
        hint: Some(hint),
        filename_rules: FilenameRuleSupport::Unavailable("no native sandbox".to_string()),
    }
}

fn detect_platform<H: HostView + ?Sized>(host: &H) -> Platform {
    match host.os() {
        Os::MacOs => Platform::MacOs,
        Os::Windows => Platform::Windows,
        Os::Other => Platform::Other,
        Os::Linux => {
            let release = host
                .read_small_file(Path::new("/proc/sys/kernel/osrelease"))
                .unwrap_or_default()
                .to_ascii_lowercase();
            if release.contains("microsoft") || release.contains("wsl") {
                // WSL2 kernels say "...-microsoft-standard-WSL2"; WSL1 reports a
                // fake "4.4.0-NNNNN-Microsoft" release.
                if release.contains("wsl2") || release.contains("microsoft-standard") {
                    Platform::Wsl2
                } else {
                    Platform::Wsl1
                }
            } else {
                Platform::Linux
            }
        }
    }
}

fn probe_microvm<H: HostView + ?Sized>(
    host: &H,
    platform: Platform,
    path_var: Option<&std::ffi::OsString>,
    options: &ProbeOptions,
) -> MicrovmProbe {
    let not = |runtime: Option<PathBuf>, reason: String| MicrovmProbe {
        available: false,
        kind: runtime.as_ref().map(|_| MicrovmRuntimeKind::Gvisor),
        runtime,
        version: None,
        note: None,
        reason: Some(reason),
    };
    if !matches!(platform, Platform::Linux | Platform::Wsl2) {
        return not(
            None,
            format!(
                "no kernel-boundary runtime is offered on {} (gVisor runs on Linux)",
                platform.as_str()
            ),
        );
    }
    // A configured path is the only one tried; otherwise PATH.
    let runsc = match &options.runsc {
        Some(path) if path.is_absolute() && host.is_executable_file(path) => path.clone(),
        Some(path) => {
            return not(
                None,
                format!(
                    "the configured runsc {} is not an executable file at an absolute path",
                    path.display()
                ),
            );
        }
        None => match find_on_path(host, path_var, RUNSC_BINARY) {
            Some(found) => found,
            None => {
                return not(
                    None,
                    format!(
                        "no kernel-boundary runtime: runsc (gVisor) is not on PATH; install it: {RUNSC_INSTALL_HINT}"
                    ),
                );
            }
        },
    };
    // Found is not enough: one tiny sandbox shows it runs here.
    match host.try_gvisor(&runsc) {
        Ok(version) => MicrovmProbe {
            available: true,
            runtime: Some(runsc),
            kind: Some(MicrovmRuntimeKind::Gvisor),
            note: Some(gvisor_note(&version)),
            version: Some(version),
            reason: None,
        },
        Err(why) => {
            let shown = runsc.display().to_string();
            not(
                Some(runsc),
                format!("{shown} is installed but a trial sandbox failed: {why}"),
            )
        }
    }
}

/// A probe result computed once and reused.
///
/// ```
/// use sandbox_core::{FakeHost, Os, ProbeCache};
/// let cache = ProbeCache::new();
/// let host = FakeHost::new(Os::Windows);
/// let first = cache.get_or_probe(&host) as *const _;
/// let second = cache.get_or_probe(&host) as *const _;
/// assert_eq!(first, second);
/// ```
#[derive(Debug, Default)]
pub struct ProbeCache {
    cell: OnceLock<ProbeReport>,
}

impl ProbeCache {
    /// An empty cache.
    pub const fn new() -> ProbeCache {
        ProbeCache {
            cell: OnceLock::new(),
        }
    }

    /// The cached report, probing `host` the first time only.
    pub fn get_or_probe<H: HostView + ?Sized>(&self, host: &H) -> &ProbeReport {
        self.cell.get_or_init(|| ProbeReport::probe(host))
    }
}

/// How long the real host's probe may take in all.
pub const AMBIENT_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The real host's probe, computed at the first call and reused by every
/// later one in this process. It reads ambient authority (PATH and the file
/// system), as its name says. The whole probe runs on a helper thread
/// bounded by [`AMBIENT_PROBE_TIMEOUT`]; a probe that does not finish in
/// time reports no native sandbox (fail closed, never a hang).
pub fn probe_ambient() -> &'static ProbeReport {
    static CACHE: OnceLock<ProbeReport> = OnceLock::new();
    CACHE.get_or_init(|| {
        crate::host::run_with_timeout(AMBIENT_PROBE_TIMEOUT, || {
            ProbeReport::probe(&crate::AmbientHost::from_ambient_untimed())
        })
        .unwrap_or_else(timed_out_report)
    })
}

fn timed_out_report() -> ProbeReport {
    ProbeReport {
        platform: Platform::Other,
        native: unavailable(format!(
            "the host probe did not finish within {} s; no sandbox is offered",
            AMBIENT_PROBE_TIMEOUT.as_secs()
        )),
        microvm: MicrovmProbe {
            available: false,
            runtime: None,
            kind: None,
            version: None,
            note: None,
            reason: Some("the host probe timed out".into()),
        },
    }
}
