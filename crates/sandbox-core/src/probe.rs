//! The host probe (R-PROBE): which backends this host can offer, computed
//! once at start-up and reused.

mod cache;
mod linux;
mod microvm;

pub use crate::gvisor_version::gvisor_release;
pub use cache::{AMBIENT_PROBE_TIMEOUT, ProbeCache, probe_ambient};
pub use linux::{kernel_runs_name_guard, kernel_version};
pub use microvm::{
    MicrovmProbe, MicrovmRuntimeKind, RUNSC_BINARY, RUNSC_INSTALL_HINT, gvisor_note,
};

use crate::host::{HostView, Os};
use crate::{SandboxBackend, SandboxSwitch};
use linux::probe_linux;
use microvm::probe_microvm;
use std::path::{Path, PathBuf};

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

/// What the probe looks for beyond the native sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeOptions {
    /// The `runsc` executable to try (absolute), instead of the first
    /// `runsc` on `PATH`.
    pub runsc: Option<PathBuf>,
}

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
