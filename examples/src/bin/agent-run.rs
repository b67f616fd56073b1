//! `agent-run [OPTIONS] -- CMD [ARG...]`: runs CMD confined by the native
//! sandbox, reaching the network only through the session's proxies.
//!
//! Prints the probe line and the backend actually used on stderr, passes
//! CMD's stdout and stderr through, prints each violation on stderr as
//! `violation: ACTION TARGET`, and exits with CMD's status (128+signal when
//! killed, 124 when `--timeout SECS` ran out, 137 when `--memory` did).
//! At exit one line on stderr counts the violations by action
//! (`agent-run: violations: network-outbound 2, file-write-create 1`, or
//! `agent-run: no violations`). `--events json:FD` (a descriptor of 3 or
//! above it was started with) or `--events json=FILE` (created or
//! truncated) also writes every event, output included, as one JSON object
//! per line: the serde form of `SandboxEvent`, from `starting` to `exit`.
//! Stdin passes through to CMD when it is not a terminal. When it is, CMD
//! runs on a terminal of its own inside the sandbox (never this one): this
//! terminal goes to raw mode (restored on every exit), keys and Ctrl-C go
//! to CMD's foreground job, and resizes follow (on Unix; on Windows CMD
//! always runs with this program's stdin piped to it and no terminal).
//! `--memory`,
//! `--pids` and `--cpus` limit CMD through a cgroup; where none can be
//! made, the run is refused.
//!
//! Filename rules (no new `.env`, `*.key`, `*.pem` inside writable mounts)
//! are enforced by the name guard, which is this same program: bound
//! read-only into the sandbox and started there with [`GUARD_MARKER`] as
//! its first argument, it becomes `name-guard-exec`. `--no-name-guard`
//! leaves the guard out (a launch with writable mounts is then refused), and
//! `--no-filename-rules` is the explicit opt-out that drops those rules.
//!
//! On a host without a native sandbox it refuses to run CMD, naming the
//! packages to install; `--backend none` or `--sandbox off` is the explicit
//! way to run it unconfined.

use agent_sandbox::{BrokerSettings, FilenameRules, ManagerBuilder, NameGuardLauncher, next_event};
use agent_sandbox_examples::{EventLog, EventsTo, ViolationTally};
use connect_proxy::{Cidr, IpPolicy};
use cred_broker::HeaderTemplate;
use sandbox_core::{
    Access, BackendRequest, CommandControl, DynSandboxPort, KillReason, Limits, Mode, OutputSink,
    PtySize, SANDBOX_SWITCH_ENV, SandboxBackend, SandboxBindMount, SandboxCommand, SandboxEvent,
    SandboxSpec, SandboxSwitch, Stdin, Stdout, Surface, probe_ambient,
};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The first argument that makes this program the name guard's launcher.
const GUARD_MARKER: &str = "--as-name-guard-exec";

const USAGE: &str = "usage: agent-run [--settings FILE] [--allow ENTRY]... [--allow-cidr CIDR]... [--no-filename-rules] [--no-name-guard] \
[--network on|off] [--mode chat|review|plan|orchestrate] [--mount PATH[:ro]]... [--protect PATH]... \
[--workdir DIR] [--timeout SECS] [--memory BYTES[K|M|G]] [--pids N] [--cpus N] [--sandbox on|off] [--backend native|none|microvm] [--terminal] \
[--events json:FD|json=FILE] [--allow-unix-socket PATH]... [--allow-root-equivalent-unix-socket PATH]... \
[--broker HOST]... [--broker-rules FILE] [--broker-credential-env NAME] \
[--broker-template bearer|token|git-basic|header:NAME] [--broker-phantom-env NAME]... [--broker-port PORT]... \
[--broker-push-rule FILE] [--upstream-ca FILE]... \
-- CMD [ARG...]

  --settings FILE                read flags from a TOML file, one key per flag without its dashes
                                 (allow-cidr = [\"10.0.0.0/8\"], no-filename-rules = true); flags given
                                 here win over single values, lists add up
  --allow-unix-socket PATH       let the command connect to the Unix socket PATH (absolute; that socket alone
                                 is bound in, and SSH_AUTH_SOCK passes when it names it)
  --allow-root-equivalent-unix-socket PATH
                                 the same for a socket that gives control of the host (Docker, containerd,
                                 the system bus): refused by --allow-unix-socket, warned about here
  --events json:FD|json=FILE     write every event as one JSON object per line to descriptor FD (3 or above,
                                 e.g. json:3 with 3>events.jsonl) or to FILE (created or truncated)
  --broker-template TEMPLATE     how the real credential is sent: bearer, token, git-basic, or header:NAME
                                 for an API-key header such as header:x-api-key
  --broker-phantom-env NAME      a variable that receives the phantom token instead of GH_TOKEN and
                                 GITHUB_TOKEN (repeat for more)
  --broker-port PORT             also broker the brokered hosts on PORT besides 443 (repeat for more)

At exit a summary line on stderr counts the violations by action.";

struct Options {
    allow: Vec<String>,
    cidrs: Vec<Cidr>,
    no_filename_rules: bool,
    no_name_guard: bool,
    network: bool,
    mode: Mode,
    mounts: Vec<(String, Access)>,
    protect: Vec<String>,
    workdir: Option<String>,
    timeout: Option<std::time::Duration>,
    limits: Limits,
    switch: Option<String>,
    backend: Option<SandboxBackend>,
    terminal: bool,
    events: Option<EventsTo>,
    unix_sockets: Vec<(String, bool)>,
    broker_hosts: Vec<String>,
    broker_rules: Option<String>,
    broker_credential_env: Option<String>,
    broker_template: HeaderTemplate,
    broker_phantom_env: Vec<String>,
    broker_ports: Vec<u16>,
    broker_push_rule: Option<String>,
    upstream_ca: Vec<String>,
    command: Vec<String>,
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    use agent_sandbox_examples::{env_name, header_template, port};
    let mut o = Options {
        allow: Vec::new(),
        cidrs: Vec::new(),
        no_filename_rules: false,
        no_name_guard: false,
        network: true,
        mode: Mode::Chat,
        mounts: Vec::new(),
        protect: Vec::new(),
        workdir: None,
        timeout: None,
        limits: Limits::default(),
        switch: None,
        backend: None,
        terminal: false,
        events: None,
        unix_sockets: Vec::new(),
        broker_hosts: Vec::new(),
        broker_rules: None,
        broker_credential_env: None,
        broker_template: HeaderTemplate::Bearer,
        broker_phantom_env: Vec::new(),
        broker_ports: Vec::new(),
        broker_push_rule: None,
        upstream_ca: Vec::new(),
        command: Vec::new(),
    };
    let args = with_settings(args)?;
    // `--name=value` is read as `--name value` (options only, never after
    // `--`).
    let mut split: Vec<String> = Vec::with_capacity(args.len());
    let mut rest = args.into_iter();
    for a in rest.by_ref() {
        if a == "--" {
            split.push(a);
            break;
        }
        match a.split_once('=') {
            Some((name, v)) if name.starts_with("--") => {
                split.push(name.to_string());
                split.push(v.to_string());
            }
            _ => split.push(a),
        }
    }
    split.extend(rest);
    let mut it = split.into_iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--" => {
                o.command = it.collect();
                break;
            }
            "--allow" => o.allow.push(value("--allow")?),
            "--allow-cidr" => {
                let v = value("--allow-cidr")?;
                o.cidrs
                    .push(v.parse().map_err(|e| format!("--allow-cidr {v}: {e}"))?);
            }
            "--no-filename-rules" => o.no_filename_rules = true,
            "--no-name-guard" => o.no_name_guard = true,
            "--network" => {
                o.network = match value("--network")?.as_str() {
                    "on" => true,
                    "off" => false,
                    v => return Err(format!("--network takes on or off, not {v:?}")),
                }
            }
            "--mode" => {
                let v = value("--mode")?;
                o.mode = Mode::from_name(&v).ok_or_else(|| format!("unknown mode {v:?}"))?;
            }
            "--mount" => {
                let v = value("--mount")?;
                match v.strip_suffix(":ro") {
                    Some(p) => o.mounts.push((p.to_string(), Access::ReadOnly)),
                    None => o.mounts.push((v, Access::ReadWrite)),
                }
            }
            "--protect" => o.protect.push(value("--protect")?),
            "--allow-unix-socket" => o.unix_sockets.push((value("--allow-unix-socket")?, false)),
            "--allow-root-equivalent-unix-socket" => o
                .unix_sockets
                .push((value("--allow-root-equivalent-unix-socket")?, true)),
            "--workdir" => o.workdir = Some(value("--workdir")?),
            "--timeout" => {
                let v = value("--timeout")?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s < 1e9)
                    .ok_or_else(|| {
                        format!("--timeout takes a number of seconds above 0, not {v:?}")
                    })?;
                o.timeout = Some(std::time::Duration::from_secs_f64(secs));
            }
            "--memory" => o.limits.memory_bytes = Some(parse_bytes(&value("--memory")?)?),
            "--pids" => {
                let v = value("--pids")?;
                o.limits.max_processes = Some(
                    v.parse()
                        .map_err(|_| format!("--pids takes a whole number, not {v:?}"))?,
                );
            }
            "--cpus" => {
                let v = value("--cpus")?;
                let cpus: f64 = v
                    .parse()
                    .ok()
                    .filter(|c: &f64| c.is_finite() && *c > 0.0 && *c <= 4096.0)
                    .ok_or_else(|| format!("--cpus takes a number of CPUs above 0, not {v:?}"))?;
                // Thousandths of a CPU, at least one.
                o.limits.cpu_millis = Some(((cpus * 1000.0).round() as u32).max(1));
            }
            "--sandbox" => o.switch = Some(value("--sandbox")?),
            "--backend" => {
                let v = value("--backend")?;
                o.backend = Some(match v.as_str() {
                    "native" => SandboxBackend::Native,
                    "none" => SandboxBackend::None,
                    // Never downgraded: without a microVM runtime this is a
                    // loud error from the backend selection.
                    "microvm" => SandboxBackend::Microvm,
                    _ => {
                        return Err(format!(
                            "--backend takes native, none or microvm, not {v:?}"
                        ));
                    }
                });
            }
            "--terminal" => o.terminal = true,
            "--broker" => o.broker_hosts.push(value("--broker")?),
            "--broker-rules" => o.broker_rules = Some(value("--broker-rules")?),
            "--broker-credential-env" => {
                o.broker_credential_env = Some(value("--broker-credential-env")?)
            }
            "--broker-template" => {
                o.broker_template =
                    header_template("--broker-template", &value("--broker-template")?)
                        .map_err(|e| e.to_string())?
            }
            "--broker-phantom-env" => o.broker_phantom_env.push(
                env_name("--broker-phantom-env", &value("--broker-phantom-env")?)
                    .map_err(|e| e.to_string())?,
            ),
            "--broker-port" => o
                .broker_ports
                .push(port("--broker-port", &value("--broker-port")?).map_err(|e| e.to_string())?),
            "--events" => {
                o.events = Some(EventsTo::parse(&value("--events")?).map_err(|e| e.to_string())?)
            }
            "--upstream-ca" => o.upstream_ca.push(value("--upstream-ca")?),
            "--broker-push-rule" => o.broker_push_rule = Some(value("--broker-push-rule")?),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.command.is_empty() {
        return Err("no command given after --".into());
    }
    if o.broker_hosts.is_empty() {
        if !o.broker_phantom_env.is_empty() {
            return Err("--broker-phantom-env needs --broker HOST".into());
        }
        if !o.broker_ports.is_empty() {
            return Err("--broker-port needs --broker HOST".into());
        }
    }
    Ok(o)
}

/// The arguments with a `--settings FILE` (before `--`) replaced by the
/// flags the file stands for, put first: the command line's own flags come
/// after them, so a single value given there wins and lists add up.
fn with_settings(args: Vec<String>) -> Result<Vec<String>, String> {
    let mut file = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        if a == "--" {
            rest.push(a);
            rest.extend(it.by_ref());
            break;
        }
        let given = if a == "--settings" {
            Some(it.next().ok_or("--settings needs a value (a TOML file)")?)
        } else {
            a.strip_prefix("--settings=").map(str::to_owned)
        };
        match given {
            Some(_) if file.is_some() => return Err("--settings given twice".into()),
            Some(f) => file = Some(f),
            None => rest.push(a),
        }
    }
    let Some(file) = file else {
        return Ok(rest);
    };
    let mut out =
        agent_sandbox_examples::read_settings(Path::new(&file)).map_err(|e| e.to_string())?;
    out.extend(rest);
    Ok(out)
}

/// The host terminal's size (stdin's), if it has one.
#[cfg(unix)]
fn host_size() -> Option<PtySize> {
    let ws = rustix::termios::tcgetwinsize(std::io::stdin()).ok()?;
    PtySize::new(ws.ws_row, ws.ws_col).or(PtySize::new(24, 80))
}

/// Without terminals for commands (Windows) there is no size to give one:
/// the command runs with stdin piped.
#[cfg(not(unix))]
fn host_size() -> Option<PtySize> {
    None
}

/// The host terminal in raw mode; the saved mode comes back on drop.
#[cfg(unix)]
struct RawMode(rustix::termios::Termios);

#[cfg(unix)]
impl RawMode {
    fn enter() -> std::io::Result<RawMode> {
        let saved = rustix::termios::tcgetattr(std::io::stdin())?;
        let mut raw = saved.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            &raw,
        )?;
        Ok(RawMode(saved))
    }

    /// Each `SIGWINCH` of the host terminal becomes a resize of the
    /// command's.
    fn forward_resizes(&self, control: Arc<dyn CommandControl>) {
        let Ok(mut winch) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
        else {
            return;
        };
        tokio::spawn(async move {
            while winch.recv().await.is_some() {
                if let Some(size) = host_size() {
                    let _ = control.resize(size);
                }
            }
        });
    }
}

#[cfg(unix)]
impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            &self.0,
        );
    }
}

/// Raw mode of the host terminal: only for a command on a terminal of its
/// own, which Windows does not give (the type has no value there).
#[cfg(not(unix))]
enum RawMode {}

#[cfg(not(unix))]
impl RawMode {
    fn enter() -> std::io::Result<RawMode> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "terminals are not available on this platform",
        ))
    }

    fn forward_resizes(&self, _control: Arc<dyn CommandControl>) {
        match *self {}
    }
}

/// A byte count with an optional K, M or G suffix (powers of 1024).
fn parse_bytes(v: &str) -> Result<u64, String> {
    let bad = || format!("--memory takes bytes with an optional K, M or G suffix, not {v:?}");
    let (digits, shift) = match v.as_bytes().last() {
        Some(b'K' | b'k') => (&v[..v.len() - 1], 10),
        Some(b'M' | b'm') => (&v[..v.len() - 1], 20),
        Some(b'G' | b'g') => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(1u64 << shift).ok_or_else(bad)
}

/// Copies this program's stdin to the command until end of file, then
/// closes the command's. The reads run on their own thread (a read of a
/// pipe cannot be cancelled, and must not hold up the exit).
fn forward_stdin(control: Arc<dyn CommandControl>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    tokio::spawn(async move {
        while let Some(chunk) = rx.recv().await {
            if control.write_stdin(&chunk).await.is_err() {
                return;
            }
        }
        let _ = control.close_stdin().await;
    });
}

fn absolute(p: &str) -> Result<String, String> {
    std::path::absolute(p)
        .map(|p| p.display().to_string())
        .map_err(|e| format!("{p}: {e}"))
}

fn main() -> ExitCode {
    // Inside the sandbox, as the launcher: before any thread exists.
    let mut raw = std::env::args_os().skip(1);
    if raw.next().is_some_and(|a| a == GUARD_MARKER) {
        return name_guard::launcher_main(raw);
    }
    let opts = match parse(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("agent-run: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // Before the runtime opens descriptors of its own: `json:FD` must name
    // one this program was started with.
    let events = match opts.events.as_ref().map(EventsTo::open).transpose() {
        Ok(log) => log,
        Err(e) => {
            eprintln!("agent-run: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agent-run: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(opts, events)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("agent-run: {e}");
            ExitCode::from(1)
        }
    }
}

/// The broker settings from the flags. The real credential is read from the
/// named variable of this process's own environment; the sandbox never
/// receives it (env-guard inherits only core variables, and it is removed
/// from the base environment besides).
fn broker_settings(o: &Options) -> Result<BrokerSettings, String> {
    use agent_sandbox::{credential_for_hosts, pem_certificates_from_file, rule_engine_from_file};
    let rules_path = o
        .broker_rules
        .as_deref()
        .ok_or("--broker needs --broker-rules FILE")?;
    let engine = rule_engine_from_file(Path::new(rules_path)).map_err(|e| e.to_string())?;
    let env_name = o
        .broker_credential_env
        .as_deref()
        .ok_or("--broker needs --broker-credential-env NAME")?;
    let value = std::env::var(env_name)
        .map_err(|_| format!("--broker-credential-env: {env_name} is not set"))?;
    let cred = credential_for_hosts(env_name, value, o.broker_template.clone(), &o.broker_hosts)
        .map_err(|e| e.to_string())?;
    let mut settings = BrokerSettings::new(engine, cred);
    for h in &o.broker_hosts {
        settings.host(h).map_err(|e| format!("--broker: {e}"))?;
    }
    for port in &o.broker_ports {
        settings.broker_port(*port);
    }
    if !o.broker_phantom_env.is_empty() {
        settings.phantom_env(o.broker_phantom_env.iter().cloned());
    }
    if let Some(path) = &o.broker_push_rule {
        let spec = agent_sandbox_examples::push_rule_file("--broker-push-rule", path)
            .map_err(|e| e.to_string())?;
        settings.push_rule(spec);
    }
    for path in &o.upstream_ca {
        for der in pem_certificates_from_file(Path::new(path)).map_err(|e| e.to_string())? {
            settings.extra_root_der(der);
        }
    }
    Ok(settings)
}

async fn run(o: Options, log: Option<EventLog>) -> Result<u8, String> {
    let env_switch = std::env::var_os(SANDBOX_SWITCH_ENV);
    let switch = SandboxSwitch::from_sources(o.switch.as_deref(), env_switch.as_deref())
        .map_err(|e| e.to_string())?;
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/".into());
    let workdir = match &o.workdir {
        Some(w) => absolute(w)?,
        None => std::env::current_dir()
            .map_err(|e| e.to_string())?
            .display()
            .to_string(),
    };
    let mut ip = IpPolicy::new();
    for c in &o.cidrs {
        ip.allow_cidr(*c);
    }
    let request = match o.backend {
        Some(b) => BackendRequest::Explicit(b),
        None => BackendRequest::Unspecified,
    };
    let surface = if o.terminal {
        Surface::Terminal
    } else {
        Surface::Dispatch
    };
    let mut builder = ManagerBuilder::from_ambient();
    builder
        .switch(switch)
        .request(request, surface)
        .home(&home)
        .ip_policy(ip)
        .base_env(
            std::env::vars_os()
                .filter(|(k, _)| o.broker_credential_env.as_deref().is_none_or(|n| k != n))
                .collect(),
        )
        .log(Arc::new(|line: &str| eprintln!("agent-run: {line}")));
    if o.no_filename_rules {
        builder.filename_rules(FilenameRules::DropFilenameGlobDenies);
    }
    if !o.no_name_guard {
        let me = std::env::current_exe().map_err(|e| format!("locating agent-run: {e}"))?;
        builder.name_guard_launcher(NameGuardLauncher::multi_call(me, [GUARD_MARKER]));
    }
    for (path, root_equivalent) in &o.unix_sockets {
        if *root_equivalent {
            builder.allow_root_equivalent_unix_socket(path.clone());
        } else {
            builder.allow_unix_socket(path.clone());
        }
    }
    if !o.broker_hosts.is_empty() {
        builder.broker(broker_settings(&o)?);
    }
    let manager = builder.build().map_err(|e| match e.kind() {
        agent_sandbox::ErrorKind::BadSocketGrant { .. }
            if e.to_string().contains("root_equivalent") =>
        {
            format!("{e} (here: --allow-root-equivalent-unix-socket PATH)")
        }
        _ => e.to_string(),
    })?;
    let sel = manager.selection();
    // This program exists to show a confined run: it never degrades to an
    // unconfined one by itself. Running on the host takes an explicit
    // `--backend none` or `--sandbox off`.
    if sel.backend == SandboxBackend::None
        && request == BackendRequest::Unspecified
        && switch == SandboxSwitch::On
        && surface == Surface::Dispatch
    {
        let hint = probe_ambient().native.hint.clone().unwrap_or_default();
        return Err(format!(
            "refusing to run {:?} unconfined: no OS-native agent sandbox on this host ({hint}); \
             `--backend none` or `--sandbox off` runs it on the host without a sandbox",
            o.command[0]
        ));
    }
    eprintln!("agent-run: backend {} ({})", sel.backend, sel.label);

    let mut spec = SandboxSpec::new(format!("agent-run-{}", std::process::id()), "agent-run");
    spec.mode = o.mode;
    spec.network_enabled = o.network;
    spec.egress_allowlist = o.allow.clone();
    spec.guest_workdir = Some(workdir.clone());
    let mounts = if o.mounts.is_empty() {
        vec![(workdir.clone(), Access::ReadWrite)]
    } else {
        o.mounts.clone()
    };
    for (p, access) in mounts {
        spec.bind_mounts
            .push(SandboxBindMount::new(absolute(&p)?, access).map_err(|e| e.to_string())?);
    }
    for p in &o.protect {
        spec.protected_paths.push(absolute(p)?);
    }

    // Through the trait object a host that picks its backend at run time
    // would hold (the launch bench measures this path).
    let port: &dyn DynSandboxPort = &manager;
    let mut handle = port.launch_dyn(spec).await.map_err(|e| e.to_string())?;
    let mut cmd = SandboxCommand::new(&o.command[0]);
    for a in &o.command[1..] {
        cmd.arg(a);
    }
    if let Some(t) = o.timeout {
        cmd.timeout(t);
    }
    cmd.limits(o.limits);
    // Stdin passes through when it is not a terminal; on a terminal the
    // command runs on a terminal of its own, of the same size.
    let host_terminal = std::io::stdin().is_terminal();
    let size = host_terminal.then(host_size).flatten();
    match size {
        Some(size) => {
            cmd.pty(size);
        }
        None => {
            cmd.stdin(Stdin::Piped);
            // Without an event log the output needs no events: the manager
            // passes it from the command's pipe into our stdout itself (in
            // the kernel where it can). With `--events` it stays an event,
            // so that the log holds it.
            if log.is_none() {
                let out = raw_stdout().map_err(|e| format!("opening stdout: {e}"))?;
                cmd.stdout(Stdout::PassTo(OutputSink::new(out)));
            }
        }
    }
    let mut events = match port.exec_dyn(&handle, cmd).await {
        Ok(ev) => ev,
        Err(e) => {
            let _ = port.destroy_dyn(&mut handle).await;
            return Err(e.to_string());
        }
    };
    // Raw mode from here until the end (restored on every way out of this
    // function): each key goes to the command as typed, Ctrl-C included.
    let raw = match size {
        Some(_) => {
            Some(RawMode::enter().map_err(|e| format!("setting the terminal to raw mode: {e}"))?)
        }
        None => None,
    };
    forward_stdin(events.control());
    if let Some(raw) = &raw {
        raw.forward_resizes(events.control());
    }
    let mut code = 1u8;
    // The command's output goes to our stdout as it comes, unbuffered: a
    // descriptor of its own, not the line-buffered `Stdout` (which scans
    // every chunk for a newline).
    let mut out = raw_stdout().map_err(|e| format!("opening stdout: {e}"))?;
    let mut err = std::io::stderr();
    let mut log = log;
    let mut tally = ViolationTally::default();
    while let Some(ev) = next_event(&mut events).await {
        write_event(&mut log, &ev);
        match ev {
            SandboxEvent::Stdout { data } => {
                let _ = out.write_all(&data);
            }
            SandboxEvent::Stderr { data } => {
                let _ = err.write_all(&data);
            }
            SandboxEvent::Violation { violation } => {
                eprintln!("violation: {} {}", violation.action, violation.target);
                tally.add(&violation.action);
            }
            SandboxEvent::Exit { exit_code } => code = u8::try_from(exit_code).unwrap_or(1),
            SandboxEvent::Killed {
                reason: Some(KillReason::Oom),
                ..
            } => {
                eprintln!("agent-run: the command ran out of memory (--memory) and was killed");
                code = 137;
            }
            SandboxEvent::Killed {
                reason: Some(KillReason::Timeout),
                ..
            } => {
                eprintln!("agent-run: the command ran out of time and was killed");
                code = 124;
            }
            SandboxEvent::Killed { signal, .. } => {
                code = signal
                    .map(|s| 128u8.saturating_add(u8::try_from(s).unwrap_or(0)))
                    .unwrap_or(137)
            }
            _ => {}
        }
    }
    eprintln!("agent-run: {}", tally.summary());
    port.destroy_dyn(&mut handle)
        .await
        .map_err(|e| e.to_string())?;
    Ok(code)
}

/// Writes `event` to the `--events` log, if there is one. When a write
/// fails (the reader went away), says so once and writes no more; the
/// command runs on.
fn write_event(log: &mut Option<EventLog>, event: &SandboxEvent) {
    if let Some(l) = log
        && let Err(e) = l.write(event)
    {
        eprintln!("agent-run: --events: {e}; no more events are written");
        *log = None;
    }
}

/// Our stdout as a file of its own (a duplicate of descriptor 1), written
/// without a buffer.
#[cfg(unix)]
fn raw_stdout() -> std::io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    Ok(std::fs::File::from(
        std::io::stdout().as_fd().try_clone_to_owned()?,
    ))
}

/// Our stdout as a file of its own (a duplicate of the standard output
/// handle), written without a buffer.
#[cfg(windows)]
fn raw_stdout() -> std::io::Result<std::fs::File> {
    use std::os::windows::io::AsHandle;
    Ok(std::fs::File::from(
        std::io::stdout().as_handle().try_clone_to_owned()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    fn refusal(a: &[&str]) -> String {
        match parse(args(a)) {
            Ok(_) => panic!("{a:?} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_settings_file_gives_flags_and_the_command_line_wins() {
        let dir = std::env::temp_dir().join(format!("agent-run-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("s.toml");
        std::fs::write(
            &f,
            "allow = [\"a.test\"]\nnetwork = \"off\"\nmode = \"review\"\ntimeout = 30\nno-filename-rules = true\n",
        )
        .unwrap();
        let file = f.to_str().unwrap();
        let o = parse(args(&[
            "--settings",
            file,
            "--allow",
            "b.test",
            "--network",
            "on",
            "--",
            "true",
            "--settings",
        ]))
        .unwrap();
        // Lists add up; a single value on the command line replaces the file's.
        assert_eq!(o.allow, ["a.test", "b.test"]);
        assert!(o.network);
        assert_eq!(o.mode, Mode::Review);
        assert_eq!(o.timeout, Some(std::time::Duration::from_secs(30)));
        assert!(o.no_filename_rules);
        // After `--` it is the command's.
        assert_eq!(o.command, ["true", "--settings"]);
        let twice = parse(args(&["--settings", file, "--settings=x", "--", "true"]));
        assert_eq!(twice.err().as_deref(), Some("--settings given twice"));
        std::fs::write(&f, "networks = \"off\"\n").unwrap();
        let e = parse(args(&[&format!("--settings={file}"), "--", "true"]))
            .err()
            .unwrap_or_default();
        assert!(e.contains("unknown field `networks`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_events_and_broker_flags_parse_to_their_values() {
        let o = parse(args(&[
            "--events",
            "json=run.jsonl",
            "--broker",
            "api.example.com",
            "--broker-template",
            "header:x-api-key",
            "--broker-phantom-env",
            "ANTHROPIC_API_KEY",
            "--broker-phantom-env=OTHER_KEY",
            "--broker-port",
            "8443",
            "--broker-port=9443",
            "--",
            "true",
        ]))
        .unwrap();
        assert_eq!(o.events, Some(EventsTo::File("run.jsonl".into())));
        assert_eq!(
            o.broker_template,
            HeaderTemplate::Header {
                name: "x-api-key".into()
            }
        );
        assert_eq!(o.broker_phantom_env, ["ANTHROPIC_API_KEY", "OTHER_KEY"]);
        assert_eq!(o.broker_ports, [8443, 9443]);
        let o = parse(args(&["--", "true"])).unwrap();
        assert_eq!(o.events, None);
        assert_eq!(o.broker_template, HeaderTemplate::Bearer);
        assert!(o.broker_phantom_env.is_empty() && o.broker_ports.is_empty());
        #[cfg(unix)]
        assert_eq!(
            parse(args(&["--events", "json:3", "--", "true"]))
                .unwrap()
                .events,
            Some(EventsTo::Descriptor(3))
        );
    }

    #[test]
    fn a_refused_value_says_what_to_type_instead() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--events", "json", "--", "true"],
                "--events takes json:FD (a descriptor of 3 or above this program was started \
                 with, such as json:3 with 3>events.jsonl) or json=FILE, not \"json\"",
            ),
            (
                &["--events=json:1", "--", "true"],
                "--events takes json:FD (a descriptor of 3 or above this program was started \
                 with, such as json:3 with 3>events.jsonl) or json=FILE, not \"json:1\"",
            ),
            (&["--events"], "--events needs a value"),
            (
                &["--broker-template", "basic", "--", "true"],
                "--broker-template takes bearer, token, git-basic or header:NAME (NAME a header \
                 name such as x-api-key, not a framing or routing header), not \"basic\"",
            ),
            (
                &["--broker-template", "header:x api key", "--", "true"],
                "--broker-template takes bearer, token, git-basic or header:NAME (NAME a header \
                 name such as x-api-key, not a framing or routing header), not \"header:x api key\"",
            ),
            (
                &["--broker-phantom-env", "1KEY", "--", "true"],
                "--broker-phantom-env takes a variable name (letters, digits and _, not starting \
                 with a digit) such as ANTHROPIC_API_KEY, not \"1KEY\"",
            ),
            (
                &["--broker-port", "0", "--", "true"],
                "--broker-port takes a port number from 1 to 65535, not \"0\"",
            ),
            (
                &["--broker-port", "https", "--", "true"],
                "--broker-port takes a port number from 1 to 65535, not \"https\"",
            ),
            (
                &["--broker-phantom-env", "KEY", "--", "true"],
                "--broker-phantom-env needs --broker HOST",
            ),
            (
                &["--broker-port", "8443", "--", "true"],
                "--broker-port needs --broker HOST",
            ),
        ];
        for (a, want) in cases {
            assert_eq!(refusal(a), *want, "{a:?}");
        }
    }
}
