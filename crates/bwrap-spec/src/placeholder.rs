//! Placeholders: a denied path that does not exist yet inside a writable
//! root is created empty on the host just before launch so that it can be
//! mounted read-only, and removed at teardown if still empty.

use crate::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// Whether a placeholder is a file or a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceholderKind {
    /// An empty regular file.
    File,
    /// An empty directory.
    Dir,
}

/// A path to create before launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placeholder {
    /// The denied path.
    pub path: PathBuf,
    /// File or directory.
    pub kind: PlaceholderKind,
    /// The writable root it lies in; nothing above it is created.
    pub root: PathBuf,
}

/// The placeholder files and directories this process created on the host.
/// Dropping the value (or [`PlaceholderFiles::remove`]) removes each one that
/// is still empty, deepest first, so that the host keeps no litter.
#[derive(Debug, Default)]
pub struct PlaceholderFiles {
    created: Vec<(PathBuf, PlaceholderKind)>,
}

impl PlaceholderFiles {
    /// Creates the missing placeholders (and missing parents below their
    /// root) on the host file system. Writes to the host, as its name says.
    pub fn create_on_host(placeholders: &[Placeholder]) -> Result<PlaceholderFiles, Error> {
        let mut files = PlaceholderFiles::default();
        for p in placeholders {
            if !p.path.starts_with(&p.root) || p.path == p.root {
                return Err(ErrorKind::BadPath {
                    path: p.path.display().to_string(),
                    reason: "a placeholder must lie strictly inside its writable root",
                }
                .into());
            }
            let mut missing: Vec<&Path> = Vec::new();
            let mut cur = p.path.parent();
            while let Some(dir) = cur {
                if dir == p.root || dir.symlink_metadata().is_ok() {
                    break;
                }
                missing.push(dir);
                cur = dir.parent();
            }
            for dir in missing.into_iter().rev() {
                std::fs::create_dir(dir).map_err(|e| placeholder_err(dir, e))?;
                files
                    .created
                    .push((dir.to_path_buf(), PlaceholderKind::Dir));
            }
            if p.path.symlink_metadata().is_ok() {
                continue;
            }
            match p.kind {
                PlaceholderKind::Dir => {
                    std::fs::create_dir(&p.path).map_err(|e| placeholder_err(&p.path, e))?
                }
                PlaceholderKind::File => {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&p.path)
                        .map_err(|e| placeholder_err(&p.path, e))?;
                }
            }
            files.created.push((p.path.clone(), p.kind));
        }
        Ok(files)
    }

    /// The paths created, in creation order.
    pub fn created(&self) -> impl Iterator<Item = &Path> {
        self.created.iter().map(|(p, _)| p.as_path())
    }

    /// Removes every created placeholder that is still empty, deepest first.
    /// Non-empty ones are left alone (they are no longer ours to delete).
    pub fn remove(&mut self) {
        while let Some((path, kind)) = self.created.pop() {
            match kind {
                PlaceholderKind::Dir => {
                    let _ = std::fs::remove_dir(&path);
                }
                PlaceholderKind::File => {
                    let empty_file = path
                        .symlink_metadata()
                        .map(|m| m.is_file() && m.len() == 0)
                        .unwrap_or(false);
                    if empty_file {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
        }
    }
}

impl Drop for PlaceholderFiles {
    fn drop(&mut self) {
        self.remove();
    }
}

fn placeholder_err(path: &Path, source: std::io::Error) -> Error {
    ErrorKind::Placeholder {
        path: path.display().to_string(),
        source,
    }
    .into()
}
