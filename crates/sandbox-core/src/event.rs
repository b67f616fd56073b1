//! Events a running sandbox reports, and policy violations (R-SPEC-5).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A denied operation: the verb, its target and the raw log line if any.
///
/// `action` uses Seatbelt's verbs where one exists (`file-read*`,
/// `file-write-create`, `network-outbound`); `target` is a path or `host:port`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxViolation {
    /// The verb that was denied.
    pub action: String,
    /// The path or host that was the target.
    pub target: String,
    /// The raw log line, useful for debugging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl SandboxViolation {
    /// The action name for a denied outbound connection.
    pub const NETWORK_OUTBOUND: &'static str = "network-outbound";

    /// A violation without a raw line.
    pub fn new(action: impl Into<String>, target: impl Into<String>) -> SandboxViolation {
        SandboxViolation {
            action: action.into(),
            target: target.into(),
            raw: None,
        }
    }

    /// A denied outbound connection to `host:port`.
    pub fn network_outbound(host: &str, port: u16) -> SandboxViolation {
        let target = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        SandboxViolation::new(SandboxViolation::NETWORK_OUTBOUND, target)
    }

    /// Attaches the raw log line.
    pub fn with_raw(mut self, raw: impl Into<String>) -> SandboxViolation {
        self.raw = Some(raw.into());
        self
    }
}

impl fmt::Display for SandboxViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.action, self.target)
    }
}

/// Why the host killed a sandboxed process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum KillReason {
    /// Out of memory.
    Oom,
    /// A time limit ran out.
    Timeout,
    /// Stopped by a person or the host program.
    Manual,
    /// Ended because its sandbox was destroyed while it ran.
    Destroy,
    /// Killed by a signal the host did not send on purpose.
    Signal,
}

/// One event from a sandbox, tagged by `type` when serialised.
///
/// ```
/// use sandbox_core::SandboxEvent;
/// let json = serde_json::to_string(&SandboxEvent::Exit { exit_code: 3 }).unwrap();
/// assert_eq!(json, r#"{"type":"exit","exitCode":3}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum SandboxEvent {
    /// Bytes the process wrote to standard output.
    Stdout {
        /// The bytes, as written.
        data: Vec<u8>,
    },
    /// Bytes the process wrote to standard error.
    Stderr {
        /// The bytes, as written.
        data: Vec<u8>,
    },
    /// The process exited.
    Exit {
        /// Its exit status.
        exit_code: i32,
    },
    /// The sandbox is starting.
    Starting,
    /// The sandbox is ready for exec calls.
    Ready,
    /// The host killed the process.
    Killed {
        /// Why, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<KillReason>,
        /// The signal number, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    /// A policy was violated.
    Violation {
        /// What was denied.
        violation: SandboxViolation,
    },
}
