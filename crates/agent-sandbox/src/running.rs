//! One running command: its process, its output and violations as events,
//! its exit. Every backend spawns through [`prepare`] and hands the child
//! to [`run_child`].

use crate::violations::Violations;
use sandbox_core::{KillReason, SandboxEvent};
use std::ffi::OsString;
use std::process::Stdio;
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

/// Where a command's events go and how the host asks it to stop.
pub(crate) struct CommandIo {
    pub(crate) tx: mpsc::Sender<SandboxEvent>,
    pub(crate) kill_rx: oneshot::Receiver<()>,
}

impl CommandIo {
    /// Reports a command that could not be started after its stream opened.
    pub(crate) async fn failed_to_start(self, what: &str, err: &std::io::Error) {
        let msg = format!("agent-sandbox: {what} failed: {err}\n");
        let _ = self
            .tx
            .send(SandboxEvent::Stderr {
                data: msg.into_bytes(),
            })
            .await;
        let _ = self
            .tx
            .send(SandboxEvent::Killed {
                reason: None,
                signal: None,
            })
            .await;
    }
}

/// Clears the environment to the session's, pipes the output and keeps
/// every other inherited descriptor from the child (descriptors the sandbox
/// needs are passed on after this, with `netns::inherit_fds`).
pub(crate) fn prepare<'c>(
    cmd: &'c mut tokio::process::Command,
    env: &[(OsString, OsString)],
) -> &'c mut tokio::process::Command {
    crate::process_fds::close_inherited_fds(cmd);
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
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

pub(crate) async fn run_child(
    mut child: tokio::process::Child,
    io: CommandIo,
    mut violations: Option<Violations>,
    forwarders: Vec<AbortHandle>,
) {
    let CommandIo { tx, mut kill_rx } = io;
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
            exit_event(st.code(), st.signal(), killed_by_host)
        }
        Err(_) => SandboxEvent::Killed {
            reason: None,
            signal: None,
        },
    };
    let _ = tx.send(ev).await;
}

/// The last event of a command from how it ended: its exit code, unless
/// the host stopped it (`killed`, manual) or a signal ended it (`killed`,
/// signal, with the number).
fn exit_event(code: Option<i32>, signal: Option<i32>, killed_by_host: bool) -> SandboxEvent {
    match (code, signal) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn how_a_command_ended_table() {
        let killed = |reason, signal| SandboxEvent::Killed {
            reason: Some(reason),
            signal,
        };
        let cases = [
            (
                "a plain exit keeps its code",
                Some(3),
                None,
                false,
                SandboxEvent::Exit { exit_code: 3 },
            ),
            (
                "exit 0 is an exit",
                Some(0),
                None,
                false,
                SandboxEvent::Exit { exit_code: 0 },
            ),
            (
                "a signal is a kill with its number",
                None,
                Some(9),
                false,
                killed(KillReason::Signal, Some(9)),
            ),
            (
                "the host's stop is manual, with the signal",
                None,
                Some(9),
                true,
                killed(KillReason::Manual, Some(9)),
            ),
            (
                "the host's stop wins over an exit code that raced it",
                Some(0),
                None,
                true,
                killed(KillReason::Manual, None),
            ),
        ];
        for (intent, code, signal, by_host, want) in cases {
            assert_eq!(exit_event(code, signal, by_host), want, "{intent}");
        }
    }
}
