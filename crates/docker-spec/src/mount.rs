//! Bind mounts and tmpfs mounts, and their `--mount` / `--tmpfs` values.

use crate::{Error, ErrorKind};
use sandbox_core::Access;
use std::path::{Component, Path};

/// Longest path accepted, in bytes.
pub const MAX_PATH_LEN: usize = 4096;

/// A host directory or file bound into the container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindMount {
    source: String,
    target: String,
    access: Access,
}

impl BindMount {
    /// A bind of `source` (host) at `target` (container). Both must be
    /// absolute, free of `..`, NUL, CR and LF, and at most
    /// [`MAX_PATH_LEN`] bytes; the source may not expose an engine socket.
    pub fn new(
        source: impl Into<String>,
        target: impl Into<String>,
        access: Access,
    ) -> Result<BindMount, Error> {
        let (source, target) = (source.into(), target.into());
        check_path(&source)?;
        check_path(&target)?;
        if exposes_engine_socket(&source) {
            return Err(ErrorKind::EngineSocket { path: source }.into());
        }
        if normalized(&target).is_empty() {
            return Err(invalid(
                &target,
                "a bind mount cannot cover the container's /",
            ));
        }
        Ok(BindMount {
            source,
            target,
            access,
        })
    }

    /// The host path.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The container path.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Read-only or read-write.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The fields of the `--mount` value, before CSV quoting:
    /// `type=bind`, `source=...`, `target=...` and, when read-only,
    /// `readonly`, `bind-recursive=readonly` and `bind-propagation=rprivate`.
    pub fn fields(&self) -> Vec<String> {
        let mut out = vec![
            "type=bind".to_owned(),
            format!("source={}", self.source),
            format!("target={}", self.target),
        ];
        if self.access == Access::ReadOnly {
            out.push("readonly".to_owned());
            out.push("bind-recursive=readonly".to_owned());
            // The CLI accepts a recursive read-only bind only with private
            // propagation, so no mount can appear later underneath.
            out.push("bind-propagation=rprivate".to_owned());
        }
        out
    }

    /// The `--mount` value: [`fields`](Self::fields) joined as one CSV
    /// record the way the docker CLI reads it.
    pub fn mount_value(&self) -> String {
        csv_record(&self.fields())
    }
}

/// A tmpfs mount: always `rw,nosuid,nodev,noexec` with a size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tmpfs {
    target: String,
    size_bytes: u64,
}

impl Tmpfs {
    /// A tmpfs at `target` of at most `size_bytes` (1 byte to 64 GiB). The
    /// target may not contain `:` or `,`, which the `--tmpfs` value cannot
    /// escape.
    pub fn new(target: impl Into<String>, size_bytes: u64) -> Result<Tmpfs, Error> {
        let target = target.into();
        check_path(&target)?;
        if target.contains([':', ',']) {
            return Err(invalid(&target, "a tmpfs target cannot contain `:` or `,`"));
        }
        if size_bytes == 0 || size_bytes > 64 << 30 {
            return Err(ErrorKind::InvalidLimit {
                limit: "tmpfs size",
                value: size_bytes,
                reason: "must be 1 byte to 64 GiB",
            }
            .into());
        }
        Ok(Tmpfs { target, size_bytes })
    }

    /// The container path.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The `--tmpfs` value: `PATH:rw,nosuid,nodev,noexec,size=N`.
    pub fn tmpfs_value(&self) -> String {
        format!("{}:{}", self.target, self.options())
    }

    /// The mount options, as the engine receives them.
    pub fn options(&self) -> String {
        format!("rw,nosuid,nodev,noexec,size={}", self.size_bytes)
    }
}

/// Quotes one CSV record the way the docker CLI's `--mount` reader (Go's
/// `encoding/csv`, default settings) reads it back: a field holding `,`,
/// `"`, or a leading space is wrapped in double quotes with every `"`
/// doubled.
pub fn csv_record(fields: &[String]) -> String {
    let mut out = String::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if field.contains([',', '"']) || field.starts_with([' ', '\t']) {
            out.push('"');
            out.push_str(&field.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(field);
        }
    }
    out
}

fn invalid(path: &str, reason: &'static str) -> Error {
    ErrorKind::InvalidPath {
        path: path.to_owned(),
        reason,
    }
    .into()
}

/// Checks a path used in a mount: absolute, no `~`, `..`, NUL, CR or LF,
/// at most [`MAX_PATH_LEN`] bytes.
pub(crate) fn check_path(path: &str) -> Result<(), Error> {
    if path.len() > MAX_PATH_LEN {
        return Err(invalid(path, "longer than 4096 bytes"));
    }
    if path.contains('\0') {
        return Err(invalid(path, "contains a NUL byte"));
    }
    if path.contains(['\n', '\r']) {
        return Err(invalid(path, "contains a newline"));
    }
    if path.starts_with('~') {
        return Err(invalid(
            path,
            "starts with `~`; expand it to an absolute path first",
        ));
    }
    if !path.starts_with('/') {
        return Err(invalid(path, "is relative; give an absolute path"));
    }
    if Path::new(path)
        .components()
        .any(|c| c == Component::ParentDir)
    {
        return Err(invalid(path, "contains a `..` component"));
    }
    Ok(())
}

/// The normal components of an absolute path (`//`, `.` and trailing `/`
/// removed).
fn normalized(path: &str) -> Vec<&str> {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

/// Engine sockets, as component lists, that a bind may not expose.
const SOCKET_DIRS: &[&[&str]] = &[&["run"], &["var", "run"]];
const SOCKET_NAMES: &[&str] = &["docker.sock", "containerd.sock", "podman.sock", "crio.sock"];

/// Whether a bind of `source` is an engine socket or an ancestor of one of
/// the well-known socket locations (`/`, `/run`, `/var`, `/var/run`,
/// `/run/docker`, `/run/containerd`, `/run/podman`, ...).
fn exposes_engine_socket(source: &str) -> bool {
    let parts = normalized(source);
    if parts.last().is_some_and(|name| SOCKET_NAMES.contains(name)) {
        return true;
    }
    SOCKET_DIRS.iter().any(|dir| {
        // An ancestor of the run dir, the run dir itself, or an engine dir in it.
        parts.len() <= dir.len() && dir.starts_with(&parts)
            || parts.len() == dir.len() + 1
                && parts.starts_with(dir)
                && matches!(
                    parts[dir.len()],
                    "docker" | "containerd" | "podman" | "crio"
                )
    })
}
