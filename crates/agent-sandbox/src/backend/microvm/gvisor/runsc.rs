//! The `runsc` command lines of one session: every call names the
//! session's own state directory (`--root`, under the session's private
//! directory, so nothing is left in `/var/run`), no network but loopback
//! (`--network=none`; the terminal surface shares the host's, and may
//! connect to the host's Unix sockets its profile lets through,
//! `--host-uds=open`); without root, `--rootless --ignore-cgroups`.

use crate::{Error, ErrorKind};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The longest part of runsc's output kept in an error.
const SAID_LIMIT: usize = 600;

/// How long one lifecycle step (run, checkpoint, restore, kill, delete)
/// may take before it is given up.
pub(crate) const STEP_LIMIT: Duration = Duration::from_secs(20);

/// One session's runsc: the binary, its state directory, the container id.
#[derive(Clone, Debug)]
pub(crate) struct Runsc {
    pub(crate) binary: PathBuf,
    pub(crate) state_dir: PathBuf,
    pub(crate) id: String,
    /// As a user without root: `--rootless`.
    pub(crate) rootless: bool,
    pub(crate) network: Network,
}

/// The sandbox's network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Network {
    /// Loopback only (`--network=none`): a dispatch, whose way out is the
    /// proxies' relays.
    None,
    /// The host's network (`--network=host`): the terminal surface, which
    /// shares the network as its bubblewrap profile does.
    Host,
}

impl Runsc {
    /// The global options every call of this session starts with. Restore
    /// needs the same network option as run.
    pub(crate) fn global_args(&self) -> Vec<String> {
        let mut a = vec![
            format!("--root={}", self.state_dir.display()),
            match self.network {
                Network::None => "--network=none",
                Network::Host => "--network=host",
            }
            .to_owned(),
        ];
        if self.network == Network::Host {
            a.push("--host-uds=open".to_owned());
        }
        if self.rootless {
            // Without root runsc cannot write the host's cgroup tree (its
            // run fails there); per-command limits are held by cgroups of
            // gVisor's own kernel, not the host's.
            a.push("--rootless".to_owned());
            a.push("--ignore-cgroups".to_owned());
        }
        a
    }

    /// A runsc command with the global options and a minimal environment.
    pub(crate) fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.blocking_command());
        c.kill_on_drop(true);
        c
    }

    /// The same, to run without a runtime (a drop, a thread of its own),
    /// with no stdio of ours.
    pub(crate) fn blocking_command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.binary);
        c.args(self.global_args())
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    }

    /// Runs one lifecycle step to its end: stdin `/dev/null`, stdout and
    /// stderr into `log` (a file, so that a detached sandbox never holds a
    /// pipe of ours), bounded by [`STEP_LIMIT`]. A failure says what runsc
    /// wrote into the log during the step.
    pub(crate) async fn step(
        &self,
        step: &'static str,
        args: &[&str],
        log: &Path,
    ) -> Result<(), Error> {
        self.step_with_channel(step, args, log, None).await
    }

    /// [`Runsc::step`] with the sandbox's first process's stdin and stdout
    /// given (`run` and `restore`: the agent's channel).
    pub(crate) async fn step_with_channel(
        &self,
        step: &'static str,
        args: &[&str],
        log: &Path,
        channel: Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
    ) -> Result<(), Error> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
        let start = out.metadata().map(|m| m.len()).unwrap_or(0);
        let err = out
            .try_clone()
            .map_err(|e| Error::io("duplicating the runtime log", e))?;
        let mut c = self.command();
        c.args(args).stderr(Stdio::from(err));
        match channel {
            Some((stdin, stdout)) => c.stdin(Stdio::from(stdin)).stdout(Stdio::from(stdout)),
            None => c.stdin(Stdio::null()).stdout(Stdio::from(out)),
        };
        #[cfg(unix)]
        crate::process_fds::close_inherited_fds(&mut c);
        let mut child = c
            .spawn()
            .map_err(|e| Error::io(format!("starting {}", self.binary.display()), e))?;
        let status = match tokio::time::timeout(STEP_LIMIT, child.wait()).await {
            Ok(s) => s.map_err(|e| Error::io(format!("waiting for runsc {step}"), e))?,
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                return Err(ErrorKind::Runtime {
                    step,
                    said: format!("no answer within {} s", STEP_LIMIT.as_secs()),
                }
                .into());
            }
        };
        if status.success() {
            return Ok(());
        }
        Err(ErrorKind::Runtime {
            step,
            said: said_since(log, start, status),
        }
        .into())
    }
}

/// What runsc wrote into `log` after byte `start`, the tail kept.
fn said_since(log: &Path, start: u64, status: std::process::ExitStatus) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let from = usize::try_from(start).unwrap_or(0).min(text.len());
    let said = String::from_utf8_lossy(&text[from..]);
    let said = said.trim();
    if said.is_empty() {
        return format!("runsc exited with {status}");
    }
    let chars: Vec<char> = said.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(SAID_LIMIT)..]
        .iter()
        .collect();
    tail
}

/// A container id for the `n`th session of this process: letters, digits
/// and dashes only (runsc's rule), never a session id of the host's.
pub(crate) fn container_id(n: u64) -> String {
    format!("agent-sandbox-{}-{n}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_names_its_own_state_and_no_network_and_host_sockets_only_for_the_terminal() {
        let r = Runsc {
            binary: "/usr/bin/runsc".into(),
            state_dir: "/tmp/s/state".into(),
            id: container_id(3),
            rootless: false,
            network: Network::None,
        };
        assert_eq!(r.global_args(), ["--root=/tmp/s/state", "--network=none"]);
        let host = Runsc {
            network: Network::Host,
            ..r.clone()
        };
        assert_eq!(
            host.global_args(),
            ["--root=/tmp/s/state", "--network=host", "--host-uds=open"]
        );
        let r = Runsc {
            rootless: true,
            ..r
        };
        assert!(r.global_args().contains(&"--rootless".to_owned()));
        assert!(r.global_args().contains(&"--ignore-cgroups".to_owned()));
        assert!(
            r.id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{}",
            r.id
        );
    }
}
