//! Workspaces (R-WORKSPACE): a session's own copy-on-write view of a
//! registered checkout, on a branch of its own, whose work returns only by
//! collecting.
//!
//! A service below the backends, like egress: it owns the session's layer
//! (a directory of its own in the manager's temp dir, made and swept like
//! the session directories) and hands the launch what to mount: the view
//! writable, the checkout's object store read-only, the checkout itself
//! protected. Backends only realise it: bubblewrap mounts an overlay view
//! (`overlay`, `overlay_mount`) before it starts, reading the view from its
//! layers while it plans (`overlay_host`); the others get a copy
//! (`copy_layer`).

#![cfg_attr(
    not(unix),
    allow(
        dead_code,
        reason = "workspaces are made on Unix; elsewhere launching in one is refused"
    )
)]

#[cfg(unix)]
mod branch_tip;
mod checkout;
#[cfg(unix)]
mod collect;
#[cfg(unix)]
mod copy_layer;
mod host_git;
#[cfg(unix)]
mod layer_files;
#[cfg(target_os = "linux")]
mod overlay;
#[cfg(target_os = "linux")]
mod overlay_host;
#[cfg(target_os = "linux")]
mod overlay_mount;

#[cfg(target_os = "linux")]
pub(crate) use overlay::OverlayView;
#[cfg(target_os = "linux")]
pub(crate) use overlay_host::OverlayHost;
#[cfg(target_os = "linux")]
pub(crate) use overlay_mount::MountPlan;
#[cfg(target_os = "linux")]
pub(crate) use overlay_mount::available as overlay_available;

use crate::session_dir::SessionDir;
use crate::settings::ExtraReads;
use crate::{Error, ErrorKind};
use checkout::Checkout;
use sandbox_core::{Access, SandboxBindMount, SandboxSpec};
use std::path::{Path, PathBuf};

/// Longest session id a workspace takes (the collected ref's component).
const MAX_SESSION_ID: usize = 128;
/// Most entries counted for a layer's disk use.
const MAX_COUNTED_ENTRIES: usize = 2_000_000;

/// A session's workspace, asked for at launch
/// ([`crate::SandboxManager::launch_in_workspace`]): the registered
/// checkout it starts from and the branch the session works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceRequest {
    checkout: PathBuf,
    branch: String,
}

impl WorkspaceRequest {
    /// A workspace of the checkout at `checkout` (an absolute path to a
    /// main checkout, its `.git` a directory) on a new branch `branch`
    /// (a branch name as git allows it, without `refs/heads/`), starting
    /// at the checkout's `HEAD` with its uncommitted changes.
    pub fn new(checkout: impl Into<PathBuf>, branch: &str) -> Result<WorkspaceRequest, Error> {
        let checkout = checkout.into();
        if !checkout.is_absolute() {
            return Err(ErrorKind::NotACheckout {
                path: checkout.display().to_string(),
                reason: "a checkout is named by an absolute path",
            }
            .into());
        }
        check_branch(branch)?;
        Ok(WorkspaceRequest {
            checkout,
            branch: branch.to_owned(),
        })
    }

    /// The registered checkout.
    pub fn checkout(&self) -> &Path {
        &self.checkout
    }

    /// The session's branch.
    pub fn branch(&self) -> &str {
        &self.branch
    }
}

/// How a workspace's view is made, and what creating it costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkspaceLayering {
    /// An overlay mount in the sandbox's own mount namespace (bubblewrap
    /// on Linux): the checkout is the lower layer, read-only, and every
    /// write of the session lands in the session's layer, so creating one
    /// costs the same whatever the checkout's size, and a fork costs what
    /// its parent changed. The host never sees the view; changes made to
    /// the checkout's working tree while the session runs may show
    /// through in files the session has not written. A directory of the
    /// checkout's is renamed by copying it (the overlay answers `EXDEV`,
    /// as `userxattr` mounts do, and `mv` copies then removes): slower
    /// for a large one, and each name in it is made anew, so the filename
    /// rules judge them (moving a directory holding an `id.pem` is refused
    /// there).
    Overlay,
    /// A copy of the working tree on the host, where no overlay can be
    /// mounted (Landlock, gVisor, QEMU; a kernel or temp dir without what
    /// an overlay needs) (a reflink where the file
    /// system has one, else a full copy: creation costs in proportion to
    /// the working tree) with a small git directory of its own that
    /// borrows the checkout's object store read-only.
    Copy,
}

impl WorkspaceLayering {
    /// The name used in the handle's `workspaceLayering` detail.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceLayering::Overlay => "overlay",
            WorkspaceLayering::Copy => "copy",
        }
    }
}

/// What a live session's workspace is ([`crate::SandboxManager::workspace`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkspaceInfo {
    /// Where the session sees its workspace (its default working
    /// directory).
    pub path: PathBuf,
    /// The registered checkout it started from (canonical).
    pub checkout: PathBuf,
    /// The session's branch.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// How its view is made.
    pub layering: WorkspaceLayering,
    /// Bytes its layer takes on the host's disk (file sizes, links and
    /// directories not counted).
    pub disk_bytes: u64,
}

/// What a collection did ([`crate::SandboxManager::collect`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CollectOutcome {
    /// The session's branch entered the checkout.
    Updated(Collected),
    /// The branch names what the checkout's session ref already names (or
    /// the commit the workspace started from): nothing was written.
    NothingNew {
        /// The ref a collection writes.
        reference: String,
    },
}

/// A collected branch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Collected {
    /// `refs/sessions/<session>/<branch>` in the checkout.
    pub reference: String,
    /// What it named before (`None`: created).
    pub old: Option<String>,
    /// What it names now.
    pub new: String,
    /// Object files (loose objects and packs) read from the layer.
    pub objects_copied: u64,
}

/// A live workspace: its layer (removed when dropped), its view, and what
/// it was made from.
#[derive(Debug)]
pub(crate) struct Workspace {
    layer: SessionDir,
    view: PathBuf,
    checkout: Checkout,
    /// The checkout's path as the request named it.
    named: PathBuf,
    branch: String,
    base: String,
    layering: WorkspaceLayering,
    /// What the overlay is made of (the overlay layering).
    #[cfg(target_os = "linux")]
    overlay: Option<OverlayView>,
    /// Why an overlay asked for became a copy.
    #[cfg(target_os = "linux")]
    fallback: Option<String>,
}

impl Workspace {
    /// Makes a workspace for `session_id` from `request`, its layer in
    /// `temp_dir`. Reads the checkout and writes the layer (blocking).
    pub(crate) fn create(
        request: &WorkspaceRequest,
        session_id: &str,
        temp_dir: &Path,
        layering: WorkspaceLayering,
    ) -> Result<Workspace, Error> {
        check_session_id(session_id)?;
        let checkout = Checkout::open(&request.checkout)?;
        let layer = SessionDir::create_in(temp_dir)?;
        let name = view_name(&checkout.root);
        #[cfg(target_os = "linux")]
        let mut layer = layer;
        #[cfg(target_os = "linux")]
        let mut fallback = None;
        #[cfg(target_os = "linux")]
        if layering == WorkspaceLayering::Overlay {
            let o = overlay::make(&checkout, layer.path(), name.as_os_str(), &request.branch)?;
            match overlay_mount::try_view(&o) {
                Ok(()) => {
                    return Ok(Workspace {
                        layer,
                        view: o.view.clone(),
                        base: checkout.head.clone(),
                        checkout,
                        named: request.checkout.clone(),
                        branch: request.branch.clone(),
                        layering,
                        overlay: Some(o),
                        fallback: None,
                    });
                }
                // This checkout cannot be a layer: a copy, in a fresh
                // layer, and the reason kept for the log.
                Err(why) => {
                    fallback = Some(why);
                    layer = SessionDir::create_in(temp_dir)?;
                }
            }
        }
        // Elsewhere every layering is the copy.
        let _ = layering;
        let view = layer.path().join(name);
        make_view(&checkout, &view, &request.branch)?;
        Ok(Workspace {
            layer,
            view,
            base: checkout.head.clone(),
            checkout,
            named: request.checkout.clone(),
            branch: request.branch.clone(),
            layering: WorkspaceLayering::Copy,
            #[cfg(target_os = "linux")]
            overlay: None,
            #[cfg(target_os = "linux")]
            fallback,
        })
    }

    /// Why the overlay asked for could not be used for this checkout (the
    /// workspace is a copy then), for the log.
    #[cfg(target_os = "linux")]
    pub(crate) fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The overlay the sandbox mounts for the view (the overlay layering).
    #[cfg(target_os = "linux")]
    pub(crate) fn overlay(&self) -> Option<&OverlayView> {
        self.overlay.as_ref()
    }

    /// The session's git directory on the host.
    #[cfg(unix)]
    fn layer_git(&self) -> PathBuf {
        #[cfg(target_os = "linux")]
        if let Some(o) = &self.overlay {
            return o.git_dir();
        }
        self.view.join(".git")
    }

    /// A fork of this workspace for `session_id`: what is in it now, in a
    /// layer of its own; later writes of either are the other's never.
    pub(crate) fn fork(&self, session_id: &str, temp_dir: &Path) -> Result<Workspace, Error> {
        check_session_id(session_id)?;
        let layer = SessionDir::create_in(temp_dir)?;
        let name = view_name(&self.checkout.root);
        #[cfg(target_os = "linux")]
        if let Some(parent) = &self.overlay {
            let o = overlay::fork(parent, layer.path(), name.as_os_str())?;
            return Ok(Workspace {
                layer,
                view: o.view.clone(),
                checkout: self.checkout.clone(),
                named: self.named.clone(),
                branch: self.branch.clone(),
                base: self.base.clone(),
                layering: self.layering,
                overlay: Some(o),
                fallback: None,
            });
        }
        let view = layer.path().join(name);
        fork_view(&self.view, &view)?;
        Ok(Workspace {
            layer,
            view,
            checkout: self.checkout.clone(),
            named: self.named.clone(),
            branch: self.branch.clone(),
            base: self.base.clone(),
            layering: self.layering,
            #[cfg(target_os = "linux")]
            overlay: None,
            #[cfg(target_os = "linux")]
            fallback: None,
        })
    }

    /// The spec's mounts for the workspace: the view writable (in modes
    /// that write), the checkout's object stores read-only, the checkout
    /// protected; the view is the working directory unless one was set.
    pub(crate) fn amend(&self, spec: &mut SandboxSpec) -> Result<(), Error> {
        let view = self.view.display().to_string();
        spec.bind_mounts
            .push(SandboxBindMount::new(&view, Access::ReadWrite)?);
        for dir in &self.checkout.object_dirs {
            spec.bind_mounts.push(SandboxBindMount::new(
                dir.display().to_string(),
                Access::ReadOnly,
            )?);
        }
        spec.protected_paths
            .push(self.checkout.root.display().to_string());
        if spec.guest_workdir.is_none() {
            spec.guest_workdir = Some(view);
        }
        Ok(())
    }

    /// `reads` with each read deny (and each path read again inside one)
    /// that names the checkout or lies in it named again in the view, so
    /// that what the host hides in the checkout stays hidden in the
    /// session's view of it; `None` when none does.
    pub(crate) fn reads_in_view(&self, reads: &ExtraReads) -> Option<ExtraReads> {
        let prefixes: Vec<String> = [&self.checkout.root, &self.named]
            .iter()
            .map(|p| p.display().to_string().trim_end_matches('/').to_owned())
            .filter(|p| !p.is_empty())
            .collect();
        let view = self.view.display().to_string();
        let in_view = |entry: &String| -> Option<String> {
            prefixes.iter().find_map(|p| {
                let rest = entry.strip_prefix(p.as_str())?;
                (rest.is_empty() || rest.starts_with('/')).then(|| format!("{view}{rest}"))
            })
        };
        let deny: Vec<String> = reads.deny.iter().filter_map(in_view).collect();
        let again: Vec<String> = reads.again.iter().filter_map(in_view).collect();
        if deny.is_empty() && again.is_empty() {
            return None;
        }
        let mut out = reads.clone();
        for d in deny {
            if !out.deny.contains(&d) {
                out.deny.push(d);
            }
        }
        for a in again {
            if !out.again.contains(&a) {
                out.again.push(a);
            }
        }
        Some(out)
    }

    /// The handle's details for the workspace.
    pub(crate) fn details(&self) -> Vec<(&'static str, String)> {
        vec![
            ("workspace", self.view.display().to_string()),
            ("workspaceBranch", self.branch.clone()),
            ("workspaceLayering", self.layering.as_str().to_owned()),
        ]
    }

    /// What the workspace is, its disk use counted now.
    pub(crate) fn info(&self) -> WorkspaceInfo {
        WorkspaceInfo {
            path: self.view.clone(),
            checkout: self.checkout.root.clone(),
            branch: self.branch.clone(),
            base: self.base.clone(),
            layering: self.layering,
            disk_bytes: disk_bytes(self.layer.path()),
        }
    }

    /// Collects the session's branch into the checkout (blocking).
    #[cfg(unix)]
    pub(crate) fn collect(&self, session_id: &str) -> Result<CollectOutcome, Error> {
        collect::collect(&collect::CollectJob {
            checkout: &self.checkout,
            layer_git: &self.layer_git(),
            scratch: &self.layer.path().join("collect"),
            session_id,
            branch: &self.branch,
            base: &self.base,
        })
    }

    /// Workspaces are Unix's.
    #[cfg(not(unix))]
    pub(crate) fn collect(&self, _session_id: &str) -> Result<CollectOutcome, Error> {
        Err(ErrorKind::NotOnThisPlatform {
            what: "a workspace",
        }
        .into())
    }
}

#[cfg(unix)]
fn make_view(checkout: &Checkout, view: &Path, branch: &str) -> Result<(), Error> {
    copy_layer::make(checkout, view, branch)
}

#[cfg(not(unix))]
fn make_view(_checkout: &Checkout, _view: &Path, _branch: &str) -> Result<(), Error> {
    Err(ErrorKind::NotOnThisPlatform {
        what: "a workspace",
    }
    .into())
}

#[cfg(unix)]
fn fork_view(from: &Path, to: &Path) -> Result<(), Error> {
    copy_layer::fork(from, to)
}

#[cfg(not(unix))]
fn fork_view(_from: &Path, _to: &Path) -> Result<(), Error> {
    Err(ErrorKind::NotOnThisPlatform {
        what: "a workspace",
    }
    .into())
}

/// The view's directory name: the checkout's own (so prompts and tools
/// show the repository's name).
fn view_name(root: &Path) -> PathBuf {
    root.file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("workspace"))
}

/// A branch name git takes, short form.
fn check_branch(branch: &str) -> Result<(), Error> {
    let full = format!("refs/heads/{branch}");
    if branch.is_empty()
        || branch.starts_with('-')
        || push_rule::check_refname(full.as_bytes()).is_err()
    {
        return Err(ErrorKind::BadWorkspaceName {
            what: "branch",
            name: branch.chars().take(200).collect(),
            reason: "not a branch name git accepts",
        }
        .into());
    }
    Ok(())
}

/// A session id that can name a component of the collected ref.
fn check_session_id(id: &str) -> Result<(), Error> {
    let ok = !id.is_empty()
        && id.len() <= MAX_SESSION_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !id.starts_with('.')
        && !id.ends_with(".lock")
        && !id.contains("..");
    if !ok {
        return Err(ErrorKind::BadWorkspaceName {
            what: "session id",
            name: id.chars().take(200).collect(),
            reason: "a session with a workspace needs an id of 1 to 128 of A-Z a-z 0-9 . _ - \
                     (it names refs/sessions/<session>/ in the checkout)",
        }
        .into());
    }
    Ok(())
}

/// The summed sizes of the regular files below `dir`, links not followed.
fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_COUNTED_ENTRIES {
                return total;
            }
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_and_session_ids_are_checked() {
        assert!(WorkspaceRequest::new("/r", "task").is_ok());
        assert!(WorkspaceRequest::new("/r", "agent/task-1").is_ok());
        for bad in ["", "a..b", "-x", "a b", "x.lock", "a/", "@{x}", "a\nb"] {
            assert!(WorkspaceRequest::new("/r", bad).is_err(), "{bad:?}");
        }
        assert!(WorkspaceRequest::new("rel", "task").is_err());
        assert!(check_session_id("s1.task-2_x").is_ok());
        for bad in ["", "a/b", "..", ".x", "x.lock", "a b", &"x".repeat(129)] {
            assert!(check_session_id(bad).is_err(), "{bad:?}");
        }
    }
}
