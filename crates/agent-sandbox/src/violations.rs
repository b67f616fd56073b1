//! A command's violation sources, merged: the proxies' denials, the
//! broker's refusals and the name guard's reports.

use crate::seam::ReportReader;
use sandbox_core::SandboxViolation;

/// The session's violation sources: the proxies and, when hosts are
/// brokered, the broker.
pub(crate) struct Violations {
    pub(crate) proxy: Option<connect_proxy::Subscription<SandboxViolation>>,
    pub(crate) broker: Option<tokio::sync::broadcast::Receiver<SandboxViolation>>,
    /// The name guard's refusals.
    pub(crate) guard: Option<ReportReader>,
    /// Seatbelt's denials from the system log.
    pub(crate) system_log: Option<tokio::sync::broadcast::Receiver<SandboxViolation>>,
    /// Whether the guard's pipe ends with the command.
    pub(crate) guard_pipe: GuardPipe,
}

/// When the name guard's report pipe reaches its end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum GuardPipe {
    /// With the command (one guard per command): drained to its end.
    #[default]
    EndsWithCommand,
    /// With the session (a warm session's guard, lent to each command):
    /// what is in it at the command's end is its last. The guard writes a
    /// report before the refused call returns, so nothing of a command that
    /// has exited can still be on its way.
    EndsWithSession,
}

/// The next message of a broadcast source; never ready once it is closed
/// (or when there is none). A lagging receiver skips what it missed.
async fn next_broadcast(
    rx: Option<&mut tokio::sync::broadcast::Receiver<SandboxViolation>>,
) -> Option<SandboxViolation> {
    use tokio::sync::broadcast::error::RecvError;
    match rx {
        Some(b) => loop {
            match b.recv().await {
                Ok(v) => break Some(v),
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => std::future::pending::<()>().await,
            }
        },
        None => std::future::pending().await,
    }
}

impl Violations {
    /// No source at all (a session without proxies or guard).
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the warm native sessions (Linux)")
    )]
    pub(crate) fn none() -> Violations {
        Violations {
            proxy: None,
            broker: None,
            guard: None,
            system_log: None,
            guard_pipe: GuardPipe::EndsWithCommand,
        }
    }

    pub(crate) async fn recv(&mut self) -> Option<SandboxViolation> {
        let broker = next_broadcast(self.broker.as_mut());
        let system_log = next_broadcast(self.system_log.as_mut());
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
                Some(g) => match g.next().await {
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
            v = system_log => v,
        }
    }

    /// What is left once the command has exited: every queued proxy and
    /// broker denial, and the guard's reports up to the end of its pipe
    /// (waited for at most two seconds).
    pub(crate) async fn drain(&mut self) -> Vec<SandboxViolation> {
        let mut out = Vec::new();
        if let Some(g) = self.guard.as_mut()
            && self.guard_pipe == GuardPipe::EndsWithSession
        {
            out.extend(g.take_ready());
        } else if let Some(g) = self.guard.as_mut() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
                while let Some(v) = g.next().await {
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

    /// The guard's reports that are in its pipe now, without waiting:
    /// taken before the command's output is passed on, so a refusal comes
    /// before anything the command wrote after the refused call returned.
    pub(crate) fn take_ready_guard(&mut self) -> Vec<SandboxViolation> {
        self.guard
            .as_mut()
            .map(ReportReader::take_ready)
            .unwrap_or_default()
    }

    fn try_recv(&mut self) -> Option<SandboxViolation> {
        if let Some(v) = self.proxy.as_mut().and_then(|p| p.try_recv()) {
            return Some(v);
        }
        try_broadcast(self.broker.as_mut()).or_else(|| try_broadcast(self.system_log.as_mut()))
    }
}

/// What a broadcast source holds now, skipping what a lagging receiver
/// missed.
fn try_broadcast(
    rx: Option<&mut tokio::sync::broadcast::Receiver<SandboxViolation>>,
) -> Option<SandboxViolation> {
    let rx = rx?;
    loop {
        match rx.try_recv() {
            Ok(v) => return Some(v),
            Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
            Err(_) => return None,
        }
    }
}
