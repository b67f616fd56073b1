//! The fast path of a dispatch command: bubblewrap is started with
//! `--info-fd` and `--block-fd`, the proxy listeners are bound inside the
//! sandbox's network namespace from the host side (see [`super::netns`])
//! and handed to the session's proxies, then the command is released. Where
//! the namespaces cannot be joined, the sandbox is killed before the
//! command ran and the socat bridges start instead (where socat is
//! installed; else the command fails to start with the install line, never
//! runs with a weaker way out).

use super::netns;
use super::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT};
use crate::backend::common::bridges::BRIDGED;
use crate::egress::Egress;
use crate::pty::PtyMaster;
use crate::running::{CommandIo, run_child};
use crate::settings::LogSink;
use crate::violations::Violations;
use connect_proxy::ProxyService;
use rustix::fd::OwnedFd;
use sandbox_core::PtySize;
use std::sync::Arc;
use tokio::task::AbortHandle;

/// A started fast-path command and what its fallback needs.
pub(super) struct Launch {
    pub(super) child: tokio::process::Child,
    pub(super) steering: netns::Steering,
    /// The socat bridges' command and its `--args` file, where socat is
    /// installed.
    pub(super) fallback: Option<(tokio::process::Command, Option<std::fs::File>)>,
    pub(super) report_write: Option<OwnedFd>,
    pub(super) violations: Option<Violations>,
    pub(super) egress: Arc<Egress>,
    pub(super) log: LogSink,
    /// The size of the command's terminal, when it runs on one.
    pub(super) terminal: Option<PtySize>,
    pub(super) io: CommandIo,
}

/// Binds the listeners and releases the command, or falls back to socat.
pub(super) async fn run(launch: Launch) {
    let Launch {
        child,
        steering,
        fallback,
        report_write,
        violations,
        egress,
        log,
        terminal,
        mut io,
    } = launch;
    let netns::Steering {
        info_read,
        info_write,
        block_read,
        block_write,
    } = steering;
    drop((info_write, block_read));
    let mut sandbox_pid = None;
    match bind_listeners(info_read, egress.service(), &mut sandbox_pid).await {
        Ok(forwarders) => {
            let Some(pid) = sandbox_pid else {
                return io
                    .failed_to_start("starting the sandbox", &std::io::Error::other("no pid"))
                    .await;
            };
            if let Err((what, e)) = release(pid, terminal, &block_write, &mut io).await {
                return io.failed_to_start(what, &e).await;
            }
            drop((report_write, block_write, fallback));
            run_child(child, io, violations, forwarders).await
        }
        Err(err) => {
            log(&format!(
                "in-namespace proxy listeners unavailable ({err}); using socat bridges"
            ));
            // bubblewrap runs the command once its block descriptor reaches
            // end of file, and its sandbox process does not die with the
            // launcher until then: kill the sandbox itself (its pid
            // namespace goes with it) before the descriptor closes, so the
            // command never runs here and then a second time in the
            // fallback.
            if let Some(pid) = sandbox_pid {
                netns::kill_sandbox(pid);
            }
            let mut child = child;
            let _ = child.start_kill();
            let _ = child.wait().await;
            drop(block_write);
            if terminal.is_some() {
                let e = std::io::Error::other("a terminal needs the in-namespace listeners");
                return io.failed_to_start("starting the command", &e).await;
            }
            let Some((mut fallback, fallback_args_file)) = fallback else {
                let e = std::io::Error::other(super::socat_missing().to_string());
                return io.failed_to_start("starting the socat bridges", &e).await;
            };
            let spawned = fallback.spawn();
            drop((report_write, fallback_args_file));
            match spawned {
                Ok(child) => {
                    if let Some(pid) = child.id() {
                        follow_sandbox_start(pid, io.control.clone());
                    }
                    run_child(child, io, violations, Vec::new()).await
                }
                Err(e) => io.failed_to_start("starting bubblewrap", &e).await,
            }
        }
    }
}

/// Signals go to the sandbox's namespace, as on the main path, once the
/// fallback's bubblewrap (`pid`, started without `--info-fd`) has made its
/// first process: a command's interrupt then reaches the command, not
/// bubblewrap on the host (which would end the sandbox without it). Looked
/// for every 2 ms for up to 5 s; until then a signal goes to bubblewrap.
fn follow_sandbox_start(pid: u32, control: std::sync::Arc<crate::control::ControlState>) {
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            if let Some(init) = netns::first_child(pid) {
                control.sandbox_started(init);
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    });
}

/// Reads the sandbox's pid from bubblewrap, binds the proxy listeners in its
/// network namespace, hands them to the session's proxies and releases the
/// command.
async fn bind_listeners(
    info_read: rustix::fd::OwnedFd,
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
    // window is refused, so try again until a deadline (generous: on a
    // loaded machine that window lasts longer) before falling back.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
    let listeners = loop {
        let bound = tokio::task::spawn_blocking(move || {
            netns::bind_in_sandbox(pid, &[GUEST_HTTP_PORT, GUEST_SOCKS_PORT])
        })
        .await
        .map_err(std::io::Error::other)?;
        match bound {
            Ok(l) => break l,
            Err(e)
                if e.kind() == std::io::ErrorKind::PermissionDenied
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
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
    Ok(forwarders)
}

/// The sandbox's first process is `pid`: signals go to its namespace, the
/// command's terminal is opened there (when it runs on one), and the
/// command is released. On failure the sandbox is killed before the
/// command ran.
async fn release(
    pid: u32,
    terminal: Option<PtySize>,
    block_write: &OwnedFd,
    io: &mut CommandIo,
) -> Result<(), (&'static str, std::io::Error)> {
    io.control.sandbox_started(pid);
    let opened = match terminal {
        Some(size) => open_terminal(pid, size)
            .await
            .map(|m| io.terminal = Some(m))
            .map_err(|e| ("opening the sandbox's terminal", e)),
        None => Ok(()),
    };
    let released = opened.and_then(|()| {
        rustix::io::write(block_write, b"go")
            .map(drop)
            .map_err(|e| ("releasing the command", e.into()))
    });
    if released.is_err() {
        netns::kill_sandbox(pid);
    }
    released
}

/// The command's terminal in the sandbox whose first process is `pid`.
async fn open_terminal(pid: u32, size: PtySize) -> std::io::Result<Arc<PtyMaster>> {
    let master = crate::pty::open_in_sandbox(pid, size).await?;
    Ok(Arc::new(PtyMaster::new(master)?))
}

/// A command in a sandbox without proxies (the terminal profile) whose
/// sandbox the host must know (one on a terminal, or a warm session's
/// init, whose commands' terminals are made in that sandbox's devpts):
/// read bubblewrap's pid, open the terminal if there is one, release it.
pub(super) async fn run_on_terminal(
    child: tokio::process::Child,
    steering: netns::Steering,
    size: Option<PtySize>,
    violations: Option<Violations>,
    mut io: CommandIo,
) {
    let netns::Steering {
        info_read,
        info_write,
        block_read,
        block_write,
    } = steering;
    drop((info_write, block_read));
    let pid = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::task::spawn_blocking(move || netns::read_child_pid(info_read)),
    )
    .await;
    let pid = match pid {
        Ok(Ok(Ok(pid))) => pid,
        _ => {
            let e = std::io::Error::other("bubblewrap did not report its pid");
            return io.failed_to_start("starting the sandbox", &e).await;
        }
    };
    if let Err((what, e)) = release(pid, size, &block_write, &mut io).await {
        return io.failed_to_start(what, &e).await;
    }
    drop(block_write);
    run_child(child, io, violations, Vec::new()).await
}
