//! The facade: run a command confined by the native sandbox, reaching the
//! network only through the session's proxies.
//!
//! It is a host program's one dependency: it re-exports the vocabulary
//! (the spec and its mounts, modes, commands, events, violations, limits,
//! terminal sizes, the [`SandboxPort`] trait, the proxies' [`IpPolicy`]),
//! and [`SandboxManager`] has `launch`, `exec` and `destroy` of its own, so
//! the common path needs no trait import.
//!
//! ```no_run
//! use agent_sandbox::{Access, ManagerBuilder, SandboxBindMount, SandboxCommand, SandboxSpec};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Inside a sandbox this program is also the name guard's launcher:
//!     // first in main, before any thread (so no #[tokio::main]).
//!     agent_sandbox::run_inner_role_if_launched();
//!     tokio::runtime::Runtime::new()?.block_on(async {
//!         let manager = ManagerBuilder::from_ambient()
//!             .home("/home/agent")
//!             .base_env(std::env::vars_os().collect())
//!             .inner_roles_from_current_exe()
//!             .build()?;
//!         eprintln!("{}", manager.startup_line());
//!         let mut spec = SandboxSpec::new("s1", "w1");
//!         spec.bind_mounts
//!             .push(SandboxBindMount::new("/srv/worktree", Access::ReadWrite)?);
//!         spec.guest_workdir = Some("/srv/worktree".into());
//!         let mut handle = manager.launch(spec).await?;
//!         let mut git = SandboxCommand::new("git");
//!         git.arg("status");
//!         let out = manager.exec(&handle, git).await?.output().await;
//!         println!("{} {}", out.status, String::from_utf8_lossy(&out.stdout));
//!         manager.destroy(&mut handle).await?;
//!         Ok::<(), Box<dyn std::error::Error>>(())
//!     })
//! }
//! ```
//!
//! [`SandboxManager`] implements [`sandbox_core::SandboxPort`] for the
//! `native` backend (bubblewrap on Linux and WSL2, Seatbelt on macOS) and
//! for `none`. On macOS a launch starts the same proxies and renders the
//! Seatbelt profile of the `seatbelt-profile` crate for the spec, the home
//! and the proxies' ports (portable code, tested on Linux with the crate's
//! SBPL evaluator); `exec` runs the command through `sandbox-exec` with that
//! profile. The Linux path is described here:
//!
//! - `launch` starts the session's proxy pair with no port of its own
//!   (allowlist from the spec, denylist first, address policy), a private
//!   0700 directory with one Unix socket per proxy that the proxies serve
//!   themselves (peers of the session's uid only), the sanitised environment with
//!   the proxy variables, and the bubblewrap plan (R-BWRAP-1). A spec that
//!   needs filename-glob denies (no new `.env`, `*.key`, `*.pem` inside
//!   writable mounts) runs every command under the name guard when a
//!   launcher was set ([`ManagerBuilder::inner_roles_from_current_exe`] with
//!   [`run_inner_role_if_launched`] first in `main`, or
//!   [`ManagerBuilder::name_guard_launcher`]) and the probe
//!   found a kernel that can run it (R-NAMEGUARD-1); each refusal is a
//!   `file-write-create` violation with the path. Otherwise it is refused
//!   (R-DISPATCH-3, [`ErrorKind::NameGuardLauncherNeeded`] when no
//!   launcher was set), unless the explicit opt-out
//!   [`FilenameRules::DropFilenameGlobDenies`] was chosen, which is logged.
//!   Under the guard a Unix socket is reached by path only when the
//!   command's own processes bound it or it was granted
//!   ([`ManagerBuilder::allow_unix_socket`]: that socket alone is bound into
//!   the sandbox; one that gives control of the host needs
//!   [`ManagerBuilder::allow_root_equivalent_unix_socket`]); any other, such
//!   as one a host process makes in the worktree, is a `network-outbound`
//!   violation with its path. The write denies reach into every git
//!   repository nested in a writable root (R-PATHS-3); the manager keeps
//!   its latest search for them per set of writable roots, so a later one
//!   (at the end of the run, which names repositories made inside, and at
//!   the next launch there) reads again only the directories whose change
//!   time moved, on file systems where that can be trusted
//!   (`bwrap_spec::search_git_repos_on_host_since`).
//! - `exec` runs the command under bubblewrap. Inside, the proxies answer on
//!   127.0.0.1:3128 (HTTP) and 127.0.0.1:1080 (SOCKS5) (R-BWRAP-2): by
//!   default those listeners are bound in the sandbox's network namespace
//!   from the host side while bubblewrap holds the command and are served by
//!   the proxies directly ([`InnerBridge::HostSideListeners`], no process
//!   inside, no relay, about 9 ms for a whole launch); where the namespaces cannot be joined, `socat`
//!   listeners inside forward to the Unix sockets ([`InnerBridge::Socat`]). Output, proxy denials (`violation` events) and the exit
//!   (`exit` or `killed`) arrive as [`sandbox_core::SandboxEvent`]s.
//! - `destroy` kills what still runs, stops the proxies and their listeners and
//!   removes sockets and placeholders: no process, socket or file is left.
//!
//! Where bubblewrap cannot make its namespaces (a container without user
//! namespaces; the probe's trial launch fails) and the kernel has Landlock
//! ABI 6, the probe offers the **Landlock mechanism** instead
//! ([`sandbox_core::NativeMechanism::Landlock`]; a host program can ask for
//! it, or for bubblewrap, with [`ManagerBuilder::native_mechanism`], and an
//! explicit choice that cannot run is [`ErrorKind::MechanismUnavailable`]).
//! Its commands run on the host under the name-guard launcher with
//! `--landlock`: Landlock rules for writes, reads (all but the secret set),
//! TCP (the command itself: only connects to the two proxy ports) and
//! scopes (no abstract Unix socket or signal outside), and the supervisor
//! for protected paths inside writable mounts, filename rules and every TCP
//! bind and connect, which it performs: the proxies, and on loopback the
//! servers the session started (a wildcard bind is made on loopback; a
//! connect goes ahead only when every listener that could take it is the
//! session's own). The proxies listen on
//! loopback ports and take only clients with the session's credentials.
//! It is weaker than bubblewrap, and says so in the probe line, the backend
//! label and the handle's `weaker` detail: other processes are visible in
//! `/proc`, there is no private `/tmp` (`TMPDIR` is the session's own
//! directory; other sessions' directories in the manager's temp dir, made
//! before or after, are unreadable; `HOME` and the `XDG_*` directories are
//! a private writable directory of the session's, the real home staying
//! read-only), and the names of secret paths can be seen, though a secret
//! can be neither read nor, for a directory, listed (the name guard's
//! supervisor refuses that listing, which Landlock alone cannot). The
//! terminal surface
//! is refused there ([`ErrorKind::NotSupported`]).
//!
//! The **`microvm` backend** (Linux) runs each session in one gVisor
//! sandbox (`runsc`), kept warm: a kernel boundary, as the command's system
//! calls are served by gVisor's user-space kernel, but not a hardware VM,
//! and the probe line, the label and the handle's `hardwareVm` detail say
//! so ([`ManagerBuilder::require_hardware_vm`] refuses it). Its file system
//! is the bubblewrap plan of the same spec read as an OCI bundle; it has
//! loopback only (`--network=none`). Its first process is the launcher
//! program as the sandbox's agent (so gVisor needs
//! [`ManagerBuilder::inner_roles_from_current_exe`] or
//! [`ManagerBuilder::name_guard_launcher`]), which speaks to the host on
//! its stdio, starts every command and carries each connection to the
//! proxies' ports to their Unix sockets. What one command leaves in the
//! background is there for the next; `destroy` deletes the sandbox and its
//! state. `suspend` checkpoints it into the session's directory, with any
//! running command and its terminal, and `resume` restores it over new
//! pipes, the commands carrying on (other backends answer
//! `sandbox_core::ErrorKind::SuspendUnsupported`). Without root it runs
//! `runsc --rootless` (the commands run as the sandbox's root, which is
//! the caller on the host, with no capability); `suspend` is then refused
//! ([`ErrorKind::NotSupported`]), as this runsc cannot restore a rootless
//! sandbox. This gVisor release
//! cannot run the name guard, so a launch needing filename rules is
//! refused ([`ErrorKind::MicrovmFilenameRules`]) unless they are dropped
//! explicitly. Limits: a process limit is held by a cgroup of gVisor's
//! kernel; a memory limit is watched by the agent every 5 ms (the command
//! ends as out of memory once past it, so it may go past it by what it
//! allocates within one interval); gVisor's kernel does not enforce CPU
//! quotas, so a CPU limit holds the whole sandbox (a host cgroup of its
//! processes) to the command's share while it runs, and is refused
//! ([`ErrorKind::LimitUnavailable`]) without root. A command may run on a terminal of gVisor's own, mirrored
//! on a host terminal (job control, resizes, Ctrl-C), and `uname -r` there names gVisor's
//! kernel, not the host's. The terminal surface runs there too: the
//! fixed terminal profile of the same spec (the host's network, as that
//! profile shares it, no proxies, the terminal's secret directories
//! hidden) in a gVisor sandbox of its own, the handle's `network` detail
//! saying `host`.
//!
//! Asked for with [`ManagerBuilder::microvm_runtime_qemu`], the `microvm`
//! backend runs each session in a QEMU guest with a kernel of its own (a
//! kernel installed on the host; the guest's `/init` is the launcher
//! program), on KVM where the probe's canary guest boots, else emulated
//! (TCG), which the label, the handle's `hardwareVm` and `accelerator`
//! details say and [`ManagerBuilder::require_hardware_vm`] refuses. The
//! guest has no network card: its agent carries each connection to the
//! proxies' ports over its channel. Its root is the bubblewrap plan's file
//! system, served over virtio-fs by `virtiofsd` in a bubblewrap jail that
//! holds exactly that file system (so every rule is a mount of the host's
//! kernel), under the name guard, so the filename rules hold on the host
//! and are reported as the command's violations. Commands, pipes, a
//! terminal of the guest's own, signals, timeouts and kills work as on the
//! other backends; per-command limits, `suspend` and the terminal surface
//! are refused with the reason.
//!
//! With `none` nothing is confined, but the command still starts with the
//! sanitised environment (R-DISPATCH-2).
//!
//! Windows has no native sandbox (R-BACKEND-4) and runs `none`. What it
//! cannot do is refused, never weakened: a command asking for a terminal
//! is [`ErrorKind::NotOnThisPlatform`] before anything runs, a limit is
//! [`ErrorKind::LimitUnavailable`] (there are no cgroups), and of the
//! signals only kill can be sent (interrupt and terminate are
//! [`sandbox_core::ControlError::SignalUnavailable`]). The session
//! directory and the CA bundle get no POSIX mode there.
//!
//! # Commands
//!
//! Every backend runs a [`sandbox_core::SandboxCommand`] the same way (one
//! code path in `running.rs`), and `exec` returns a
//! [`sandbox_core::RunningCommand`]: the events, and controls a host can
//! hand to another task.
//!
//! - **Stdin**: `/dev/null` or a pipe the host writes and closes.
//! - **Stdout**: `stdout` events, or passed on by the manager into a file of
//!   the host's ([`sandbox_core::Stdout::PassTo`]: in the kernel with
//!   `splice` where the file allows it, no events). Either way the command
//!   writes into a pipe the manager holds; no host descriptor enters the
//!   sandbox. A host passing output into a pipe should ignore `SIGPIPE`
//!   (Rust programs do) so that a reader going away is an error, not a
//!   signal.
//! - **A terminal**: a fresh PTY per command. Under bubblewrap it is made in
//!   the sandbox's own devpts (`tty` names `/dev/pts/0` inside, nothing of
//!   the host's terminals is reachable) and becomes the command's
//!   controlling terminal (job control works; needs util-linux's `setsid`
//!   inside). Keys, Ctrl-D, Ctrl-C and resizes go through the controls.
//! - **Signals**: interrupt and terminate reach every process of the
//!   sandbox's pid namespace (on a terminal, Ctrl-C is typed), kill ends it
//!   as `killed` (manual).
//! - **A timeout**: the command ends as `killed` (timeout).
//! - **Limits**: memory, processes and CPU through a cgroup per command
//!   ([`Cgroups`]; v2 where delegated, v1 where the controller lives); an
//!   out-of-memory kill is `killed` (oom); a limit no cgroup can enforce is
//!   [`ErrorKind::LimitUnavailable`], never dropped.
//! - **Its own variables**, checked by env-guard's rules (a loader,
//!   injection or proxy variable is refused, naming the rule).
//!
//! The name guard's refusals are passed on before any output event the
//! command wrote after the refused call, so a host reading a JSON-RPC stream sees
//! each refusal between the responses around it.
//!
//! A command's stream ends only once its teardown is done, so the next
//! `exec` right after it is never refused as busy.
//! [`RunningCommand::wait`] gives how it ended ([`CommandStatus`]: an exit
//! code, or killed with the reason), [`RunningCommand::output`] that and
//! its stdout, stderr and violations, each capped ([`OutputLimit`]).
//!
//! # Sessions: one sandbox, many commands
//!
//! A native session (bubblewrap or Landlock) is one sandbox by default
//! ([`CommandIsolation::SessionSandbox`]): `launch` builds it once, with
//! the session's init inside (the name-guard launcher program, run as
//! `--session-init`; it needs a launcher, see
//! [`ManagerBuilder::name_guard_launcher`]), and each `exec` asks that init
//! to start the command: a fork and an exec inside, not a new sandbox.
//!
//! - Each command gets a session and process group of its own; the host's
//!   interrupt, terminate and kill (and a timeout, and destroy) go to that
//!   group. A terminal is a fresh PTY made on the host, the command's
//!   controlling terminal (job control works).
//! - What a command leaves running (a server started with `&`, a daemon)
//!   stays in the session for the next command, as in a shell, under the
//!   same rules (filename rules, protected paths, the proxies as the only
//!   way out), and ends at destroy. Its output after its command ended is
//!   neither read nor passed on: the pipes close 100 ms after the command's
//!   exit. A refusal
//!   of such a process is reported in the events of the command running
//!   then, or of the next one.
//! - Limits make a cgroup per command; whatever the command started ends
//!   with it, and the session's other processes are not touched. Under
//!   bubblewrap the init moves the command into it through descriptors the
//!   host opened (a pid inside names only the sandbox's processes). Under
//!   Landlock, which has no pid namespace, a command with limits runs under
//!   a supervisor of its own that the host puts in the cgroup, as with a
//!   fresh sandbox per command: a cgroup descriptor inside the session could
//!   move any host process into it if a command took the init over.
//! - The init speaks a small framed protocol over a socket pair
//!   ([`sandbox_core::session_wire`], with limits and a fuzz target: a
//!   command may take the init over, so its replies are untrusted). If it
//!   does not end a command the host ended within the grace (stopped or
//!   stuck), the whole session's sandbox ends and later commands are
//!   refused with [`ErrorKind::SessionSandboxEnded`].
//! - A git repository a command makes in a writable root (`git init`,
//!   `git clone`, one moved in) gets the denies of one found at launch
//!   (its hooks, config and git pointers, R-PATHS-3) before the next
//!   command starts, for every process of the session: under bubblewrap
//!   its pins and read-only binds are made in the running sandbox (by a
//!   short-lived helper that joins its mount namespace) and its creation
//!   rules go to the session's name guard; under Landlock the guard takes
//!   its protected paths. The command that made it may still write them.
//!   The name guards note every `.git` made and every directory moved, and
//!   the writable roots are searched again only after such a note (without
//!   a guard, before every command). If the denies cannot be added, the
//!   command is refused and the next one tries again.
//!
//! [`CommandIsolation::FreshSandboxPerCommand`] builds a new sandbox for
//! every command instead (nothing but files passes from one command to
//! the next; under bubblewrap a terminal is then made in the sandbox's own
//! devpts). The handle's `isolation` detail says which one a session has.
//!
//! # What is reported, and what cannot be
//!
//! Every refusal the host can learn of is a `violation` event of the
//! command that caused it:
//!
//! - **The proxies** (every backend): a target the policy refuses is
//!   `network-outbound` `host:port` with the reason in `raw`; an allowed
//!   target the network then failed (no such name, timed out, refused,
//!   unreachable) is `network-outbound` too, its `raw` saying
//!   `allowed, but the upstream failed: ...`.
//! - **The name guard** (bubblewrap and Landlock): creating a denied name is
//!   `file-write-create` with the path; a refused Unix-socket connect is
//!   `network-outbound` with the socket's path.
//! - **Under Landlock**, the guard's supervisor performs every write-open,
//!   rename, link and removal of a protected path and every listing of a
//!   secret directory, so each refusal of those is a violation too.
//! - **Under bubblewrap** a write to a path bound read-only (a read-only
//!   mount, a protected path, an existing entry of the mandatory set such as
//!   `.git/hooks`) fails inside with "Read-only file system" and makes no
//!   event: the kernel's mount layer refuses it, where nothing of ours
//!   runs. Likewise a secret reads as empty (it is masked, not refused),
//!   and a connection to anything but the proxies fails inside (the
//!   sandbox has no other network). The `microvm` backend is the same.
//!
//! # Workspaces: one repository, many sessions
//!
//! Agents work one task each, often several on one repository at once.
//! The normal path is a **workspace** per session
//! ([`SandboxManager::launch_in_workspace`] with a [`WorkspaceRequest`]):
//! the session gets its own view of a registered checkout, working tree
//! and git directory, on a branch of its own, starting at the checkout's
//! `HEAD` with its uncommitted changes. Every write lands in the session's
//! layer; nothing of the checkout (refs, packed-refs, index, worktrees,
//! `info/`, objects, config, hooks) can change from inside. The work comes
//! back only through a gate, [`SandboxManager::collect`], which brings the
//! session's branch into the checkout as `refs/sessions/<session>/<branch>`
//! through the push rule (a create or a fast-forward of that ref alone,
//! its object and size limits) and touches nothing else; merging is the
//! host's decision. [`SandboxManager::launch_fork`] starts another session
//! from what a workspace holds now (N attempts from one point); each fork
//! collects on its own. The layer lives in a directory of the manager's
//! temp dir, its disk use in [`WorkspaceInfo::disk_bytes`], removed at
//! `destroy` and swept after a crash.
//!
//! What creating one costs is in [`WorkspaceLayering`] and the handle's
//! `workspaceLayering` detail. Under bubblewrap (with its commands in one
//! warm sandbox, the default) the view is an overlay mounted in the
//! sandbox's own mount namespace ([`WorkspaceLayering::Overlay`]): the
//! checkout is its read-only lower layer, so creating one costs the same
//! whatever the checkout's size, a fork costs what its parent changed, and
//! the host never sees the view. Elsewhere (Landlock, which has no mount
//! namespace; gVisor and QEMU, whose own kernels serve the mounts) or
//! where this kernel cannot mount an overlay for the user, the working
//! tree is copied ([`WorkspaceLayering::Copy`], a reflink where the file
//! system has one), costing in proportion to the working tree. Figures in
//! `benches/README.md`. The host's read denies of paths in the checkout
//! ([`ManagerBuilder::read_deny`]) hold at the same paths in the view.
//!
//! ```no_run
//! # async fn demo(m: agent_sandbox::SandboxManager) -> Result<(), agent_sandbox::Error> {
//! use agent_sandbox::{CollectOutcome, SandboxPort, SandboxSpec, WorkspaceRequest};
//! let task = WorkspaceRequest::new("/home/me/project", "fix-parser")?;
//! let mut h = m.launch_in_workspace(SandboxSpec::new("task-1", "w"), &task).await?;
//! // ... the agent edits and commits on `fix-parser` inside ...
//! if let CollectOutcome::Updated(c) = m.collect(&h).await? {
//!     println!("review {} ({})", c.reference, c.new); // refs/sessions/task-1/fix-parser
//! }
//! m.destroy(&mut h).await?;
//! # Ok(()) }
//! ```
//!
//! A linked worktree (`git worktree add`) can still be mounted for reading:
//! [`SandboxBindMount::linked_worktree`] gives the worktree and the
//! repository's common directory, the latter always read-only, since it is
//! what every checkout of the repository shares. `git status`, `log` and
//! `diff` work there and files can be edited; `git commit` fails. A
//! writable mount that is, or lies inside, a git directory is refused
//! ([`ErrorKind::WritableGitDirectory`]).
//!
//! # The handle's details
//!
//! [`SandboxHandle::details`] says what a session is, as strings. These
//! keys are stable (a key may be added; none changes its meaning):
//!
//! | key | present | what |
//! | --- | --- | --- |
//! | `label` | always | the backend's label, which never claims more isolation than the session has |
//! | `limits` | always | which per-command limits this host can enforce, and how |
//! | `mechanism` | landlock | `landlock` (a bubblewrap session has no such key) |
//! | `isolation` | native | one warm sandbox per session, or a fresh one per command |
//! | `httpProxy`, `socksProxy` | with a network | the session's proxies as the commands reach them |
//! | `socketDir` | bubblewrap | the session's own directory of sockets on the host |
//! | `sessionDir` | microvm | the session's own directory on the host |
//! | `tempDir`, `home` | landlock | the commands' `TMPDIR` and private `HOME` |
//! | `weaker` | landlock, gVisor's terminal surface | what this session does not isolate |
//! | `runtime`, `runtimeVersion`, `hardwareVm`, `kernelBoundary` | microvm | the runtime and its isolation class |
//! | `guestKernel` | QEMU | the guest's kernel release |
//! | `workspace`, `workspaceBranch`, `workspaceLayering` | in a workspace | the view, its branch, how it is made |
//!
//! # Log lines and `tracing`
//!
//! The probe's start-up line (also [`SandboxManager::startup_line`]),
//! downgrades, opt-outs and warnings (a repository made inside a writable
//! mount, a search cut short) go to the [`LogSink`] of
//! [`ManagerBuilder::log`]; unset, to stderr ([`log_to_stderr`]).
//!
//! A host that logs through `tracing` sees the same, with fields: spans
//! `agent_sandbox.build`, `agent_sandbox.launch` (`session_id`, `backend`,
//! `label`, `workspace`), `agent_sandbox.exec` and, below it for the
//! command's whole run, `agent_sandbox.command` (`session_id`, `program`),
//! `agent_sandbox.destroy`, `agent_sandbox.suspend` and
//! `agent_sandbox.resume`, each below whatever span the host is in; events
//! for each log line (info), each refusal (`refused`, warn, with `action`
//! and `target`: a host or a path, never the raw line), and the command's
//! end (`exit_code`, or the kill's `reason` and `signal`). The session's
//! proxies run in `agent_sandbox.egress` (`session_id`), with an event for
//! each decision (target `connect_proxy`: `connection allowed` and
//! `connection handed to the broker` at info, `connection refused` and
//! `allowed, but the upstream failed` at warn, with `protocol`,
//! `destination` and `via` or `reason`) and the broker's (target
//! `cred_broker`: `brokered request forwarded` at info with `method`,
//! `path` without its query, `rule` and `status`; `brokered request
//! refused` at warn with the rule engine's `decision`). No field holds a
//! credential, a phantom or an argument of the command; a failed call's
//! span records its error's text.
//!
//! # An audit trail
//!
//! [`ManagerBuilder::audit`] takes a sink for OCSF records ([`audit`]
//! says which classes, in [`audit::OCSF_VERSION`]): one JSON object per
//! line for each session launched and destroyed, each command started and
//! ended, each refusal, each connection the proxies allow and each request
//! the broker forwards, with the session id and backend on every one
//! and the time to the microsecond. [`audit::audit_to_file`] appends them
//! to a file; `agent-run --audit FILE` does that.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut b = agent_sandbox::ManagerBuilder::from_ambient();
//! b.audit(agent_sandbox::audit::audit_to_file("audit.jsonl".as_ref())?);
//! let manager = b.build()?;
//! # let _ = manager; Ok(()) }
//! ```
//!
//! # Input safety
//!
//! Specs are validated by sandbox-core and turned into argv by bwrap-spec
//! (no shell sees a spec path); network input is parsed only by
//! connect-proxy, whose limits apply. The base environment goes through
//! env-guard (inherit `core`; loader, injection and secret variables never
//! pass; every drop is logged by name and rule, never by value).
//!
//! # Crate features
//!
//! This crate has no optional features. It needs a tokio runtime.

pub mod audit;
mod backend;
mod broker;
mod builder;
mod cgroup;
mod control;
mod decide;
mod egress;
mod env;
mod error;
mod events;
mod inner_bridge;
mod launcher;
mod manager;
mod pass_stdout;
mod process;
#[cfg(unix)]
mod process_fds;
mod pty;
#[cfg(target_os = "linux")]
mod repo_records;
mod runner;
mod running;
mod seam;
mod session_dir;
mod settings;
mod unix_sockets;
mod violations;
mod workspace;

pub use broker::{
    BrokerSettings, DEFAULT_BROKER_PORT, SYSTEM_CA_BUNDLES, broker_intercept,
    broker_intercept_on_ports, credential_for_hosts, header_template_from_name,
    pem_certificates_from_file, rule_engine_from_file,
};
pub use builder::{LogSink, ManagerBuilder, SharedHostView, VmRequirement, log_to_stderr};
pub use bwrap_spec::{FilenameRules, NameGuardLauncher};
pub use cgroup::Cgroups;
pub use connect_proxy::Baseline;
pub use env::sanitized_env;
pub use error::{Error, ErrorKind};
pub use inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT, InnerBridge};
#[allow(deprecated, reason = "the former name stays exported for one release")]
pub use launcher::run_name_guard_if_launched;
pub use launcher::{NAME_GUARD_MARKER, run_inner_role_if_launched};
pub use manager::SandboxManager;
pub use settings::CommandIsolation;
pub use unix_sockets::ROOT_EQUIVALENT_SOCKETS;
pub use workspace::{
    CollectOutcome, Collected, WorkspaceInfo, WorkspaceLayering, WorkspaceRequest,
};

/// The `PATH` a session's commands get when the host's base environment
/// ([`ManagerBuilder::base_env`]) has none.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The vocabulary a host program speaks, so that this crate is its one
// dependency.
pub use connect_proxy::IpPolicy;
pub use sandbox_core::{
    Access, BackendRequest, CommandControl, CommandOutput, CommandSignal, CommandStatus,
    ControlError, Dropped, DynSandboxPort, EventStream, KillReason, Limits, Mode, NativeMechanism,
    OutputLimit, OutputSink, ProbeReport, PtySize, RunningCommand, SandboxBackend,
    SandboxBindMount, SandboxCommand, SandboxEvent, SandboxHandle, SandboxPort, SandboxSpec,
    SandboxState, SandboxSwitch, SandboxViolation, Selection, Stdin, Stdout, Surface, Terminal,
};
