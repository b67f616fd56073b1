//! A command's process as the runner task (`running.rs`) and the controls
//! (`control.rs`) act on it: a child of the host, or a command a warm
//! session's init started. Below both; imports nothing of the crate.

use std::time::Duration;

/// A command's piped stdin, stdout and stderr, each where it has one.
pub(crate) type ChildStdio = (
    Option<tokio::process::ChildStdin>,
    Option<tokio::process::ChildStdout>,
    Option<tokio::process::ChildStderr>,
);

/// A command's process as the runner task follows it: a child of the host
/// (every backend's), a command a warm session's init started, or one an
/// agent inside a `microvm` sandbox started.
pub(crate) trait CommandProcess: Send {
    /// Its pid on the host, when it is a host child the controls may
    /// signal directly.
    fn host_pid(&self) -> Option<u32>;
    /// Its piped stdin, stdout and stderr (each once).
    fn take_stdio(&mut self) -> ChildStdio;
    /// Waits for it to end.
    fn wait(
        &mut self,
    ) -> impl std::future::Future<Output = std::io::Result<std::process::ExitStatus>> + Send;
    /// Starts killing it (and, for a warm command, its process group).
    fn start_kill(&mut self) -> std::io::Result<()>;
    /// The last resort when it outlived [`CommandProcess::start_kill`] by
    /// the grace: for a warm command, the whole session's sandbox ends.
    fn force_kill(&mut self) -> std::io::Result<()> {
        self.start_kill()
    }
    /// How long its output is read after it exited when something it left
    /// running still holds the pipes open; `None`: until end of file.
    fn output_grace(&self) -> Option<Duration> {
        None
    }
    /// Why it was ended for a limit, when whatever holds its limits (an
    /// agent inside a sandbox) said so; a host cgroup's own report is read
    /// apart.
    fn limit_killed(&self) -> Option<sandbox_core::KillReason> {
        None
    }
}

impl CommandProcess for tokio::process::Child {
    fn host_pid(&self) -> Option<u32> {
        self.id()
    }

    fn take_stdio(&mut self) -> ChildStdio {
        (self.stdin.take(), self.stdout.take(), self.stderr.take())
    }

    fn wait(
        &mut self,
    ) -> impl std::future::Future<Output = std::io::Result<std::process::ExitStatus>> + Send {
        tokio::process::Child::wait(self)
    }

    fn start_kill(&mut self) -> std::io::Result<()> {
        tokio::process::Child::start_kill(self)
    }
}
