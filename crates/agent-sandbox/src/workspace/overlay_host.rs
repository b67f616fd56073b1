//! The host as a launch reads it when the session's view is an overlay:
//! the view's directory on the host is an empty mount point, so what lies
//! below it is read from the overlay's layers instead (the upper first,
//! the checkout last; `.git` from the session's layers only, as the
//! overlay shows it). The read-deny globs then find the checkout's files
//! at their paths in the view, and the sandbox denies them there.
//!
//! A name is taken as present when any layer has it (a layer's whiteout
//! is not looked for): a deny may then cover a name the session removed,
//! never miss one it sees.

use super::overlay::OverlayView;
use crate::settings::SharedHostView;
use sandbox_core::{HostView, Os};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The host, with the overlay's view read from its layers.
pub(crate) struct OverlayHost {
    inner: SharedHostView,
    view: PathBuf,
    /// The upper layer first; the checkout last.
    layers: Vec<PathBuf>,
}

impl OverlayHost {
    pub(crate) fn new(inner: SharedHostView, o: &OverlayView) -> OverlayHost {
        OverlayHost {
            inner,
            view: o.view.clone(),
            layers: o.layers().map(Path::to_path_buf).collect(),
        }
    }

    /// Where `path` is read from: `None` when it is not below the view,
    /// else each layer's path for it (the checkout's left out for `.git`).
    fn candidates(&self, path: &Path) -> Option<Vec<(usize, PathBuf)>> {
        let rel = path.strip_prefix(&self.view).ok()?;
        if rel.as_os_str().is_empty() {
            return None;
        }
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Some(Vec::new());
        }
        let in_git = rel.components().next() == Some(Component::Normal(".git".as_ref()));
        let last = self.layers.len().saturating_sub(1);
        Some(
            self.layers
                .iter()
                .enumerate()
                .filter(|(i, _)| !(in_git && *i == last))
                .map(|(i, l)| (i, l.join(rel)))
                .collect(),
        )
    }

    /// The first layer's path for `path` that exists.
    fn first(&self, path: &Path) -> Option<Option<(usize, PathBuf)>> {
        let c = self.candidates(path)?;
        Some(c.into_iter().find(|(_, p)| self.inner.exists(p)))
    }
}

impl HostView for OverlayHost {
    fn os(&self) -> Os {
        self.inner.os()
    }

    fn var_os(&self, name: &str) -> Option<OsString> {
        self.inner.var_os(name)
    }

    fn read_small_file(&self, path: &Path) -> Option<String> {
        match self.first(path) {
            None => self.inner.read_small_file(path),
            Some(found) => self.inner.read_small_file(&found?.1),
        }
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        match self.first(path) {
            None => self.inner.is_executable_file(path),
            Some(found) => found.is_some_and(|(_, p)| self.inner.is_executable_file(&p)),
        }
    }

    fn exists(&self, path: &Path) -> bool {
        match self.first(path) {
            None => self.inner.exists(path),
            Some(found) => found.is_some(),
        }
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        let Some(found) = self.first(path) else {
            return self.inner.canonicalize(path);
        };
        let (i, p) = found?;
        let real = self.inner.canonicalize(&p)?;
        let layer = self.inner.canonicalize(&self.layers[i])?;
        match real.strip_prefix(&layer) {
            // Still inside the layer: the view's path for it.
            Ok(rest) => Some(self.view.join(rest)),
            Err(_) => Some(real),
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        match self.first(path) {
            None => self.inner.is_dir(path),
            Some(found) => found.is_some_and(|(_, p)| self.inner.is_dir(&p)),
        }
    }

    fn is_file(&self, path: &Path) -> bool {
        match self.first(path) {
            None => self.inner.is_file(path),
            Some(found) => found.is_some_and(|(_, p)| self.inner.is_file(&p)),
        }
    }

    fn list_dir(&self, path: &Path) -> Option<Vec<OsString>> {
        let candidates = if path == self.view {
            self.layers.iter().cloned().enumerate().collect::<Vec<_>>()
        } else {
            match self.candidates(path) {
                None => return self.inner.list_dir(path),
                Some(c) => c,
            }
        };
        let last = self.layers.len().saturating_sub(1);
        let mut names: Vec<OsString> = Vec::new();
        let mut any = false;
        for (i, dir) in candidates {
            if !self.inner.is_dir(&dir) {
                continue;
            }
            // A directory that cannot be listed refuses the whole listing
            // (the caller then refuses rather than miss a match).
            let listed = self.inner.list_dir(&dir)?;
            any = true;
            for name in listed {
                if path == self.view && i == last && name == ".git" {
                    continue;
                }
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            if names.len() > sandbox_core::MAX_LISTED_NAMES {
                return None;
            }
        }
        any.then_some(names)
    }

    fn try_bubblewrap(&self, bwrap: &Path) -> Result<(), String> {
        self.inner.try_bubblewrap(bwrap)
    }

    fn try_gvisor(&self, runsc: &Path) -> Result<String, String> {
        self.inner.try_gvisor(runsc)
    }

    fn try_landlock(&self) -> Result<(), String> {
        self.inner.try_landlock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_view_reads_from_its_layers_and_the_checkouts_git_stays_hidden() {
        let root = std::env::temp_dir().join(format!("overlay-host-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (upper, checkout, view) = (root.join("u"), root.join("c"), root.join("v"));
        for d in [&upper, &checkout, &view] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::create_dir_all(upper.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(checkout.join(".git/secret")).unwrap();
        std::fs::create_dir_all(checkout.join("sub")).unwrap();
        std::fs::write(checkout.join("sub/.env"), "k").unwrap();
        std::fs::write(upper.join("new"), "n").unwrap();
        let o = OverlayView {
            view: view.clone(),
            upper: upper.clone(),
            work: root.join("w"),
            lowers: vec![checkout.clone()],
        };
        let h = OverlayHost::new(
            Arc::new(sandbox_core::AmbientHost::from_ambient_untimed()),
            &o,
        );
        let mut top = h.list_dir(&view).unwrap();
        top.sort();
        assert_eq!(top, [".git", "new", "sub"].map(OsString::from));
        assert!(h.is_file(&view.join("sub/.env")));
        assert!(h.is_dir(&view.join(".git/hooks")));
        assert!(!h.exists(&view.join(".git/secret")));
        assert!(!h.exists(&view.join("sub/../.git/secret")));
        assert_eq!(
            h.canonicalize(&view.join("sub/.env")),
            Some(view.join("sub/.env"))
        );
        // Outside the view the host is read as it is.
        assert!(h.is_dir(&checkout.join(".git/secret")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
