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
//! are enforced by the name guard: the small `name-guard-exec` when it is
//! installed beside this program, else this same program, bound read-only
//! into the sandbox and started there with [`GUARD_MARKER`] as its first
//! argument, where it becomes `name-guard-exec`. `--no-name-guard`
//! leaves the guard out (a launch with writable mounts is then refused), and
//! `--no-filename-rules` is the explicit opt-out that drops those rules.
//! `--backend microvm` runs the command in a gVisor sandbox (the probe's
//! runtime; `--microvm-runtime gvisor` asks for it by name), a kernel
//! boundary that is not a hardware VM: `--require-hardware-vm` refuses it.
//! `--microvm-runtime qemu` runs it in a QEMU guest with a kernel of its own
//! (on KVM where the canary guest boots, else emulated, which
//! `--require-hardware-vm` refuses too).
//!
//! `--workspace REPO` runs CMD in a workspace of its own made from the
//! checkout REPO, on the branch `--workspace-branch` names (`agent-run` by
//! default); at the end its work is collected into REPO as
//! `refs/sessions/<session>/<branch>` (the line `agent-run: collected REF
//! at COMMIT` on stderr) and the workspace goes. REPO is never writable
//! from inside.
//!
//! On a host without a native sandbox it refuses to run CMD, naming the
//! packages to install; `--backend none` or `--sandbox off` is the explicit
//! way to run it unconfined.

mod cli;
mod log_format;

use cli::Options;

use agent_sandbox::{
    BrokerSettings, CollectOutcome, FilenameRules, ManagerBuilder, NameGuardLauncher,
    WorkspaceRequest,
};
use agent_sandbox_examples::{EventLog, EventsTo, ViolationTally};
use connect_proxy::IpPolicy;
use sandbox_core::{
    Access, BackendRequest, CommandControl, DynSandboxPort, KillReason, OutputSink, PtySize,
    SANDBOX_SWITCH_ENV, SandboxBackend, SandboxBindMount, SandboxCommand, SandboxEvent,
    SandboxSpec, SandboxSwitch, Stdin, Stdout, Surface, probe_ambient,
};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use tracing::Level;

/// The first argument that makes this program the name guard's launcher.
const GUARD_MARKER: &str = "--as-name-guard-exec";

/// The name guard's launcher: the small `name-guard-exec` installed beside
/// this program when there is one (a smaller program starts faster, once
/// per command), else this program itself in its launcher role.
fn guard_launcher(me: std::path::PathBuf) -> NameGuardLauncher {
    let small = me.with_file_name("name-guard-exec");
    use sandbox_core::HostView;
    if sandbox_core::AmbientHost::from_ambient_untimed().is_executable_file(&small) {
        NameGuardLauncher::new(small)
    } else {
        NameGuardLauncher::multi_call(me, [GUARD_MARKER])
    }
}

/// The host terminal's size (stdin's), if it has one.
#[cfg(unix)]
fn host_size() -> Option<PtySize> {
    let ws = rustix::termios::tcgetwinsize(std::io::stdin()).ok()?;
    Some(PtySize::new(ws.ws_row, ws.ws_col).unwrap_or(PtySize::DEFAULT))
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
    let opts = match cli::parse(std::env::args_os().skip(1).collect()) {
        Ok(o) => o,
        Err(e) => return ExitCode::from(e.report()),
    };
    log_format::init(opts.log_format);
    // Before the runtime opens descriptors of its own: `json:FD` must name
    // one this program was started with.
    let events = match opts.events.as_ref().map(EventsTo::open).transpose() {
        Ok(log) => log,
        Err(e) => {
            log_format::error(&format!("agent-run: {e}"));
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            log_format::error(&format!("agent-run: {e}"));
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(opts, events)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            log_format::error(&format!("agent-run: {e}"));
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
        // In the json format the manager's lines reach stderr as the
        // `tracing` events the manager makes of them.
        .log(Arc::new(|line: &str| {
            if !log_format::is_json() {
                eprintln!("agent-run: {line}");
            }
        }));
    if let Some(path) = &o.audit {
        let sink = agent_sandbox::audit::audit_to_file(path)
            .map_err(|e| format!("--audit {}: {e}", path.display()))?;
        builder.audit(sink);
    }
    if o.no_filename_rules {
        builder.filename_rules(FilenameRules::DropFilenameGlobDenies);
    }
    if o.no_baseline {
        builder.baseline(agent_sandbox::Baseline::Exclude);
    }
    if let Some(m) = o.mechanism {
        builder.native_mechanism(m);
    }
    match o.microvm_runtime {
        Some(cli::MicrovmRuntime::Kind(k)) => {
            builder.microvm_runtime(k);
        }
        Some(cli::MicrovmRuntime::Qemu) => {
            builder.microvm_runtime_qemu();
        }
        None => {}
    }
    if o.require_hardware_vm {
        builder.require_hardware_vm(agent_sandbox::VmRequirement::HardwareVm);
    }
    for d in &o.deny {
        builder.deny(d.clone());
    }
    for p in &o.read_deny {
        builder.read_deny(absolute(p)?);
    }
    for p in &o.allow_read_within_denies {
        builder.allow_read_within_denies(absolute(p)?);
    }
    if !o.no_name_guard {
        let me = std::env::current_exe().map_err(|e| format!("locating agent-run: {e}"))?;
        builder.name_guard_launcher(guard_launcher(me));
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
    log_format::info(&format!(
        "agent-run: backend {} ({})",
        sel.backend, sel.label
    ));

    let mut spec = SandboxSpec::new(format!("agent-run-{}", std::process::id()), "agent-run");
    spec.mode = o.mode;
    spec.network_enabled = o.network;
    spec.egress_allowlist = o.allow.clone();
    // In a workspace, the workspace is the working directory (and the one
    // mount unless others are asked for).
    let mounts = match (&o.workspace, o.mounts.is_empty()) {
        (Some(_), _) | (None, false) => o.mounts.clone(),
        (None, true) => vec![(workdir.clone(), Access::ReadWrite)],
    };
    if o.workspace.is_none() {
        spec.guest_workdir = Some(workdir.clone());
    }
    for (p, access) in mounts {
        spec.bind_mounts
            .push(SandboxBindMount::new(absolute(&p)?, access).map_err(|e| e.to_string())?);
    }
    // The command starts in its working directory, which must be there
    // inside: in one of the mounts, or on the way to one.
    if o.workspace.is_none()
        && !spec.bind_mounts.iter().any(|m| {
            Path::new(&workdir).starts_with(&m.host_path)
                || Path::new(&m.host_path).starts_with(&workdir)
        })
    {
        return Err(format!(
            "the working directory {workdir} is in no mount, so the command would start \
             where nothing is: add --mount {workdir} (:ro for read-only), or give --workdir \
             a directory inside a mount"
        ));
    }
    for p in &o.protect {
        spec.protected_paths.push(absolute(p)?);
    }
    // An events file in a writable mount is the run's record: the command
    // may not rewrite it.
    if let Some(EventsTo::File(f)) = &o.events {
        let f = absolute(&f.display().to_string())?;
        if spec
            .bind_mounts
            .iter()
            .any(|m| !m.read_only && Path::new(&f).starts_with(&m.host_path))
        {
            spec.protected_paths.push(f);
        }
    }
    for d in &o.runner_state_dirs {
        spec.runner_state_dirs.push(absolute(d)?);
    }

    // Through the trait object a host that picks its backend at run time
    // would hold (the launch bench measures this path).
    let port: &dyn DynSandboxPort = &manager;
    let mut handle = match &o.workspace {
        Some(ws) => {
            let checkout = absolute(&ws.checkout)?;
            let branch = ws.branch.as_deref().unwrap_or("agent-run");
            let request =
                WorkspaceRequest::new(checkout, branch).map_err(|e| format!("--workspace: {e}"))?;
            let h = manager
                .launch_in_workspace(spec, &request)
                .await
                .map_err(|e| format!("--workspace: {e}"))?;
            if let Some(info) = manager.workspace(&h) {
                log_format::info(&format!(
                    "agent-run: workspace {} on branch {} ({} layering)",
                    info.path.display(),
                    info.branch,
                    info.layering.as_str()
                ));
            }
            h
        }
        None => port.launch_dyn(spec).await.map_err(|e| e.to_string())?,
    };
    let mut cmd = SandboxCommand::new(&o.command[0]);
    cmd.args(&o.command[1..]);
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
    // While the terminal is raw a line feed does not return the carriage:
    // our lines end in both then.
    let eol = if raw.is_some() { "\r\n" } else { "\n" };
    let say = |line: String| log_format::say(Level::INFO, &line, eol);
    let warn = |line: String| log_format::say(Level::WARN, &line, eol);
    while let Some(ev) = events.next_event().await {
        write_event(&mut log, &ev);
        match ev {
            SandboxEvent::Stdout { data } => {
                let _ = out.write_all(&data);
            }
            SandboxEvent::Stderr { data } => {
                let _ = err.write_all(&data);
            }
            SandboxEvent::Violation { violation }
                if violation
                    .raw
                    .as_deref()
                    .is_some_and(|r| r.contains(UPSTREAM_FAILED)) =>
            {
                // Allowed, then failed by the network: nothing was
                // refused, so it is said as what it is and not counted.
                let why = violation
                    .raw
                    .as_deref()
                    .and_then(|r| r.split_once(UPSTREAM_FAILED))
                    .map(|(_, why)| why.trim_start_matches(": ").to_owned())
                    .unwrap_or_default();
                warn(format!(
                    "agent-run: {} was allowed, but the upstream failed: {why}",
                    violation.target
                ));
            }
            SandboxEvent::Violation { violation } => {
                // Why, when the refusal says (the proxy's reason, such as
                // "host is not in the allowlist").
                let why = violation
                    .raw
                    .as_deref()
                    .and_then(|r| r.split_once(": "))
                    .map(|(_, why)| format!(" ({why})"))
                    .unwrap_or_default();
                warn(format!(
                    "violation: {} {}{why}",
                    violation.action, violation.target
                ));
                tally.add(&violation.action);
            }
            SandboxEvent::Exit { exit_code } => code = u8::try_from(exit_code).unwrap_or(1),
            SandboxEvent::Killed {
                reason: Some(KillReason::Oom),
                ..
            } => {
                warn("agent-run: the command ran out of memory (--memory) and was killed".into());
                code = 137;
            }
            SandboxEvent::Killed {
                reason: Some(KillReason::Timeout),
                ..
            } => {
                warn("agent-run: the command ran out of time and was killed".into());
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
    say(format!("agent-run: {}", tally.summary()));
    if o.workspace.is_some() {
        // The work comes back through the gate; a refusal is reported and
        // fails the run, the checkout unchanged.
        match manager.collect(&handle).await {
            Ok(CollectOutcome::Updated(c)) => {
                log_format::info(&format!(
                    "agent-run: collected {} at {}",
                    c.reference, c.new
                ));
            }
            Ok(CollectOutcome::NothingNew { reference }) => {
                log_format::info(&format!(
                    "agent-run: nothing new to collect into {reference}"
                ));
            }
            Ok(_) => {}
            Err(e) => {
                log_format::error(&format!("agent-run: {e}"));
                if code == 0 {
                    code = 1;
                }
            }
        }
    }
    port.destroy_dyn(&mut handle)
        .await
        .map_err(|e| e.to_string())?;
    Ok(code)
}

/// What the proxies' `raw` text says of an allowed target the network
/// failed (no such name, a timeout, refused, unreachable).
const UPSTREAM_FAILED: &str = "allowed, but the upstream failed";

/// Writes `event` to the `--events` log, if there is one. When a write
/// fails (the reader went away), says so once and writes no more; the
/// command runs on.
fn write_event(log: &mut Option<EventLog>, event: &SandboxEvent) {
    if let Some(l) = log
        && let Err(e) = l.write(event)
    {
        log_format::error(&format!(
            "agent-run: --events: {e}; no more events are written"
        ));
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
