//! `SandboxHandle`: what `launch` returns (R-SPEC-3).

use crate::{Error, SandboxBackend, SandboxState};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A launched (or failed) sandbox: its session, the backend it actually
/// runs on, its state, the error when the start failed, and adapter-private
/// bookkeeping (work dir, PID, profile path, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxHandle {
    /// The session id from the spec.
    pub session_id: String,
    /// The backend actually in use, for reporting and labels. Read through
    /// [`SandboxBackend::from_name`]: missing, `null` or unknown is `none`,
    /// `"docker"` is `native`.
    #[serde(default)]
    pub backend: SandboxBackend,
    /// Lifecycle state.
    pub state: SandboxState,
    /// Set when `state` is `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<serde_json::Value>,
    /// Adapter-private bookkeeping.
    #[serde(default)]
    pub details: BTreeMap<String, serde_json::Value>,
}

impl SandboxHandle {
    /// A handle in state `created`.
    pub fn new(session_id: impl Into<String>, backend: SandboxBackend) -> SandboxHandle {
        SandboxHandle {
            session_id: session_id.into(),
            backend,
            state: SandboxState::Created,
            error: None,
            details: BTreeMap::new(),
        }
    }

    /// Moves to `to` if the lifecycle allows it; the handle is unchanged on
    /// error.
    pub fn transition(&mut self, to: SandboxState) -> Result<(), Error> {
        self.state = self.state.transition(to)?;
        Ok(())
    }

    /// Marks a failed start: moves `created` to `error` and records why.
    pub fn fail(&mut self, error: impl Into<serde_json::Value>) -> Result<(), Error> {
        self.transition(SandboxState::Error)?;
        self.error = Some(error.into());
        Ok(())
    }
}
