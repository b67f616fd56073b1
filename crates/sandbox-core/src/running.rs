//! [`RunningCommand`]: what `exec` returns. The command's events as a
//! stream, the host's controls (write to stdin and close it, resize the
//! terminal, send a signal), and the end of the command: its status alone
//! ([`RunningCommand::wait`]) or with its output, bounded
//! ([`RunningCommand::output`]).

use crate::{CommandOutput, CommandStatus, EventStream, OutputLimit, PtySize, SandboxEvent};
use futures_core::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A future a control returns, boxed so the controls work behind a trait
/// object.
pub type ControlFuture<'a> = Pin<Box<dyn Future<Output = Result<(), ControlError>> + Send + 'a>>;

/// A signal the host sends to a running command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommandSignal {
    /// `SIGINT` (Ctrl-C): on a terminal, to the foreground process group.
    Interrupt,
    /// `SIGTERM`: asks the command to end.
    Terminate,
    /// `SIGKILL`: ends the command and everything it started; the last event
    /// is `killed` (manual).
    Kill,
}

/// Why a control could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The command was started with stdin from `/dev/null`.
    #[error("the command's stdin is not a pipe (start it with Stdin::Piped or on a terminal)")]
    StdinNotPiped,
    /// Stdin was already closed by the host.
    #[error("the command's stdin was already closed")]
    StdinClosed,
    /// The command has ended (or closed its stdin): nothing reads any more.
    #[error("the command has ended; nothing reads its input any more")]
    Finished,
    /// A resize for a command without a terminal.
    #[error("the command has no terminal to resize")]
    NoTerminal,
    /// The signal has no equivalent on this platform (on Windows only
    /// [`CommandSignal::Kill`] can be delivered); nothing was sent.
    #[error("{signal} cannot be sent to a command on this platform; only a kill can end it")]
    SignalUnavailable {
        /// The signal, as a reader names it ("an interrupt", "a terminate").
        signal: &'static str,
    },
    /// The operating system refused the control.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// The controls of one running command, implemented by each backend.
///
/// After the command ended, writes fail with [`ControlError::Finished`];
/// a signal or a resize is a no-op (`Ok`), so a host racing the exit does
/// not need to handle an error it cannot avoid.
pub trait CommandControl: Send + Sync {
    /// Writes all of `data` to the command's stdin (or its terminal).
    fn write_stdin<'a>(&'a self, data: &'a [u8]) -> ControlFuture<'a>;
    /// Closes stdin: the command reads end of file. On a terminal, sends
    /// the end-of-file character instead (the terminal stays open).
    fn close_stdin(&self) -> ControlFuture<'_>;
    /// Resizes the terminal; the command gets `SIGWINCH`.
    fn resize(&self, size: PtySize) -> Result<(), ControlError>;
    /// Sends `signal`. Where the platform has no such signal (Windows has
    /// only [`CommandSignal::Kill`]), it is [`ControlError::SignalUnavailable`].
    fn signal(&self, signal: CommandSignal) -> Result<(), ControlError>;
}

/// A running command: its events (a [`Stream`], ending with `exit` or
/// `killed`) and its controls, which can be cloned out to another task
/// with [`RunningCommand::control`].
pub struct RunningCommand {
    events: EventStream,
    control: Arc<dyn CommandControl>,
}

impl std::fmt::Debug for RunningCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningCommand").finish_non_exhaustive()
    }
}

/// Controls for a command that has none: every write is refused with
/// [`ControlError::StdinNotPiped`], a resize with
/// [`ControlError::NoTerminal`]; signals are ignored.
#[derive(Debug, Default)]
pub struct NoControl;

impl CommandControl for NoControl {
    fn write_stdin<'a>(&'a self, _: &'a [u8]) -> ControlFuture<'a> {
        Box::pin(async { Err(ControlError::StdinNotPiped) })
    }
    fn close_stdin(&self) -> ControlFuture<'_> {
        Box::pin(async { Err(ControlError::StdinNotPiped) })
    }
    fn resize(&self, _: PtySize) -> Result<(), ControlError> {
        Err(ControlError::NoTerminal)
    }
    fn signal(&self, _: CommandSignal) -> Result<(), ControlError> {
        Ok(())
    }
}

impl RunningCommand {
    /// A running command from its events and controls.
    pub fn new(events: EventStream, control: Arc<dyn CommandControl>) -> RunningCommand {
        RunningCommand { events, control }
    }

    /// A command with events only (see [`NoControl`]).
    pub fn from_events(events: EventStream) -> RunningCommand {
        RunningCommand::new(events, Arc::new(NoControl))
    }

    /// The controls, to drive the command from another task.
    pub fn control(&self) -> Arc<dyn CommandControl> {
        self.control.clone()
    }

    /// The next event; `None` after the last.
    pub async fn next_event(&mut self) -> Option<SandboxEvent> {
        std::future::poll_fn(|cx| self.events.as_mut().poll_next(cx)).await
    }

    /// Writes all of `data` to stdin.
    pub async fn write_stdin(&self, data: &[u8]) -> Result<(), ControlError> {
        self.control.write_stdin(data).await
    }

    /// Closes stdin (end of file).
    pub async fn close_stdin(&self) -> Result<(), ControlError> {
        self.control.close_stdin().await
    }

    /// Resizes the terminal.
    pub fn resize(&self, size: PtySize) -> Result<(), ControlError> {
        self.control.resize(size)
    }

    /// Sends a signal.
    pub fn signal(&self, signal: CommandSignal) -> Result<(), ControlError> {
        self.control.signal(signal)
    }

    /// Waits for the command to end and says how: reads the rest of its
    /// events, discarding output and violations (use
    /// [`RunningCommand::output`] to keep them). The controls stay usable
    /// until then; afterwards the stream is at its end.
    pub async fn wait(&mut self) -> CommandStatus {
        let mut status = CommandStatus::Unknown;
        while let Some(event) = self.next_event().await {
            if let Some(s) = CommandStatus::from_event(&event) {
                status = s;
            }
        }
        status
    }

    /// Waits for the command to end and collects its status, stdout,
    /// stderr (or what its terminal showed) and violations, keeping at most
    /// [`OutputLimit::DEFAULT`] (16 MiB of each stream, 4,096 violations);
    /// what is past the cap is read and counted in
    /// [`CommandOutput::dropped`], never held. Output already passed into a
    /// host file ([`crate::Stdout::PassTo`]) is not collected.
    pub async fn output(self) -> CommandOutput {
        self.output_with(OutputLimit::DEFAULT).await
    }

    /// [`RunningCommand::output`] with caps of the host's choosing.
    pub async fn output_with(mut self, limit: OutputLimit) -> CommandOutput {
        let mut out = CommandOutput::empty();
        while let Some(event) = self.next_event().await {
            out.take(event, limit);
        }
        out
    }

    /// The event stream alone (the controls are dropped; a piped stdin
    /// then closes once the backend lets go of it).
    pub fn into_events(self) -> EventStream {
        self.events
    }
}

impl Stream for RunningCommand {
    type Item = SandboxEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SandboxEvent>> {
        self.events.as_mut().poll_next(cx)
    }
}
