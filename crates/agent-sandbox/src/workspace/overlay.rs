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
//! extended attributes. [`available`] tries it once per process.

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

fn skeleton(layer: &Path, name: &OsStr, lowers: Vec<PathBuf>) -> Result<OverlayView, Error> {
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

fn mark_opaque(dir: &Path) -> Result<(), Error> {
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

/// Whether an overlay workspace can be mounted with its layers in
/// `temp_dir`: tried once per process and temp dir (a child mounts a tiny
/// overlay in a namespace of its own, in a scratch directory of
/// `temp_dir`); `Err` says why not.
pub(crate) fn available(temp_dir: &Path) -> Result<(), String> {
    type Tried = std::sync::Mutex<Vec<(PathBuf, Result<(), String>)>>;
    static TRIED: std::sync::OnceLock<Tried> = std::sync::OnceLock::new();
    let tried = TRIED.get_or_init(Default::default);
    if let Ok(t) = tried.lock()
        && let Some((_, r)) = t.iter().find(|(d, _)| d == temp_dir)
    {
        return r.clone();
    }
    let r = try_mount(temp_dir);
    if let Ok(mut t) = tried.lock()
        && t.len() < 64
    {
        t.push((temp_dir.to_path_buf(), r.clone()));
    }
    r
}

fn try_mount(temp_dir: &Path) -> Result<(), String> {
    let dir = crate::session_dir::SessionDir::create_in(temp_dir).map_err(|e| e.to_string())?;
    let lower = dir.path().join("lower");
    std::fs::create_dir(&lower).map_err(|e| e.to_string())?;
    let o = skeleton(dir.path(), OsStr::new("v"), vec![lower]).map_err(|e| e.to_string())?;
    std::fs::create_dir(o.upper.join("d")).map_err(|e| e.to_string())?;
    mark_opaque(&o.upper.join("d")).map_err(|e| e.to_string())?;
    try_view(&o)
}

/// Mounts `o` once in a namespace of its own that ends at once: whether
/// the sandbox will be able to (a checkout on a file system overlayfs
/// cannot take as a layer fails here); `Err` says why not.
pub(crate) fn try_view(o: &OverlayView) -> Result<(), String> {
    let plan = super::overlay_mount::MountPlan::new(o).map_err(|e| e.to_string())?;
    let mut c = std::process::Command::new("/bin/true");
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    plan.mount_before_exec(&mut c);
    match c.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the trial mount's child ended with {s}")),
        Err(e) => Err(format!("mounting an overlay failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_that_cannot_be_mounted_is_said_so() {
        let root = std::env::temp_dir().join(format!("overlay-try-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let o = skeleton(&root, OsStr::new("v"), vec![root.join("no-such-lower")]).unwrap();
        let why = try_view(&o).unwrap_err();
        assert!(why.contains("mounting an overlay failed"), "{why}");
        std::fs::create_dir(root.join("no-such-lower")).unwrap();
        if available(&root).is_ok() {
            assert_eq!(try_view(&o), Ok(()));
        }
        crate::session_dir::remove_tree(&root).unwrap();
    }
}
