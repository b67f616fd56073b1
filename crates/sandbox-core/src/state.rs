//! The lifecycle of a sandbox handle (R-SPEC-4).

use crate::{Error, ErrorKind};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Lifecycle state of a sandbox.
///
/// ```text
/// created ──► warm ◄──► active
///    │         ▲  │        │
///    │         │  ▼        │
///    │      suspended      │
///    ▼         │           ▼
///  error ───► destroyed ◄──┘   (every live state may be destroyed)
/// ```
///
/// `error` is reachable only from `created` (the start failed); nothing
/// leaves `destroyed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxState {
    /// Spec made, not started.
    Created,
    /// Running, ready for commands.
    Warm,
    /// Running a command.
    Active,
    /// Paused or checkpointed to disk.
    Suspended,
    /// Torn down; the handle is no longer valid.
    Destroyed,
    /// The start failed; see the handle's `error`.
    Error,
}

impl SandboxState {
    /// All states.
    pub const ALL: [SandboxState; 6] = [
        SandboxState::Created,
        SandboxState::Warm,
        SandboxState::Active,
        SandboxState::Suspended,
        SandboxState::Destroyed,
        SandboxState::Error,
    ];

    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxState::Created => "created",
            SandboxState::Warm => "warm",
            SandboxState::Active => "active",
            SandboxState::Suspended => "suspended",
            SandboxState::Destroyed => "destroyed",
            SandboxState::Error => "error",
        }
    }

    /// Parses a serialised state name (exact, lower case).
    pub fn from_name(name: &str) -> Option<SandboxState> {
        SandboxState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether the lifecycle allows moving from `self` to `to`.
    pub fn can_transition_to(self, to: SandboxState) -> bool {
        use SandboxState::*;
        matches!(
            (self, to),
            (Created, Warm | Error | Destroyed)
                | (Warm, Active | Suspended | Destroyed)
                | (Active, Warm | Destroyed)
                | (Suspended, Warm | Destroyed)
                | (Error, Destroyed)
        )
    }

    /// Returns `to` when the move is allowed, else an
    /// [`ErrorKind::IllegalTransition`].
    pub fn transition(self, to: SandboxState) -> Result<SandboxState, Error> {
        if self.can_transition_to(to) {
            Ok(to)
        } else {
            Err(ErrorKind::IllegalTransition { from: self, to }.into())
        }
    }

    /// Whether the sandbox is running (warm or active).
    pub fn is_running(self) -> bool {
        matches!(self, SandboxState::Warm | SandboxState::Active)
    }
}

impl fmt::Display for SandboxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
