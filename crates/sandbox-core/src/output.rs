//! How a command ended ([`CommandStatus`]) and what it printed, collected
//! with a cap ([`CommandOutput`], [`OutputLimit`]): the results of
//! [`crate::RunningCommand::wait`] and [`crate::RunningCommand::output`].

use crate::{KillReason, SandboxEvent, SandboxViolation};

/// How a command ended: the last event of its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CommandStatus {
    /// It exited by itself with this code (`exit`).
    Exited {
        /// Its exit code.
        code: i32,
    },
    /// It was ended (`killed`): by the host (a timeout, out of memory, a
    /// manual stop, the session's destroy) or by a signal.
    Killed {
        /// Why, when known.
        reason: Option<KillReason>,
        /// The signal, when known.
        signal: Option<i32>,
    },
    /// The stream ended with neither `exit` nor `killed` (a backend that
    /// broke off); treat it as a failure.
    Unknown,
}

impl CommandStatus {
    /// Whether the command exited with code 0.
    pub fn success(&self) -> bool {
        *self == CommandStatus::Exited { code: 0 }
    }

    /// The exit code, when it exited by itself.
    pub fn code(&self) -> Option<i32> {
        match self {
            CommandStatus::Exited { code } => Some(*code),
            _ => None,
        }
    }

    /// Why the host ended it, when it did.
    pub fn kill_reason(&self) -> Option<KillReason> {
        match self {
            CommandStatus::Killed { reason, .. } => *reason,
            _ => None,
        }
    }

    /// The status an event ends a command with (`exit` or `killed`); `None`
    /// for every other event.
    pub fn from_event(event: &SandboxEvent) -> Option<CommandStatus> {
        match event {
            SandboxEvent::Exit { exit_code } => Some(CommandStatus::Exited { code: *exit_code }),
            SandboxEvent::Killed { reason, signal } => Some(CommandStatus::Killed {
                reason: *reason,
                signal: *signal,
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for CommandStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandStatus::Exited { code } => write!(f, "exited with {code}"),
            CommandStatus::Killed { reason, signal } => {
                f.write_str("killed")?;
                if let Some(r) = reason {
                    write!(f, " ({})", kill_reason_name(*r))?;
                }
                if let Some(s) = signal {
                    write!(f, " by signal {s}")?;
                }
                Ok(())
            }
            CommandStatus::Unknown => f.write_str("ended without an exit status"),
        }
    }
}

fn kill_reason_name(r: KillReason) -> &'static str {
    match r {
        KillReason::Oom => "out of memory",
        KillReason::Timeout => "timeout",
        KillReason::Manual => "stopped by the host",
        KillReason::Destroy => "sandbox destroyed",
        KillReason::Signal => "signal",
    }
}

/// How much [`crate::RunningCommand::output_with`] keeps: the first
/// `stream_bytes` of stdout and of stderr each, and the first `violations`
/// violations. What is past a cap is still read (so the command never
/// blocks on a full pipe) and counted in [`Dropped`], never kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimit {
    stream_bytes: usize,
    violations: usize,
}

impl OutputLimit {
    /// The cap of [`crate::RunningCommand::output`]: 16 MiB of stdout, 16
    /// MiB of stderr and 4,096 violations (at most about 32 MiB held plus
    /// the violations' text).
    pub const DEFAULT: OutputLimit = OutputLimit {
        stream_bytes: 16 << 20,
        violations: 4096,
    };

    /// Keeps the first `stream_bytes` of each stream and the first
    /// `violations` violations.
    pub const fn new(stream_bytes: usize, violations: usize) -> OutputLimit {
        OutputLimit {
            stream_bytes,
            violations,
        }
    }

    /// Bytes kept of each of stdout and stderr.
    pub const fn stream_bytes(&self) -> usize {
        self.stream_bytes
    }

    /// Violations kept.
    pub const fn violations(&self) -> usize {
        self.violations
    }
}

impl Default for OutputLimit {
    fn default() -> OutputLimit {
        OutputLimit::DEFAULT
    }
}

/// What was read past an [`OutputLimit`] and not kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Dropped {
    /// Bytes of stdout past the cap.
    pub stdout_bytes: u64,
    /// Bytes of stderr past the cap.
    pub stderr_bytes: u64,
    /// Violations past the cap.
    pub violations: u64,
}

impl Dropped {
    /// Whether anything was left out.
    pub fn is_empty(&self) -> bool {
        *self == Dropped::default()
    }
}

/// Everything a finished command reported, within an [`OutputLimit`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandOutput {
    /// How it ended.
    pub status: CommandStatus,
    /// Its standard output (or what its terminal showed), up to the cap.
    pub stdout: Vec<u8>,
    /// Its standard error, up to the cap.
    pub stderr: Vec<u8>,
    /// What the sandbox refused it, in order, up to the cap.
    pub violations: Vec<SandboxViolation>,
    /// What was past the caps.
    pub dropped: Dropped,
}

impl CommandOutput {
    /// Nothing yet, and the status unknown.
    pub(crate) fn empty() -> CommandOutput {
        CommandOutput {
            status: CommandStatus::Unknown,
            stdout: Vec::new(),
            stderr: Vec::new(),
            violations: Vec::new(),
            dropped: Dropped::default(),
        }
    }

    /// Takes one event into the output, within `limit`.
    pub(crate) fn take(&mut self, event: SandboxEvent, limit: OutputLimit) {
        if let Some(status) = CommandStatus::from_event(&event) {
            self.status = status;
            return;
        }
        match event {
            SandboxEvent::Stdout { data } => keep(
                &mut self.stdout,
                &data,
                limit.stream_bytes,
                &mut self.dropped.stdout_bytes,
            ),
            SandboxEvent::Stderr { data } => keep(
                &mut self.stderr,
                &data,
                limit.stream_bytes,
                &mut self.dropped.stderr_bytes,
            ),
            SandboxEvent::Violation { violation } => {
                if self.violations.len() < limit.violations {
                    self.violations.push(violation);
                } else {
                    self.dropped.violations += 1;
                }
            }
            _ => {}
        }
    }
}

/// Appends what fits of `data` to `into` (at most `cap` bytes in all) and
/// counts the rest in `dropped`.
fn keep(into: &mut Vec<u8>, data: &[u8], cap: usize, dropped: &mut u64) {
    let room = cap.saturating_sub(into.len());
    let (kept, rest) = data.split_at(room.min(data.len()));
    into.extend_from_slice(kept);
    *dropped = dropped.saturating_add(rest.len() as u64);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunningCommand;
    use futures_core::Stream;
    use proptest::prelude::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Events that are all ready at once.
    struct Ready(std::vec::IntoIter<SandboxEvent>);

    impl Stream for Ready {
        type Item = SandboxEvent;
        fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<SandboxEvent>> {
            Poll::Ready(self.0.next())
        }
    }

    fn running(events: Vec<SandboxEvent>) -> RunningCommand {
        RunningCommand::from_events(Box::pin(Ready(events.into_iter())))
    }

    /// Runs a future whose events are all ready to its end.
    fn now<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        match f
            .as_mut()
            .poll(&mut Context::from_waker(std::task::Waker::noop()))
        {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("the events were all ready"),
        }
    }

    fn out(data: &[u8]) -> SandboxEvent {
        SandboxEvent::Stdout {
            data: data.to_vec(),
        }
    }
    fn err(data: &[u8]) -> SandboxEvent {
        SandboxEvent::Stderr {
            data: data.to_vec(),
        }
    }
    fn denied(target: &str) -> SandboxEvent {
        SandboxEvent::Violation {
            violation: SandboxViolation::network_outbound(target, 443),
        }
    }

    #[test]
    fn wait_says_how_the_command_ended_table() {
        let killed = |reason, signal| SandboxEvent::Killed { reason, signal };
        let cases = [
            (
                "an exit keeps its code",
                vec![
                    SandboxEvent::Starting,
                    out(b"x"),
                    SandboxEvent::Exit { exit_code: 3 },
                ],
                CommandStatus::Exited { code: 3 },
            ),
            (
                "a timeout is a kill with its reason",
                vec![killed(Some(KillReason::Timeout), Some(9))],
                CommandStatus::Killed {
                    reason: Some(KillReason::Timeout),
                    signal: Some(9),
                },
            ),
            (
                "out of memory says so",
                vec![out(b"a"), killed(Some(KillReason::Oom), None)],
                CommandStatus::Killed {
                    reason: Some(KillReason::Oom),
                    signal: None,
                },
            ),
            (
                "a stream that breaks off is unknown, not a success",
                vec![SandboxEvent::Starting, SandboxEvent::Ready, out(b"partial")],
                CommandStatus::Unknown,
            ),
            (
                "no events at all is unknown",
                vec![],
                CommandStatus::Unknown,
            ),
        ];
        for (intent, events, want) in cases {
            assert_eq!(now(running(events.clone()).wait()), want, "{intent}");
            assert_eq!(now(running(events).output()).status, want, "{intent}");
        }
        assert!(CommandStatus::Exited { code: 0 }.success());
        assert!(!CommandStatus::Unknown.success());
        assert_eq!(
            CommandStatus::Killed {
                reason: Some(KillReason::Oom),
                signal: Some(9)
            }
            .to_string(),
            "killed (out of memory) by signal 9"
        );
    }

    #[test]
    fn output_keeps_streams_and_violations_apart_in_order() {
        let got = now(running(vec![
            SandboxEvent::Starting,
            out(b"he"),
            err(b"warn\n"),
            denied("evil.example"),
            out(b"llo\n"),
            SandboxEvent::Exit { exit_code: 0 },
        ])
        .output());
        assert_eq!(got.stdout, b"hello\n");
        assert_eq!(got.stderr, b"warn\n");
        assert_eq!(
            got.violations,
            [SandboxViolation::network_outbound("evil.example", 443)]
        );
        assert!(got.status.success());
        assert!(got.dropped.is_empty());
    }

    #[test]
    fn past_the_cap_output_is_counted_not_kept() {
        let limit = OutputLimit::new(4, 1);
        let got = now(running(vec![
            out(b"abc"),
            out(b"defgh"),
            err(b"0123456789"),
            denied("a.example"),
            denied("b.example"),
            denied("c.example"),
            SandboxEvent::Exit { exit_code: 1 },
        ])
        .output_with(limit));
        assert_eq!(got.stdout, b"abcd");
        assert_eq!(got.stderr, b"0123");
        assert_eq!(got.violations.len(), 1);
        assert_eq!(
            got.dropped,
            Dropped {
                stdout_bytes: 4,
                stderr_bytes: 6,
                violations: 2
            }
        );
        assert_eq!(got.status, CommandStatus::Exited { code: 1 });
    }

    proptest! {
        #[test]
        fn kept_plus_dropped_is_everything_and_kept_is_a_prefix(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32),
            cap in 0usize..512,
        ) {
            let all: Vec<u8> = chunks.concat();
            let mut events: Vec<SandboxEvent> = chunks.iter().map(|c| out(c)).collect();
            events.push(SandboxEvent::Exit { exit_code: 0 });
            let got = now(running(events).output_with(OutputLimit::new(cap, 0)));
            prop_assert!(got.stdout.len() <= cap);
            prop_assert_eq!(got.stdout.len() as u64 + got.dropped.stdout_bytes, all.len() as u64);
            prop_assert_eq!(&all[..got.stdout.len()], &got.stdout[..]);
        }
    }
}
