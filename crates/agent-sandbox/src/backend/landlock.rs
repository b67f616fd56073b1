//! The Landlock mechanism of the native backend (Linux hosts where
//! bubblewrap cannot make its namespaces, Landlock ABI 6 or later).
//!
//! There are no namespaces: each command runs as the caller, on the host,
//! under the name-guard launcher with `--landlock`. The launcher applies
//! Landlock rules to itself before it forks (writes only below the
//! writable trees, the session's own temporary directory and the terminal
//! and null devices; reads everywhere but the secret set; for the command
//! itself, TCP connects only to the session's two proxies and no bind; no
//! abstract Unix socket or signal outside the sandbox), and its supervisor
//! refuses what Landlock cannot carve out of a granted tree: writes,
//! removals and moves of protected paths, new names matching the filename
//! rules, Unix sockets not granted or bound by the command itself. It
//! performs every TCP bind and connect: binds on loopback only (a wildcard
//! bind is made there), connects to the proxies on 127.0.0.1 and to
//! loopback servers the session's own processes bound, nothing else.
//! The proxies listen on host loopback ports and take only clients that
//! present the session's credentials.
//!
//! What is weaker than bubblewrap, every time (the probe note, the handle's
//! `weaker` detail): other processes are visible in `/proc`, `/tmp` is the
//! host's (not writable; `TMPDIR` is the session's own directory), and the
//! names of secret paths can be seen in their parent's listing (a secret
//! can be neither read nor, for a directory, listed: the supervisor
//! performs every listing and refuses those).

use super::common::host_repos::{
    RepoNotes, ReposAtLaunch, log_repos_made_inside, repos_in_writable_roots, repos_protected,
    repos_to_protect, writable_roots,
};
use super::common::name_guard_reports::ReportPipe;
use super::common::warm::{
    ISOLATION_PER_COMMAND, ISOLATION_SESSION, InitSocket, WarmInit, start_init,
};
use crate::egress::Egress;
use crate::running::{CommandIo, attach_host_terminal, prepare, run_child};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::settings::CommandIsolation;
use crate::settings::Settings;
use crate::{Error, ErrorKind};
use bwrap_spec::{BwrapBuilder, FilenameRules, HostPlan, NameGuardLauncher};
use sandbox_core::{GuardUpdate, HostConfinement, NameGuardInvocation, SandboxSpec, Surface};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the Landlock mechanism needs besides the shared settings.
pub(crate) struct Config {
    /// Where session directories are made.
    pub(crate) temp_dir: PathBuf,
    pub(crate) filename_rules: FilenameRules,
    /// The launcher every command runs under (required).
    pub(crate) launcher: NameGuardLauncher,
}

/// A Landlock session: its proxies, the launcher's command line without
/// the command, and what to compare at destroy.
pub(crate) struct Session {
    launcher: NameGuardLauncher,
    /// The launcher's command line without the command; a repository made
    /// in the session adds its denies.
    invocation: Mutex<NameGuardInvocation>,
    /// What the plan is rebuilt from when a repository is made.
    spec: SandboxSpec,
    filename_rules: FilenameRules,
    egress: Egress,
    writable: Vec<String>,
    repos_at_launch: ReposAtLaunch,
    /// The guards' notes of what may have made a repository.
    notes: RepoNotes,
    /// The session's init, when commands run under one warm supervisor.
    warm: Option<WarmInit>,
}

/// The handle detail that says what this mechanism does not do.
pub(crate) const WEAKER: &str = "no namespaces: other processes are visible in /proc, no private /tmp (TMPDIR is the session's own directory), the names of secret paths can be seen (not their contents), a server the session starts listens on the host's loopback (where the host's other processes can reach it)";

pub(crate) async fn launch(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
) -> Result<Launched<Session>, Error> {
    if settings.surface == Surface::Terminal {
        return Err(ErrorKind::NotSupported {
            what: "the terminal surface under the Landlock mechanism",
        }
        .into());
    }
    let writable = writable_roots(spec);
    let repos = repos_in_writable_roots(settings, &spec.session_id, &writable);
    let plan = host_plan(settings, spec, config.filename_rules, &repos.repos)?;
    log_dropped(settings, spec, &plan);
    let (egress, credentials, http, socks) =
        Egress::start_on_loopback(&settings.egress, spec, &config.temp_dir).await?;
    // The session's own temporary directory, inside its private one.
    let tmp = egress.dir().join("tmp");
    if let Err(e) = std::fs::create_dir(&tmp) {
        egress.shutdown().await;
        return Err(Error::io("creating the session's temporary directory", e));
    }
    let tmp_str = tmp.to_string_lossy().into_owned();
    let mut env = egress.env(
        settings,
        spec,
        egress.host_ca_bundle(),
        (http, socks),
        Some(&credentials),
    )?;
    env.retain(|(k, _)| k != "TMPDIR");
    env.push(("TMPDIR".into(), tmp.clone().into_os_string()));
    // A private, writable home (the real one stays read-only, its secrets
    // unreadable): tools keep their caches and state there, as in the
    // empty home of a namespace sandbox, and it goes with the session.
    let home = match private_home(egress.dir()) {
        Ok(h) => h,
        Err(e) => {
            egress.shutdown().await;
            return Err(e);
        }
    };
    env.retain(|(k, _)| !PRIVATE_HOME_VARS.iter().any(|(v, _)| k == v));
    for (var, rel) in PRIVATE_HOME_VARS {
        let path = match rel {
            "" => home.clone(),
            _ => home.join(rel),
        };
        env.push((var.into(), path.into_os_string()));
    }
    let os = |v: &[String]| v.iter().map(OsString::from).collect::<Vec<_>>();
    // Other sessions' directories in the manager's temp dir (their
    // temporary files, workspaces, sockets) are as secret as `~/.ssh`.
    let mut own: Vec<&Path> = vec![egress.dir()];
    own.extend(spec.bind_mounts.iter().map(|m| Path::new(&m.host_path)));
    let (deny_sessions, again_own) = crate::session_dir::hidden_sessions_in(&config.temp_dir, &own);
    let mut read_deny = os(&plan.read_deny);
    read_deny.extend(deny_sessions.into_iter().map(PathBuf::into_os_string));
    let mut read_again = os(&plan.read_again);
    read_again.extend(again_own.into_iter().map(PathBuf::into_os_string));
    let mut writable_trees = os(&plan.writable);
    writable_trees.push(tmp.into_os_string());
    writable_trees.push(home.clone().into_os_string());
    let invocation = NameGuardInvocation {
        report_fd: None,
        updates_fd: None,
        notify_fd: None,
        deny_globs: plan.name_rules.clone(),
        unix_sockets: os(&settings.unix_sockets),
        state_dirs: os(&plan.state_dirs),
        tool_dirs: os(&plan.tool_dirs),
        keep_capabilities: Vec::new(),
        host: Some(HostConfinement {
            writable: writable_trees,
            read_deny,
            read_again,
            protect: os(&plan.protect),
            tcp_ports: vec![http.port(), socks.port()],
        }),
        command: Vec::new(),
    };
    let mut details = vec![
        ("mechanism", "landlock".to_string()),
        ("httpProxy", http.to_string()),
        ("socksProxy", socks.to_string()),
        ("tempDir", tmp_str),
        ("home", home.display().to_string()),
        ("weaker", WEAKER.to_string()),
    ];
    let mut session = Session {
        launcher: config.launcher.clone(),
        invocation: Mutex::new(invocation),
        spec: spec.clone(),
        filename_rules: config.filename_rules,
        egress,
        writable,
        repos_at_launch: repos,
        notes: RepoNotes::new()?,
        warm: None,
    };
    match settings.isolation {
        CommandIsolation::SessionSandbox => {
            let socket = InitSocket::new()?;
            let mut argv = vec![session.launcher.host_path().as_os_str().to_owned()];
            argv.extend(session.launcher.leading_args().iter().cloned());
            argv.extend(socket.init_args());
            let warm = start_init(
                settings,
                &spec.session_id,
                &env,
                "/".into(),
                argv,
                socket,
                |request, io| session.exec(settings, request, io),
            )
            .await;
            match warm {
                Ok(w) => session.warm = Some(w),
                Err(e) => {
                    session.egress.shutdown().await;
                    return Err(e);
                }
            }
            details.push(("isolation", ISOLATION_SESSION.into()));
        }
        _ => details.push(("isolation", ISOLATION_PER_COMMAND.into())),
    }
    Ok(Launched {
        session,
        env,
        details,
    })
}

/// The variables that point into a Landlock session's private home, with
/// where (relative to it; empty: the home itself).
const PRIVATE_HOME_VARS: [(&str, &str); 5] = [
    ("HOME", ""),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
];

/// Makes the session's private home in its directory `dir`, with the
/// directories its variables name.
fn private_home(dir: &Path) -> Result<PathBuf, Error> {
    let home = dir.join("home");
    for (_, rel) in PRIVATE_HOME_VARS {
        let d = home.join(rel);
        std::fs::create_dir_all(&d)
            .map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
    }
    Ok(home)
}

/// The host plan of `spec` with the denies of `repos` (the git
/// repositories in its writable roots).
fn host_plan(
    settings: &Settings,
    spec: &SandboxSpec,
    filename_rules: FilenameRules,
    repos: &[String],
) -> Result<HostPlan, Error> {
    let mut builder = BwrapBuilder::new(spec, &settings.home);
    builder.tool_owned_dirs(settings.tool_dirs.iter().cloned());
    builder
        .nested_repos(repos.to_vec())
        .filename_rules(filename_rules)
        .read_deny(settings.reads.deny.iter().cloned())
        .read_reopen(settings.reads.again.iter().cloned());
    Ok(builder.host_plan(&*settings.host)?)
}

fn log_dropped(settings: &Settings, spec: &SandboxSpec, plan: &HostPlan) {
    if plan.dropped_name_rules.is_empty() {
        return;
    }
    (settings.log)(&format!(
        "session {}: creation-time rules not enforced (opt-out): names {}",
        spec.session_id,
        plan.dropped_name_rules.join(" ")
    ));
}

impl Session {
    /// The launcher's full argv for `command`, reporting on `report_fd`
    /// (and reading added rules from `updates_fd`: the session's init).
    fn argv(
        &self,
        command: &[OsString],
        report_fd: i32,
        updates_fd: Option<i32>,
    ) -> Result<Vec<OsString>, Error> {
        // A poisoned lock still holds a whole command line: it is only ever
        // replaced whole.
        let mut inv = self
            .invocation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        inv.report_fd = Some(report_fd);
        inv.updates_fd = updates_fd;
        inv.notify_fd = Some(self.notes.guard_fd());
        inv.command = command.to_vec();
        let mut out = vec![self.launcher.host_path().as_os_str().to_owned()];
        out.extend(self.launcher.leading_args().iter().cloned());
        out.extend(inv.to_args());
        Ok(out)
    }

    /// Gives a git repository made since the last command the denies of
    /// one found at launch (R-PATHS-3), before the next command starts:
    /// the session's guard takes its protected paths and rules (so they
    /// hold for what earlier commands left running too), and so does the
    /// command line of every supervisor started from now on. A failure
    /// refuses the command; the next one tries again.
    fn protect_new_repos(&self, settings: &Settings) -> Result<(), Error> {
        let Some(found) =
            repos_to_protect(&self.repos_at_launch, &self.notes, &self.writable, false)
        else {
            return Ok(());
        };
        let plan = host_plan(settings, &self.spec, self.filename_rules, &found.all)?;
        let mut inv = self.invocation.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = inv.clone();
        let mut updates = Vec::new();
        if let Some(host) = next.host.as_mut() {
            for p in &plan.protect {
                let p = OsString::from(p);
                if !host.protect.contains(&p) {
                    updates.push(GuardUpdate::Protect(p.as_encoded_bytes().to_vec()));
                    host.protect.push(p);
                }
            }
        }
        for r in &plan.name_rules {
            if !next.deny_globs.contains(r) {
                updates.push(GuardUpdate::Deny(r.as_bytes().to_vec()));
                next.deny_globs.push(r.clone());
            }
        }
        // Within the command line's limits (the command comes with each
        // exec).
        NameGuardInvocation {
            command: vec!["-".into()],
            ..next.clone()
        }
        .check()?;
        if let Some(w) = &self.warm {
            w.send_guard_updates(&updates)?;
        }
        *inv = next;
        drop(inv);
        repos_protected(
            settings,
            &self.spec.session_id,
            &self.repos_at_launch,
            &self.notes,
            found,
        );
        Ok(())
    }

    pub(crate) fn exec(
        &self,
        settings: &Settings,
        mut request: ExecRequest<'_>,
        mut io: CommandIo,
    ) -> Result<CommandTask, Error> {
        if request.guard_updates.is_none() {
            self.protect_new_repos(settings)?;
        }
        request.guard_notes = Some(self.notes.guard_fd());
        // A command with limits runs under a supervisor of its own, joined
        // to its cgroup by the host as before: without a pid namespace, a
        // cgroup descriptor handed into the session could move any host
        // process into that cgroup if a command took the init over.
        if let Some(warm) = &self.warm
            && request.cgroup_procs.is_empty()
        {
            return warm.exec(request, io, self.egress.violations(None));
        }
        let report = ReportPipe::new().map_err(|e| Error::io("creating the name-guard pipe", e))?;
        let argv = self.argv(&request.argv, report.write_fd(), request.guard_updates)?;
        let mut c = tokio::process::Command::new(&argv[0]);
        c.args(&argv[1..])
            .current_dir(std::path::Path::new(&request.workdir));
        prepare(&mut c, &request);
        match request.terminal {
            // Its own session, with the fresh terminal as its controlling
            // one.
            Some(size) => io.terminal = Some(attach_host_terminal(&mut c, size)?),
            // Its own session without a terminal: the host's cannot be
            // opened through /dev/tty.
            None => crate::process_fds::own_session(&mut c),
        }
        report.inherit_in(&mut c);
        let child = c
            .spawn()
            .map_err(|e| Error::io(format!("starting {:?}", argv[0]), e))?;
        // The launcher's supervisor takes the signals for the whole tree.
        if let Some(pid) = child.id() {
            io.control.supervisor_started(pid);
        }
        let (write_end, reader) = report
            .start()
            .map_err(|e| Error::io("reading the name guard's reports", e))?;
        drop(write_end);
        let violations = self.egress.violations(request.keep_guard(reader));
        Ok(Box::pin(run_child(child, io, Some(violations), Vec::new())))
    }

    pub(crate) async fn destroy(self, settings: &Settings, session_id: &str) {
        if let Some(w) = &self.warm {
            w.destroy().await;
        }
        log_repos_made_inside(settings, session_id, &self.writable, &self.repos_at_launch);
        self.egress.shutdown().await;
    }
}
