//! What the VM runtime's probe concludes from what it found (R-MICROVM-2):
//! the facts are gathered on the host (or given by a test), the decision
//! and its line are made here. A canary must answer; `/dev/kvm` opening
//! proves nothing, and an emulated guest is never a hardware VM.

use super::vm::Accel;

/// How a canary guest did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Canary {
    /// Not booted (a runtime before it answered, or nothing to boot).
    NotTried,
    /// Its agent said hello this many milliseconds after QEMU started.
    Answered { ms: u64 },
    /// It did not answer, and why.
    Failed { why: String },
}

/// What the probe found on a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProbeFacts {
    /// Whether `qemu-system-x86_64` was found.
    pub(crate) qemu: bool,
    /// The guest kernel's release, or why there is none.
    pub(crate) kernel: Result<String, String>,
    /// Whether `/dev/kvm` opens for reading and writing.
    pub(crate) kvm_opens: bool,
    pub(crate) kvm: Canary,
    pub(crate) tcg: Canary,
}

/// The probe's conclusion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// A guest runs: on this accelerator, after this long to its hello.
    Runs {
        accel: Accel,
        boot_ms: u64,
        /// Why KVM was not used, when the guest is emulated.
        not_kvm: Option<String>,
    },
    /// No guest runs here, and why (with what to install where that is
    /// the cause).
    Unavailable { reason: String },
}

/// The conclusion from `f`.
pub(crate) fn decide(f: &ProbeFacts) -> Probe {
    if !f.qemu {
        return Probe::Unavailable {
            reason: "qemu-system-x86_64 not found (sudo apt-get install qemu-system-x86)".into(),
        };
    }
    if let Err(why) = &f.kernel {
        return Probe::Unavailable {
            reason: format!(
                "no kernel to boot: {why} (sudo apt-get install linux-image-cloud-amd64)"
            ),
        };
    }
    if let (Canary::Answered { ms }, true) = (&f.kvm, f.kvm_opens) {
        return Probe::Runs {
            accel: Accel::Kvm,
            boot_ms: *ms,
            not_kvm: None,
        };
    }
    let not_kvm = match (&f.kvm_opens, &f.kvm) {
        (false, _) => "/dev/kvm does not open".to_owned(),
        (true, Canary::Failed { why }) => format!("its canary did not answer: {why}"),
        (true, _) => "its canary was not booted".to_owned(),
    };
    match &f.tcg {
        Canary::Answered { ms } => Probe::Runs {
            accel: Accel::Tcg,
            boot_ms: *ms,
            not_kvm: Some(not_kvm),
        },
        Canary::Failed { why } => Probe::Unavailable {
            reason: format!("no canary answered: KVM: {not_kvm}; emulation: {why}"),
        },
        Canary::NotTried => Probe::Unavailable {
            reason: format!("no canary answered: KVM: {not_kvm}; emulation not tried"),
        },
    }
}

impl Probe {
    /// The probe's line: the runtime and how it isolates, or why none.
    pub(crate) fn line(&self) -> String {
        match self {
            Probe::Runs {
                accel,
                boot_ms,
                not_kvm,
            } => {
                let mut l = format!(
                    "microvm: {}: a canary answered in {boot_ms} ms",
                    accel.label()
                );
                if let Some(why) = not_kvm {
                    l.push_str(&format!("; not on KVM: {why}"));
                }
                l
            }
            Probe::Unavailable { reason } => format!("microvm: no QEMU runtime: {reason}"),
        }
    }

    /// Whether this counts as a hardware VM (a host may require one).
    pub(crate) fn is_hardware_vm(&self) -> bool {
        matches!(
            self,
            Probe::Runs {
                accel: Accel::Kvm,
                ..
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of `testdata/qemu_probe.toml`.
    #[derive(serde::Deserialize)]
    struct Case {
        intent: String,
        #[serde(default = "yes")]
        qemu: bool,
        /// The kernel's release, or `error: WHY`.
        #[serde(default = "kernel")]
        kernel: String,
        #[serde(default)]
        kvm_opens: bool,
        /// `answered MS`, `failed WHY`, or absent (not tried).
        kvm: Option<String>,
        tcg: Option<String>,
        /// The line's start and what else it must hold.
        line_starts: String,
        #[serde(default)]
        line_has: Vec<String>,
        #[serde(default)]
        hardware_vm: bool,
    }

    fn yes() -> bool {
        true
    }

    fn kernel() -> String {
        "6.1.0-57-cloud-amd64".into()
    }

    fn canary(s: &Option<String>) -> Canary {
        match s.as_deref() {
            None => Canary::NotTried,
            Some(s) => match s.split_once(' ') {
                Some(("answered", ms)) => Canary::Answered {
                    ms: ms.parse().unwrap(),
                },
                Some(("failed", why)) => Canary::Failed { why: why.into() },
                _ => panic!("bad canary {s:?}"),
            },
        }
    }

    #[test]
    fn the_probe_table() {
        let cases: Vec<Case> =
            test_support::cases::load(test_support::testdata_dir!(), "qemu_probe.toml");
        for c in &cases {
            let facts = ProbeFacts {
                qemu: c.qemu,
                kernel: match c.kernel.strip_prefix("error: ") {
                    Some(why) => Err(why.to_owned()),
                    None => Ok(c.kernel.clone()),
                },
                kvm_opens: c.kvm_opens,
                kvm: canary(&c.kvm),
                tcg: canary(&c.tcg),
            };
            let p = decide(&facts);
            let line = p.line();
            assert!(line.starts_with(&c.line_starts), "{}: {line}", c.intent);
            for h in &c.line_has {
                assert!(
                    line.contains(h.as_str()),
                    "{}: {line} lacks {h:?}",
                    c.intent
                );
            }
            assert_eq!(p.is_hardware_vm(), c.hardware_vm, "{}: {line}", c.intent);
        }
    }
}
