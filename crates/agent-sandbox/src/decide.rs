//! The manager's decisions, as pure functions of the probe, the selection
//! and the builder's settings: which backend state a session gets, how
//! filename-glob denies are handled, which lines the log gets at start-up.
//! No I/O here; the table tests below cover each branch.

use crate::{Error, ErrorKind};
use bwrap_spec::FilenameRules;
use sandbox_core::{
    FilenameRuleSupport, NativeMechanism, ProbeReport, SandboxBackend, Selection, Surface,
};
use std::path::PathBuf;

/// The backend a manager launches, decided once at `build`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BackendChoice {
    /// Nothing is confined (the `none` backend).
    None,
    /// bubblewrap (Linux, WSL2).
    Bubblewrap {
        /// The `bwrap` executable.
        bwrap: PathBuf,
        /// The `socat` executable, when installed: only the bridges'
        /// fallback, never required.
        socat: Option<PathBuf>,
    },
    /// Seatbelt through `sandbox-exec` (macOS).
    Seatbelt,
    /// Landlock and the name guard's supervisor, no namespaces (Linux).
    Landlock,
    /// gVisor's `runsc` behind the `microvm` backend (Linux).
    Gvisor {
        /// The `runsc` executable the probe tried.
        runsc: PathBuf,
        /// Its release.
        version: String,
    },
    /// QEMU's `microvm` machine behind the `microvm` backend (Linux), on KVM
    /// or emulated as the probe's canary found.
    Qemu,
    /// A backend this manager does not implement on this platform: every
    /// launch is refused with the reason.
    Unavailable(String),
}

/// Decides the backend from the selection and what the probe found.
/// bubblewrap without `bwrap` is an error naming the package; `socat` is
/// taken when the probe found it.
pub(crate) fn backend_choice(
    selection: &Selection,
    probe: &ProbeReport,
    target_is_linux: bool,
) -> Result<BackendChoice, Error> {
    let tool = |name: &str| {
        probe
            .native
            .tools
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.clone())
    };
    match (selection.backend, probe.native.mechanism) {
        (SandboxBackend::None, _) => Ok(BackendChoice::None),
        (SandboxBackend::Native, Some(NativeMechanism::Seatbelt)) => Ok(BackendChoice::Seatbelt),
        (SandboxBackend::Native, Some(NativeMechanism::Landlock)) if target_is_linux => {
            Ok(BackendChoice::Landlock)
        }
        (SandboxBackend::Native, Some(NativeMechanism::Bubblewrap)) => {
            let Some(bwrap) = tool("bwrap") else {
                return Err(ErrorKind::ToolMissing {
                    tool: "bwrap",
                    hint: "sudo apt-get install bubblewrap".into(),
                }
                .into());
            };
            let socat = tool("socat");
            if target_is_linux {
                Ok(BackendChoice::Bubblewrap { bwrap, socat })
            } else {
                Ok(BackendChoice::Unavailable(
                    "bubblewrap runs only on Linux".into(),
                ))
            }
        }
        (SandboxBackend::Microvm, _)
            if target_is_linux
                && probe.microvm.kind == Some(sandbox_core::MicrovmRuntimeKind::Gvisor) =>
        {
            match (&probe.microvm.runtime, &probe.microvm.version) {
                (Some(runsc), Some(version)) => Ok(BackendChoice::Gvisor {
                    runsc: runsc.clone(),
                    version: version.clone(),
                }),
                _ => Ok(BackendChoice::Unavailable(
                    "the probe found no working runsc".into(),
                )),
            }
        }
        (SandboxBackend::Microvm, _)
            if target_is_linux
                && probe.microvm.available
                && matches!(
                    probe.microvm.kind,
                    Some(
                        sandbox_core::MicrovmRuntimeKind::QemuKvm
                            | sandbox_core::MicrovmRuntimeKind::QemuTcg
                    )
                ) =>
        {
            Ok(BackendChoice::Qemu)
        }
        (other, _) => Ok(BackendChoice::Unavailable(format!(
            "backend {other} is not implemented by this manager on this platform"
        ))),
    }
}

/// How filename-glob denies are handled, and the line the log gets for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FilenameRulesDecision {
    /// What the bubblewrap plan does with them.
    pub(crate) rules: FilenameRules,
    /// The log line (bubblewrap only: Seatbelt refuses the names itself).
    pub(crate) log_line: Option<String>,
    /// Whether the name guard can run here (a launcher is set and the
    /// kernel supports it): then it runs wherever something is writable,
    /// for its socket supervision, whatever the filename rules.
    pub(crate) guard_runs: bool,
}

/// Decides filename-glob handling (R-NAMEGUARD-1, R-DISPATCH-3).
///
/// Unset, the name guard enforces them when a launcher is set and the
/// kernel can run it, else a launch that needs them is refused. Asked for
/// explicitly, enforcement that cannot happen is an error, never a silent
/// weakening. Only a bubblewrap backend (`bubblewrap`) logs the outcome.
pub(crate) fn filename_rules(
    requested: Option<FilenameRules>,
    bubblewrap: bool,
    launcher_set: bool,
    support: &FilenameRuleSupport,
) -> Result<FilenameRulesDecision, Error> {
    let blocker: Option<String> = match (launcher_set, support) {
        (false, _) => Some("no name-guard launcher was set".to_string()),
        (true, FilenameRuleSupport::NameGuard) => None,
        (true, FilenameRuleSupport::Unavailable(why)) => Some(why.clone()),
        (true, _) => Some("this host's native sandbox is not bubblewrap".to_string()),
    };
    let rules = match (requested, bubblewrap, &blocker) {
        (Some(FilenameRules::EnforcedByNameGuard), true, Some(reason)) => {
            return Err(ErrorKind::NameGuardUnavailable {
                reason: reason.clone(),
            }
            .into());
        }
        (Some(rules), _, _) => rules,
        (None, true, None) => FilenameRules::EnforcedByNameGuard,
        (None, _, _) => FilenameRules::Refuse,
    };
    let log_line = if !bubblewrap {
        None
    } else {
        match (rules, &blocker) {
            (FilenameRules::DropFilenameGlobDenies, None) => Some(
                "filename-glob write denies (.env, *.key, *.pem) are DROPPED (opt-out \
                 --no-filename-rules); the name guard still runs where something is writable, \
                 so Unix sockets that host processes make there stay unreachable"
                    .to_string(),
            ),
            (FilenameRules::DropFilenameGlobDenies, Some(_)) => Some(
                "filename-glob write denies (.env, *.key, *.pem) are DROPPED for this host: \
                 bubblewrap cannot refuse new names, and Unix sockets that host processes \
                 make in the writable mounts stay reachable (opt-out --no-filename-rules)"
                    .to_string(),
            ),
            (FilenameRules::EnforcedByNameGuard, _) => Some(
                "filename-glob write denies (.env, *.key, *.pem) enforced at creation by name-guard"
                    .to_string(),
            ),
            (_, Some(reason)) => Some(format!(
                "name-guard unavailable ({reason}): launches with writable mounts are refused"
            )),
            (_, None) => None,
        }
    };
    Ok(FilenameRulesDecision {
        rules,
        log_line,
        guard_runs: blocker.is_none(),
    })
}

/// The selection's log line, printed after the probe's start-up line
/// (R-PROBE-1) only when it adds something (a degradation), not when it
/// restates the probe's hint or the switch.
pub(crate) fn selection_line(
    startup: &str,
    surface: Surface,
    selection: &Selection,
) -> Option<String> {
    let restates_probe = selection.backend == SandboxBackend::None
        && surface == Surface::Dispatch
        && startup.starts_with(sandbox_core::probe::LINE_NONE);
    match &selection.log_line {
        Some(line) if line != startup && !restates_probe => Some(line.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::{FakeHost, Os, SandboxSwitch, select_backend};

    fn support(name: &str) -> FilenameRuleSupport {
        match name {
            "guard" => FilenameRuleSupport::NameGuard,
            "seatbelt" => FilenameRuleSupport::Seatbelt,
            _ => FilenameRuleSupport::Unavailable("kernel 5.10 is older than 5.19".into()),
        }
    }

    /// (intent, requested, bubblewrap, launcher set, support, outcome, log
    /// line starts with). The outcome is the rules, or `Err` for the
    /// refusal to weaken an explicit request.
    type Case = (
        &'static str,
        Option<FilenameRules>,
        bool,
        bool,
        &'static str,
        Result<FilenameRules, ()>,
        Option<&'static str>,
    );

    #[test]
    fn filename_rules_table() {
        use FilenameRules::*;
        let cases: &[Case] = &[
            (
                "unset, guard can run: enforced",
                None,
                true,
                true,
                "guard",
                Ok(EnforcedByNameGuard),
                Some("filename-glob write denies (.env, *.key, *.pem) enforced"),
            ),
            (
                "unset, no launcher: refused, and the log says why",
                None,
                true,
                false,
                "guard",
                Ok(Refuse),
                Some("name-guard unavailable (no name-guard launcher was set)"),
            ),
            (
                "unset, old kernel: refused, with the probe's reason",
                None,
                true,
                true,
                "old",
                Ok(Refuse),
                Some("name-guard unavailable (kernel 5.10"),
            ),
            (
                "explicit enforcement that cannot run is an error",
                Some(EnforcedByNameGuard),
                true,
                true,
                "old",
                Err(()),
                None,
            ),
            (
                "explicit enforcement without a launcher is an error",
                Some(EnforcedByNameGuard),
                true,
                false,
                "guard",
                Err(()),
                None,
            ),
            (
                "explicit enforcement that can run is kept",
                Some(EnforcedByNameGuard),
                true,
                true,
                "guard",
                Ok(EnforcedByNameGuard),
                Some("filename-glob write denies (.env, *.key, *.pem) enforced"),
            ),
            (
                "the opt-out is kept and logged as dropped",
                Some(DropFilenameGlobDenies),
                true,
                true,
                "guard",
                Ok(DropFilenameGlobDenies),
                Some("filename-glob write denies (.env, *.key, *.pem) are DROPPED"),
            ),
            (
                "the opt-out where the guard cannot run says sockets stay reachable",
                Some(DropFilenameGlobDenies),
                true,
                true,
                "unavailable",
                Ok(DropFilenameGlobDenies),
                Some("filename-glob write denies (.env, *.key, *.pem) are DROPPED for this host"),
            ),
            (
                "explicit refuse is kept; the log says the guard is off",
                Some(Refuse),
                true,
                false,
                "guard",
                Ok(Refuse),
                Some("name-guard unavailable"),
            ),
            (
                "not bubblewrap: nothing is logged, unset stays refuse",
                None,
                false,
                false,
                "seatbelt",
                Ok(Refuse),
                None,
            ),
            (
                "not bubblewrap: explicit enforcement is not this backend's matter",
                Some(EnforcedByNameGuard),
                false,
                true,
                "seatbelt",
                Ok(EnforcedByNameGuard),
                None,
            ),
        ];
        for (intent, requested, bubblewrap, launcher, sup, want, line) in cases {
            let got = filename_rules(*requested, *bubblewrap, *launcher, &support(sup));
            match (want, got) {
                (Ok(rules), Ok(d)) => {
                    assert_eq!(d.rules, *rules, "{intent}");
                    match line {
                        Some(prefix) => assert!(
                            d.log_line.as_deref().is_some_and(|l| l.starts_with(prefix)),
                            "{intent}: {:?}",
                            d.log_line
                        ),
                        None => assert_eq!(d.log_line, None, "{intent}"),
                    }
                }
                (Err(()), Err(e)) => assert!(
                    matches!(e.kind(), ErrorKind::NameGuardUnavailable { .. }),
                    "{intent}: {e}"
                ),
                (want, got) => panic!("{intent}: wanted {want:?}, got {got:?}"),
            }
        }
    }

    fn probe_of(os: Os, executables: &[&str]) -> ProbeReport {
        let mut host = FakeHost::new(os);
        host.env("PATH", "/usr/bin");
        for e in executables {
            host.executable(*e);
        }
        ProbeReport::probe(&host)
    }

    fn choice(probe: &ProbeReport, linux: bool) -> Result<BackendChoice, String> {
        let selection = select_backend(
            sandbox_core::BackendRequest::Unspecified,
            SandboxSwitch::On,
            Surface::Dispatch,
            probe,
        )
        .map_err(|e| e.to_string())?;
        backend_choice(&selection, probe, linux).map_err(|e| e.to_string())
    }

    #[test]
    fn backend_choice_table() {
        let both = probe_of(Os::Linux, &["/usr/bin/bwrap", "/usr/bin/socat"]);
        assert_eq!(
            choice(&both, true),
            Ok(BackendChoice::Bubblewrap {
                bwrap: "/usr/bin/bwrap".into(),
                socat: Some("/usr/bin/socat".into())
            }),
            "bubblewrap with both tools"
        );
        let no_socat = probe_of(Os::Linux, &["/usr/bin/bwrap"]);
        assert_eq!(
            choice(&no_socat, true),
            Ok(BackendChoice::Bubblewrap {
                bwrap: "/usr/bin/bwrap".into(),
                socat: None
            }),
            "bubblewrap without socat: bubblewrap all the same"
        );
        assert!(
            matches!(choice(&both, false), Ok(BackendChoice::Unavailable(_))),
            "bubblewrap found, but this build is not for Linux: launches are refused"
        );
        let none = probe_of(Os::Linux, &[]);
        assert_eq!(
            choice(&none, true),
            Ok(BackendChoice::None),
            "no native tools: the none backend"
        );
        let mac = probe_of(Os::MacOs, &["/usr/bin/sandbox-exec"]);
        assert_eq!(
            choice(&mac, true),
            Ok(BackendChoice::Seatbelt),
            "sandbox-exec: Seatbelt, whatever OS renders"
        );
    }

    #[test]
    fn a_bubblewrap_probe_without_bwrap_names_the_package() {
        let mut probe = probe_of(Os::Linux, &["/usr/bin/bwrap", "/usr/bin/socat"]);
        probe.native.tools.retain(|(n, _)| n != "bwrap");
        let selection = Selection {
            backend: SandboxBackend::Native,
            label: "native",
            log_line: None,
        };
        let err = backend_choice(&selection, &probe, true).unwrap_err();
        assert!(
            err.to_string().contains("sudo apt-get install bubblewrap"),
            "{err}"
        );
    }

    #[test]
    fn startup_lines_do_not_restate_the_probe() {
        let none = probe_of(Os::Linux, &[]);
        let selection = select_backend(
            sandbox_core::BackendRequest::Unspecified,
            SandboxSwitch::On,
            Surface::Dispatch,
            &none,
        )
        .unwrap();
        let startup = none.startup_line(SandboxSwitch::On);
        assert!(
            startup.starts_with(sandbox_core::probe::LINE_NONE),
            "{startup}"
        );
        assert_eq!(
            selection_line(&startup, Surface::Dispatch, &selection),
            None,
            "the none selection restates the probe's hint"
        );
        let off = select_backend(
            sandbox_core::BackendRequest::Unspecified,
            SandboxSwitch::Off,
            Surface::Dispatch,
            &none,
        )
        .unwrap();
        let startup = none.startup_line(SandboxSwitch::Off);
        if let Some(line) = selection_line(&startup, Surface::Dispatch, &off) {
            assert_ne!(line, startup, "never the same line twice");
        }
    }
}
