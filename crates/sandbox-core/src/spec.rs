//! `SandboxSpec` and `SandboxBindMount`: what a run may see (R-SPEC).

use crate::{Access, Error, ErrorKind, Mode};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Everything a backend needs to confine one run.
///
/// Serialised with the camelCase names of the design note (`sessionId`,
/// `bindMounts`, ...). Unknown fields are ignored and missing fields take the
/// documented defaults: lists empty, `networkEnabled` true, `mode` chat,
/// options absent. `sessionId` and `workspaceId` default to empty strings;
/// [`SandboxSpec::validate`] refuses an empty session id.
///
/// ```
/// use sandbox_core::{Mode, SandboxSpec};
/// let spec: SandboxSpec = serde_json::from_str(r#"{
///     "sessionId": "s1",
///     "workspaceId": "w1",
///     "bindMounts": [{"hostPath": "/work/repo"}],
///     "somethingNew": 42
/// }"#).unwrap();
/// assert!(spec.network_enabled);
/// assert_eq!(spec.mode, Mode::Chat);
/// assert_eq!(spec.bind_mounts[0].guest_path, "/work/repo");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxSpec {
    /// Stable session id, usually the surface id.
    pub session_id: String,
    /// The workspace the run belongs to.
    pub workspace_id: String,
    /// The agent, when known.
    pub agent_id: Option<String>,
    /// The only host paths the sandbox sees (on backends that hide the rest).
    pub bind_mounts: Vec<SandboxBindMount>,
    /// False only when the network rule resolves to deny; the proxies still
    /// start, with an empty allowlist.
    pub network_enabled: bool,
    /// Extra allowed domains, in the allowlist's pattern forms.
    pub egress_allowlist: Vec<String>,
    /// Default working directory inside the sandbox; when absent, commands
    /// start in the first bind mount's guest path (the home directory when
    /// there is no mount).
    pub guest_workdir: Option<String>,
    /// Dispatch mode; decides whether bind mounts are writable.
    pub mode: Mode,
    /// Host paths never writable inside the sandbox, in any mode.
    pub protected_paths: Vec<String>,
    /// Host directories writable in every mode (the runner's own state,
    /// such as a managed `CLAUDE_CONFIG_DIR`). The filename-glob denies
    /// (`.env`, `*.key`, `*.pem`) keep to the workspace mounts and do not
    /// hold inside these; the mandatory write denies and protected paths
    /// do. On Linux one that holds a writable mount is refused at launch.
    pub runner_state_dirs: Vec<String>,
    /// Trees that reopen the exec block for writable dirs (macOS only).
    pub exec_grant_roots: Vec<String>,
}

impl Default for SandboxSpec {
    fn default() -> SandboxSpec {
        SandboxSpec {
            session_id: String::new(),
            workspace_id: String::new(),
            agent_id: None,
            bind_mounts: Vec::new(),
            network_enabled: true,
            egress_allowlist: Vec::new(),
            guest_workdir: None,
            mode: Mode::Chat,
            protected_paths: Vec::new(),
            runner_state_dirs: Vec::new(),
            exec_grant_roots: Vec::new(),
        }
    }
}

impl SandboxSpec {
    /// A spec with the given session and workspace ids and every other field
    /// at its default.
    pub fn new(session_id: impl Into<String>, workspace_id: impl Into<String>) -> SandboxSpec {
        SandboxSpec {
            session_id: session_id.into(),
            workspace_id: workspace_id.into(),
            ..SandboxSpec::default()
        }
    }

    /// Checks what serde cannot: a non-empty session id, absolute mount
    /// paths, and absolute protected / runner-state / exec-grant paths
    /// (`~/...` allowed there; it is expanded against the run's home).
    pub fn validate(&self) -> Result<(), Error> {
        if self.session_id.is_empty() {
            return Err(ErrorKind::EmptySessionId.into());
        }
        for mount in &self.bind_mounts {
            mount.validate()?;
        }
        for list in [
            &self.protected_paths,
            &self.runner_state_dirs,
            &self.exec_grant_roots,
        ] {
            for entry in list {
                check_policy_path(entry)?;
            }
        }
        if let Some(dir) = &self.guest_workdir {
            check_absolute(dir)?;
        }
        Ok(())
    }

    /// The access each bind mount gets under this spec's mode, in order.
    pub fn mount_accesses(&self) -> impl Iterator<Item = (&SandboxBindMount, Access)> + '_ {
        self.bind_mounts
            .iter()
            .map(|m| (m, self.mode.mount_access(m.read_only)))
    }
}

/// One host path made visible inside the sandbox.
///
/// With the native sandbox `guest_path` equals `host_path`; it is kept for
/// symmetry with adapters that map paths. A missing `guestPath` defaults to
/// the host path and a missing `readOnly` to false. An empty or relative
/// `hostPath` is refused when deserialising.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "RawBindMount")]
pub struct SandboxBindMount {
    /// Absolute path on the host.
    pub host_path: String,
    /// Path inside the sandbox.
    pub guest_path: String,
    /// Mount read-only even in chat mode.
    pub read_only: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBindMount {
    host_path: String,
    #[serde(default)]
    guest_path: Option<String>,
    #[serde(default)]
    read_only: bool,
}

impl TryFrom<RawBindMount> for SandboxBindMount {
    type Error = Error;

    fn try_from(raw: RawBindMount) -> Result<SandboxBindMount, Error> {
        let guest_path = raw.guest_path.unwrap_or_else(|| raw.host_path.clone());
        let mount = SandboxBindMount {
            host_path: raw.host_path,
            guest_path,
            read_only: raw.read_only,
        };
        mount.validate()?;
        Ok(mount)
    }
}

impl SandboxBindMount {
    /// A mount of `host_path` at the same path inside, with the given access.
    pub fn new(host_path: impl Into<String>, access: Access) -> Result<SandboxBindMount, Error> {
        let host_path = host_path.into();
        let mount = SandboxBindMount {
            guest_path: host_path.clone(),
            host_path,
            read_only: access == Access::ReadOnly,
        };
        mount.validate()?;
        Ok(mount)
    }

    /// Checks that both paths are non-empty, absolute and free of NUL and
    /// `..` components.
    pub fn validate(&self) -> Result<(), Error> {
        if self.host_path.is_empty() {
            return Err(ErrorKind::EmptyMountPath.into());
        }
        for p in [&self.host_path, &self.guest_path] {
            if !p.starts_with('/') {
                return Err(ErrorKind::RelativeMountPath { path: p.clone() }.into());
            }
            check_absolute(p)?;
        }
        Ok(())
    }
}

/// Longest path we accept anywhere (Linux's `PATH_MAX`).
pub const MAX_PATH_LEN: usize = 4096;

pub(crate) fn check_absolute(path: &str) -> Result<(), Error> {
    let invalid = |reason| {
        Err(ErrorKind::InvalidPath {
            path: path.to_owned(),
            reason,
        }
        .into())
    };
    if path.len() > MAX_PATH_LEN {
        return invalid("longer than 4096 bytes");
    }
    if path.contains('\0') {
        return invalid("contains a NUL byte");
    }
    if !path.starts_with('/') {
        return invalid("not absolute");
    }
    if Path::new(path)
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return invalid("contains a `..` component");
    }
    Ok(())
}

fn check_policy_path(entry: &str) -> Result<(), Error> {
    match entry.strip_prefix('~') {
        Some("") => Ok(()),
        Some(rest) if rest.starts_with('/') => check_absolute(rest),
        Some(_) => Err(ErrorKind::UnsupportedTilde {
            path: entry.to_owned(),
        }
        .into()),
        None => check_absolute(entry),
    }
}
