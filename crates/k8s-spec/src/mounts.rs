//! Bind mounts as volumes and volume mounts, with the mode's read-only
//! rule, protected paths, and the checks that keep the secret set out.

use crate::profile::{ClusterProfile, VolumeSource};
use crate::{Error, ErrorKind};
use sandbox_core::defaults::SECRET_READ_DENY;
use sandbox_core::{Access, SandboxSpec};
use serde_json::{Value, json};
use std::path::Path;

pub(crate) use crate::pod_paths::{guest_path, within};

/// The secret-set entries anchored at the pod's home.
pub(crate) fn secrets_under(home: &str) -> impl Iterator<Item = (String, &'static str)> + '_ {
    SECRET_READ_DENY.iter().filter_map(move |c| {
        let rel = c.entry.strip_prefix("~/")?;
        let rel = rel.trim_end_matches('*');
        Some((format!("{}/{rel}", home.trim_end_matches('/')), c.entry))
    })
}

/// An init container that fills an `emptyDir`.
pub(crate) struct Filler {
    pub(crate) volume: String,
    pub(crate) guest_path: String,
    pub(crate) image: String,
    pub(crate) command: Vec<String>,
}

/// The agent pod's volumes and the agent container's mounts.
pub(crate) struct MountPlan {
    pub(crate) volumes: Vec<Value>,
    pub(crate) mounts: Vec<Value>,
    pub(crate) fillers: Vec<Filler>,
    /// Some mount stays writable (the filename rules are needed).
    pub(crate) writable: bool,
    /// Some volume is a node directory (the opt-out).
    pub(crate) host_path: bool,
}

struct Entry<'a> {
    host: &'a str,
    guest: &'a str,
    access: Access,
}

pub(crate) fn plan(spec: &SandboxSpec, profile: &ClusterProfile) -> Result<MountPlan, Error> {
    let mut entries: Vec<Entry<'_>> = spec
        .mount_accesses()
        .map(|(m, access)| Entry {
            host: &m.host_path,
            guest: &m.guest_path,
            access,
        })
        .collect();
    for dir in &spec.runner_state_dirs {
        guest_path("runner state directory", dir)?;
        entries.push(Entry {
            host: dir,
            guest: dir,
            access: Access::ReadWrite,
        });
    }
    for p in &spec.protected_paths {
        // A `~` entry cannot be placed without the run's home.
        guest_path("protected path", p)?;
    }
    // Protected paths: the mount itself read-only, or a read-only
    // sub-path mount over the writable one.
    let mut sub: Vec<(usize, String)> = Vec::new();
    for (i, e) in entries.iter_mut().enumerate() {
        if e.access != Access::ReadWrite {
            continue;
        }
        for p in &spec.protected_paths {
            if !within(p, e.host) {
                continue;
            }
            let rel = Path::new(p)
                .strip_prefix(e.host)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            if rel.is_empty() {
                e.access = Access::ReadOnly;
            } else {
                sub.push((i, rel));
            }
        }
    }
    let mut plan = MountPlan {
        volumes: Vec::new(),
        mounts: Vec::new(),
        fillers: Vec::new(),
        writable: false,
        host_path: false,
    };
    let guard_dir = Path::new(&profile.name_guard_path)
        .parent()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (i, e) in entries.iter().enumerate() {
        guest_path("mount path", e.guest)?;
        reserved(e.guest, profile, &guard_dir)?;
        if entries[..i].iter().any(|o| o.guest == e.guest) {
            return Err(ErrorKind::ReservedPath {
                path: e.guest.to_owned(),
                reason: "it is mounted twice",
            }
            .into());
        }
        let source = profile
            .volume(e.host)
            .ok_or_else(|| ErrorKind::NoVolumeSource {
                host_path: e.host.to_owned(),
            })?;
        let name = format!("mount-{i}");
        let ro = e.access == Access::ReadOnly;
        let volume = match source {
            VolumeSource::PersistentVolumeClaim { claim } => json!({
                "name": name,
                "persistentVolumeClaim": {"claimName": claim, "readOnly": ro},
            }),
            VolumeSource::EmptyDirFilledBy { image, command } => {
                plan.fillers.push(Filler {
                    volume: name.clone(),
                    guest_path: e.guest.to_owned(),
                    image: image.clone(),
                    command: command.clone(),
                });
                json!({"name": name, "emptyDir": {}})
            }
            VolumeSource::OptOutHostPath { path } => {
                plan.host_path = true;
                json!({"name": name, "hostPath": {"path": path, "type": "Directory"}})
            }
        };
        plan.volumes.push(volume);
        let mut mount = json!({"name": name, "mountPath": e.guest, "readOnly": ro});
        if ro && matches!(source, VolumeSource::OptOutHostPath { .. }) {
            // A node directory may hold mounts of its own: read-only all
            // the way down, or the pod does not start.
            mount["recursiveReadOnly"] = json!("Enabled");
        }
        plan.mounts.push(mount);
        plan.writable |= !ro;
    }
    for (i, rel) in sub {
        let guest = Path::new(entries[i].guest).join(&rel);
        plan.mounts.push(json!({
            "name": format!("mount-{i}"),
            "mountPath": guest.to_string_lossy(),
            "subPath": rel,
            "readOnly": true,
        }));
    }
    Ok(plan)
}

/// Refuses a mount at a place the pod needs for itself, or at a secret of
/// the set under the pod's home.
fn reserved(guest: &str, profile: &ClusterProfile, guard_dir: &str) -> Result<(), Error> {
    let refuse = |reason| -> Result<(), Error> {
        Err(ErrorKind::ReservedPath {
            path: guest.to_owned(),
            reason,
        }
        .into())
    };
    if within("/tmp", guest) {
        return refuse("/tmp is the pod's own memory-backed directory");
    }
    if within(&profile.home, guest) {
        return refuse("the agent's home is the pod's own empty directory; mount below it");
    }
    if !guard_dir.is_empty() && within(guard_dir, guest) {
        return refuse("it would hide or replace the name guard's binary");
    }
    for (secret, _) in secrets_under(&profile.home) {
        if within(guest, &secret) {
            return refuse("it is part of the secret set under the agent's home");
        }
    }
    Ok(())
}
