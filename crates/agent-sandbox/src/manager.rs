//! `SandboxManager`: `SandboxPort` for `native` (bubblewrap on Linux) and
//! `none`.

use crate::bridge::{BRIDGED, SocketDir, bind_private_socket};
use crate::broker::{BrokerSettings, SessionBroker};
use crate::env::{EnvExtras, sanitized_env, sanitized_env_with};
use crate::events::ReceiverStream;
use crate::guard::ReportPipe;
use crate::netns;
use crate::{Error, ErrorKind};
use bwrap_spec::{
    BridgePlan, BwrapBuilder, BwrapPlan, FilenameRules, NameGuardLauncher, PlaceholderFiles,
    Profile, discover_git_repos_on_host,
};
use connect_proxy::{
    AllowList, IpPolicy, Network, ProxyConfig, ProxyCredentials, ProxyPair, ProxyService, Resolver,
    SystemResolver,
};
use sandbox_core::{
    AmbientHost, BackendRequest, EventStream, FilenameRuleSupport, KillReason, NativeMechanism,
    ProbeReport, SandboxBackend, SandboxCommand, SandboxEvent, SandboxHandle, SandboxPort,
    SandboxSpec, SandboxState, SandboxSwitch, SandboxViolation, Selection, Surface, select_backend,
};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

/// The loopback port inside the sandbox where the HTTP proxy answers.
pub const GUEST_HTTP_PORT: u16 = 3128;
/// The loopback port inside the sandbox where the SOCKS5 proxy answers.
pub const GUEST_SOCKS_PORT: u16 = 1080;

/// How the sandbox reaches its proxies on 127.0.0.1 inside (R-BWRAP-2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum InnerBridge {
    /// Bind the listeners inside the sandbox's network namespace from the
    /// host side before the command starts (no process inside); falls back
    /// to [`InnerBridge::Socat`] when the namespaces cannot be joined. The
    /// default.
    #[default]
    HostSideListeners,
    /// `socat` listeners started inside the sandbox, forwarding to Unix
    /// sockets bound into it.
    Socat,
}

/// A sink for the manager's log lines (the probe line, downgrades, opt-outs).
pub type LogSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Builds a [`SandboxManager`].
pub struct ManagerBuilder {
    probe: Option<ProbeReport>,
    switch: SandboxSwitch,
    request: BackendRequest,
    surface: Surface,
    home: Option<PathBuf>,
    filename_rules: Option<FilenameRules>,
    name_guard: Option<NameGuardLauncher>,
    ip_policy: IpPolicy,
    extra_allow: Vec<String>,
    deny: Vec<String>,
    resolver: Option<Arc<dyn Resolver>>,
    base_env: Vec<(OsString, OsString)>,
    temp_dir: Option<PathBuf>,
    log: Option<LogSink>,
    inner_bridge: InnerBridge,
    broker: Option<BrokerSettings>,
}

impl std::fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("switch", &self.switch)
            .finish_non_exhaustive()
    }
}

impl ManagerBuilder {
    /// The probe result (from `ProbeReport::probe` or
    /// `sandbox_core::probe_ambient`). Required.
    pub fn probe(&mut self, report: ProbeReport) -> &mut Self {
        self.probe = Some(report);
        self
    }
    /// The `--sandbox` switch (default on).
    pub fn switch(&mut self, switch: SandboxSwitch) -> &mut Self {
        self.switch = switch;
        self
    }
    /// The backend request (default unspecified) and the surface (default
    /// dispatch).
    pub fn request(&mut self, request: BackendRequest, surface: Surface) -> &mut Self {
        self.request = request;
        self.surface = surface;
        self
    }
    /// The run's home directory (required): secrets are denied under it and
    /// inside the sandbox it is a private, empty directory unless mounted.
    pub fn home(&mut self, home: impl Into<PathBuf>) -> &mut Self {
        self.home = Some(home.into());
        self
    }
    /// How filename-glob denies are handled on Linux. Unset (the default),
    /// the name guard enforces them when a launcher was set with
    /// [`ManagerBuilder::name_guard_launcher`] and the probe found a kernel
    /// that can run it; otherwise a launch that needs them is refused
    /// (R-DISPATCH-3). [`FilenameRules::EnforcedByNameGuard`] set explicitly
    /// makes `build` fail when the guard cannot run;
    /// [`FilenameRules::DropFilenameGlobDenies`] is the logged opt-out.
    pub fn filename_rules(&mut self, rules: FilenameRules) -> &mut Self {
        self.filename_rules = Some(rules);
        self
    }
    /// The name-guard launcher (R-NAMEGUARD-1): a host executable that is
    /// bound read-only into each sandbox and runs the command under
    /// creation-time filename rules, reporting each refusal as a
    /// `file-write-create` violation. Either the `name-guard-exec` binary
    /// ([`NameGuardLauncher::new`]) or the host program itself when it
    /// calls `name_guard::launcher_main` for a marker argument
    /// ([`NameGuardLauncher::multi_call`]).
    pub fn name_guard_launcher(&mut self, launcher: NameGuardLauncher) -> &mut Self {
        self.name_guard = Some(launcher);
        self
    }
    /// Address rules for the proxies; grant local origins with
    /// `IpPolicy::allow_cidr`.
    pub fn ip_policy(&mut self, policy: IpPolicy) -> &mut Self {
        self.ip_policy = policy;
        self
    }
    /// Allowlist entries added to every session's list.
    pub fn allow(&mut self, entry: impl Into<String>) -> &mut Self {
        self.extra_allow.push(entry.into());
        self
    }
    /// Deny entries added to every session's list.
    pub fn deny(&mut self, entry: impl Into<String>) -> &mut Self {
        self.deny.push(entry.into());
        self
    }
    /// The proxies' resolver (default: the host's, with a timeout).
    pub fn resolver(&mut self, resolver: Arc<dyn Resolver>) -> &mut Self {
        self.resolver = Some(resolver);
        self
    }
    /// The environment sanitised for each command (pass the host program's
    /// own, e.g. `std::env::vars_os().collect()`, explicitly).
    pub fn base_env(&mut self, env: Vec<(OsString, OsString)>) -> &mut Self {
        self.base_env = env;
        self
    }
    /// Where session socket directories are created (default the system
    /// temp dir).
    pub fn temp_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.temp_dir = Some(dir.into());
        self
    }
    /// Brokers chosen hosts through the credential broker (R-BROKER): every
    /// session gets its own CA, lease and phantom token; the lease is
    /// revoked at `destroy`.
    pub fn broker(&mut self, settings: BrokerSettings) -> &mut Self {
        self.broker = Some(settings);
        self
    }
    /// How the proxies are reached inside (default
    /// [`InnerBridge::HostSideListeners`]).
    pub fn inner_bridge(&mut self, bridge: InnerBridge) -> &mut Self {
        self.inner_bridge = bridge;
        self
    }
    /// Where log lines go (default: nowhere).
    pub fn log(&mut self, sink: LogSink) -> &mut Self {
        self.log = Some(sink);
        self
    }

    /// Selects the backend and builds the manager. Logs the probe's start-up
    /// line and any downgrade.
    pub fn build(&mut self) -> Result<SandboxManager, Error> {
        let probe = match self.probe.take() {
            Some(p) => p,
            None => sandbox_core::probe_ambient().clone(),
        };
        let log = self.log.clone().unwrap_or_else(|| Arc::new(|_: &str| {}));
        // One start-up line (R-PROBE-1); a selection line only when it
        // adds something (a degradation), not when it restates the probe's
        // hint or the switch.
        let startup = probe.startup_line(self.switch);
        log(&startup);
        let selection = select_backend(self.request, self.switch, self.surface, &probe)?;
        let restates_probe = selection.backend == SandboxBackend::None
            && self.surface == Surface::Dispatch
            && startup.starts_with(sandbox_core::probe::LINE_NONE);
        if let Some(line) = &selection.log_line
            && *line != startup
            && !restates_probe
        {
            log(line);
        }
        let home = self.home.clone().ok_or_else(|| {
            Error::from(sandbox_core::Error::from(
                sandbox_core::ErrorKind::InvalidPath {
                    path: String::new(),
                    reason: "the manager needs the run's home directory",
                },
            ))
        })?;
        let tool = |name: &str| {
            probe
                .native
                .tools
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, p)| p.clone())
        };
        let (bwrap, socat) = (tool("bwrap"), tool("socat"));
        let bubblewrap = selection.backend == SandboxBackend::Native
            && probe.native.mechanism == Some(NativeMechanism::Bubblewrap);
        if bubblewrap {
            if bwrap.is_none() {
                return Err(ErrorKind::ToolMissing {
                    tool: "bwrap",
                    hint: "sudo apt-get install bubblewrap".into(),
                }
                .into());
            }
            if socat.is_none() {
                return Err(ErrorKind::ToolMissing {
                    tool: "socat",
                    hint: "sudo apt-get install socat".into(),
                }
                .into());
            }
        }
        // Filename rules are a bubblewrap matter; Seatbelt refuses the names
        // itself.
        let native_linux = bubblewrap && cfg!(target_os = "linux");
        let guard_blocker: Option<String> = match (&self.name_guard, &probe.native.filename_rules) {
            (None, _) => Some("no name-guard launcher was set".to_string()),
            (Some(_), FilenameRuleSupport::NameGuard) => None,
            (Some(_), FilenameRuleSupport::Unavailable(why)) => Some(why.clone()),
            (Some(_), _) => Some("this host's native sandbox is not bubblewrap".to_string()),
        };
        let filename_rules = match (self.filename_rules, native_linux, &guard_blocker) {
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
        if native_linux {
            match (filename_rules, &guard_blocker) {
                (FilenameRules::DropFilenameGlobDenies, _) => log(
                    "filename-glob write denies (.env, *.key, *.pem) are DROPPED for this host: bubblewrap cannot refuse new names (opt-out --no-filename-rules)",
                ),
                (FilenameRules::EnforcedByNameGuard, _) => log(
                    "filename-glob write denies (.env, *.key, *.pem) enforced at creation by name-guard",
                ),
                (_, Some(reason)) => log(&format!(
                    "name-guard unavailable ({reason}): launches with writable mounts are refused"
                )),
                (_, None) => {}
            }
        }
        Ok(SandboxManager {
            inner: Arc::new(Inner {
                selection,
                surface: self.surface,
                home,
                filename_rules,
                name_guard: self.name_guard.clone(),
                ip_policy: self.ip_policy.clone(),
                extra_allow: self.extra_allow.clone(),
                deny: self.deny.clone(),
                resolver: self.resolver.clone(),
                base_env: self.base_env.clone(),
                temp_dir: self.temp_dir.clone().unwrap_or_else(std::env::temp_dir),
                bwrap,
                socat,
                mechanism: probe.native.mechanism,
                log,
                inner_bridge: self.inner_bridge,
                broker: self.broker.clone(),
                sessions: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// Runs commands under the backend the probe and selection chose, with the
/// session's proxies, bridges and a sanitised environment. Implements
/// [`SandboxPort`].
#[derive(Clone)]
pub struct SandboxManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SandboxManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxManager")
            .field("backend", &self.inner.selection.backend)
            .finish_non_exhaustive()
    }
}

struct Inner {
    selection: Selection,
    surface: Surface,
    home: PathBuf,
    filename_rules: FilenameRules,
    name_guard: Option<NameGuardLauncher>,
    ip_policy: IpPolicy,
    extra_allow: Vec<String>,
    deny: Vec<String>,
    resolver: Option<Arc<dyn Resolver>>,
    base_env: Vec<(OsString, OsString)>,
    temp_dir: PathBuf,
    bwrap: Option<PathBuf>,
    socat: Option<PathBuf>,
    /// The native mechanism the probe found (bubblewrap or Seatbelt).
    mechanism: Option<NativeMechanism>,
    log: LogSink,
    inner_bridge: InnerBridge,
    broker: Option<BrokerSettings>,
    sessions: Mutex<HashMap<String, Session>>,
}

struct Session {
    spec: SandboxSpec,
    env: Vec<(OsString, OsString)>,
    native: Option<NativeSession>,
    seatbelt: Option<SeatbeltSession>,
    running: Option<oneshot::Sender<()>>,
    runner: Option<JoinHandle<()>>,
}

impl Session {
    /// Records a running command: how to kill it and the task that runs it.
    fn run(
        &mut self,
        kill_tx: oneshot::Sender<()>,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.running = Some(kill_tx);
        self.runner = Some(tokio::spawn(task));
    }
}

/// A Seatbelt session (macOS): the rendered profile and, for a dispatch,
/// the proxies it may reach (terminals share the host network).
struct SeatbeltSession {
    profile: seatbelt_profile::RenderedProfile,
    egress: Option<SeatbeltEgress>,
}

struct SeatbeltEgress {
    broker: Option<SessionBroker>,
    proxies: ProxyPair,
    /// The session's private directory: its temp dir and the CA bundle.
    _dir: SocketDir,
}

struct NativeSession {
    plan: BwrapPlan,
    /// The writable roots and the repositories found in them at launch.
    writable: Vec<String>,
    repos_at_launch: Vec<String>,
    egress: Option<Egress>,
    _placeholders: PlaceholderFiles,
}

/// What a dispatch launch has started so far; dropped before
/// [`LaunchGuard::complete`], it revokes the broker lease, so a failed
/// launch leaves nothing usable (the proxies stop when dropped).
struct LaunchGuard {
    lease: Option<cred_broker::Lease>,
}

impl LaunchGuard {
    /// The launch succeeded: keep the lease.
    fn complete(mut self) {
        self.lease = None;
    }
}

impl Drop for LaunchGuard {
    fn drop(&mut self) {
        if let Some(l) = &self.lease {
            l.revoke();
        }
    }
}

/// The proxies and bridges of a dispatch session (terminals have none).
/// The proxies have no listener of their own: they serve the bridges'
/// Unix sockets in the session's 0700 directory (peers of the session's
/// uid only) and, per command, the listeners bound inside the sandbox's
/// network namespace. No other process can reach them.
struct Egress {
    broker: Option<SessionBroker>,
    bridges: BridgePlan,
    proxies: Arc<ProxyService>,
    _sockets: SocketDir,
}

impl SandboxManager {
    /// A builder.
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder {
            probe: None,
            switch: SandboxSwitch::On,
            request: BackendRequest::Unspecified,
            surface: Surface::Dispatch,
            home: None,
            filename_rules: None,
            name_guard: None,
            ip_policy: IpPolicy::new(),
            extra_allow: Vec::new(),
            deny: Vec::new(),
            resolver: None,
            base_env: Vec::new(),
            temp_dir: None,
            log: None,
            inner_bridge: InnerBridge::HostSideListeners,
            broker: None,
        }
    }

    /// The backend every session of this manager gets, with its label.
    pub fn selection(&self) -> &Selection {
        &self.inner.selection
    }

    /// The live state of a session (R-SPEC-4): `active` while a command
    /// runs, `warm` between commands, `None` once destroyed (or for a
    /// handle this manager did not launch). `exec` takes the handle by
    /// reference, so the handle itself keeps the state `launch` gave it.
    pub fn state(&self, handle: &SandboxHandle) -> Option<SandboxState> {
        let sessions = self.inner.sessions.lock().ok()?;
        let session = sessions.get(&handle.session_id)?;
        Some(match &session.runner {
            Some(r) if !r.is_finished() => SandboxState::Active,
            _ => SandboxState::Warm,
        })
    }

    /// The Seatbelt profile of a live macOS session (for inspection).
    pub fn seatbelt_profile(
        &self,
        handle: &SandboxHandle,
    ) -> Option<seatbelt_profile::RenderedProfile> {
        let sessions = self.inner.sessions.lock().ok()?;
        sessions
            .get(&handle.session_id)?
            .seatbelt
            .as_ref()
            .map(|s| s.profile.clone())
    }

    /// The bubblewrap options of a live native session (for inspection).
    pub fn bwrap_args(&self, handle: &SandboxHandle) -> Option<Vec<OsString>> {
        let sessions = self.inner.sessions.lock().ok()?;
        sessions
            .get(&handle.session_id)?
            .native
            .as_ref()
            .map(|n| n.plan.args().to_vec())
    }

    /// A Seatbelt launch (macOS): the terminal profile with the host network,
    /// or, for a dispatch, the session's proxies and a profile that lets the
    /// run reach only them; the environment points at the proxies' real
    /// loopback ports (no bridges: Seatbelt filters by port). The profile is
    /// built and rendered here, on any OS; only running it needs macOS.
    async fn launch_seatbelt(
        &self,
        spec: &SandboxSpec,
    ) -> Result<(SeatbeltSession, Vec<(OsString, OsString)>), Error> {
        let inner = &self.inner;
        let home = inner.home.to_string_lossy().into_owned();
        let host = AmbientHost::from_ambient_untimed();
        let seatbelt_err = |e: seatbelt_profile::Error| Error::from(ErrorKind::Seatbelt(e));
        if inner.surface == Surface::Terminal {
            let mut b = seatbelt_profile::TerminalProfileBuilder::new();
            b.home(&home);
            if let Some(w) = &spec.guest_workdir {
                b.workdir(w);
            }
            let profile = b
                .build(&host)
                .and_then(|p| p.render())
                .map_err(seatbelt_err)?;
            let env = sanitized_env(&inner.base_env, inner.home.as_os_str(), None)?.vars;
            return Ok((
                SeatbeltSession {
                    profile,
                    egress: None,
                },
                env,
            ));
        }
        // The sandbox shares the host's loopback here: other processes can
        // connect to these ports, so every client must authenticate.
        let credentials = ProxyCredentials::generate_from_os_rng()?;
        let (dir, broker, config, guard) = self.prepare_egress(spec, Some(&credentials))?;
        let proxies = ProxyPair::start(config).await?;
        let mut b = seatbelt_profile::DispatchProfileBuilder::new(spec);
        b.home(&home)
            .http_proxy_port(proxies.http_addr().port())
            .socks_proxy_port(proxies.socks_addr().port())
            .temp_dir(dir.path().to_string_lossy());
        let profile = b
            .build(&host)
            .and_then(|p| p.render())
            .map_err(seatbelt_err)?;
        // No bridges: the run reaches the proxies on their own ports, and
        // the CA bundle at its host path.
        let env = self.session_env(
            spec,
            broker.as_ref(),
            dir.path().join("ca.pem"),
            (proxies.http_addr(), proxies.socks_addr()),
            Some(&credentials),
        )?;
        guard.complete();
        Ok((
            SeatbeltSession {
                profile,
                egress: Some(SeatbeltEgress {
                    broker,
                    proxies,
                    _dir: dir,
                }),
            },
            env,
        ))
    }

    /// A dispatch session's environment: the base environment through
    /// env-guard with the proxy variables for `proxies` and, when hosts are
    /// brokered, the CA bundle at `ca_bundle` and the phantom token. Drops
    /// are logged.
    fn session_env(
        &self,
        spec: &SandboxSpec,
        broker: Option<&SessionBroker>,
        ca_bundle: PathBuf,
        proxies: (std::net::SocketAddr, std::net::SocketAddr),
        credentials: Option<&ProxyCredentials>,
    ) -> Result<Vec<(OsString, OsString)>, Error> {
        let inner = &self.inner;
        let mut extras = EnvExtras::default();
        if let Some(c) = credentials {
            extras.proxy_auth = env_guard::ProxyAuth::new(c.user(), c.reveal_secret());
            if extras.proxy_auth.is_none() {
                return Err(Error::io(
                    "proxy credentials",
                    std::io::Error::other("not usable in a proxy URL"),
                ));
            }
            (inner.log)(&format!(
                "session {}: the proxies listen on loopback and require the session's \
                 credentials; GIT_SSH_COMMAND is not set (OpenBSD nc cannot authenticate to SOCKS5)",
                spec.session_id
            ));
        }
        if let Some(b) = broker {
            extras.ca_bundle = Some(ca_bundle);
            for name in &b.phantom_env {
                extras
                    .set
                    .push((name.clone(), b.lease.phantom().as_str().to_string()));
            }
        }
        let sanitized = sanitized_env_with(
            &inner.base_env,
            inner.home.as_os_str(),
            Some(proxies),
            &extras,
        )?;
        log_env_drops(&inner.log, &spec.session_id, &sanitized);
        Ok(sanitized.vars)
    }

    /// The session's egress: its private directory, the broker (when hosts
    /// are brokered) and the proxies' configuration, with a guard that
    /// revokes the lease if the launch fails later.
    fn prepare_egress(
        &self,
        spec: &SandboxSpec,
        credentials: Option<&ProxyCredentials>,
    ) -> Result<(SocketDir, Option<SessionBroker>, ProxyConfig, LaunchGuard), Error> {
        let inner = &self.inner;
        let sockets = SocketDir::create_in(&inner.temp_dir)?;
        let broker = match &inner.broker {
            Some(settings) => Some(SessionBroker::start(
                settings,
                &spec.session_id,
                &sockets.path().join("ca.pem"),
            )?),
            None => None,
        };
        // Until the session is complete, a failure revokes the lease (the
        // proxies stop when dropped).
        let guard = LaunchGuard {
            lease: broker.as_ref().map(|b| b.lease.clone()),
        };
        let mut list = AllowList::builder();
        list.network(Network::from_enabled(spec.network_enabled))
            .allow_all(spec.egress_allowlist.iter().cloned())
            .allow_all(inner.extra_allow.iter().cloned());
        if let Some(b) = &broker {
            list.allow_all(b.hosts.iter().cloned());
        }
        for d in &inner.deny {
            list.deny(d.clone());
        }
        let list = list.build()?;
        let resolver: Arc<dyn Resolver> = match &inner.resolver {
            Some(r) => r.clone(),
            None => Arc::new(SystemResolver::from_ambient()),
        };
        let mut config = ProxyConfig::builder();
        config
            .allowlist(list)
            .ip_policy(inner.ip_policy.clone())
            .resolver(resolver);
        if let Some(b) = &broker {
            config.intercept(b.intercept());
        }
        if let Some(c) = credentials {
            config.require_credentials(c.clone());
        }
        Ok((sockets, broker, config.build()?, guard))
    }

    async fn launch_native(
        &self,
        spec: &SandboxSpec,
    ) -> Result<(NativeSession, Vec<(OsString, OsString)>), Error> {
        let inner = &self.inner;
        if inner.surface == Surface::Terminal {
            // The fixed terminal profile: host network, no proxies.
            let plan = BwrapBuilder::new(spec, &inner.home)
                .profile(Profile::Terminal)
                .build(&AmbientHost::from_ambient_untimed())?;
            let placeholders = PlaceholderFiles::create_on_host(plan.placeholders())?;
            let env = sanitized_env(&inner.base_env, inner.home.as_os_str(), None)?.vars;
            return Ok((
                NativeSession {
                    plan,
                    writable: Vec::new(),
                    repos_at_launch: Vec::new(),
                    egress: None,
                    _placeholders: placeholders,
                },
                env,
            ));
        }
        let (sockets, broker, config, guard) = self.prepare_egress(spec, None)?;
        let proxies = Arc::new(ProxyService::start(config));
        let mut bridges = BridgePlan::new(sockets.path())?;
        bridges
            .add("http", GUEST_HTTP_PORT)?
            .add("socks", GUEST_SOCKS_PORT)?;
        let uid = rustix::process::geteuid().as_raw();
        for (b, kind) in bridges.bridges().iter().zip(BRIDGED) {
            let listener = bind_private_socket(&bridges.host_socket(b))?;
            proxies.serve_unix(kind, listener, uid);
        }
        let writable: Vec<String> = spec
            .mount_accesses()
            .filter(|(_, a)| *a == sandbox_core::Access::ReadWrite)
            .map(|(m, _)| m.host_path.clone())
            .collect();
        let repos = discover_git_repos_on_host(&writable);
        let mut builder = BwrapBuilder::new(spec, &inner.home);
        builder
            .nested_repos(repos.clone())
            .filename_rules(inner.filename_rules)
            .argv_delivery(bwrap_spec::ArgvDelivery::ArgsFd)
            .bridges(bridges.clone());
        if let Some(l) = &inner.name_guard {
            builder.name_guard_launcher(l.clone());
        }
        let plan = match builder.build(&AmbientHost::from_ambient_untimed()) {
            Ok(p) => p,
            Err(e) => {
                drop(guard);
                proxies.shutdown().await;
                return Err(e.into());
            }
        };
        if !plan.dropped_filename_globs().is_empty() {
            let (globs, paths): (Vec<&String>, Vec<&String>) = plan
                .dropped_filename_globs()
                .iter()
                .partition(|r| !r.starts_with('/'));
            let globs: Vec<&str> = globs.iter().map(|g| g.as_str()).collect();
            (inner.log)(&format!(
                "session {}: creation-time rules not enforced (opt-out): names {} and {} \
                 not-yet-existing denied paths in writable roots",
                spec.session_id,
                globs.join(" "),
                paths.len()
            ));
        }
        let placeholders = PlaceholderFiles::create_on_host(plan.placeholders())?;
        let guest = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let proxies_inside = (guest(GUEST_HTTP_PORT), guest(GUEST_SOCKS_PORT));
        let env = self.session_env(
            spec,
            broker.as_ref(),
            crate::broker::guest_bundle_path(),
            proxies_inside,
            None,
        )?;
        let egress = Egress {
            broker,
            bridges,
            proxies,
            _sockets: sockets,
        };
        guard.complete();
        Ok((
            NativeSession {
                plan,
                writable,
                repos_at_launch: repos,
                egress: Some(egress),
                _placeholders: placeholders,
            },
            env,
        ))
    }
}

impl SandboxPort for SandboxManager {
    type Error = Error;

    async fn launch(&self, spec: SandboxSpec) -> Result<SandboxHandle, Error> {
        spec.validate()?;
        {
            let sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
            if sessions.contains_key(&spec.session_id) {
                return Err(ErrorKind::DuplicateSession {
                    session_id: spec.session_id.clone(),
                }
                .into());
            }
        }
        let backend = self.inner.selection.backend;
        let mut handle = SandboxHandle::new(spec.session_id.clone(), backend);
        handle
            .details
            .insert("label".into(), self.inner.selection.label.into());
        let mut seatbelt = None;
        let (native, env) = match backend {
            SandboxBackend::Native if self.inner.mechanism == Some(NativeMechanism::Seatbelt) => {
                let (sb, env) = self.launch_seatbelt(&spec).await?;
                if let Some(e) = &sb.egress {
                    handle
                        .details
                        .insert("httpProxy".into(), e.proxies.http_addr().to_string().into());
                    handle.details.insert(
                        "socksProxy".into(),
                        e.proxies.socks_addr().to_string().into(),
                    );
                }
                seatbelt = Some(sb);
                (None, env)
            }
            SandboxBackend::Native if cfg!(target_os = "linux") => {
                let (n, env) = self.launch_native(&spec).await?;
                if let Some(e) = &n.egress {
                    // The addresses inside the sandbox: on the host the
                    // proxies listen on no port at all.
                    handle.details.insert(
                        "httpProxy".into(),
                        format!("127.0.0.1:{GUEST_HTTP_PORT}").into(),
                    );
                    handle.details.insert(
                        "socksProxy".into(),
                        format!("127.0.0.1:{GUEST_SOCKS_PORT}").into(),
                    );
                    handle.details.insert(
                        "socketDir".into(),
                        e.bridges.host_dir().display().to_string().into(),
                    );
                }
                (Some(n), env)
            }
            SandboxBackend::None => (
                None,
                sanitized_env(&self.inner.base_env, self.inner.home.as_os_str(), None)?.vars,
            ),
            other => {
                return Err(sandbox_core::Error::from(
                    sandbox_core::ErrorKind::NativeUnavailable {
                        reason: format!(
                            "backend {other} is not implemented by this manager on this platform"
                        ),
                    },
                )
                .into());
            }
        };
        handle.transition(SandboxState::Warm)?;
        let session = Session {
            spec,
            env,
            native,
            seatbelt,
            running: None,
            runner: None,
        };
        let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        sessions.insert(handle.session_id.clone(), session);
        Ok(handle)
    }

    async fn exec(
        &self,
        handle: &SandboxHandle,
        command: SandboxCommand,
    ) -> Result<EventStream, Error> {
        let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
        let session = sessions.get_mut(&handle.session_id).ok_or_else(|| {
            Error::from(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            })
        })?;
        if let Some(r) = &session.runner
            && !r.is_finished()
        {
            return Err(ErrorKind::Busy {
                session_id: handle.session_id.clone(),
            }
            .into());
        }
        let workdir = command
            .workdir
            .clone()
            .or_else(|| session.spec.guest_workdir.clone())
            .unwrap_or_else(|| self.inner.home.display().to_string());
        let mut argv: Vec<OsString> = vec![command.program.clone()];
        argv.extend(command.args.iter().cloned());
        let (tx, rx) = mpsc::channel(256);
        let (kill_tx, kill_rx) = oneshot::channel();
        // The stream opens with `starting`; `ready` follows once the command
        // runs (inside the sandbox, after its proxy listeners exist).
        let _ = tx.try_send(SandboxEvent::Starting);
        if let Some(sb) = &session.seatbelt {
            let full = seatbelt_profile::launcher_argv(&sb.profile, argv.iter().cloned())
                .map_err(|e| Error::from(ErrorKind::Seatbelt(e)))?;
            let mut c = tokio::process::Command::new(&full[0]);
            c.args(&full[1..]).current_dir(Path::new(&workdir));
            let child = prepare(&mut c, &session.env)
                .spawn()
                .map_err(|e| Error::io(format!("starting {:?}", full[0]), e))?;
            let violations = sb.egress.as_ref().map(|e| Violations {
                proxy: Some(e.proxies.subscribe_violations()),
                broker: e.broker.as_ref().map(|b| b.broker.subscribe_violations()),
                guard: None,
            });
            session.run(
                kill_tx,
                run_child(child, tx, kill_rx, violations, Vec::new()),
            );
            return Ok(Box::pin(ReceiverStream(rx)));
        }
        let Some(n) = &session.native else {
            let mut c = tokio::process::Command::new(&argv[0]);
            c.args(&argv[1..]).current_dir(Path::new(&workdir));
            let child = prepare(&mut c, &session.env)
                .spawn()
                .map_err(|e| Error::io(format!("starting {:?}", command.program), e))?;
            session.run(kill_tx, run_child(child, tx, kill_rx, None, Vec::new()));
            return Ok(Box::pin(ReceiverStream(rx)));
        };
        let (Some(bwrap), Some(socat)) = (&self.inner.bwrap, &self.inner.socat) else {
            return Err(ErrorKind::ToolMissing {
                tool: "bwrap",
                hint: "sudo apt-get install bubblewrap socat".into(),
            }
            .into());
        };
        // Under the name guard the launcher goes in front of the command and
        // reports each refusal on its own pipe.
        let report = if n.plan.is_guarded() {
            Some(ReportPipe::new().map_err(|e| Error::io("creating the name-guard pipe", e))?)
        } else {
            None
        };
        let argv = n
            .plan
            .guarded_command(argv, report.as_ref().map(ReportPipe::write_fd));
        let inherit_report = |c: &mut tokio::process::Command| {
            if let Some(r) = &report {
                r.inherit_in(c);
            }
        };
        let mut args: Vec<OsString> = n.plan.args().to_vec();
        // Replace the plan's --chdir with the exec's working directory.
        if let Some(i) = args.iter().position(|a| a == "--chdir")
            && let Some(slot) = args.get_mut(i + 1)
        {
            *slot = workdir.clone().into();
        }
        let Some(e) = &n.egress else {
            // Terminal profile: no proxies, the command runs directly.
            let mut c = tokio::process::Command::new(bwrap);
            prepare(&mut c, &session.env);
            let _args_file = crate::options::options_for(&mut c, &args, &self.inner.temp_dir)?;
            c.args(&argv);
            inherit_report(&mut c);
            let child = c
                .spawn()
                .map_err(|e| Error::io(format!("starting {}", bwrap.display()), e))?;
            let guard = report.map(|r| {
                let (write_end, rx) = r.start();
                drop(write_end);
                rx
            });
            let violations = guard.map(|g| Violations {
                proxy: None,
                broker: None,
                guard: Some(g),
            });
            session.run(
                kill_tx,
                run_child(child, tx, kill_rx, violations, Vec::new()),
            );
            return Ok(Box::pin(ReceiverStream(rx)));
        };
        // The socat bridges, for when the host-side listeners cannot be made.
        let mut fallback = tokio::process::Command::new(bwrap);
        prepare(&mut fallback, &session.env);
        let fallback_args_file =
            crate::options::options_for(&mut fallback, &args, &self.inner.temp_dir)?;
        fallback.args(
            e.bridges
                .inner_command("/bin/sh", &socat.to_string_lossy(), argv.clone()),
        );
        inherit_report(&mut fallback);
        let (report_write, guard) = match report {
            Some(r) => {
                let (w, rx) = r.start();
                (Some(w), Some(rx))
            }
            None => (None, None),
        };
        let violations = Some(Violations {
            proxy: Some(e.proxies.subscribe_violations()),
            broker: e.broker.as_ref().map(|b| b.broker.subscribe_violations()),
            guard,
        });

        if self.inner.inner_bridge == InnerBridge::Socat {
            let child = fallback
                .spawn()
                .map_err(|e| Error::io(format!("starting {}", bwrap.display()), e))?;
            drop(report_write);
            session.run(
                kill_tx,
                run_child(child, tx, kill_rx, violations, Vec::new()),
            );
            return Ok(Box::pin(ReceiverStream(rx)));
        }
        // Fast path: bubblewrap holds the command until the listeners exist.
        let steering = netns::Steering::new().map_err(|e| Error::io("creating pipes", e))?;
        let mut fast_args = args;
        fast_args.pop(); // the final "--"
        fast_args.extend(steering.bwrap_args().into_iter().map(OsString::from));
        fast_args.push("--".into());
        let mut c = tokio::process::Command::new(bwrap);
        prepare(&mut c, &session.env);
        let _args_file = crate::options::options_for(&mut c, &fast_args, &self.inner.temp_dir)?;
        c.args(&argv);
        steering.inherit_in(&mut c);
        if let Some(w) = &report_write {
            netns::inherit_fds(&mut c, [rustix::fd::AsRawFd::as_raw_fd(w)]);
        }
        let child = c
            .spawn()
            .map_err(|e| Error::io(format!("starting {}", bwrap.display()), e))?;
        let netns::Steering {
            info_read,
            info_write,
            block_read,
            block_write,
        } = steering;
        drop((info_write, block_read));
        let log = self.inner.log.clone();
        let proxies = e.proxies.clone();
        session.run(kill_tx, async move {
            let mut sandbox_pid = None;
            match host_side_listeners(info_read, &block_write, &proxies, &mut sandbox_pid).await {
                Ok(forwarders) => {
                    drop((report_write, block_write));
                    run_child(child, tx, kill_rx, violations, forwarders).await
                }
                Err(err) => {
                    log(&format!(
                        "in-namespace proxy listeners unavailable ({err}); using socat bridges"
                    ));
                    // bubblewrap runs the command once its block descriptor
                    // reaches end of file, and its sandbox process does not
                    // die with the launcher until then: kill the sandbox
                    // itself (its pid namespace goes with it) before the
                    // descriptor closes, so the command never runs here and
                    // then a second time in the fallback.
                    if let Some(pid) = sandbox_pid {
                        netns::kill_sandbox(pid);
                    }
                    let mut child = child;
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    drop(block_write);
                    let spawned = fallback.spawn();
                    drop((report_write, fallback_args_file));
                    match spawned {
                        Ok(child) => run_child(child, tx, kill_rx, violations, Vec::new()).await,
                        Err(e) => {
                            let msg = format!("agent-sandbox: starting bubblewrap failed: {e}\n");
                            let _ = tx
                                .send(SandboxEvent::Stderr {
                                    data: msg.into_bytes(),
                                })
                                .await;
                            let _ = tx
                                .send(SandboxEvent::Killed {
                                    reason: None,
                                    signal: None,
                                })
                                .await;
                        }
                    }
                }
            }
        });
        Ok(Box::pin(ReceiverStream(rx)))
    }

    async fn destroy(&self, handle: &mut SandboxHandle) -> Result<(), Error> {
        let session = {
            let mut sessions = self.inner.sessions.lock().map_err(|_| poisoned())?;
            sessions.remove(&handle.session_id)
        };
        let Some(mut session) = session else {
            return Err(ErrorKind::UnknownSession {
                session_id: handle.session_id.clone(),
            }
            .into());
        };
        if let Some(kill) = session.running.take() {
            let _ = kill.send(());
        }
        if let Some(runner) = session.runner.take() {
            let _ = runner.await;
        }
        if let Some(e) = session.seatbelt.take().and_then(|s| s.egress) {
            if let Some(b) = &e.broker {
                b.lease.revoke();
            }
            e.proxies.shutdown().await;
        }
        if let Some(n) = &session.native {
            // A repository made during the run has the config and hooks the
            // sandboxed process wrote; a parent's `git status` on the host
            // may run them (a populated gitlink is recursed into).
            let now = discover_git_repos_on_host(&n.writable);
            let new: Vec<&String> = now
                .iter()
                .filter(|r| !n.repos_at_launch.contains(r))
                .collect();
            if !new.is_empty() {
                let list: Vec<&str> = new.iter().map(|r| r.as_str()).collect();
                (self.inner.log)(&format!(
                    "session {}: git repositories created inside the sandbox (their config and hooks came from the sandboxed run; review before running git there on the host): {}",
                    handle.session_id,
                    list.join(" ")
                ));
            }
        }
        if let Some(e) = session.native.take().and_then(|n| n.egress) {
            if let Some(b) = &e.broker {
                // From now on every request on this lease is refused, on open
                // keep-alive connections too.
                b.lease.revoke();
            }
            e.proxies.shutdown().await;
            // Placeholders and the socket directory are removed on drop.
        }
        handle.transition(SandboxState::Destroyed)?;
        Ok(())
    }
}

/// Logs what the environment policy removed: variables outside the inherited
/// set by count, every other drop (secrets, loader and injection variables,
/// ...) by name and rule. Values are never logged.
fn log_env_drops(log: &LogSink, session_id: &str, sanitized: &env_guard::Sanitized) {
    let mut not_inherited = 0usize;
    let mut named: Vec<String> = Vec::new();
    for d in &sanitized.dropped {
        match d.rule {
            env_guard::Rule::NotInherited
            | env_guard::Rule::ReplacedBySet
            | env_guard::Rule::ReplacedByProxy => not_inherited += 1,
            _ => named.push(format!("{}({})", d.name.to_string_lossy(), d.rule)),
        }
    }
    if named.is_empty() && not_inherited == 0 {
        return;
    }
    let named = if named.is_empty() {
        String::new()
    } else {
        format!("; removed {}", named.join(" "))
    };
    log(&format!(
        "session {session_id}: environment: {} variables passed, {not_inherited} not inherited{named}",
        sanitized.vars.len()
    ));
}

/// Clears the environment to the session's, pipes the output and keeps
/// every other inherited descriptor from the child (descriptors the sandbox
/// needs are passed on after this, with `netns::inherit_fds`).
fn prepare<'c>(
    cmd: &'c mut tokio::process::Command,
    env: &[(OsString, OsString)],
) -> &'c mut tokio::process::Command {
    netns::close_inherited_fds(cmd);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
}

/// Reads the sandbox's pid from bubblewrap, binds the proxy listeners in its
/// network namespace, hands them to the session's proxies and releases the
/// command.
async fn host_side_listeners(
    info_read: rustix::fd::OwnedFd,
    block_write: &rustix::fd::OwnedFd,
    proxies: &ProxyService,
    sandbox_pid: &mut Option<u32>,
) -> Result<Vec<AbortHandle>, std::io::Error> {
    let timeout = std::time::Duration::from_secs(5);
    let pid = tokio::time::timeout(
        timeout,
        tokio::task::spawn_blocking(move || netns::read_child_pid(info_read)),
    )
    .await
    .map_err(|_| std::io::Error::other("bubblewrap did not report its pid"))?
    .map_err(std::io::Error::other)??;
    *sandbox_pid = Some(pid);
    // bubblewrap reports the pid while the sandbox may still be setting up
    // its namespaces (`--disable-userns` adds one); joining them in that
    // window is refused, so try a few times before falling back.
    let mut attempt = 0;
    let listeners = loop {
        let bound = tokio::task::spawn_blocking(move || {
            netns::bind_in_sandbox(pid, &[GUEST_HTTP_PORT, GUEST_SOCKS_PORT])
        })
        .await
        .map_err(std::io::Error::other)?;
        match bound {
            Ok(l) => break l,
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied && attempt < 25 => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(e) => return Err(e),
        }
    };
    let mut forwarders = Vec::with_capacity(2);
    for (listener, kind) in listeners.into_iter().zip(BRIDGED) {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        forwarders.push(proxies.serve_tcp(kind, listener));
    }
    rustix::io::write(block_write, b"go")?;
    Ok(forwarders)
}

fn poisoned() -> Error {
    Error::io("session table", std::io::Error::other("lock poisoned"))
}

async fn pump<R: tokio::io::AsyncRead + Unpin>(
    mut r: R,
    tx: mpsc::Sender<SandboxEvent>,
    stdout: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let data = buf[..n].to_vec();
                let ev = if stdout {
                    SandboxEvent::Stdout { data }
                } else {
                    SandboxEvent::Stderr { data }
                };
                if tx.send(ev).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// The session's violation sources: the proxies and, when hosts are
/// brokered, the broker.
struct Violations {
    proxy: Option<connect_proxy::Subscription<SandboxViolation>>,
    broker: Option<tokio::sync::broadcast::Receiver<SandboxViolation>>,
    /// The name guard's refusals.
    guard: Option<mpsc::Receiver<SandboxViolation>>,
}

impl Violations {
    async fn recv(&mut self) -> Option<SandboxViolation> {
        let broker = async {
            match self.broker.as_mut() {
                Some(b) => loop {
                    match b.recv().await {
                        Ok(v) => break Some(v),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                },
                None => std::future::pending().await,
            }
        };
        let proxy = async {
            match self.proxy.as_mut() {
                Some(p) => match p.recv().await {
                    Some(v) => Some(v),
                    None => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        let guard = async {
            match self.guard.as_mut() {
                Some(g) => match g.recv().await {
                    Some(v) => Some(v),
                    // The launcher is gone: nothing more will come.
                    None => std::future::pending().await,
                },
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            v = proxy => v,
            v = broker => v,
            v = guard => v,
        }
    }

    /// What is left once the command has exited: every queued proxy and
    /// broker denial, and the guard's reports up to the end of its pipe
    /// (waited for at most two seconds).
    async fn drain(&mut self) -> Vec<SandboxViolation> {
        let mut out = Vec::new();
        if let Some(g) = self.guard.as_mut() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
                while let Some(v) = g.recv().await {
                    out.push(v);
                }
            })
            .await;
        }
        while let Some(v) = self.try_recv() {
            out.push(v);
        }
        out
    }

    fn try_recv(&mut self) -> Option<SandboxViolation> {
        if let Some(v) = self.proxy.as_mut().and_then(|p| p.try_recv()) {
            return Some(v);
        }
        loop {
            match self.broker.as_mut()?.try_recv() {
                Ok(v) => return Some(v),
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(_) => return None,
            }
        }
    }
}

async fn run_child(
    mut child: tokio::process::Child,
    tx: mpsc::Sender<SandboxEvent>,
    mut kill_rx: oneshot::Receiver<()>,
    mut violations: Option<Violations>,
    forwarders: Vec<AbortHandle>,
) {
    let _ = tx.send(SandboxEvent::Ready).await;
    let out = child
        .stdout
        .take()
        .map(|o| tokio::spawn(pump(o, tx.clone(), true)));
    let err = child
        .stderr
        .take()
        .map(|e| tokio::spawn(pump(e, tx.clone(), false)));
    let mut killed_by_host = false;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status,
            _ = &mut kill_rx, if !killed_by_host => {
                killed_by_host = true;
                let _ = child.start_kill();
            }
            Some(v) = async {
                match violations.as_mut() {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let _ = tx.send(SandboxEvent::Violation { violation: v }).await;
            }
        }
    };
    // The listeners keep the sandbox's network namespace alive: close them.
    for f in &forwarders {
        f.abort();
    }
    for t in [out, err].into_iter().flatten() {
        let _ = t.await;
    }
    if let Some(s) = violations.as_mut() {
        for v in s.drain().await {
            let _ = tx.send(SandboxEvent::Violation { violation: v }).await;
        }
    }
    let ev = match status {
        Ok(st) => {
            use std::os::unix::process::ExitStatusExt;
            match (st.code(), st.signal()) {
                (Some(code), _) if !killed_by_host => SandboxEvent::Exit { exit_code: code },
                (_, signal) => SandboxEvent::Killed {
                    reason: Some(if killed_by_host {
                        KillReason::Manual
                    } else {
                        KillReason::Signal
                    }),
                    signal,
                },
            }
        }
        Err(_) => SandboxEvent::Killed {
            reason: None,
            signal: None,
        },
    };
    let _ = tx.send(ev).await;
}
