//! Dispatch modes and what they do to bind mounts (R-SPEC-1).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The dispatch mode of a run. It decides whether bind mounts are writable.
///
/// `chat` keeps bind mounts writable (unless a mount is read-only); `review`,
/// `plan` and `orchestrate` make every bind mount read-only. Runner state dirs
/// stay writable and protected paths stay unwritable in every mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Mode {
    /// Bind mounts writable (the default).
    #[default]
    Chat,
    /// Read-only review of the workspace.
    Review,
    /// Read-only planning.
    Plan,
    /// Read-only orchestration of other runs.
    Orchestrate,
}

/// Whether a mount or path may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Readable, not writable.
    ReadOnly,
    /// Readable and writable.
    ReadWrite,
}

impl Mode {
    /// All modes, in declaration order.
    pub const ALL: [Mode; 4] = [Mode::Chat, Mode::Review, Mode::Plan, Mode::Orchestrate];

    /// Parses a mode name (`chat`, `review`, `plan`, `orchestrate`), ASCII
    /// case-insensitively. Returns `None` for anything else.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }

    /// The serialised name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Chat => "chat",
            Mode::Review => "review",
            Mode::Plan => "plan",
            Mode::Orchestrate => "orchestrate",
        }
    }

    /// The access a bind mount gets in this mode, given whether the mount
    /// itself asks to be read-only.
    pub fn mount_access(self, mount_read_only: bool) -> Access {
        match (self, mount_read_only) {
            (Mode::Chat, false) => Access::ReadWrite,
            _ => Access::ReadOnly,
        }
    }

    /// Whether bind mounts may be writable in this mode at all.
    pub fn allows_workspace_writes(self) -> bool {
        matches!(self, Mode::Chat)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
