//! Loads every behaviour table under `testdata/` and checks each case.

use sandbox_core::*;
use serde::Deserialize;
use std::path::Path;

fn load<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[derive(Deserialize)]
struct Cases<T> {
    case: Vec<T>,
}

#[derive(Deserialize)]
struct FromNameCase {
    intent: String,
    name: Option<String>,
    expected: String,
}

#[test]
fn from_name_table() {
    let cases: Cases<FromNameCase> = load("from_name.toml");
    for c in &cases.case {
        let got = SandboxBackend::from_name(c.name.as_deref());
        assert_eq!(got.as_str(), c.expected, "{}", c.intent);
    }
}

#[derive(Deserialize)]
struct SwitchCase {
    intent: String,
    value: String,
    expected: String,
}

#[test]
fn switch_table() {
    let cases: Cases<SwitchCase> = load("switch.toml");
    for c in &cases.case {
        match SandboxSwitch::parse(&c.value) {
            Ok(s) => assert_eq!(s.as_str(), c.expected, "{}", c.intent),
            Err(e) => {
                assert_eq!(c.expected, "error", "{}: unexpected error {e}", c.intent);
                assert!(
                    matches!(e.kind(), ErrorKind::InvalidSwitch { .. }),
                    "{}",
                    c.intent
                );
                let msg = e.to_string();
                assert!(
                    msg.contains("\"on\"") && msg.contains("\"off\""),
                    "{}: {msg}",
                    c.intent
                );
            }
        }
    }
}

#[test]
fn switch_flag_beats_environment() {
    let env = std::ffi::OsString::from("off");
    assert_eq!(
        SandboxSwitch::from_sources(Some("on"), Some(&env)).unwrap(),
        SandboxSwitch::On
    );
    assert_eq!(
        SandboxSwitch::from_sources(None, Some(&env)).unwrap(),
        SandboxSwitch::Off
    );
    assert_eq!(
        SandboxSwitch::from_sources(None, None).unwrap(),
        SandboxSwitch::On
    );
    assert!(SandboxSwitch::from_sources(None, Some(std::ffi::OsStr::new("maybe"))).is_err());
}

#[derive(Deserialize, Default)]
struct HostDesc {
    os: String,
    path: Option<String>,
    #[serde(default)]
    executables: Vec<String>,
    #[serde(default)]
    files: Vec<String>,
    osrelease: Option<String>,
    #[serde(default)]
    dev_kvm: bool,
    /// What bubblewrap says when the probe's trial launch fails.
    bwrap_fails: Option<String>,
    /// Whether a Landlock trial succeeds (no by default).
    #[serde(default)]
    landlock: bool,
    /// What runsc says when the probe's trial sandbox fails.
    gvisor_fails: Option<String>,
}

fn fake_host(d: &HostDesc) -> FakeHost {
    let mut host = FakeHost::new(Os::from_name(&d.os));
    if let Some(p) = &d.path {
        host.env("PATH", p);
    }
    for e in &d.executables {
        host.executable(e);
    }
    for f in &d.files {
        host.file(f);
    }
    if let Some(r) = &d.osrelease {
        host.contents("/proc/sys/kernel/osrelease", r.clone());
    }
    if d.dev_kvm {
        host.file("/dev/kvm");
    }
    if let Some(e) = &d.bwrap_fails {
        host.bubblewrap_fails(e.clone());
    }
    if d.landlock {
        host.landlock_works();
    }
    if let Some(e) = &d.gvisor_fails {
        host.gvisor_fails(e.clone());
    }
    host
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelCase {
    intent: String,
    release: String,
    version: Option<(u32, u32)>,
    name_guard: bool,
}

#[test]
fn kernel_table() {
    let cases: Cases<KernelCase> = load("kernel.toml");
    assert!(cases.case.len() >= 20);
    for c in &cases.case {
        assert_eq!(kernel_version(&c.release), c.version, "{}", c.intent);
        assert_eq!(
            kernel_runs_name_guard(&c.release),
            c.name_guard,
            "{}",
            c.intent
        );
    }
}

#[derive(Deserialize)]
struct ProbeCase {
    intent: String,
    #[serde(flatten)]
    host: HostDesc,
    available: bool,
    requires_install: Option<bool>,
    missing: Option<Vec<String>>,
    line_on: Option<String>,
    line_off: Option<String>,
    /// The hint, exactly.
    hint: Option<String>,
    platform: Option<String>,
    microvm: Option<bool>,
    /// The microvm note when available, or a part of the reason when not.
    microvm_says: Option<String>,
    filename_rules: Option<String>,
    /// The mechanism offered (`bubblewrap`, `landlock`, `seatbelt`).
    mechanism: Option<String>,
}

#[test]
fn probe_table() {
    let cases: Cases<ProbeCase> = load("probe.toml");
    for c in &cases.case {
        let host = fake_host(&c.host);
        let r = ProbeReport::probe(&host);
        let i = &c.intent;
        assert_eq!(r.native.available, c.available, "{i}");
        if let Some(m) = &c.mechanism {
            assert_eq!(
                r.native.mechanism.map(|m| m.as_str()),
                Some(m.as_str()),
                "{i}"
            );
        }
        if let Some(req) = c.requires_install {
            assert_eq!(r.native.requires_install, req, "{i}");
        }
        if let Some(m) = &c.missing {
            assert_eq!(&r.native.missing_packages, m, "{i}");
        }
        if let Some(line) = &c.line_on {
            assert_eq!(&r.startup_line(SandboxSwitch::On), line, "{i}");
        }
        if let Some(line) = &c.line_off {
            assert_eq!(&r.startup_line(SandboxSwitch::Off), line, "{i}");
        }
        if let Some(h) = &c.hint {
            assert_eq!(r.native.hint.as_ref(), Some(h), "{i}");
        }
        if let Some(p) = &c.platform {
            assert_eq!(r.platform.as_str(), p, "{i}");
        }
        if let Some(m) = c.microvm {
            assert_eq!(r.microvm.available, m, "{i}");
        }
        if let Some(says) = &c.microvm_says {
            let got = match (&r.microvm.note, &r.microvm.reason) {
                (Some(note), _) => note.clone(),
                (None, Some(reason)) => reason.clone(),
                (None, None) => String::new(),
            };
            assert!(got.contains(says.as_str()), "{i}: {got:?}");
        }
        // Nothing but a hardware VM is called one.
        assert!(!r.microvm.is_hardware_vm(), "{i}: no fake host has one");
        assert_eq!(
            r.microvm.available,
            r.microvm.note.is_some() && r.microvm.reason.is_none(),
            "{i}: note iff available"
        );
        if let Some(f) = &c.filename_rules {
            let got = match &r.native.filename_rules {
                FilenameRuleSupport::NameGuard => "name-guard",
                FilenameRuleSupport::Seatbelt => "seatbelt",
                FilenameRuleSupport::Unavailable(_) => "unavailable",
                _ => "other",
            };
            assert_eq!(got, f, "{i}");
        }
        // Invariants of every report.
        assert_eq!(
            r.native.available,
            r.native.note.is_some(),
            "{i}: note iff available"
        );
        assert_eq!(
            !r.native.available || r.native.requires_install,
            r.native.hint.is_some(),
            "{i}: hint iff unavailable or a stronger mechanism needs an install"
        );
        assert_eq!(
            r.native.requires_install,
            !r.native.missing_packages.is_empty(),
            "{i}: an install is asked for iff a package is named"
        );
        assert!(
            !r.native.missing_packages.iter().any(|m| m == "socat"),
            "{i}: socat is never required"
        );
        let line = r.startup_line(SandboxSwitch::On);
        if r.native.available {
            assert!(line.starts_with("agent sandbox ON"), "{i}");
        } else {
            assert!(
                line.starts_with("no OS-native agent sandbox on this host"),
                "{i}"
            );
            assert_eq!(
                line.contains(" bubblewrap"),
                r.native.missing_packages.iter().any(|m| m == "bubblewrap"),
                "{i}: {line}"
            );
        }
    }
}

#[derive(Deserialize)]
struct SelectionCase {
    intent: String,
    host: String,
    request: String,
    surface: String,
    switch: Option<String>,
    expected: String,
    log_contains: Option<String>,
}

fn named_host(name: &str) -> FakeHost {
    let desc = match name {
        "bwrap" => HostDesc {
            os: "linux".into(),
            path: Some("/usr/bin".into()),
            executables: vec!["/usr/bin/bwrap".into(), "/usr/bin/socat".into()],
            ..HostDesc::default()
        },
        "bare-linux" => HostDesc {
            os: "linux".into(),
            path: Some("/usr/bin".into()),
            ..HostDesc::default()
        },
        "kvm" => HostDesc {
            os: "linux".into(),
            path: Some("/usr/bin".into()),
            executables: vec![
                "/usr/bin/bwrap".into(),
                "/usr/bin/socat".into(),
                "/usr/bin/firecracker".into(),
            ],
            dev_kvm: true,
            ..HostDesc::default()
        },
        "gvisor" => HostDesc {
            os: "linux".into(),
            path: Some("/usr/bin".into()),
            executables: vec![
                "/usr/bin/bwrap".into(),
                "/usr/bin/socat".into(),
                "/usr/bin/runsc".into(),
            ],
            ..HostDesc::default()
        },
        "windows" => HostDesc {
            os: "windows".into(),
            ..HostDesc::default()
        },
        other => panic!("unknown host {other}"),
    };
    fake_host(&desc)
}

#[test]
fn selection_table() {
    let cases: Cases<SelectionCase> = load("selection.toml");
    for c in &cases.case {
        let i = &c.intent;
        let report = ProbeReport::probe(&named_host(&c.host));
        let request = match c.request.as_str() {
            "unspecified" => BackendRequest::Unspecified,
            name => BackendRequest::Explicit(SandboxBackend::from_name(Some(name))),
        };
        let surface = match c.surface.as_str() {
            "dispatch" => Surface::Dispatch,
            "terminal" => Surface::Terminal,
            "station" => Surface::Station,
            other => panic!("{other}"),
        };
        let switch = SandboxSwitch::parse(c.switch.as_deref().unwrap_or("on")).unwrap();
        match (
            select_backend(request, switch, surface, &report),
            c.expected.strip_prefix("error:"),
        ) {
            (Ok(sel), None) => {
                assert_eq!(sel.backend.as_str(), c.expected, "{i}");
                let label = match (sel.backend, report.microvm.kind) {
                    (SandboxBackend::Microvm, Some(kind)) => microvm_label(kind),
                    (b, _) => backend_label(b),
                };
                assert_eq!(sel.label, label, "{i}");
                if sel.backend == SandboxBackend::Microvm && !report.microvm.is_hardware_vm() {
                    assert!(
                        sel.label.contains("not a hardware VM"),
                        "{i}: {}",
                        sel.label
                    );
                }
                if let Some(want) = &c.log_contains {
                    let log = sel.log_line.unwrap_or_default();
                    assert!(log.contains(want.as_str()), "{i}: log {log:?}");
                }
                if let BackendRequest::Explicit(b) = request {
                    assert_eq!(sel.backend, b, "{i}: an explicit request is never changed");
                }
            }
            (Err(e), Some(kind)) => {
                let ok = match kind {
                    "microvm" => matches!(e.kind(), ErrorKind::MicrovmUnavailable { .. }),
                    "native" => matches!(e.kind(), ErrorKind::NativeUnavailable { .. }),
                    _ => false,
                };
                assert!(ok, "{i}: wrong error {e}");
            }
            (got, _) => panic!("{i}: got {got:?}, expected {}", c.expected),
        }
    }
}

#[derive(Deserialize)]
struct PathCase {
    intent: String,
    home: String,
    #[serde(default)]
    symlinks: Vec<(String, String)>,
    #[serde(default)]
    files: Vec<String>,
    entries: Vec<String>,
    expected: Option<Vec<String>>,
    error: Option<String>,
}

#[test]
fn paths_table() {
    let cases: Cases<PathCase> = load("paths.toml");
    for c in &cases.case {
        let i = &c.intent;
        let mut host = FakeHost::new(Os::Linux);
        for (link, target) in &c.symlinks {
            host.symlink(link, target);
        }
        for f in &c.files {
            host.file(f);
        }
        match (
            PathSet::resolve(&c.entries, Path::new(&c.home), &host),
            &c.error,
        ) {
            (Ok(set), None) => assert_eq!(Some(set.spellings()), c.expected, "{i}"),
            (Err(e), Some(kind)) => {
                let ok = match kind.as_str() {
                    "widens" => matches!(e.kind(), ErrorKind::WidensScope { .. }),
                    "invalid" => matches!(e.kind(), ErrorKind::InvalidPath { .. }),
                    "tilde" => matches!(e.kind(), ErrorKind::UnsupportedTilde { .. }),
                    _ => false,
                };
                assert!(ok, "{i}: wrong error {e}");
            }
            (got, _) => panic!("{i}: got {got:?}"),
        }
    }
}

#[derive(Deserialize)]
struct StateTable {
    allowed: Vec<(String, String)>,
}

#[test]
fn state_table() {
    let table: StateTable = load("state.toml");
    for from in SandboxState::ALL {
        for to in SandboxState::ALL {
            let listed = table
                .allowed
                .iter()
                .any(|(f, t)| f == from.as_str() && t == to.as_str());
            assert_eq!(from.can_transition_to(to), listed, "{from} -> {to}");
            let mut handle = SandboxHandle::new("s", SandboxBackend::None);
            handle.state = from;
            let result = handle.transition(to);
            assert_eq!(result.is_ok(), listed, "{from} -> {to}");
            assert_eq!(
                handle.state,
                if listed { to } else { from },
                "state unchanged on error"
            );
        }
    }
    for to in SandboxState::ALL {
        assert!(
            !SandboxState::Destroyed.can_transition_to(to),
            "nothing leaves destroyed"
        );
        if to == SandboxState::Error {
            for from in SandboxState::ALL {
                assert_eq!(
                    from.can_transition_to(to),
                    from == SandboxState::Created,
                    "error only from created"
                );
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InvocationCase {
    intent: String,
    args: Vec<String>,
    report_fd: Option<i32>,
    updates_fd: Option<i32>,
    notify_fd: Option<i32>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    sockets: Vec<String>,
    #[serde(default)]
    state_dirs: Vec<String>,
    #[serde(default)]
    tool_dirs: Vec<String>,
    #[serde(default)]
    keep_capabilities: Vec<String>,
    #[serde(default)]
    command: Vec<String>,
    /// The host confinement after `--landlock`, when the line has one.
    landlock: Option<HostCase>,
    error: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HostCase {
    #[serde(default)]
    write: Vec<String>,
    #[serde(default)]
    read_deny: Vec<String>,
    #[serde(default)]
    read_again: Vec<String>,
    #[serde(default)]
    protect: Vec<String>,
    #[serde(default)]
    tcp: Vec<u16>,
}

/// The variant's name, as the table writes it.
fn problem_name(p: &InvocationProblem) -> &'static str {
    match p {
        InvocationProblem::MissingValue { .. } => "MissingValue",
        InvocationProblem::RepeatedReportFd => "RepeatedReportFd",
        InvocationProblem::BadReportFd { .. } => "BadReportFd",
        InvocationProblem::RepeatedUpdatesFd => "RepeatedUpdatesFd",
        InvocationProblem::BadUpdatesFd { .. } => "BadUpdatesFd",
        InvocationProblem::RepeatedNotifyFd => "RepeatedNotifyFd",
        InvocationProblem::BadNotifyFd { .. } => "BadNotifyFd",
        InvocationProblem::UnexpectedArgument { .. } => "UnexpectedArgument",
        InvocationProblem::GlobNotUtf8 { .. } => "GlobNotUtf8",
        InvocationProblem::TooManyGlobs { .. } => "TooManyGlobs",
        InvocationProblem::NoCommand => "NoCommand",
        InvocationProblem::TooManyCommandArgs { .. } => "TooManyCommandArgs",
        InvocationProblem::ArgumentTooLong { .. } => "ArgumentTooLong",
        InvocationProblem::NulByte { .. } => "NulByte",
        InvocationProblem::RelativeSocketPath { .. } => "RelativeSocketPath",
        InvocationProblem::TooManySockets { .. } => "TooManySockets",
        InvocationProblem::RelativePath { .. } => "RelativePath",
        InvocationProblem::NeedsLandlock { .. } => "NeedsLandlock",
        InvocationProblem::RepeatedLandlock => "RepeatedLandlock",
        InvocationProblem::TooManyValues { .. } => "TooManyValues",
        InvocationProblem::BadPort { .. } => "BadPort",
        InvocationProblem::RelativeStateDir { .. } => "RelativeStateDir",
        InvocationProblem::CapabilityNotKeepable { .. } => "CapabilityNotKeepable",
        InvocationProblem::TooManyStateDirs { .. } => "TooManyStateDirs",
        InvocationProblem::BadToolDir { .. } => "BadToolDir",
        InvocationProblem::TooManyToolDirs { .. } => "TooManyToolDirs",
        _ => "unknown",
    }
}

#[test]
fn name_guard_invocation_table() {
    let cases: Cases<InvocationCase> = load("name_guard_invocation.toml");
    for c in &cases.case {
        let got = NameGuardInvocation::parse(&c.args);
        match (&c.error, got) {
            (None, Ok(inv)) => {
                let want = NameGuardInvocation {
                    report_fd: c.report_fd,
                    updates_fd: c.updates_fd,
                    notify_fd: c.notify_fd,
                    deny_globs: c.deny.clone(),
                    unix_sockets: c.sockets.iter().map(Into::into).collect(),
                    state_dirs: c.state_dirs.iter().map(Into::into).collect(),
                    tool_dirs: c.tool_dirs.iter().map(Into::into).collect(),
                    keep_capabilities: c.keep_capabilities.clone(),
                    host: c.landlock.as_ref().map(|h| {
                        let os = |v: &Vec<String>| v.iter().map(Into::into).collect();
                        sandbox_core::HostConfinement {
                            writable: os(&h.write),
                            read_deny: os(&h.read_deny),
                            read_again: os(&h.read_again),
                            protect: os(&h.protect),
                            tcp_ports: h.tcp.clone(),
                        }
                    }),
                    command: c.command.iter().map(Into::into).collect(),
                };
                assert_eq!(inv, want, "{}", c.intent);
                // What the plan would build from it parses back the same.
                assert_eq!(
                    NameGuardInvocation::parse(inv.to_args()).as_ref(),
                    Ok(&want),
                    "{}",
                    c.intent
                );
            }
            (Some(name), Err(e)) => {
                let ErrorKind::NameGuardInvocation(p) = e.kind() else {
                    panic!("{}: another error kind: {e}", c.intent);
                };
                assert_eq!(problem_name(p), name, "{}: {e}", c.intent);
                // The message says what to do.
                assert!(e.to_string().contains("usage: name-guard-exec"), "{e}");
            }
            (None, Err(e)) => panic!("{}: refused: {e}", c.intent),
            (Some(name), Ok(inv)) => panic!("{}: accepted {inv:?}, want {name}", c.intent),
        }
    }
}

#[derive(Deserialize)]
struct VmWireBody {
    intent: String,
    direction: String,
    hex: String,
    error: Option<String>,
}

#[derive(Deserialize)]
struct VmWireTable {
    valid: Vec<VmWireBody>,
    case: Vec<VmWireBody>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The kind of a refusal, as the table names it.
fn wire_error_kind(e: &vm_wire::WireError) -> &'static str {
    match e {
        vm_wire::WireError::TooLong { .. } => "TooLong",
        vm_wire::WireError::Truncated => "Truncated",
        vm_wire::WireError::Trailing => "Trailing",
        vm_wire::WireError::UnknownTag(_) => "UnknownTag",
        vm_wire::WireError::TooMany => "TooMany",
        vm_wire::WireError::BadString => "BadString",
        _ => "other",
    }
}

fn decode_vm(direction: &str, body: &[u8]) -> Result<(), vm_wire::WireError> {
    match direction {
        "to_guest" => vm_wire::ToGuest::decode(body).map(|_| ()),
        "from_guest" => vm_wire::FromGuest::decode(body).map(|_| ()),
        d => panic!("unknown direction {d}"),
    }
}

#[test]
fn vm_wire_table() {
    let t: VmWireTable = load("vm_wire.toml");
    for c in &t.valid {
        assert!(
            decode_vm(&c.direction, &unhex(&c.hex)).is_ok(),
            "{}",
            c.intent
        );
    }
    for c in &t.case {
        let got = decode_vm(&c.direction, &unhex(&c.hex));
        let want = c.error.as_deref().unwrap_or("an error");
        match got {
            Ok(()) => panic!("{}: decoded, expected {want}", c.intent),
            Err(e) => assert_eq!(wire_error_kind(&e), want, "{}", c.intent),
        }
    }
}
