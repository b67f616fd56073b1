//! [`SandboxCommand`]: what to run inside a launched sandbox, with its I/O
//! (stdin, an optional terminal), extra environment, a timeout and limits.

use crate::Stdout;
use std::ffi::OsString;
use std::time::Duration;

/// The least memory limit accepted: below this no process starts, so a
/// smaller limit is a mistake, refused by [`SandboxCommand::validate`].
pub const MIN_MEMORY_LIMIT: u64 = 8 * 1024 * 1024;

/// Most extra environment variables one command may carry.
pub const MAX_COMMAND_ENV: usize = 1024;

/// Where a command's standard input comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stdin {
    /// `/dev/null` (the default): the command reads end of file at once.
    #[default]
    Null,
    /// A pipe the host writes through the running command's handle and
    /// closes to send end of file.
    Piped,
}

/// A terminal size in character cells; both at least 1.
///
/// ```
/// use sandbox_core::{CommandError, PtySize};
/// let size = PtySize::new(24, 80)?;
/// assert_eq!((size.rows(), size.cols()), (24, 80));
/// assert_eq!(PtySize::new(0, 80), Err(CommandError::EmptyTerminalSize { rows: 0, cols: 80 }));
/// // A size read from a host terminal that reports 0 x 0 (a serial line):
/// assert_eq!(PtySize::clamped(0, 0), PtySize::new(1, 1)?);
/// # Ok::<(), CommandError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PtySize {
    rows: u16,
    cols: u16,
}

impl PtySize {
    /// The size terminals start with when nothing says otherwise: 24 x 80.
    pub const DEFAULT: PtySize = PtySize { rows: 24, cols: 80 };

    /// A size of `rows` x `cols`; [`CommandError::EmptyTerminalSize`] when
    /// either is 0 (no terminal has no cells).
    pub fn new(rows: u16, cols: u16) -> Result<PtySize, CommandError> {
        if rows > 0 && cols > 0 {
            Ok(PtySize { rows, cols })
        } else {
            Err(CommandError::EmptyTerminalSize { rows, cols })
        }
    }

    /// A size of `rows` x `cols` with each 0 raised to 1: for sizes read
    /// from elsewhere (a host terminal that reports none), where a
    /// one-cell terminal is better than no command.
    pub fn clamped(rows: u16, cols: u16) -> PtySize {
        PtySize {
            rows: rows.max(1),
            cols: cols.max(1),
        }
    }
    /// Rows.
    pub fn rows(self) -> u16 {
        self.rows
    }
    /// Columns.
    pub fn cols(self) -> u16 {
        self.cols
    }
}

/// Whether a command runs on a terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Terminal {
    /// Pipes for stdout and stderr, stdin per [`Stdin`] (the default).
    #[default]
    None,
    /// A fresh PTY of this size: its slave is the command's stdin, stdout,
    /// stderr and controlling terminal inside the sandbox; the host holds
    /// the master. Output arrives as one stream (`stdout`), as a terminal
    /// shows it.
    Pty(PtySize),
}

/// Resource limits of one command (and everything it starts). Unset means
/// no limit of that kind. A limit the backend cannot enforce is an error at
/// `exec`, never dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of memory; exceeding it ends the command as `killed`
    /// (out of memory).
    pub memory_bytes: Option<u64>,
    /// Most processes and threads at once.
    pub max_processes: Option<u32>,
    /// CPU time per wall-clock second, in thousandths of a CPU (1500 = one
    /// and a half CPUs).
    pub cpu_millis: Option<u32>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.max_processes.is_none() && self.cpu_millis.is_none()
    }
}

/// Why a command cannot be run as given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The program name is empty.
    #[error("the command has no program")]
    NoProgram,
    /// A zero timeout would end the command before it starts.
    #[error("a timeout of 0 ends the command before it starts; give at least 1 ms or none")]
    ZeroTimeout,
    /// The memory limit is below what a process can start with.
    #[error(
        "a memory limit of {bytes} bytes is below the least a process starts with ({min} bytes)"
    )]
    MemoryLimitTooSmall {
        /// The limit given.
        bytes: u64,
        /// [`MIN_MEMORY_LIMIT`].
        min: u64,
    },
    /// A process limit of 0 would not let the command itself start.
    #[error("a process limit of 0 would not let the command itself start; give at least 1")]
    ZeroProcessLimit,
    /// A CPU limit of 0 would never let the command run.
    #[error("a CPU limit of 0 would never let the command run; give at least 1 (0.001 CPU)")]
    ZeroCpuLimit,
    /// Output passed into a host file was asked for on a terminal.
    #[error(
        "a command on a terminal shows its output through the terminal; passing stdout into a \
         host file applies to commands without one"
    )]
    PassThroughOnTerminal,
    /// A terminal size with no rows or no columns.
    #[error(
        "a terminal of {rows} rows and {cols} columns has no cells; give at least 1 of each \
         (PtySize::clamped raises a 0 to 1)"
    )]
    EmptyTerminalSize {
        /// The rows given.
        rows: u16,
        /// The columns given.
        cols: u16,
    },
    /// Too many extra environment variables.
    #[error("the command carries {count} environment variables, over the limit of {limit}")]
    TooManyVariables {
        /// How many were given.
        count: usize,
        /// [`MAX_COMMAND_ENV`].
        limit: usize,
    },
}

/// A command to run inside a launched sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxCommand {
    /// The program, looked up inside the sandbox.
    pub program: OsString,
    /// Its arguments (no shell is involved).
    pub args: Vec<OsString>,
    /// Working directory inside the sandbox; the spec's `guest_workdir` when
    /// absent.
    pub workdir: Option<String>,
    /// Standard input (default `/dev/null`). Ignored on a terminal, whose
    /// input is always the host's to write.
    pub stdin: Stdin,
    /// Where standard output goes: events (the default) or a host file.
    pub stdout: Stdout,
    /// A terminal, or pipes (the default).
    pub terminal: Terminal,
    /// Variables set after the session's environment was sanitised; each is
    /// checked like any value (a loader or injection variable such as
    /// `LD_PRELOAD` or `BASH_ENV` is refused, naming the rule).
    pub env: Vec<(OsString, OsString)>,
    /// Ends the command as `killed` (timeout) once this much time passed.
    pub timeout: Option<Duration>,
    /// Resource limits.
    pub limits: Limits,
}

impl SandboxCommand {
    /// A command with no arguments, stdin `/dev/null`, no terminal, no
    /// timeout and no limits.
    pub fn new(program: impl Into<OsString>) -> SandboxCommand {
        SandboxCommand {
            program: program.into(),
            ..SandboxCommand::default()
        }
    }

    /// Appends one argument.
    pub fn arg(&mut self, arg: impl Into<OsString>) -> &mut SandboxCommand {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments, in order.
    ///
    /// ```
    /// use sandbox_core::SandboxCommand;
    /// let mut cmd = SandboxCommand::new("git");
    /// cmd.args(["status", "--short"]).arg("--branch");
    /// assert_eq!(cmd.args, ["status", "--short", "--branch"]);
    /// ```
    pub fn args<I, S>(&mut self, args: I) -> &mut SandboxCommand
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the working directory.
    pub fn workdir(&mut self, dir: impl Into<String>) -> &mut SandboxCommand {
        self.workdir = Some(dir.into());
        self
    }

    /// Sets where stdin comes from.
    pub fn stdin(&mut self, stdin: Stdin) -> &mut SandboxCommand {
        self.stdin = stdin;
        self
    }

    /// Sets where standard output goes.
    pub fn stdout(&mut self, stdout: Stdout) -> &mut SandboxCommand {
        self.stdout = stdout;
        self
    }

    /// Runs the command on a fresh PTY of `size`.
    pub fn pty(&mut self, size: PtySize) -> &mut SandboxCommand {
        self.terminal = Terminal::Pty(size);
        self
    }

    /// Adds one environment variable (checked at `exec`).
    pub fn env(
        &mut self,
        name: impl Into<OsString>,
        value: impl Into<OsString>,
    ) -> &mut SandboxCommand {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Sets the timeout.
    pub fn timeout(&mut self, timeout: Duration) -> &mut SandboxCommand {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the limits.
    pub fn limits(&mut self, limits: Limits) -> &mut SandboxCommand {
        self.limits = limits;
        self
    }

    /// Checks what needs no sandbox to check: a program, a non-zero
    /// timeout, limits a process can start under, the number of variables.
    /// Backends call it first; the variables themselves are checked by the
    /// environment policy.
    pub fn validate(&self) -> Result<(), CommandError> {
        if self.program.is_empty() {
            return Err(CommandError::NoProgram);
        }
        if self.timeout == Some(Duration::ZERO) {
            return Err(CommandError::ZeroTimeout);
        }
        if let Some(bytes) = self.limits.memory_bytes
            && bytes < MIN_MEMORY_LIMIT
        {
            return Err(CommandError::MemoryLimitTooSmall {
                bytes,
                min: MIN_MEMORY_LIMIT,
            });
        }
        if self.limits.max_processes == Some(0) {
            return Err(CommandError::ZeroProcessLimit);
        }
        if self.limits.cpu_millis == Some(0) {
            return Err(CommandError::ZeroCpuLimit);
        }
        if matches!(self.stdout, Stdout::PassTo(_)) && matches!(self.terminal, Terminal::Pty(_)) {
            return Err(CommandError::PassThroughOnTerminal);
        }
        if self.env.len() > MAX_COMMAND_ENV {
            return Err(CommandError::TooManyVariables {
                count: self.env.len(),
                limit: MAX_COMMAND_ENV,
            });
        }
        Ok(())
    }
}
