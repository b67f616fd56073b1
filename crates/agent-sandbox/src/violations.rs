//! A command's violation sources, merged: the proxies' denials, the
//! broker's refusals and the name guard's reports.

use crate::backend::ReportReader;
use sandbox_core::SandboxViolation;

/// The session's violation sources: the proxies and, when hosts are
/// brokered, the broker.
pub(crate) struct Violations {
    pub(crate) proxy: Option<connect_proxy::Subscription<SandboxViolation>>,
    pub(crate) broker: Option<tokio::sync::broadcast::Receiver<SandboxViolation>>,
    /// The name guard's refusals.
    pub(crate) guard: Option<ReportReader>,
}

impl Violations {
    pub(crate) async fn recv(&mut self) -> Option<SandboxViolation> {
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
        }
    }

    /// What is left once the command has exited: every queued proxy and
    /// broker denial, and the guard's reports up to the end of its pipe
    /// (waited for at most two seconds).
    pub(crate) async fn drain(&mut self) -> Vec<SandboxViolation> {
        let mut out = Vec::new();
        if let Some(g) = self.guard.as_mut() {
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
        loop {
            match self.broker.as_mut()?.try_recv() {
                Ok(v) => return Some(v),
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
                Err(_) => return None,
            }
        }
    }
}
