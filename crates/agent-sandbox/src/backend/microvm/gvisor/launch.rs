//! Launching a gVisor sandbox: the plan, the bundle (`config.json` and the
//! agent), `runsc run`, the agent's channel over two pipes.

use super::*;

/// The caller's uid and gid: the sandbox's processes run as them.
pub(super) fn caller_ids() -> (u32, u32) {
    (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    )
}

/// Whether this process may read or write `path`, or search it when it
/// is a directory (the real uid's permissions: `access(2)`). Anything but
/// a refusal of each (a path gone, say) counts as reachable.
pub(super) fn caller_reaches(path: &str) -> bool {
    use rustix::fs::{Access, access};
    let mut asked = vec![Access::READ_OK, Access::WRITE_OK];
    if std::path::Path::new(path).is_dir() {
        asked.push(Access::EXEC_OK);
    }
    asked
        .into_iter()
        .any(|a| !matches!(access(path, a), Err(rustix::io::Errno::ACCESS)))
}

pub(crate) async fn launch(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
) -> Result<Launched<Session>, Error> {
    let host = &*settings.host;
    if settings.surface == Surface::Terminal {
        return launch_terminal(config, settings, spec, host).await;
    }
    let egress = Egress::start(
        &settings.egress,
        spec,
        &config.temp_dir,
        Listen::Unbound,
        None,
    )
    .await?;
    match launch_with(config, settings, spec, &egress).await {
        Ok((shared, placeholders, writable, repos, details, env)) => Ok(Launched {
            session: Session {
                shared,
                egress: Some(egress),
                writable,
                repos_at_launch: repos,
                _placeholders: placeholders,
            },
            env,
            details,
        }),
        Err(e) => {
            egress.shutdown().await;
            Err(e)
        }
    }
}

/// Everything a launch makes once the proxies run.
pub(super) type Made = (
    Arc<Shared>,
    PlaceholderFiles,
    Vec<String>,
    ReposAtLaunch,
    Vec<(&'static str, String)>,
    Vec<(OsString, OsString)>,
);

pub(super) async fn launch_with(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
    egress: &Egress,
) -> Result<Made, Error> {
    let DispatchPlan {
        plan,
        proxies,
        writable,
        repos,
        ..
    } = dispatch_plan(
        settings,
        spec,
        egress,
        config.filename_rules,
        None,
        "under gVisor nothing can refuse new names (the name guard's seccomp filter cannot be \
         installed inside this gVisor release)",
    )?;
    let guest = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let env = egress.env(
        settings,
        spec,
        crate::broker::guest_bundle_path(),
        (guest(GUEST_HTTP_PORT), guest(GUEST_SOCKS_PORT)),
        None,
    )?;
    let relays: Relays = proxies
        .into_iter()
        .map(|(port, socket)| (port, RelayTarget::Unix(socket)))
        .collect();
    let (shared, placeholders) =
        start_sandbox(config, settings, &plan, relays, Network::None).await?;
    let details = vec![
        ("runtime", "gvisor".to_string()),
        ("runtimeVersion", config.version.clone()),
        ("hardwareVm", "no".to_string()),
        (
            "kernelBoundary",
            "gVisor user-space kernel (not a hardware VM)".to_string(),
        ),
        ("httpProxy", format!("127.0.0.1:{GUEST_HTTP_PORT}")),
        ("socksProxy", format!("127.0.0.1:{GUEST_SOCKS_PORT}")),
        ("sessionDir", shared.dir.path().display().to_string()),
        ("limits", LIMITS.to_string()),
    ];
    Ok((shared, placeholders, writable, repos, details, env))
}

/// The terminal surface in a gVisor sandbox: the fixed terminal profile of
/// the same spec (the host's network, no proxies, the terminal's secret
/// directories hidden) behind gVisor's kernel, a shell's commands in the
/// specification's "station" rather than on the host.
pub(super) async fn launch_terminal(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
    host: &(dyn sandbox_core::HostView + Send + Sync),
) -> Result<Launched<Session>, Error> {
    let mut builder = BwrapBuilder::new(spec, &settings.home);
    builder.tool_owned_dirs(settings.tool_dirs.iter().cloned());
    builder
        .profile(bwrap_spec::Profile::Terminal)
        .read_deny(settings.reads.deny.iter().cloned())
        .read_reopen(settings.reads.again.iter().cloned());
    for s in &settings.unix_sockets {
        builder.allow_unix_socket(s.clone());
    }
    let plan = builder.build(host)?;
    let (shared, placeholders) =
        start_sandbox(config, settings, &plan, Relays::new(), Network::Host).await?;
    let details = vec![
        ("runtime", "gvisor".to_string()),
        ("runtimeVersion", config.version.clone()),
        ("hardwareVm", "no".to_string()),
        (
            "kernelBoundary",
            "gVisor user-space kernel (not a hardware VM)".to_string(),
        ),
        ("network", "host".to_string()),
        ("sessionDir", shared.dir.path().display().to_string()),
        ("limits", LIMITS.to_string()),
        ("weaker", WEAKER.to_string()),
    ];
    Ok(Launched {
        session: Session {
            shared,
            egress: None,
            writable: Vec::new(),
            repos_at_launch: ReposAtLaunch::default(),
            _placeholders: placeholders,
        },
        env: plain_env(settings)?,
        details,
    })
}

/// Makes the session's directory and bundle from `plan` and starts its
/// gVisor sandbox with the agent as its first process, which listens on
/// the ports of `relays`. Without root the
/// masks over paths the caller cannot reach are left out
/// ([`layout::without_unreachable_masks`]).
pub(super) async fn start_sandbox(
    config: &Config,
    settings: &Settings,
    plan: &bwrap_spec::BwrapPlan,
    relays: Relays,
    network: Network,
) -> Result<(Arc<Shared>, PlaceholderFiles), Error> {
    let host = &*settings.host;
    let mut layout = layout::layout_from_bwrap_args(plan.args(), |p| host.exists(Path::new(p)))?;
    let rootless = caller_ids().0 != 0;
    if rootless {
        layout::without_unreachable_masks(&mut layout, caller_reaches);
    }
    let placeholders = PlaceholderFiles::create_on_host(plan.placeholders())?;
    let dir = SessionDir::create_in(&config.temp_dir)?;
    static SESSIONS: AtomicU64 = AtomicU64::new(0);
    let shared = Arc::new(Shared {
        runsc: Runsc {
            binary: config.runsc.clone(),
            state_dir: dir.path().join("state"),
            id: runsc::container_id(SESSIONS.fetch_add(1, Ordering::Relaxed)),
            rootless,
            network,
        },
        dir,
        // Without root, runsc maps the caller to root inside and nothing
        // else: the caller's files are root's there, so the agent and the
        // commands run as that root (the commands with no capability),
        // which is the caller on the host.
        ids: if rootless { (0, 0) } else { caller_ids() },
        suspended: AtomicBool::new(false),
        deleted: AtomicBool::new(false),
        step: tokio::sync::Mutex::new(()),
        link: std::sync::OnceLock::new(),
        // Without root the host's cgroups are not ours to write.
        cgroups: if rootless {
            crate::cgroup::Cgroups::none()
        } else {
            settings.cgroups.clone()
        },
        cpu: std::sync::Mutex::new((None, false)),
    });
    write_bundle(&shared, &layout, &config.agent)?;
    let bundle = shared.bundle();
    let bundle = bundle.to_string_lossy();
    let (theirs, ours) = channel_pipes()?;
    shared
        .runsc
        .step_with_channel(
            "run",
            &["run", "--detach", "--bundle", &bundle, &shared.runsc.id],
            &shared.log(),
            Some(theirs),
        )
        .await?;
    // The agent's hello is not waited for: `runsc run` returned once it
    // was started, commands sent meanwhile wait in its pipe, and the
    // channel ends (every command with it) if the hello is not this
    // protocol's or the agent's stdout closes.
    let (read, write) = ours;
    let frames = FrameReader::new(MAX_FROM_GUEST_LEN);
    let ports: Vec<u16> = relays.keys().copied().collect();
    let channel = Arc::new(Channel::start_over(Box::new(read), write, frames, relays));
    for port in ports {
        channel
            .send(&ToGuest::Listen { port })
            .map_err(|e| ErrorKind::GuestUnavailable { reason: e.0 })?;
    }
    let _ = shared
        .link
        .set(Arc::new(Link::new(channel, killer(&shared.runsc))));
    Ok((shared, placeholders))
}

/// The agent's channel as two pipes: the sandbox's ends (its stdin and
/// stdout) and ours (what it writes, what we write).
#[allow(
    clippy::type_complexity,
    reason = "two ends of two pipes, named where they are taken apart"
)]
pub(super) fn channel_pipes() -> Result<
    (
        (OwnedFd, OwnedFd),
        (tokio::net::unix::pipe::Receiver, Writer),
    ),
    Error,
> {
    let pipe = || {
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| Error::io("creating the agent's channel", e.into()))
    };
    let (in_r, in_w) = pipe()?;
    let (out_r, out_w) = pipe()?;
    let io = |e| Error::io("creating the agent's channel", e);
    let read = tokio::net::unix::pipe::Receiver::from_owned_fd(out_r).map_err(io)?;
    let write = tokio::net::unix::pipe::Sender::from_owned_fd(in_w).map_err(io)?;
    Ok(((in_r, out_w), (read, Box::new(write))))
}

/// Ends the whole sandbox from the host (its agent no longer ends a
/// command), on a thread of its own.
pub(super) fn killer(runsc: &Runsc) -> Box<dyn Fn() + Send + Sync> {
    let runsc = runsc.clone();
    Box::new(move || {
        let mut c = runsc.blocking_command();
        c.args(["kill", "--all", &runsc.id, "KILL"]);
        let _ = std::thread::Builder::new()
            .name("runsc-kill".into())
            .spawn(move || c.status());
    })
}

/// Lifts the sandbox's CPU quota once a CPU-limited command ended.
pub(super) fn release_cpu(shared: Option<&Arc<Shared>>) {
    if let Some(s) = shared {
        s.release_cpu();
    }
}

/// What the handle says of limits under gVisor.
pub(super) const LIMITS: &str = "processes: gVisor's kernel; memory: watched by the agent every 5 ms; CPU: the whole sandbox held to the command's share while it runs (a host cgroup; with root only)";

/// Writes `bundle/config.json` and the empty root with its directories
/// and symlinks; the agent program is bound read-only at [`AGENT_PATH`].
pub(super) fn write_bundle(
    shared: &Shared,
    layout: &layout::Layout,
    agent: &NameGuardLauncher,
) -> Result<(), Error> {
    let io = |what: String| move |e| Error::io(what, e);
    let bundle = shared.bundle();
    let rootfs = bundle.join("rootfs");
    std::fs::create_dir_all(&rootfs).map_err(io(format!("creating {}", rootfs.display())))?;
    std::fs::create_dir_all(&shared.runsc.state_dir)
        .map_err(io("creating runsc's state".into()))?;
    for d in &layout.root_dirs {
        let p = rootfs.join(d.trim_start_matches('/'));
        std::fs::create_dir_all(&p).map_err(io(format!("creating {}", p.display())))?;
    }
    for (target, link) in &layout.root_symlinks {
        let p = rootfs.join(link.trim_start_matches('/'));
        std::os::unix::fs::symlink(target, &p).map_err(io(format!("linking {}", p.display())))?;
    }
    let agent_dir = rootfs.join(AGENT_DIR.trim_start_matches('/'));
    std::fs::create_dir_all(&agent_dir).map_err(io(format!("creating {}", agent_dir.display())))?;
    let agent_file = rootfs.join(AGENT_PATH.trim_start_matches('/'));
    std::fs::write(&agent_file, b"").map_err(io(format!("creating {}", agent_file.display())))?;
    let mut init: Vec<String> = vec![AGENT_PATH.to_owned()];
    for a in agent.leading_args() {
        init.push(oci::utf8(a, "the agent's arguments")?);
    }
    init.push(name_guard::VM_AGENT_FLAG.to_owned());
    init.push(name_guard::VM_AGENT_STDIO_FLAG.to_owned());
    let init = oci::process_json(
        &init,
        &["PATH=/usr/bin:/bin".to_owned()],
        "/",
        shared.ids,
        &AGENT_CAPS,
    );
    let mut config = oci::config_json(layout, init, shared.runsc.network);
    let program = oci::utf8(agent.host_path().as_os_str(), "the agent's path")?;
    if let Some(mounts) = config["mounts"].as_array_mut() {
        mounts.push(serde_json::json!({
            "destination": AGENT_PATH,
            "type": "bind",
            "source": program,
            "options": ["bind", "ro", "nosuid", "nodev"],
        }));
    }
    let path = bundle.join("config.json");
    std::fs::write(&path, config.to_string()).map_err(io(format!("writing {}", path.display())))
}
