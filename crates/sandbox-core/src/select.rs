//! Backend selection (R-BACKEND-3, R-TERMINAL-1): the backend a run
//! actually gets, never a silent downgrade of an explicit request.

use crate::{Error, ErrorKind, ProbeReport, SandboxBackend, SandboxSwitch};

/// What the caller asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendRequest {
    /// Nothing asked: the surface's default applies.
    Unspecified,
    /// Asked for by name: that backend or an error, never another one.
    Explicit(SandboxBackend),
}

/// Where the run happens; each surface has its own default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Surface {
    /// An agent dispatch (CLI agent, ACP agent, harness bash): the default is
    /// `native` when the host offers it, else `none`.
    Dispatch,
    /// A server-driven terminal: the default is `none`; a terminal is wrapped
    /// only when the client asks for `native` explicitly.
    Terminal,
    /// An isolated station: the default prefers `microvm` and degrades to
    /// `native` (then `none`), saying so in a log line.
    Station,
}

/// The outcome of selection: the backend actually used, its label and the
/// log line to emit, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The backend the run actually gets.
    pub backend: SandboxBackend,
    /// A label for the client, which never claims more than `backend` gives.
    pub label: &'static str,
    /// A line for the host program's log (a degradation or the switch).
    pub log_line: Option<String>,
}

/// The label shown for a backend.
pub fn backend_label(backend: SandboxBackend) -> &'static str {
    match backend {
        SandboxBackend::Microvm => "microvm: isolated VM, kernel boundary",
        SandboxBackend::Native => "native: namespace isolation, no kernel boundary",
        SandboxBackend::None => "none: not sandboxed, runs on the host",
    }
}

/// The label of the native backend when its mechanism is Landlock: no
/// namespaces, so not "namespace isolation".
pub const LABEL_LANDLOCK: &str =
    "landlock: Landlock and seccomp on the host, no namespaces, no kernel boundary";

/// The label of the `microvm` backend on gVisor: a kernel boundary, and
/// said plainly not to be a hardware VM.
pub const LABEL_GVISOR: &str =
    "microvm: gVisor user-space kernel (kernel boundary, not a hardware VM)";

/// The label of the `microvm` backend for a runtime kind.
pub fn microvm_label(kind: crate::MicrovmRuntimeKind) -> &'static str {
    match kind {
        crate::MicrovmRuntimeKind::Gvisor => LABEL_GVISOR,
        crate::MicrovmRuntimeKind::QemuTcg => {
            "microvm: emulated VM (kernel boundary, not a hardware VM)"
        }
        crate::MicrovmRuntimeKind::QemuKvm => backend_label(SandboxBackend::Microvm),
    }
}

/// The selection of `backend`, labelled by the mechanism `report` found
/// for it (the native backend on Landlock has no namespaces to claim; the
/// `microvm` backend names its runtime, and only a hardware VM is called
/// one).
fn chosen(report: &ProbeReport, backend: SandboxBackend, log_line: Option<String>) -> Selection {
    let landlock = report.native.mechanism == Some(crate::NativeMechanism::Landlock);
    let label = match backend {
        SandboxBackend::Native if landlock => LABEL_LANDLOCK,
        SandboxBackend::Microvm => match report.microvm.kind {
            Some(kind) => microvm_label(kind),
            None => backend_label(backend),
        },
        _ => backend_label(backend),
    };
    Selection {
        backend,
        label,
        log_line,
    }
}

/// Chooses the backend for one run.
///
/// - `switch` off: `none` with the DISABLED line; an explicit `native` or
///   `microvm` request is an error (the switch is an opt-out, and an explicit
///   request is never downgraded).
/// - An explicit `microvm` on a host that cannot start one is
///   [`ErrorKind::MicrovmUnavailable`]; an explicit `native` without a native
///   sandbox is [`ErrorKind::NativeUnavailable`].
/// - Unspecified: see [`Surface`]. Every step down is logged.
///
/// ```
/// use sandbox_core::*;
/// let report = ProbeReport::probe(&FakeHost::new(Os::Windows));
/// let err = select_backend(
///     BackendRequest::Explicit(SandboxBackend::Microvm),
///     SandboxSwitch::On, Surface::Station, &report,
/// ).unwrap_err();
/// assert!(matches!(err.kind(), ErrorKind::MicrovmUnavailable { .. }));
/// ```
pub fn select_backend(
    request: BackendRequest,
    switch: SandboxSwitch,
    surface: Surface,
    report: &ProbeReport,
) -> Result<Selection, Error> {
    let native_reason = || {
        report
            .native
            .hint
            .clone()
            .unwrap_or_else(|| "no native sandbox on this host".to_string())
    };
    let microvm_reason = || {
        report
            .microvm
            .reason
            .clone()
            .unwrap_or_else(|| "no microVM runtime".to_string())
    };

    if switch == SandboxSwitch::Off {
        return match request {
            BackendRequest::Explicit(SandboxBackend::Native) => Err(ErrorKind::NativeUnavailable {
                reason: "the sandbox is switched off (--sandbox off)".into(),
            }
            .into()),
            BackendRequest::Explicit(SandboxBackend::Microvm) => {
                Err(ErrorKind::MicrovmUnavailable {
                    reason: "the sandbox is switched off (--sandbox off)".into(),
                }
                .into())
            }
            _ => Ok(chosen(
                report,
                SandboxBackend::None,
                Some(crate::probe::LINE_DISABLED.to_string()),
            )),
        };
    }

    match request {
        BackendRequest::Explicit(SandboxBackend::Microvm) => {
            if report.microvm.available {
                Ok(chosen(report, SandboxBackend::Microvm, None))
            } else {
                Err(ErrorKind::MicrovmUnavailable {
                    reason: microvm_reason(),
                }
                .into())
            }
        }
        BackendRequest::Explicit(SandboxBackend::Native) => {
            if report.native.available {
                Ok(chosen(report, SandboxBackend::Native, None))
            } else {
                Err(ErrorKind::NativeUnavailable {
                    reason: native_reason(),
                }
                .into())
            }
        }
        BackendRequest::Explicit(SandboxBackend::None) => {
            Ok(chosen(report, SandboxBackend::None, None))
        }
        BackendRequest::Unspecified => match surface {
            Surface::Terminal => Ok(chosen(report, SandboxBackend::None, None)),
            Surface::Dispatch => {
                if report.native.available {
                    Ok(chosen(report, SandboxBackend::Native, None))
                } else {
                    Ok(chosen(
                        report,
                        SandboxBackend::None,
                        Some(format!(
                            "runs are not sandboxed on this host: {}",
                            native_reason()
                        )),
                    ))
                }
            }
            Surface::Station => {
                if report.microvm.available {
                    Ok(chosen(report, SandboxBackend::Microvm, None))
                } else if report.native.available {
                    Ok(chosen(
                        report,
                        SandboxBackend::Native,
                        Some(format!(
                            "default backend degraded from microvm to native ({}): no kernel boundary",
                            microvm_reason()
                        )),
                    ))
                } else {
                    Ok(chosen(
                        report,
                        SandboxBackend::None,
                        Some(format!(
                            "default backend degraded from microvm to none ({}; {}): not sandboxed",
                            microvm_reason(),
                            native_reason()
                        )),
                    ))
                }
            }
        },
    }
}
