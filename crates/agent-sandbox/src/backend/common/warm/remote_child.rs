//! A command the init started, as the command runner sees a child: its
//! stdio, its kill, its output grace.

use super::*;

/// A command the init runs.
pub(super) struct RemoteChild {
    pub(super) id: u64,
    pub(super) replies: mpsc::UnboundedReceiver<Reply>,
    pub(super) channel: Arc<Channel>,
    /// The session's end, for a command the init does not end (a stopped
    /// or stuck init): the second kill ends the whole sandbox.
    pub(super) end_session: Arc<Mutex<Option<oneshot::Sender<()>>>>,
    pub(super) stdio: ChildStdio,
}

impl CommandProcess for RemoteChild {
    fn host_pid(&self) -> Option<u32> {
        None
    }

    fn take_stdio(&mut self) -> ChildStdio {
        (
            self.stdio.0.take(),
            self.stdio.1.take(),
            self.stdio.2.take(),
        )
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        loop {
            match self.replies.recv().await {
                Some(Reply::Started { .. }) => {}
                Some(Reply::Failed { errno, .. }) => {
                    return Err(std::io::Error::from_raw_os_error(errno));
                }
                Some(Reply::Ended { wait_status, .. }) => {
                    return Ok(std::process::ExitStatus::from_raw(wait_status));
                }
                None => {
                    let why = self.channel.ended().unwrap_or_default();
                    return Err(std::io::Error::other(format!(
                        "the session's sandbox ended: {why}"
                    )));
                }
            }
        }
    }

    fn start_kill(&mut self) -> std::io::Result<()> {
        self.channel.signal(self.id, libc::SIGKILL);
        Ok(())
    }

    fn force_kill(&mut self) -> std::io::Result<()> {
        // The init did not end it within the grace: the session's sandbox
        // ends, every process in it with it.
        let end = self.end_session.lock().ok().and_then(|mut k| k.take());
        if let Some(end) = end {
            let _ = end.send(());
        }
        Ok(())
    }

    fn output_grace(&self) -> Option<Duration> {
        Some(OUTPUT_GRACE)
    }
}

/// A pipe: (our end, the command's end).
pub(super) fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| Error::io("creating a command's pipes", e.into()))
}
