//! The overlay layer: a workspace whose view is an overlay mount made in
//! the sandbox's own mount namespace, so creating one costs the same
//! whatever the checkout's size (R-WORKSPACE).
//!
//! The layer's directory holds `upper` (every write of the session),
//! `work` (the overlay's scratch), `base-N` (a fork's frozen copies of its
//! parent's layers) and `view/NAME`, the empty directory the overlay is
//! mounted on. The lowest layer is the checkout itself, read-only. The
//! upper layer starts with the session's own small git directory (the
//! copy layer's: its branch, a copy of the index, the checkout's refs as
//! `packed-refs`, the object store borrowed through `alternates`), marked
//! opaque so that nothing of the checkout's `.git` shows through. The host
//! never sees the view: only the sandbox's mount namespace has it, and the
//! session's work returns through collecting, which reads `upper/.git`.
//!
//! The overlay is mounted with `userxattr` (its marks are `user.overlay.*`
//! extended attributes), which an unprivileged user may mount in a user
//! namespace of its own; it needs the kernel to take layers one by one
//! (`lowerdir+`, Linux 6.8) and a temp dir on a file system with user
//! extended attributes. `overlay_mount::available` tries it once per
//! process and temp dir.

use super::checkout::Checkout;
use super::copy_layer;
use crate::{Error, ErrorKind};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Most layers below a fork (forks of forks).
pub(crate) const MAX_FORK_DEPTH: usize = 32;
/// The extended attribute that makes a directory of the upper layer hide
/// the lower layers' directory of its name.
const OPAQUE: &str = "user.overlay.opaque";

/// What the overlay is made of, and where it is mounted.
#[derive(Clone, Debug)]
pub(crate) struct OverlayView {
    /// The mount point, as the sandbox sees it too.
    pub(crate) view: PathBuf,
    pub(crate) upper: PathBuf,
    pub(crate) work: PathBuf,
    /// The read-only layers, the highest first; the checkout is last.
    pub(crate) lowers: Vec<PathBuf>,
}

impl OverlayView {
    /// The session's git directory on the host (in the upper layer).
    pub(crate) fn git_dir(&self) -> PathBuf {
        self.upper.join(".git")
    }

    /// `placeholders` (files made on the host for denies) with those in
    /// the view made in the upper layer instead, where the overlay shows
    /// them: the view's directory on the host is only a mount point.
    pub(crate) fn placeholders_in_upper(
        &self,
        placeholders: &[bwrap_spec::Placeholder],
    ) -> Vec<bwrap_spec::Placeholder> {
        let into_upper = |p: &Path| -> PathBuf {
            match p.strip_prefix(&self.view) {
                Ok(rel) => self.upper.join(rel),
                Err(_) => p.to_path_buf(),
            }
        };
        placeholders
            .iter()
            .map(|p| bwrap_spec::Placeholder {
                path: into_upper(&p.path),
                kind: p.kind,
                root: into_upper(&p.root),
            })
            .collect()
    }

    /// Every layer as the view shows them, the upper first.
    pub(crate) fn layers(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.upper.as_path()).chain(self.lowers.iter().map(PathBuf::as_path))
    }
}

/// Makes the layer's directories in `layer` for a workspace of `checkout`
/// on `branch`, the view named `name`.
pub(crate) fn make(
    checkout: &Checkout,
    layer: &Path,
    name: &OsStr,
    branch: &str,
) -> Result<OverlayView, Error> {
    let o = skeleton(layer, name, vec![checkout.root.clone()])?;
    copy_layer::write_git_dir(checkout, &o.git_dir(), branch)?;
    mark_opaque(&o.git_dir())?;
    Ok(o)
}

/// A fork of `parent` in `layer`: the parent's git directory copied into
/// the fork's upper layer, the rest of its upper layer copied into a new
/// base layer, its base layers linked (they never change), the checkout
/// last. Costs what the parent changed, not the checkout's size.
pub(crate) fn fork(parent: &OverlayView, layer: &Path, name: &OsStr) -> Result<OverlayView, Error> {
    if parent.lowers.len() > MAX_FORK_DEPTH {
        return Err(ErrorKind::WorkspaceSetup {
            path: layer.display().to_string(),
            reason: format!("a fork may be at most {MAX_FORK_DEPTH} forks deep"),
        }
        .into());
    }
    let Some((checkout, bases)) = parent.lowers.split_last() else {
        return Err(ErrorKind::WorkspaceSetup {
            path: layer.display().to_string(),
            reason: "the parent's overlay has no lower layer".into(),
        }
        .into());
    };
    let mut lowers = Vec::with_capacity(parent.lowers.len() + 1);
    let first = layer.join("base-0");
    create_dir(&first)?;
    let entries: Vec<std::ffi::OsString> = std::fs::read_dir(&parent.upper)
        .map_err(|e| Error::io(format!("reading {}", parent.upper.display()), e))?
        .flatten()
        .filter(|e| e.file_name() != ".git")
        .map(|e| e.path().into_os_string())
        .collect();
    for batch in entries.chunks(copy_layer::CP_BATCH) {
        copy_layer::cp(batch, &first, copy_layer::CopyHow::IntoDir)?;
    }
    lowers.push(first);
    for (i, base) in bases.iter().enumerate() {
        let to = layer.join(format!("base-{}", i + 1));
        copy_layer::cp(
            &[base.as_os_str().to_owned()],
            &to,
            copy_layer::CopyHow::LinkAs,
        )?;
        lowers.push(to);
    }
    lowers.push(checkout.clone());
    let o = skeleton(layer, name, lowers)?;
    copy_layer::cp(
        &[parent.git_dir().into_os_string()],
        &o.git_dir(),
        copy_layer::CopyHow::As,
    )?;
    mark_opaque(&o.git_dir())?;
    Ok(o)
}

pub(super) fn skeleton(
    layer: &Path,
    name: &OsStr,
    lowers: Vec<PathBuf>,
) -> Result<OverlayView, Error> {
    let views = layer.join("view");
    let o = OverlayView {
        view: views.join(name),
        upper: layer.join("upper"),
        work: layer.join("work"),
        lowers,
    };
    for dir in [&views, &o.view, &o.upper, &o.work] {
        create_dir(dir)?;
    }
    Ok(o)
}

fn create_dir(path: &Path) -> Result<(), Error> {
    std::fs::create_dir(path).map_err(|e| Error::io(format!("creating {}", path.display()), e))
}

pub(super) fn mark_opaque(dir: &Path) -> Result<(), Error> {
    rustix::fs::setxattr(dir, OPAQUE, b"y", rustix::fs::XattrFlags::empty()).map_err(|e| {
        ErrorKind::WorkspaceSetup {
            path: dir.display().to_string(),
            reason: format!(
                "marking the layer's git directory opaque failed ({e}): the temp dir's file \
                 system needs user extended attributes"
            ),
        }
        .into()
    })
}
