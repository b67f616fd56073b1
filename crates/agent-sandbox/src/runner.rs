//! The task that follows one command, as the manager and the host see it.
//!
//! A command's event stream ends (`None` after `exit` or `killed`) only
//! once its task has finished all of its teardown: the processes reaped,
//! the cgroup removed, the proxy listeners closed, everything the task held
//! dropped. The session is free again at that same moment, so an `exec`
//! issued right after the stream ended is never refused as busy, and
//! [`crate::SandboxManager::state`] says `warm` by then.

use crate::seam::CommandTask;
use sandbox_core::SandboxEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A command's task, spawned, and whether it is over.
pub(crate) struct Runner {
    task: JoinHandle<()>,
    over: Arc<AtomicBool>,
}

/// Marks the command over when dropped (at the task's end, or when it
/// unwinds), then lets go of the last sender of its events: the receiver
/// sees the end of the stream only after the mark.
struct Ending {
    over: Arc<AtomicBool>,
    _events: mpsc::Sender<SandboxEvent>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        // Release: whoever sees the stream end, or this flag, sees the
        // teardown done before it.
        self.over.store(true, Ordering::Release);
    }
}

impl Runner {
    /// Spawns `task`, holding `events` (a sender of the command's event
    /// channel) until the task has finished.
    /// The task runs in `span` (the command's).
    pub(crate) fn spawn(
        task: CommandTask,
        events: mpsc::Sender<SandboxEvent>,
        span: tracing::Span,
    ) -> Runner {
        let over = Arc::new(AtomicBool::new(false));
        let ending = Ending {
            over: over.clone(),
            _events: events,
        };
        let task = tokio::spawn(tracing::Instrument::instrument(
            async move {
                task.await;
                drop(ending);
            },
            span,
        ));
        Runner { task, over }
    }

    /// Whether the command or its teardown still runs.
    pub(crate) fn is_running(&self) -> bool {
        !self.over.load(Ordering::Acquire)
    }

    /// Waits for the task to finish.
    pub(crate) async fn join(self) {
        let _ = self.task.await;
    }
}
