//! `k8s-render [OPTIONS] [-- CMD ARGS]`: one run as Kubernetes objects, one
//! `List` on stdout for `kubectl apply -f -`.
//!
//! The flags that `agent-run` has mean the same here (`--allow`, `--deny`,
//! `--no-baseline`, `--allow-cidr`, `--network`, `--mode`, `--mount`,
//! `--protect`, `--workdir`, `--memory`, `--pids`, `--cpus`,
//! `--no-filename-rules`); the others place the run on a cluster. With no
//! flags it renders the default profile: runtime class gvisor, the default
//! image names, a fresh session id, and the workspace (`/workspace`) as a
//! PersistentVolumeClaim named after the session, in review mode (gVisor
//! cannot hold the filename rules of a writable workspace).

use clap::Parser;
use k8s_spec::{
    ClusterProfile, FilenameRules, KernelBoundary, OperatingMode, Placement, Runtime, VolumeSource,
    Workload,
};
use sandbox_core::{Access, Limits, Mode, SandboxBindMount, SandboxSpec};
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
Renders one run as Kubernetes objects and prints them as one List for `kubectl apply -f -`: \
the session's proxy Secret, the egress Service, two NetworkPolicies (the agent pod reaches only \
the egress pod's proxy ports; the egress pod only public addresses and the cluster DNS), the \
egress pod running egress-proxy, and the agent as a Pod, an agent-sandbox Sandbox, or a \
SandboxTemplate with a warm pool and a claim.

The agent pod meets the restricted Pod Security Standard, runs under the runtime class of \
--runtime, and sees only the --mount paths, each from a PersistentVolumeClaim (named after the \
session unless --claim names one) or, explicitly, a node directory (--host-path-volume). \
A spec that cannot be rendered with its single-host meaning is refused (exit 2), never rendered \
weaker: writable mounts under gVisor need --runtime kata or --no-filename-rules.

With no flags: runtime class gvisor, the default images, a fresh session id, the workspace \
/workspace as a claim named after the session, read-only (review mode), and `sleep infinity` \
as the command.";

#[derive(Debug, Parser)]
#[command(
    name = "k8s-render",
    version,
    about = "Render one run as Kubernetes objects (one List for kubectl apply -f -)",
    long_about = LONG_ABOUT,
    args_override_self = true,
    max_term_width = 100
)]
struct Cli {
    /// Let the command reach this host through the egress proxy (the forms of agent-run
    /// --allow); repeat for more.
    #[arg(long, value_name = "ENTRY")]
    allow: Vec<String>,
    /// Refuse this host even where --allow or the baseline lets it through; repeat for more.
    #[arg(long, value_name = "ENTRY")]
    deny: Vec<String>,
    /// Start from an empty allowlist instead of the baseline sets.
    #[arg(long)]
    no_baseline: bool,
    /// Let the egress proxy reach this private or local range (the egress pod's NetworkPolicy
    /// still refuses private, link-local and metadata ranges); repeat for more.
    #[arg(long, value_name = "CIDR")]
    allow_cidr: Vec<String>,
    /// Drop the filename rules (no new .env, *.key, *.pem inside writable mounts): the explicit
    /// opt-out.
    #[arg(long)]
    no_filename_rules: bool,
    /// Whether the command has any network at all (through the egress proxy).
    #[arg(long, value_name = "on|off", value_parser = on_off, default_value = "on", action = clap::ArgAction::Set)]
    network: bool,
    /// The dispatch mode: chat keeps mounts writable; review, plan and orchestrate make every
    /// mount read-only (default review here; see above).
    #[arg(long, value_name = "chat|review|plan|orchestrate", value_parser = mode, default_value = "review")]
    mode: Mode,
    /// Mount PATH into the agent pod at the same place, writable, or read-only with :ro; repeat
    /// for more (default /workspace).
    #[arg(long, value_name = "PATH[:ro]", value_parser = mount)]
    mount: Vec<(String, Access)>,
    /// Keep PATH inside a writable mount from being written; repeat for more.
    #[arg(long, value_name = "PATH")]
    protect: Vec<String>,
    /// The command's working directory (default: the first mount).
    #[arg(long, value_name = "DIR")]
    workdir: Option<String>,
    /// The agent container's memory limit (bytes, or with a K, M or G suffix).
    #[arg(long, value_name = "BYTES", value_parser = bytes)]
    memory: Option<u64>,
    /// At most this many processes and threads: rendered only when --node-pids-limit says the
    /// nodes hold at least as strict a limit.
    #[arg(long, value_name = "N")]
    pids: Option<u32>,
    /// At most this much CPU (1.5 is one and a half CPUs).
    #[arg(long, value_name = "N", value_parser = cpus)]
    cpus: Option<u32>,
    /// The session id (1 to 40 of [a-z0-9-]; default a fresh one): it names every object.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The namespace of every object.
    #[arg(long, value_name = "NAME", default_value = "default")]
    namespace: String,
    /// The runtime class: gvisor, kata, or runc (the cluster's default runtime, which shares the
    /// node's kernel: only with --shared-host-kernel).
    #[arg(long, value_name = "gvisor|kata|runc", value_parser = runtime, default_value = "gvisor")]
    runtime: Runtime,
    /// The cluster's name of the runtime class, when it is not gvisor or kata.
    #[arg(long, value_name = "NAME")]
    runtime_class_name: Option<String>,
    /// Accept --runtime runc, whose pods share the node's kernel: the explicit opt-out.
    #[arg(long)]
    shared_host_kernel: bool,
    /// How the agent pod is placed: a plain pod, an agent-sandbox Sandbox, or a SandboxTemplate
    /// with an empty warm pool and a claim.
    #[arg(long, value_name = "pod|sandbox|template", value_parser = placement, default_value = "pod")]
    placement: Placement,
    /// Render the Sandbox suspended (operatingMode Suspended; needs --placement sandbox).
    #[arg(long)]
    suspended: bool,
    /// The agent container's image.
    #[arg(long, value_name = "IMAGE")]
    agent_image: Option<String>,
    /// The egress pod's image (holding egress-proxy).
    #[arg(long, value_name = "IMAGE")]
    egress_image: Option<String>,
    /// Take the --mount PATH from this PersistentVolumeClaim (PATH=CLAIM); repeat for more.
    #[arg(long, value_name = "PATH=CLAIM", value_parser = pair)]
    claim: Vec<(String, String)>,
    /// Take the --mount PATH from this directory of the node (PATH=NODE_PATH): the explicit
    /// opt-out, which fails the restricted standard; repeat for more.
    #[arg(long, value_name = "PATH=NODE_PATH", value_parser = pair)]
    host_path_volume: Vec<(String, String)>,
    /// The nodes' kubelet podPidsLimit, if the cluster sets one.
    #[arg(long, value_name = "N")]
    node_pids_limit: Option<u32>,
    /// The proxies' secret (default a fresh one); it goes into the session's Secret.
    #[arg(long, value_name = "SECRET")]
    proxy_secret: Option<String>,
    /// The command and its arguments, after `--` (default sleep infinity).
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

fn on_off(v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err("give on or off".into()),
    }
}

fn mode(v: &str) -> Result<Mode, String> {
    Mode::from_name(v).ok_or_else(|| "give chat, review, plan or orchestrate".into())
}

fn mount(v: &str) -> Result<(String, Access), String> {
    let (path, access) = match v.strip_suffix(":ro") {
        Some(p) => (p, Access::ReadOnly),
        None => (v, Access::ReadWrite),
    };
    if !path.starts_with('/') {
        return Err("give an absolute path, with :ro for a read-only mount".into());
    }
    Ok((path.to_owned(), access))
}

fn pair(v: &str) -> Result<(String, String), String> {
    v.split_once('=')
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .ok_or_else(|| "give PATH=VALUE".into())
}

fn bytes(v: &str) -> Result<u64, String> {
    let bad = || "give bytes with an optional K, M or G suffix, such as 512M".to_owned();
    let (digits, shift) = match v.as_bytes().last() {
        Some(b'K' | b'k') => (&v[..v.len() - 1], 10),
        Some(b'M' | b'm') => (&v[..v.len() - 1], 20),
        Some(b'G' | b'g') => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

fn cpus(v: &str) -> Result<u32, String> {
    let cpus: f64 = v
        .parse()
        .ok()
        .filter(|c: &f64| c.is_finite() && *c > 0.0 && *c <= 1024.0)
        .ok_or("give a number of CPUs above 0, such as 2 or 0.5")?;
    Ok(((cpus * 1000.0).round() as u32).max(1))
}

fn runtime(v: &str) -> Result<Runtime, String> {
    match v {
        "gvisor" => Ok(Runtime::Gvisor),
        "kata" => Ok(Runtime::Kata),
        "runc" => Ok(Runtime::ClusterDefault),
        _ => Err("give gvisor, kata or runc".into()),
    }
}

fn placement(v: &str) -> Result<Placement, String> {
    match v {
        "pod" => Ok(Placement::Pod),
        "sandbox" => Ok(Placement::Sandbox),
        "template" => Ok(Placement::SandboxTemplate),
        _ => Err("give pod, sandbox or template".into()),
    }
}

/// A fresh secret from the operating system's random source.
fn fresh() -> Result<String, String> {
    connect_proxy::ProxyCredentials::generate_from_os_rng()
        .map(|c| c.reveal_secret().to_owned())
        .map_err(|e| e.to_string())
}

fn render(c: Cli) -> Result<String, String> {
    let session = match c.session {
        Some(s) => s,
        None => format!("s-{}", &fresh()?[..10]),
    };
    let mut spec = SandboxSpec::new(session.clone(), session.clone());
    spec.mode = c.mode;
    spec.network_enabled = c.network;
    spec.egress_allowlist = c.allow;
    spec.protected_paths = c.protect;
    let mounts = if c.mount.is_empty() {
        vec![("/workspace".to_owned(), Access::ReadWrite)]
    } else {
        c.mount
    };
    let mut profile = ClusterProfile::builder();
    profile
        .namespace(c.namespace)
        .runtime(c.runtime)
        .placement(c.placement);
    for (i, (path, access)) in mounts.iter().enumerate() {
        spec.bind_mounts
            .push(SandboxBindMount::new(path.clone(), *access).map_err(|e| e.to_string())?);
        let source = if let Some((_, node)) = c.host_path_volume.iter().find(|(p, _)| p == path) {
            VolumeSource::OptOutHostPath { path: node.clone() }
        } else if let Some((_, claim)) = c.claim.iter().find(|(p, _)| p == path) {
            VolumeSource::PersistentVolumeClaim {
                claim: claim.clone(),
            }
        } else if i == 0 {
            VolumeSource::PersistentVolumeClaim {
                claim: format!("sbx-{session}-workspace"),
            }
        } else {
            VolumeSource::PersistentVolumeClaim {
                claim: format!("sbx-{session}-mount-{i}"),
            }
        };
        profile.volume(path.clone(), source);
    }
    for (path, _) in c.claim.iter().chain(&c.host_path_volume) {
        if !mounts.iter().any(|(m, _)| m == path) {
            return Err(format!("{path} is given a volume but is not a --mount"));
        }
    }
    spec.guest_workdir = Some(c.workdir.unwrap_or_else(|| mounts[0].0.clone()));
    if let Some(n) = c.runtime_class_name {
        profile.runtime_class_name(n);
    }
    if c.shared_host_kernel {
        profile.kernel_boundary(KernelBoundary::OptOutSharedHostKernel);
    }
    if c.no_filename_rules {
        profile.filename_rules(FilenameRules::OptOutUnenforced);
    }
    if let Some(i) = c.agent_image {
        profile.agent_image(i);
    }
    if let Some(i) = c.egress_image {
        profile.egress_image(i);
    }
    for d in c.deny {
        profile.deny(d);
    }
    for cidr in c.allow_cidr {
        profile.allow_cidr(cidr);
    }
    if c.no_baseline {
        profile.no_baseline();
    }
    if let Some(n) = c.node_pids_limit {
        profile.node_pids_limit(n);
    }
    let profile = profile.build().map_err(|e| e.to_string())?;
    let command = if c.command.is_empty() {
        vec!["sleep".to_owned(), "infinity".to_owned()]
    } else {
        c.command
    };
    let secret = match c.proxy_secret {
        Some(s) => s,
        None => fresh()?,
    };
    let mut workload = Workload::new(command, secret);
    workload.limits(Limits {
        memory_bytes: c.memory,
        max_processes: c.pids,
        cpu_millis: c.cpus,
    });
    if c.suspended {
        workload.operating_mode(OperatingMode::Suspended);
    }
    let list = k8s_spec::render_list(&spec, &profile, &workload).map_err(|e| e.to_string())?;
    serde_json::to_string_pretty(&list).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    match render(Cli::parse()) {
        Ok(json) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{json}").and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("k8s-render: writing the list: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("k8s-render: {e}");
            ExitCode::from(2)
        }
    }
}
