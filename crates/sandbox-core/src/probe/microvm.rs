//! The kernel-boundary runtime behind the `microvm` backend: its kinds,
//! what the probe found, and the probe that looks for gVisor and tries it.

use super::{Platform, ProbeOptions};
use crate::host::{HostView, find_on_path};
use std::path::PathBuf;

/// The gVisor runtime's executable, looked up on `PATH` unless a path is
/// configured ([`ProbeOptions::runsc`]).
pub const RUNSC_BINARY: &str = "runsc";
/// The install hint for the gVisor runtime.
pub const RUNSC_INSTALL_HINT: &str = "sudo apt-get install runsc";

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

pub(super) fn probe_microvm<H: HostView + ?Sized>(
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
