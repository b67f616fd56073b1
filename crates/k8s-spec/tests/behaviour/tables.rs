//! Loads `testdata/render.toml` and `testdata/refusals.toml`: spec and
//! profile in, the rendered objects' significant fields (or the error
//! kind) out.

use crate::invariants;
use k8s_spec::{
    ClusterProfile, Error, ErrorKind, FilenameRules, KernelBoundary, OperatingMode, Placement,
    Runtime, VolumeSource, Workload, render,
};
use sandbox_core::{Limits, SandboxSpec};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Settings {
    spec: String,
    namespace: Option<String>,
    runtime: Option<String>,
    runtime_class_name: Option<String>,
    opt_outs: Vec<String>,
    placement: Option<String>,
    volumes: Vec<Vec<String>>,
    command: Vec<String>,
    memory: Option<u64>,
    cpus: Option<u32>,
    pids: Option<u32>,
    node_pids_limit: Option<u32>,
    suspended: bool,
    env: Vec<(String, String)>,
    deny: Vec<String>,
    allow_cidr: Vec<String>,
    no_baseline: bool,
    home: Option<String>,
    user: Option<(u32, u32)>,
    credential: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Is {
    at: String,
    is: toml::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Has {
    at: String,
    item: toml::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenderCase {
    intent: String,
    #[serde(flatten)]
    settings: Settings,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    expect: Vec<Is>,
    #[serde(default)]
    has: Vec<Has>,
    #[serde(default)]
    lacks: Vec<Has>,
    #[serde(default)]
    absent: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorCase {
    intent: String,
    #[serde(flatten)]
    settings: Settings,
    error: String,
}

#[derive(Deserialize)]
struct File<T> {
    case: Vec<T>,
}

fn load<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str::<File<T>>(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .case
}

/// Renders what a row describes. Mounts and runner state directories the
/// row gives no volume for get a claim each (`claim-N`).
pub(crate) fn run(s: &Settings) -> Result<(Vec<Value>, bool), Error> {
    let spec: SandboxSpec = serde_json::from_str(&s.spec).unwrap();
    let mut p = ClusterProfile::builder();
    if let Some(ns) = &s.namespace {
        p.namespace(ns);
    }
    if let Some(r) = &s.runtime {
        p.runtime(match r.as_str() {
            "gvisor" => Runtime::Gvisor,
            "kata" => Runtime::Kata,
            "cluster-default" => Runtime::ClusterDefault,
            other => panic!("runtime {other}"),
        });
    }
    if let Some(n) = &s.runtime_class_name {
        p.runtime_class_name(n);
    }
    for o in &s.opt_outs {
        match o.as_str() {
            "shared-host-kernel" => p.kernel_boundary(KernelBoundary::OptOutSharedHostKernel),
            "filename-rules" => p.filename_rules(FilenameRules::OptOutUnenforced),
            other => panic!("opt-out {other}"),
        };
    }
    if let Some(pl) = &s.placement {
        p.placement(match pl.as_str() {
            "pod" => Placement::Pod,
            "sandbox" => Placement::Sandbox,
            "template" => Placement::SandboxTemplate,
            other => panic!("placement {other}"),
        });
    }
    let mut host_path = false;
    let mut given: Vec<&str> = Vec::new();
    for v in &s.volumes {
        let source = match v[1].as_str() {
            "pvc" => VolumeSource::PersistentVolumeClaim {
                claim: v[2].clone(),
            },
            "fill" => VolumeSource::EmptyDirFilledBy {
                image: v[2].clone(),
                command: v[3..].to_vec(),
            },
            "host" => {
                host_path = true;
                VolumeSource::OptOutHostPath { path: v[2].clone() }
            }
            "none" => continue,
            other => panic!("volume {other}"),
        };
        given.push(&v[0]);
        p.volume(&v[0], source);
    }
    let skipped: Vec<&str> = s
        .volumes
        .iter()
        .filter(|v| v[1] == "none")
        .map(|v| v[0].as_str())
        .collect();
    let hosts = spec
        .bind_mounts
        .iter()
        .map(|m| m.host_path.as_str())
        .chain(spec.runner_state_dirs.iter().map(String::as_str));
    for (i, h) in hosts.enumerate() {
        if !given.contains(&h) && !skipped.contains(&h) {
            p.volume(
                h,
                VolumeSource::PersistentVolumeClaim {
                    claim: format!("claim-{i}"),
                },
            );
        }
    }
    if let Some(n) = s.node_pids_limit {
        p.node_pids_limit(n);
    }
    for d in &s.deny {
        p.deny(d);
    }
    for c in &s.allow_cidr {
        p.allow_cidr(c);
    }
    if s.no_baseline {
        p.no_baseline();
    }
    if let Some(h) = &s.home {
        p.home(h);
    }
    if let Some((u, g)) = s.user {
        p.user(u, g);
    }
    let profile = p.build()?;
    let command = if s.command.is_empty() {
        vec!["agent".to_owned()]
    } else {
        s.command.clone()
    };
    let mut w = Workload::new(command, "s3cret");
    w.limits(Limits {
        memory_bytes: s.memory,
        max_processes: s.pids,
        cpu_millis: s.cpus,
    });
    for (n, v) in &s.env {
        w.env(n, v);
    }
    if s.suspended {
        w.operating_mode(OperatingMode::Suspended);
    }
    if s.credential {
        w.credential(k8s_spec::LentCredential::new(["api.github.com"]));
    }
    Ok((render(&spec, &profile, &w)?, host_path))
}

/// The value at `sel/pointer`: `agent` is the agent's pod spec wherever it
/// was placed, `agent-object` the object holding it, `egress` the egress
/// pod's spec; `service`, `secret`, `agent-policy`, `egress-policy`,
/// `pool`, `claim` the objects.
fn at<'a>(objects: &'a [Value], path: &str) -> Option<&'a Value> {
    let (sel, rest) = path.split_once('/').unwrap_or((path, ""));
    let base: &Value = match sel {
        "agent" => invariants::agent_pod(objects),
        "agent-object" => objects
            .iter()
            .find(|o| {
                o["metadata"]["labels"][k8s_spec::LABEL_ROLE] == "agent"
                    && ["Pod", "Sandbox", "SandboxTemplate"].contains(&o["kind"].as_str().unwrap())
            })
            .unwrap(),
        "egress" => &invariants::find(objects, "Pod", "egress")["spec"],
        "service" => invariants::find(objects, "Service", "egress"),
        "secret" => invariants::find(objects, "Secret", "egress"),
        "agent-policy" => invariants::find(objects, "NetworkPolicy", "agent"),
        "egress-policy" => invariants::find(objects, "NetworkPolicy", "egress"),
        "claim" => invariants::find(objects, "SandboxClaim", "agent"),
        "pool" => invariants::find(objects, "SandboxWarmPool", "agent"),
        other => panic!("selector {other}"),
    };
    if rest.is_empty() {
        Some(base)
    } else {
        base.pointer(&format!("/{rest}"))
    }
}

fn json(v: &toml::Value) -> Value {
    serde_json::to_value(v).unwrap()
}

/// The error kind's name.
pub(crate) fn kind_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Spec(_) => "Spec",
        ErrorKind::InvalidValue { .. } => "InvalidValue",
        ErrorKind::NoKernelBoundary => "NoKernelBoundary",
        ErrorKind::NoVolumeSource { .. } => "NoVolumeSource",
        ErrorKind::SecretPath { .. } => "SecretPath",
        ErrorKind::ReservedPath { .. } => "ReservedPath",
        ErrorKind::FilenameRulesUnenforceable { .. } => "FilenameRulesUnenforceable",
        ErrorKind::PidsLimit { .. } => "PidsLimit",
        ErrorKind::InvalidLimit { .. } => "InvalidLimit",
        ErrorKind::InvalidCommand { .. } => "InvalidCommand",
        ErrorKind::SuspendNeedsSandbox => "SuspendNeedsSandbox",
        ErrorKind::CredentialLending => "CredentialLending",
        _ => "unknown",
    }
}

#[test]
fn render_table() {
    let cases: Vec<RenderCase> = load("render.toml");
    assert!(cases.len() >= 20, "{}", cases.len());
    for case in cases {
        let intent = &case.intent;
        let (objects, host_path) = run(&case.settings).unwrap_or_else(|e| panic!("{intent}: {e}"));
        invariants::check_all(&objects, host_path).unwrap_or_else(|e| panic!("{intent}: {e}"));
        if !case.kinds.is_empty() {
            let kinds: Vec<&str> = objects
                .iter()
                .map(|o| o["kind"].as_str().unwrap())
                .collect();
            assert_eq!(kinds, case.kinds, "{intent}");
        }
        for e in &case.expect {
            let got =
                at(&objects, &e.at).unwrap_or_else(|| panic!("{intent}: nothing at {}", e.at));
            assert_eq!(got, &json(&e.is), "{intent}: {}", e.at);
        }
        for h in &case.has {
            let got =
                at(&objects, &h.at).unwrap_or_else(|| panic!("{intent}: nothing at {}", h.at));
            assert!(
                got.as_array().unwrap().contains(&json(&h.item)),
                "{intent}: {} lacks {}\n{got:#}",
                h.at,
                json(&h.item)
            );
        }
        for h in &case.lacks {
            if let Some(got) = at(&objects, &h.at) {
                assert!(
                    !got.as_array().unwrap().contains(&json(&h.item)),
                    "{intent}: {} holds {}",
                    h.at,
                    json(&h.item)
                );
            }
        }
        for a in &case.absent {
            let got = at(&objects, a);
            assert!(
                got.is_none() || got == Some(&Value::Null),
                "{intent}: {a} is {got:?}"
            );
        }
    }
}

#[test]
fn refusal_table() {
    let cases: Vec<ErrorCase> = load("refusals.toml");
    assert!(cases.len() >= 15, "{}", cases.len());
    for case in cases {
        let err = match run(&case.settings) {
            Ok(_) => panic!("{}: rendered", case.intent),
            Err(e) => e,
        };
        assert_eq!(kind_name(err.kind()), case.error, "{}: {err}", case.intent);
        assert!(err.to_string().len() > 20, "{}", case.intent);
    }
}
