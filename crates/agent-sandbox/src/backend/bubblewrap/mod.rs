//! The bubblewrap backend (Linux, WSL2).
//!
//! `launch` starts the session's proxies with no port of their own, one
//! Unix socket per proxy in the session's 0700 directory (served by the
//! proxies, peers of the session's uid only), the sanitised environment
//! with the proxy variables, and the bubblewrap plan (R-BWRAP-1). `exec`
//! runs each command under bubblewrap (and the name guard, when the plan
//! has filename rules), with the proxies answering on 127.0.0.1 inside
//! ([`InnerBridge`]). `destroy` stops the proxies; the sockets, the
//! placeholders and the directory go with the session.

mod args_file;
mod exec;
mod listeners;
mod netns;
mod session_mounts;

use super::common::bridges::{BRIDGED, bind_private_socket};
use super::common::host_repos::{
    RepoNotes, ReposAtLaunch, log_repos_made_inside, repos_in_writable_roots, repos_protected,
    repos_to_protect, writable_roots,
};
use super::common::name_guard_reports::ReportPipe;
use crate::Error;
use crate::egress::{Egress, Listen, plain_env};
use crate::running::{CommandIo, prepare, run_child};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::settings::Settings;
use crate::workspace::{MountPlan, OverlayHost, OverlayView};
use bwrap_spec::{
    BridgePlan, BwrapBuilder, BwrapPlan, FilenameRules, GuardFds, NameGuardLauncher,
    PlaceholderFiles, Profile,
};
use sandbox_core::{GuardUpdate, SandboxSpec, Surface};
use session_mounts::SelfBind;
use std::ffi::{CString, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::common::warm::{
    ISOLATION_NO_LAUNCHER, ISOLATION_PER_COMMAND, ISOLATION_SESSION, InitSocket, WarmInit,
    start_init,
};
use crate::inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT, InnerBridge};
use crate::settings::CommandIsolation;

/// What the bubblewrap backend needs besides the shared settings.
pub(crate) struct Config {
    pub(crate) bwrap: PathBuf,
    /// Only the bridges' fallback: without it a launch that needs the
    /// fallback fails with the install line.
    pub(crate) socat: Option<PathBuf>,
    /// Where session directories are made (and `--args` files opened).
    pub(crate) temp_dir: PathBuf,
    pub(crate) filename_rules: FilenameRules,
    pub(crate) name_guard: Option<NameGuardLauncher>,
    /// Whether the host set a launcher (for the refusal's advice).
    pub(crate) launcher_set: LauncherSet,
    pub(crate) inner_bridge: InnerBridge,
}

/// A bubblewrap session.
pub(crate) struct Session {
    config: Arc<Config>,
    /// The plan; a repository made in the session adds its denies.
    plan: Mutex<Arc<BwrapPlan>>,
    /// What the plan is rebuilt from when a repository is made.
    spec: SandboxSpec,
    /// The writable roots and the repositories found in them at launch.
    writable: Vec<String>,
    repos_at_launch: ReposAtLaunch,
    /// The guards' notes of what may have made a repository.
    notes: RepoNotes,
    /// A dispatch's proxies and bridges (terminals have none).
    egress: Option<Bridged>,
    /// The session's init, when commands run in one warm sandbox.
    warm: Option<WarmInit>,
    /// The host as the plan reads it (the overlay's layers for its view).
    host: crate::settings::SharedHostView,
    /// The workspace's overlay, mounted when bubblewrap starts.
    overlay_mount: Option<MountPlan>,
    overlay: Option<OverlayView>,
    /// The reads denied at launch (the manager's, with a workspace's
    /// translated into its view), for the plan's rebuilds.
    reads: crate::settings::ExtraReads,
    _placeholders: PlaceholderFiles,
    /// Those of repositories made in the session.
    added_placeholders: Mutex<Vec<PlaceholderFiles>>,
}

/// The proxies of a dispatch session and the bridges the sandbox reaches
/// them through. The proxies have no listener of their own: they serve the
/// bridges' Unix sockets and, per command, the listeners bound inside the
/// sandbox's network namespace. No other process can reach them.
struct Bridged {
    egress: Arc<Egress>,
    bridges: BridgePlan,
}

/// The handle details of a dispatch: the addresses inside the sandbox (on
/// the host the proxies listen on no port at all) and the socket directory.
pub(crate) fn dispatch_details(socket_dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("httpProxy", format!("127.0.0.1:{GUEST_HTTP_PORT}")),
        ("socksProxy", format!("127.0.0.1:{GUEST_SOCKS_PORT}")),
        ("socketDir", socket_dir.display().to_string()),
    ]
}

pub(crate) async fn launch(
    config: &Arc<Config>,
    settings: &Settings,
    spec: &SandboxSpec,
    overlay: Option<&OverlayView>,
) -> Result<Launched<Session>, Error> {
    // An overlay view is empty on the host: a launch reads it from its
    // layers, and the sandbox's bubblewrap starts with it mounted.
    let (host_view, overlay_mount): (crate::settings::SharedHostView, _) = match overlay {
        Some(o) => (
            Arc::new(OverlayHost::new(settings.host.clone(), o)),
            Some(MountPlan::new(o).map_err(|e| Error::io("preparing the workspace's overlay", e))?),
        ),
        None => (settings.host.clone(), None),
    };
    let host = &*host_view;
    if settings.surface == Surface::Terminal {
        // The fixed terminal profile: host network, no proxies.
        let mut builder = BwrapBuilder::new(spec, &settings.home);
        builder.tool_owned_dirs(settings.tool_dirs.iter().cloned());
        builder
            .profile(Profile::Terminal)
            .read_deny(settings.reads.deny.iter().cloned())
            .read_reopen(settings.reads.again.iter().cloned());
        if let (Some(l), CommandIsolation::SessionSandbox) =
            (&config.name_guard, settings.isolation)
        {
            builder
                .name_guard_launcher(l.clone())
                .bind_launcher_always();
        }
        for s in &settings.unix_sockets {
            builder.allow_unix_socket(s.clone());
        }
        let plan = builder.build(host)?;
        let placeholders = create_placeholders(overlay, plan.placeholders())?;
        let session = Session {
            config: config.clone(),
            plan: Mutex::new(Arc::new(plan)),
            spec: spec.clone(),
            writable: Vec::new(),
            repos_at_launch: ReposAtLaunch::default(),
            notes: RepoNotes::new()?,
            egress: None,
            warm: None,
            host: host_view.clone(),
            overlay_mount: overlay_mount.clone(),
            overlay: overlay.cloned(),
            reads: settings.reads.clone(),
            _placeholders: placeholders,
            added_placeholders: Mutex::new(Vec::new()),
        };
        let env = plain_env(settings)?;
        let mut details = Vec::new();
        let session = warm_up(session, settings, spec, &env, &mut details).await?;
        return Ok(Launched {
            session,
            env,
            details,
        });
    }
    let egress = Egress::start(
        &settings.egress,
        spec,
        &config.temp_dir,
        Listen::Unbound,
        None,
    )
    .await?;
    let mut bridges = BridgePlan::new(egress.dir())?;
    bridges
        .add("http", GUEST_HTTP_PORT)?
        .add("socks", GUEST_SOCKS_PORT)?;
    let uid = rustix::process::geteuid().as_raw();
    for (b, kind) in bridges.bridges().iter().zip(BRIDGED) {
        let listener = bind_private_socket(&bridges.host_socket(b))?;
        egress.service().serve_unix(kind, listener, uid);
    }
    let writable = writable_roots(spec);
    let repos = repos_in_writable_roots(settings, &spec.session_id, &writable);
    let plan = match dispatch_builder(
        config,
        settings,
        &settings.reads,
        spec,
        &repos.repos,
        &bridges,
    )
    .build(host)
    {
        Ok(p) => p,
        Err(e) => {
            egress.shutdown().await;
            return Err(plan_refusal(e, config.launcher_set));
        }
    };
    log_dropped_filename_rules(settings, spec, &plan);
    let placeholders = create_placeholders(overlay, plan.placeholders())?;
    let guest = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let env = egress.env(
        settings,
        spec,
        crate::broker::guest_bundle_path(),
        (guest(GUEST_HTTP_PORT), guest(GUEST_SOCKS_PORT)),
        None,
    )?;
    let mut details = dispatch_details(bridges.host_dir());
    let session = Session {
        config: config.clone(),
        plan: Mutex::new(Arc::new(plan)),
        spec: spec.clone(),
        writable,
        repos_at_launch: repos,
        notes: RepoNotes::new()?,
        egress: Some(Bridged {
            egress: Arc::new(egress),
            bridges,
        }),
        warm: None,
        host: host_view.clone(),
        overlay_mount,
        overlay: overlay.cloned(),
        reads: settings.reads.clone(),
        _placeholders: placeholders,
        added_placeholders: Mutex::new(Vec::new()),
    };
    let session = warm_up(session, settings, spec, &env, &mut details).await?;
    Ok(Launched {
        session,
        env,
        details,
    })
}

/// Makes the placeholders of a plan's denies on the host (in the overlay's
/// upper layer for those in its view).
fn create_placeholders(
    overlay: Option<&OverlayView>,
    placeholders: &[bwrap_spec::Placeholder],
) -> Result<PlaceholderFiles, Error> {
    Ok(match overlay {
        Some(o) => PlaceholderFiles::create_on_host(&o.placeholders_in_upper(placeholders))?,
        None => PlaceholderFiles::create_on_host(placeholders)?,
    })
}

/// The builder of a dispatch's plan, with the denies of `repos` (the git
/// repositories in its writable roots).
fn dispatch_builder(
    config: &Config,
    settings: &Settings,
    reads: &crate::settings::ExtraReads,
    spec: &SandboxSpec,
    repos: &[String],
    bridges: &BridgePlan,
) -> BwrapBuilder {
    let mut builder = BwrapBuilder::new(spec, &settings.home);
    builder.tool_owned_dirs(settings.tool_dirs.iter().cloned());
    builder
        .nested_repos(repos.to_vec())
        .filename_rules(config.filename_rules)
        .argv_delivery(bwrap_spec::ArgvDelivery::ArgsFd)
        .bridges(bridges.clone())
        .read_deny(reads.deny.iter().cloned())
        .read_reopen(reads.again.iter().cloned());
    for s in &settings.unix_sockets {
        builder.allow_unix_socket(s.clone());
    }
    if let Some(l) = &config.name_guard {
        builder.name_guard_launcher(l.clone());
        if settings.isolation == CommandIsolation::SessionSandbox {
            builder.bind_launcher_always();
        }
    }
    builder
}

/// The binds of a path onto itself in `args` (bubblewrap's options), in
/// order.
fn self_binds(args: &[OsString]) -> Vec<(SelfBind, &OsString)> {
    args.windows(3)
        .filter(|w| w[1] == w[2] && w[1].as_encoded_bytes().starts_with(b"/"))
        .filter_map(|w| match w[0].to_str() {
            Some("--bind") => Some((SelfBind::Pin, &w[1])),
            Some("--ro-bind") => Some((SelfBind::ReadOnly, &w[1])),
            _ => None,
        })
        .collect()
}

/// Starts the session's init when its commands are to share one sandbox
/// (and the launcher that is the init is bound), and says in `details`
/// which way commands run. On failure the proxies are stopped.
async fn warm_up(
    mut session: Session,
    settings: &Settings,
    spec: &SandboxSpec,
    env: &[(OsString, OsString)],
    details: &mut Vec<(&'static str, String)>,
) -> Result<Session, Error> {
    let plan = session.plan();
    if session.overlay_mount.is_some()
        && (settings.isolation != CommandIsolation::SessionSandbox
            || plan.bound_launcher().is_none())
    {
        // Each fresh sandbox would mount the one upper layer again.
        if let Some(b) = &session.egress {
            b.egress.shutdown().await;
        }
        return Err(crate::ErrorKind::NotSupported {
            what: "an overlay workspace without one warm sandbox for the session",
        }
        .into());
    }
    let launcher = match (settings.isolation, plan.bound_launcher()) {
        (CommandIsolation::SessionSandbox, Some(l)) => l.clone(),
        (CommandIsolation::SessionSandbox, None) => {
            details.push(("isolation", ISOLATION_NO_LAUNCHER.into()));
            return Ok(session);
        }
        _ => {
            details.push(("isolation", ISOLATION_PER_COMMAND.into()));
            return Ok(session);
        }
    };
    let socket = InitSocket::new()?;
    let mut argv: Vec<OsString> = vec![bwrap_spec::NAME_GUARD_GUEST_PATH.into()];
    argv.extend(launcher.leading_args().iter().cloned());
    argv.extend(socket.init_args());
    let warm = start_init(
        settings,
        &spec.session_id,
        env,
        "/".into(),
        argv,
        socket,
        |request, io| session.exec(settings, request, io),
    )
    .await;
    match warm {
        Ok(w) => session.warm = Some(w),
        Err(e) => {
            if let Some(b) = &session.egress {
                b.egress.shutdown().await;
            }
            return Err(e);
        }
    }
    details.push(("isolation", ISOLATION_SESSION.into()));
    Ok(session)
}

/// bubblewrap's options with the steering pipes added before the final
/// `--`.
fn with_steering(mut args: Vec<OsString>, steering: &netns::Steering) -> Vec<OsString> {
    args.pop(); // the final "--"
    args.extend(steering.bwrap_args().into_iter().map(OsString::from));
    args.push("--".into());
    args
}

/// A bubblewrap plan's refusal as the host should read it: when the
/// filename rules cannot be enforced because no launcher was set, the
/// error names the builder methods that set one.
pub(crate) fn plan_refusal(e: bwrap_spec::Error, launcher_set: LauncherSet) -> Error {
    match (e.kind(), launcher_set) {
        (bwrap_spec::ErrorKind::FilenameRulesUnenforceable { globs, roots }, LauncherSet::No) => {
            crate::ErrorKind::NameGuardLauncherNeeded {
                globs: globs.clone(),
                roots: roots.clone(),
            }
            .into()
        }
        _ => e.into(),
    }
}

/// Whether the host program set a name-guard launcher (whether or not the
/// guard can run here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LauncherSet {
    Yes,
    No,
}

fn report_err(e: std::io::Error) -> Error {
    Error::io("reading the name guard's reports", e)
}

/// Logs what the explicit opt-out left unenforced.
fn log_dropped_filename_rules(settings: &Settings, spec: &SandboxSpec, plan: &BwrapPlan) {
    if plan.dropped_filename_globs().is_empty() {
        return;
    }
    let (globs, paths): (Vec<&String>, Vec<&String>) = plan
        .dropped_filename_globs()
        .iter()
        .partition(|r| !r.starts_with('/'));
    let globs: Vec<&str> = globs.iter().map(|g| g.as_str()).collect();
    (settings.log)(&format!(
        "session {}: creation-time rules not enforced (opt-out): names {} and {} \
         not-yet-existing denied paths in writable roots",
        spec.session_id,
        globs.join(" "),
        paths.len()
    ));
}

impl Session {
    /// Whether commands run in the session's one warm sandbox.
    pub(crate) fn is_warm(&self) -> bool {
        self.warm.is_some()
    }

    /// The session's plan as it is now.
    fn plan(&self) -> Arc<BwrapPlan> {
        // A poisoned lock still holds a whole plan: it is only ever
        // replaced whole.
        self.plan.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The session's bubblewrap options.
    pub(crate) fn args(&self) -> Vec<OsString> {
        self.plan().args().to_vec()
    }

    /// Gives a git repository made since the last command the denies of
    /// one found at launch (R-PATHS-3) before the next command starts: the
    /// plan is built again with it (the next fresh sandbox has them), and
    /// in a warm sandbox its pins and read-only binds are made in the
    /// running sandbox and its creation rules sent to the session's name
    /// guard, so they hold for what earlier commands left running too. A
    /// failure refuses the command; the next one tries again.
    fn protect_new_repos(&self, settings: &Settings) -> Result<(), Error> {
        let Some(bridged) = &self.egress else {
            return Ok(());
        };
        let old = self.plan();
        // Without a guard nothing notes what may have made a repository:
        // the roots are searched before every command.
        let Some(found) = repos_to_protect(
            &self.repos_at_launch,
            &self.notes,
            &self.writable,
            !old.is_guarded(),
        ) else {
            return Ok(());
        };
        let new = dispatch_builder(
            &self.config,
            settings,
            &self.reads,
            &self.spec,
            &found.all,
            &bridged.bridges,
        )
        .build(&*self.host)
        .map_err(|e| plan_refusal(e, self.config.launcher_set))?;
        let placeholders: Vec<bwrap_spec::Placeholder> = new
            .placeholders()
            .iter()
            .filter(|p| !old.placeholders().iter().any(|o| o.path == p.path))
            .cloned()
            .collect();
        let made = create_placeholders(self.overlay.as_ref(), &placeholders)?;
        if let Some(warm) = &self.warm {
            if new.is_guarded() {
                let rules: Vec<GuardUpdate> = new
                    .name_guard_globs()
                    .iter()
                    .filter(|r| !old.name_guard_globs().contains(r))
                    .map(|r| GuardUpdate::Deny(r.as_bytes().to_vec()))
                    .collect();
                warm.send_guard_updates(&rules)?;
            }
            let before = self_binds(old.args());
            let binds = self_binds(new.args())
                .into_iter()
                .filter(|b| !before.contains(b))
                .map(|(kind, p)| CString::new(p.as_encoded_bytes().to_vec()).map(|c| (kind, c)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    Error::io(
                        "protecting a repository made in the session",
                        std::io::Error::other("a path with a NUL byte"),
                    )
                })?;
            let pid = warm.namespace_init().ok_or_else(|| {
                Error::from(crate::ErrorKind::SessionSandboxEnded {
                    reason: "its first process is not known, so the denies of a repository made in it cannot be added".into(),
                })
            })?;
            session_mounts::bind_in_sandbox(pid, &binds).map_err(|e| {
                Error::io("adding the denies of a repository made in the session", e)
            })?;
        }
        *self.plan.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(new);
        self.added_placeholders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(made);
        repos_protected(
            settings,
            &self.spec.session_id,
            &self.repos_at_launch,
            &self.notes,
            found,
        );
        Ok(())
    }

    pub(crate) async fn destroy(self, settings: &Settings, session_id: &str) {
        if let Some(w) = &self.warm {
            w.destroy().await;
        }
        log_repos_made_inside(settings, session_id, &self.writable, &self.repos_at_launch);
        if let Some(b) = &self.egress {
            b.egress.shutdown().await;
        }
        // Placeholders and the socket directory are removed on drop.
    }
}

/// The error of a launch that needs the socat bridges where socat is not
/// installed.
pub(crate) fn socat_missing() -> Error {
    crate::ErrorKind::ToolMissing {
        tool: "socat",
        hint: "the proxies' socat bridges need it: sudo apt-get install socat".into(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatch_handle_names_the_guest_addresses_not_host_ports() {
        let d = dispatch_details(Path::new("/tmp/agent-sandbox-1-0-ff"));
        assert_eq!(
            d,
            [
                ("httpProxy", "127.0.0.1:3128".to_string()),
                ("socksProxy", "127.0.0.1:1080".to_string()),
                ("socketDir", "/tmp/agent-sandbox-1-0-ff".to_string()),
            ]
        );
    }
}
