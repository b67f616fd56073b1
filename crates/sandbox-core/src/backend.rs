//! The three backends and their stored names (R-BACKEND-1, R-BACKEND-2).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which isolation mechanism a run uses.
///
/// Only [`SandboxBackend::Microvm`] puts a kernel boundary between the agent
/// and the host; [`SandboxBackend::Native`] is namespace isolation
/// (bubblewrap on Linux and WSL2, Seatbelt on macOS); [`SandboxBackend::None`]
/// runs on the host unconfined.
///
/// Stored values are read through [`SandboxBackend::from_name`]: in JSON,
/// `null`, a missing field (where the containing type defaults it) or an
/// unknown name is `none`, and the legacy `"docker"` is `native`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", from = "Option<String>")]
pub enum SandboxBackend {
    /// An isolated virtual machine: the only backend with a kernel boundary.
    Microvm,
    /// The OS-native sandbox: Seatbelt on macOS, bubblewrap on Linux/WSL2.
    Native,
    /// No sandbox. The parser default, the terminal default and the fallback.
    #[default]
    None,
}

impl SandboxBackend {
    /// Maps a stored backend name to a backend, exactly as R-BACKEND-2 says.
    ///
    /// `None` (a null or missing value) and any unknown name give
    /// [`SandboxBackend::None`]; the legacy stored value `"docker"` maps to
    /// [`SandboxBackend::Native`]; `"microvm"`, `"native"` and `"none"` map to
    /// themselves. Matching is exact: stored values are written by us, so a
    /// differently cased value is unknown and gives `None`, the safe reading
    /// for a name that claims nothing.
    ///
    /// ```
    /// use sandbox_core::SandboxBackend;
    /// assert_eq!(SandboxBackend::from_name(Some("docker")), SandboxBackend::Native);
    /// assert_eq!(SandboxBackend::from_name(Some("gvisor")), SandboxBackend::None);
    /// assert_eq!(SandboxBackend::from_name(None), SandboxBackend::None);
    /// ```
    pub fn from_name(name: Option<&str>) -> SandboxBackend {
        match name {
            Some("microvm") => SandboxBackend::Microvm,
            Some("native") | Some("docker") => SandboxBackend::Native,
            Some("none") | Some(_) | None => SandboxBackend::None,
        }
    }

    /// The stored name: `microvm`, `native` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxBackend::Microvm => "microvm",
            SandboxBackend::Native => "native",
            SandboxBackend::None => "none",
        }
    }

    /// Whether the backend confines the run at all.
    pub fn is_isolated(self) -> bool {
        !matches!(self, SandboxBackend::None)
    }

    /// Whether the backend puts a kernel boundary between run and host.
    pub fn has_kernel_boundary(self) -> bool {
        matches!(self, SandboxBackend::Microvm)
    }
}

impl From<Option<String>> for SandboxBackend {
    fn from(name: Option<String>) -> SandboxBackend {
        SandboxBackend::from_name(name.as_deref())
    }
}

impl fmt::Display for SandboxBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
