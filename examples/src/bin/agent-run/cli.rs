//! agent-run's command line: the flags (clap), a `--settings` file's flags
//! put before them, and the rules between flags, into [`Options`].

use agent_sandbox_examples::{EventsTo, env_name, header_template, port};
use clap::Parser;
use connect_proxy::Cidr;
use cred_broker::HeaderTemplate;
use sandbox_core::{Access, Limits, MicrovmRuntimeKind, Mode, NativeMechanism, SandboxBackend};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// What the command line asks for, checked.
#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) mechanism: Option<NativeMechanism>,
    pub(crate) microvm_runtime: Option<MicrovmRuntime>,
    pub(crate) require_hardware_vm: bool,
    pub(crate) allow: Vec<String>,
    pub(crate) deny: Vec<String>,
    pub(crate) no_baseline: bool,
    pub(crate) cidrs: Vec<Cidr>,
    pub(crate) no_filename_rules: bool,
    pub(crate) no_name_guard: bool,
    pub(crate) network: bool,
    pub(crate) mode: Mode,
    pub(crate) mounts: Vec<(String, Access)>,
    pub(crate) protect: Vec<String>,
    pub(crate) runner_state_dirs: Vec<String>,
    pub(crate) read_deny: Vec<String>,
    pub(crate) allow_read_within_denies: Vec<String>,
    pub(crate) workdir: Option<String>,
    pub(crate) workspace: Option<Workspace>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) limits: Limits,
    pub(crate) switch: Option<String>,
    pub(crate) backend: Option<SandboxBackend>,
    pub(crate) terminal: bool,
    pub(crate) events: Option<EventsTo>,
    pub(crate) audit: Option<std::path::PathBuf>,
    pub(crate) log_format: crate::log_format::LogFormat,
    /// Each granted socket, and whether it was granted as root-equivalent.
    pub(crate) unix_sockets: Vec<(String, bool)>,
    pub(crate) broker_hosts: Vec<String>,
    pub(crate) broker_rules: Option<PathBuf>,
    pub(crate) broker_credential_env: Option<String>,
    pub(crate) broker_template: HeaderTemplate,
    pub(crate) broker_phantom_env: Vec<String>,
    pub(crate) broker_ports: Vec<u16>,
    pub(crate) broker_push_rule: Option<String>,
    pub(crate) upstream_ca: Vec<PathBuf>,
    pub(crate) command: Vec<OsString>,
}

/// `--workspace REPO` with its branch.
#[derive(Debug)]
pub(crate) struct Workspace {
    pub(crate) checkout: String,
    pub(crate) branch: Option<String>,
}

/// Why the command line was not taken: a usage error (clap's, printed with
/// its own hints, exit 2), help or version (printed, exit 0), or a rule
/// between flags or a settings file (one line, exit 2).
#[derive(Debug)]
pub(crate) enum CliError {
    Clap(clap::Error),
    Rule(String),
}

impl CliError {
    /// Prints the error (or the help) and gives the exit code.
    pub(crate) fn report(&self) -> u8 {
        match self {
            CliError::Clap(e) => {
                let _ = e.print();
                u8::try_from(e.exit_code()).unwrap_or(2)
            }
            CliError::Rule(msg) => {
                use clap::CommandFactory;
                let usage = Cli::command().render_usage();
                eprintln!("agent-run: {msg}\n\n{usage}\n\nFor more information, try '--help'.");
                2
            }
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Clap(e) => e.fmt(f),
            CliError::Rule(msg) => f.write_str(msg),
        }
    }
}

const ABOUT: &str = "Run a command confined by the native sandbox, reaching the network only \
through the session's proxies.";

const LONG_ABOUT: &str = "Run a command confined by the native sandbox, reaching the network only \
through the session's proxies.

Prints the probe line and the backend used on stderr, passes the command's stdout and stderr \
through, prints each violation on stderr as `violation: ACTION TARGET`, and exits with the \
command's status (128+signal when killed, 124 when --timeout ran out, 137 when --memory did). \
Stdin passes through when it is not a terminal; on a terminal the command runs on a terminal of \
its own inside the sandbox, with this one in raw mode until the end. On a host without a native \
sandbox it refuses to run the command; --backend none or --sandbox off runs it unconfined, \
explicitly.";

const AFTER_HELP: &str = "At exit a summary line on stderr counts the violations by action. An \
allowed host the network then failed (no such name, a timeout, refused) is said as such, and is \
not counted as a violation.

Example: agent-run --allow api.github.com --mount .:rw --protect .git/hooks -- cargo test";

#[derive(Parser, Debug)]
#[command(
    name = "agent-run",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    args_override_self = true,
    max_term_width = 100
)]
struct Cli {
    /// Read flags from a TOML file, one key per flag without its dashes
    /// (allow-cidr = ["10.0.0.0/8"], no-filename-rules = true); flags given
    /// here win over its single values, lists add up.
    #[arg(long, value_name = "FILE")]
    settings: Vec<PathBuf>,

    /// Let the command reach this host through the proxies (example.com,
    /// *.example.com, api.*.example.com, with :PORT to limit the port);
    /// repeat for more.
    #[arg(long, value_name = "ENTRY")]
    allow: Vec<String>,

    /// Refuse this host even where an --allow entry or the baseline would
    /// let it through (the same forms as --allow); repeat for more.
    #[arg(long, value_name = "ENTRY")]
    deny: Vec<String>,

    /// Start from an empty allowlist instead of the baseline sets (LLM
    /// providers, git hosting, package registries, GitHub): only --allow
    /// entries pass.
    #[arg(long)]
    no_baseline: bool,

    /// Let the command reach addresses in this private or local range
    /// (10.0.0.0/8, fd00::/8), which are refused by default; repeat for more.
    #[arg(long, value_name = "CIDR", value_parser = cidr)]
    allow_cidr: Vec<Cidr>,

    /// Drop the filename rules (no new .env, *.key, *.pem inside writable
    /// mounts): the explicit opt-out.
    #[arg(long)]
    no_filename_rules: bool,

    /// Leave the name guard out (a launch with writable mounts is then
    /// refused unless --no-filename-rules is given too).
    #[arg(long)]
    no_name_guard: bool,

    /// Whether the command has any network at all (through the proxies).
    #[arg(long, value_name = "on|off", value_parser = on_off, default_value = "on", action = clap::ArgAction::Set)]
    network: bool,

    /// The Linux mechanism: bubblewrap (namespaces) or landlock (Landlock and
    /// seccomp, no namespaces, weaker: see the README); the default is
    /// bubblewrap where it works, else landlock. A mechanism that cannot run
    /// here is an error.
    #[arg(long, value_name = "bubblewrap|landlock", value_parser = mechanism)]
    mechanism: Option<NativeMechanism>,

    /// With --backend microvm, the runtime: gvisor (a user-space kernel,
    /// not a hardware VM), or qemu (a guest kernel under QEMU: on KVM where
    /// its canary guest boots, else emulated), qemu-kvm or qemu-tcg for one
    /// accelerator only. One that does not work here is an error.
    #[arg(long, value_name = "gvisor|qemu|qemu-kvm|qemu-tcg", value_parser = microvm_runtime)]
    microvm_runtime: Option<MicrovmRuntime>,

    /// Refuse anything that is not a hardware VM (gVisor and an emulated
    /// guest are not).
    #[arg(long)]
    require_hardware_vm: bool,

    /// The dispatch mode: chat keeps mounts writable; review, plan and
    /// orchestrate make every mount read-only.
    #[arg(long, value_name = "chat|review|plan|orchestrate", value_parser = mode, default_value = "chat")]
    mode: Mode,

    /// Mount PATH into the sandbox at the same place, writable (:rw, the
    /// default) or read-only with :ro; repeat for more (the default is the
    /// working directory, writable).
    #[arg(long, value_name = "PATH[:ro|:rw]", value_parser = mount)]
    mount: Vec<(String, Access)>,

    /// Keep PATH inside a writable mount from being written, renamed or
    /// deleted; repeat for more.
    #[arg(long, value_name = "PATH")]
    protect: Vec<String>,

    /// Keep DIR writable in every mode as the runner's own state (a
    /// managed CLAUDE_CONFIG_DIR, say): the filename rules (.env, *.key,
    /// *.pem) keep to the workspace and do not hold inside it; repeat for
    /// more. It may not hold a writable mount.
    #[arg(long, value_name = "DIR")]
    runner_state_dir: Vec<String>,

    /// Hide PATH from reading inside the sandbox (a directory shows empty, a
    /// file reads empty), besides the fixed secret set; a glob (certs/*.pem,
    /// `*` and `?` within one name, one `**` for any number of directories:
    /// **/*.pem) hides its matches and the name guard refuses creating new
    /// ones; repeat for more.
    #[arg(long, value_name = "PATH")]
    read_deny: Vec<String>,

    /// Make PATH, inside a --read-deny path, readable again (read-only); a
    /// path reaching into the fixed secret set refuses the run; repeat for
    /// more.
    #[arg(long, value_name = "PATH")]
    allow_read_within_denies: Vec<String>,

    /// The command's working directory (the current one by default).
    #[arg(long, value_name = "DIR")]
    workdir: Option<String>,

    /// Run the command in a workspace of its own made from the checkout
    /// REPO: a copy-on-write view of it on a branch of its own (see
    /// --workspace-branch), the command's working directory, while REPO
    /// itself stays unwritable. At the end the branch is collected into
    /// REPO as refs/sessions/SESSION/BRANCH (printed on stderr) and the
    /// workspace goes. Takes no --mount of REPO and no --workdir.
    #[arg(long, value_name = "REPO")]
    workspace: Option<String>,

    /// The workspace's branch (agent-run by default).
    #[arg(long, value_name = "NAME", requires = "workspace")]
    workspace_branch: Option<String>,

    /// End the command as killed (exit 124) after this many seconds.
    #[arg(long, value_name = "SECS", value_parser = seconds, allow_negative_numbers = true)]
    timeout: Option<Duration>,

    /// End the command as killed (exit 137) when it uses more memory than
    /// this (bytes, or with a K, M or G suffix; at least 1M).
    #[arg(long, value_name = "BYTES", value_parser = memory, allow_negative_numbers = true)]
    memory: Option<u64>,

    /// Let the command run at most this many processes and threads at once.
    #[arg(long, value_name = "N", value_parser = pids, allow_negative_numbers = true)]
    pids: Option<u32>,

    /// Let the command use at most this much CPU time per second (1.5 is
    /// one and a half CPUs).
    #[arg(long, value_name = "N", value_parser = cpus, allow_negative_numbers = true)]
    cpus: Option<u32>,

    /// Switch the sandbox on or off (as the CC_SERVER_SANDBOX variable);
    /// off runs the command unconfined, explicitly.
    #[arg(long, value_name = "on|off")]
    sandbox: Option<String>,

    /// The backend to use instead of the one the host's probe picks (none
    /// runs the command unconfined; microvm is refused where there is none).
    #[arg(long, value_name = "native|none|microvm", value_parser = backend)]
    backend: Option<SandboxBackend>,

    /// Choose the backend as for a server-driven terminal, whose default is
    /// none (unconfined): then only --backend native confines it.
    #[arg(long)]
    terminal: bool,

    /// Also write every event as one JSON object per line, to descriptor FD
    /// (3 or above, such as json:3 with 3>events.jsonl) or to FILE (created
    /// or truncated).
    #[arg(long, value_name = "json:FD|json=FILE", value_parser = events)]
    events: Option<EventsTo>,

    /// Append an audit trail to FILE (made with mode 0600 if missing): one
    /// OCSF 1.3.0 record (JSON) per line for the session's start and end,
    /// each command's start and end, and each refusal.
    #[arg(long, value_name = "FILE")]
    audit: Option<std::path::PathBuf>,

    /// How this program's lines and the manager's go to stderr: text (one
    /// line each) or json (one JSON object per line from a tracing
    /// subscriber: time, level, target, message, fields, and the spans with
    /// the session id and backend).
    #[arg(long, value_name = "text|json", default_value = "text")]
    log_format: crate::log_format::LogFormat,

    /// Let the command connect to the Unix socket PATH (absolute; that
    /// socket alone is bound in, and SSH_AUTH_SOCK passes when it names it);
    /// repeat for more.
    #[arg(long, value_name = "PATH")]
    allow_unix_socket: Vec<String>,

    /// The same for a socket that gives control of the host (Docker,
    /// containerd, the system bus), which --allow-unix-socket refuses;
    /// warned about.
    #[arg(long, value_name = "PATH")]
    allow_root_equivalent_unix_socket: Vec<String>,

    /// Broker this host: the real credential is added to the command's
    /// requests there, and the command only ever sees a phantom token;
    /// repeat for more.
    #[arg(long, value_name = "HOST")]
    broker: Vec<String>,

    /// The broker's request rules (TOML), needed with --broker.
    #[arg(long, value_name = "FILE")]
    broker_rules: Option<PathBuf>,

    /// The variable of this process's environment that holds the real
    /// credential, needed with --broker (never passed into the sandbox).
    #[arg(long, value_name = "NAME")]
    broker_credential_env: Option<String>,

    /// How the real credential is sent: bearer, token, git-basic, or
    /// header:NAME for an API-key header such as header:x-api-key.
    #[arg(long, value_name = "TEMPLATE", value_parser = template, default_value = "bearer")]
    broker_template: HeaderTemplate,

    /// A variable that receives the phantom token instead of GH_TOKEN and
    /// GITHUB_TOKEN; repeat for more.
    #[arg(long, value_name = "NAME", value_parser = phantom_env)]
    broker_phantom_env: Vec<String>,

    /// Also broker the brokered hosts on PORT besides 443; repeat for more.
    #[arg(long, value_name = "PORT", value_parser = broker_port)]
    broker_port: Vec<u16>,

    /// The push rule (TOML) git pushes through the broker must pass;
    /// without it every push is refused.
    #[arg(long, value_name = "FILE")]
    broker_push_rule: Option<String>,

    /// Also trust the CA certificates in this PEM file for the broker's
    /// upstream connections; repeat for more.
    #[arg(long, value_name = "FILE")]
    upstream_ca: Vec<PathBuf>,

    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// Reads the command line (`args`, without the program name): a
/// `--settings` file's flags go first, so the command line's own single
/// values win and lists add up.
pub(crate) fn parse(args: Vec<OsString>) -> Result<Options, CliError> {
    let program = || OsString::from("agent-run");
    let given = Cli::try_parse_from(std::iter::once(program()).chain(args.iter().cloned()))
        .map_err(command_without_dashes)?;
    let cli = match given.settings.as_slice() {
        [] => given,
        [file] => {
            // A sandbox-runtime file's relative paths are the working
            // directory's, and `~` is this process's HOME.
            let workdir = std::env::current_dir()
                .map_err(|e| CliError::Rule(format!("--settings: the working directory: {e}")))?;
            let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
            let flags = agent_sandbox_examples::read_settings(file, &workdir, &home)
                .map_err(|e| CliError::Rule(e.to_string()))?;
            let merged = std::iter::once(program())
                .chain(flags.into_iter().map(OsString::from))
                .chain(args);
            Cli::try_parse_from(merged).map_err(CliError::Clap)?
        }
        _ => return Err(CliError::Rule("--settings given twice".into())),
    };
    options(cli).map_err(CliError::Rule)
}

/// A word that is no flag, given where flags go, is most likely the
/// command without its `--`: say so.
fn command_without_dashes(e: clap::Error) -> CliError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument
        && let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidArg)
        && !word.starts_with('-')
    {
        return CliError::Rule(format!(
            "unexpected argument '{word}': the command goes after --, as in \
             agent-run [OPTIONS] -- {word} [ARG...]"
        ));
    }
    CliError::Clap(e)
}

/// The rules between flags, then the options.
fn options(c: Cli) -> Result<Options, String> {
    if c.broker.is_empty() {
        if !c.broker_phantom_env.is_empty() {
            return Err("--broker-phantom-env needs --broker HOST".into());
        }
        if !c.broker_port.is_empty() {
            return Err("--broker-port needs --broker HOST".into());
        }
    }
    if c.workspace.is_some() && c.workdir.is_some() {
        return Err("--workspace is the command's working directory: drop --workdir".into());
    }
    let mut unix_sockets: Vec<(String, bool)> = c
        .allow_unix_socket
        .into_iter()
        .map(|p| (p, false))
        .collect();
    unix_sockets.extend(
        c.allow_root_equivalent_unix_socket
            .into_iter()
            .map(|p| (p, true)),
    );
    Ok(Options {
        mechanism: c.mechanism,
        microvm_runtime: c.microvm_runtime,
        require_hardware_vm: c.require_hardware_vm,
        allow: c.allow,
        deny: c.deny,
        no_baseline: c.no_baseline,
        cidrs: c.allow_cidr,
        no_filename_rules: c.no_filename_rules,
        no_name_guard: c.no_name_guard,
        network: c.network,
        mode: c.mode,
        mounts: c.mount,
        protect: c.protect,
        runner_state_dirs: c.runner_state_dir,
        read_deny: c.read_deny,
        allow_read_within_denies: c.allow_read_within_denies,
        workdir: c.workdir,
        workspace: c.workspace.map(|checkout| Workspace {
            checkout,
            branch: c.workspace_branch,
        }),
        timeout: c.timeout,
        limits: Limits {
            memory_bytes: c.memory,
            max_processes: c.pids,
            cpu_millis: c.cpus,
        },
        switch: c.sandbox,
        backend: c.backend,
        terminal: c.terminal,
        events: c.events,
        audit: c.audit,
        log_format: c.log_format,
        unix_sockets,
        broker_hosts: c.broker,
        broker_rules: c.broker_rules,
        broker_credential_env: c.broker_credential_env,
        broker_template: c.broker_template,
        broker_phantom_env: c.broker_phantom_env,
        broker_ports: c.broker_port,
        broker_push_rule: c.broker_push_rule,
        upstream_ca: c.upstream_ca,
        command: c.command,
    })
}

fn cidr(v: &str) -> Result<Cidr, String> {
    v.parse()
        .map_err(|e| format!("{e}; give an address range such as 10.0.0.0/8 or fd00::/8"))
}

fn on_off(v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err("give on or off".into()),
    }
}

fn mechanism(v: &str) -> Result<NativeMechanism, String> {
    match v {
        "bubblewrap" => Ok(NativeMechanism::Bubblewrap),
        "landlock" => Ok(NativeMechanism::Landlock),
        _ => Err("give bubblewrap or landlock".into()),
    }
}

/// The microvm runtime asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MicrovmRuntime {
    /// Exactly this kind.
    Kind(MicrovmRuntimeKind),
    /// QEMU, on KVM or emulated as its canary finds.
    Qemu,
}

fn microvm_runtime(v: &str) -> Result<MicrovmRuntime, String> {
    match (v, MicrovmRuntimeKind::from_name(v)) {
        ("qemu", _) => Ok(MicrovmRuntime::Qemu),
        (_, Some(k)) => Ok(MicrovmRuntime::Kind(k)),
        _ => Err("give gvisor, qemu, qemu-kvm or qemu-tcg".into()),
    }
}

fn mode(v: &str) -> Result<Mode, String> {
    Mode::from_name(v).ok_or_else(|| "give chat, review, plan or orchestrate".into())
}

fn mount(v: &str) -> Result<(String, Access), String> {
    let (path, access) = match (v.strip_suffix(":ro"), v.strip_suffix(":rw")) {
        (Some(p), _) => (p, Access::ReadOnly),
        (None, Some(p)) => (p, Access::ReadWrite),
        (None, None) => (v, Access::ReadWrite),
    };
    if path.is_empty() {
        return Err(
            "give a path, with :ro for a read-only mount (:rw, the default, writable)".into(),
        );
    }
    Ok((path.to_owned(), access))
}

fn seconds(v: &str) -> Result<Duration, String> {
    v.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "give a number of seconds above 0, such as 30 or 0.5".into())
}

/// A byte count with an optional K, M or G suffix (powers of 1024).
pub(crate) fn bytes(v: &str) -> Result<u64, String> {
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

/// The least memory limit taken: below it no program starts, so a smaller
/// value is a unit left out (`64` meant as 64M), said before the launch.
const MIN_MEMORY: u64 = 1 << 20;

fn memory(v: &str) -> Result<u64, String> {
    let n = bytes(v)?;
    if n < MIN_MEMORY {
        return Err(format!(
            "{n} bytes is too little for any program: give at least 1M (a number without a \
             suffix is bytes; 64M is 64 mebibytes)"
        ));
    }
    Ok(n)
}

fn pids(v: &str) -> Result<u32, String> {
    v.parse()
        .map_err(|_| "give a whole number of processes, such as 64".into())
}

/// Thousandths of a CPU, at least one.
fn cpus(v: &str) -> Result<u32, String> {
    let cpus: f64 = v
        .parse()
        .ok()
        .filter(|c: &f64| c.is_finite() && *c > 0.0 && *c <= 4096.0)
        .ok_or("give a number of CPUs above 0, such as 2 or 0.5")?;
    Ok(((cpus * 1000.0).round() as u32).max(1))
}

fn backend(v: &str) -> Result<SandboxBackend, String> {
    match v {
        "native" => Ok(SandboxBackend::Native),
        "none" => Ok(SandboxBackend::None),
        // Never downgraded: without a microVM runtime this is a loud error
        // from the backend selection.
        "microvm" => Ok(SandboxBackend::Microvm),
        _ => Err("give native, none or microvm".into()),
    }
}

fn events(v: &str) -> Result<EventsTo, String> {
    EventsTo::parse(v).map_err(|e| e.to_string())
}

fn template(v: &str) -> Result<HeaderTemplate, String> {
    header_template("--broker-template", v).map_err(|e| e.to_string())
}

fn phantom_env(v: &str) -> Result<String, String> {
    env_name("--broker-phantom-env", v).map_err(|e| e.to_string())
}

fn broker_port(v: &str) -> Result<u16, String> {
    port("--broker-port", v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
