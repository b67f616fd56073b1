//! A described host for tests: no file system or environment is touched.

use super::{HostView, Os};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Symlink hops followed before giving up, as the kernel does (`ELOOP`).
const MAX_SYMLINK_HOPS: usize = 40;

/// A host described in memory: its OS, environment, files, executables and
/// symlinks. Directories exist implicitly when something below them exists.
///
/// ```
/// use sandbox_core::{FakeHost, HostView, Os};
/// use std::path::Path;
/// let mut host = FakeHost::new(Os::MacOs);
/// host.symlink("/tmp", "/private/tmp").file("/private/tmp/x");
/// assert_eq!(host.canonicalize(Path::new("/tmp/x")).unwrap(), Path::new("/private/tmp/x"));
/// ```
#[derive(Clone, Debug)]
pub struct FakeHost {
    os: Os,
    cwd: PathBuf,
    env: BTreeMap<String, OsString>,
    files: BTreeSet<PathBuf>,
    dirs: BTreeSet<PathBuf>,
    executables: BTreeSet<PathBuf>,
    symlinks: BTreeMap<PathBuf, PathBuf>,
    contents: BTreeMap<PathBuf, String>,
    /// What a trial bubblewrap launch gives (`Ok` unless told otherwise).
    bubblewrap_try: Result<(), String>,
    /// What a Landlock trial gives (`Err` unless told otherwise, so a
    /// described host offers Landlock only when a test says so).
    landlock_try: Result<(), String>,
    /// What a trial gVisor sandbox gives: the release (`20221219` unless
    /// told otherwise).
    gvisor_try: Result<String, String>,
}

impl FakeHost {
    /// An empty host of the given OS: no environment, only `/`, and the
    /// working directory `/cwd` (relative paths are taken against it, as a
    /// process would).
    pub fn new(os: Os) -> FakeHost {
        FakeHost {
            os,
            cwd: PathBuf::from("/cwd"),
            env: BTreeMap::new(),
            files: BTreeSet::new(),
            dirs: BTreeSet::new(),
            executables: BTreeSet::new(),
            symlinks: BTreeMap::new(),
            contents: BTreeMap::new(),
            bubblewrap_try: Ok(()),
            landlock_try: Err("no Landlock on this described host".to_owned()),
            gvisor_try: Ok("20221219".to_owned()),
        }
    }

    /// Sets the working directory used for relative paths.
    pub fn cwd(&mut self, dir: impl Into<PathBuf>) -> &mut FakeHost {
        self.cwd = dir.into();
        self
    }

    fn abs(&self, path: PathBuf) -> PathBuf {
        if path.is_absolute() {
            path
        } else {
            self.cwd.join(path)
        }
    }

    /// Sets an environment variable.
    pub fn env(&mut self, name: &str, value: impl Into<OsString>) -> &mut FakeHost {
        self.env.insert(name.to_owned(), value.into());
        self
    }

    /// Adds an existing file or directory.
    pub fn file(&mut self, path: impl Into<PathBuf>) -> &mut FakeHost {
        let path = self.abs(path.into());
        self.files.insert(path);
        self
    }

    /// Adds an existing, possibly empty, directory.
    pub fn dir(&mut self, path: impl Into<PathBuf>) -> &mut FakeHost {
        let path = self.abs(path.into());
        self.files.insert(path.clone());
        self.dirs.insert(path);
        self
    }

    /// Makes a trial bubblewrap launch fail with `error` (what bubblewrap
    /// says where it cannot make namespaces).
    pub fn bubblewrap_fails(&mut self, error: impl Into<String>) -> &mut FakeHost {
        self.bubblewrap_try = Err(error.into());
        self
    }

    /// Makes a trial gVisor sandbox fail with `error` (what runsc says).
    pub fn gvisor_fails(&mut self, error: impl Into<String>) -> &mut FakeHost {
        self.gvisor_try = Err(error.into());
        self
    }

    /// Makes a trial gVisor sandbox report release `version`.
    pub fn gvisor_release(&mut self, version: impl Into<String>) -> &mut FakeHost {
        self.gvisor_try = Ok(version.into());
        self
    }

    /// Makes a Landlock trial succeed: the kernel enforces every rule the
    /// Landlock mechanism needs.
    pub fn landlock_works(&mut self) -> &mut FakeHost {
        self.landlock_try = Ok(());
        self
    }

    /// Adds an executable regular file.
    pub fn executable(&mut self, path: impl Into<PathBuf>) -> &mut FakeHost {
        let path = self.abs(path.into());
        self.files.insert(path.clone());
        self.executables.insert(path);
        self
    }

    /// Adds a symlink at `link` pointing to `target` (absolute, or relative
    /// to the link's directory).
    pub fn symlink(
        &mut self,
        link: impl Into<PathBuf>,
        target: impl Into<PathBuf>,
    ) -> &mut FakeHost {
        let link = self.abs(link.into());
        self.symlinks.insert(link, target.into());
        self
    }

    /// Adds a small text file with contents.
    pub fn contents(&mut self, path: impl Into<PathBuf>, text: impl Into<String>) -> &mut FakeHost {
        let path = self.abs(path.into());
        self.files.insert(path.clone());
        self.contents.insert(path, text.into());
        self
    }

    fn exists_plain(&self, path: &Path) -> bool {
        path == Path::new("/")
            || self.files.contains(path)
            || self.symlinks.contains_key(path)
            || self
                .files
                .range(path.to_path_buf()..)
                .next()
                .is_some_and(|p| p.starts_with(path))
            || self.symlinks.keys().any(|p| p.starts_with(path))
    }

    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        let path = &self.abs(path.to_path_buf());
        let mut pending: Vec<PathBuf> = Vec::new();
        push_components(&mut pending, path);
        let mut resolved = PathBuf::from("/");
        let mut hops = 0usize;
        while let Some(part) = pending.pop() {
            if part.as_os_str() == ".." {
                resolved.pop();
                continue;
            }
            let candidate = resolved.join(&part);
            if let Some(target) = self.symlinks.get(&candidate) {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return None;
                }
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                push_components(&mut pending, target);
                continue;
            }
            if !self.exists_plain(&candidate) {
                return None;
            }
            resolved = candidate;
        }
        Some(resolved)
    }
}

/// Pushes the normal and `..` components of `path` onto a stack so that the
/// first component is popped first.
fn push_components(stack: &mut Vec<PathBuf>, path: &Path) {
    let parts: Vec<PathBuf> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(PathBuf::from(s)),
            Component::ParentDir => Some(PathBuf::from("..")),
            _ => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

impl HostView for FakeHost {
    fn os(&self) -> Os {
        self.os
    }

    fn var_os(&self, name: &str) -> Option<OsString> {
        self.env.get(name).cloned()
    }

    fn read_small_file(&self, path: &Path) -> Option<String> {
        let real = self.resolve(path)?;
        self.contents.get(&real).cloned()
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        self.resolve(path)
            .is_some_and(|p| self.executables.contains(&p))
    }

    fn exists(&self, path: &Path) -> bool {
        self.resolve(path).is_some()
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        self.resolve(path)
    }

    fn try_bubblewrap(&self, bwrap: &Path) -> Result<(), String> {
        if self.is_executable_file(bwrap) {
            self.bubblewrap_try.clone()
        } else {
            Err(format!("{} is not an executable file", bwrap.display()))
        }
    }

    fn try_landlock(&self) -> Result<(), String> {
        self.landlock_try.clone()
    }

    fn try_gvisor(&self, runsc: &Path) -> Result<String, String> {
        if self.is_executable_file(runsc) {
            self.gvisor_try.clone()
        } else {
            Err(format!("{} is not an executable file", runsc.display()))
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        let Some(real) = self.resolve(path) else {
            return false;
        };
        real == Path::new("/")
            || self.dirs.contains(&real)
            || self
                .files
                .iter()
                .any(|f| f != &real && f.starts_with(&real))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.exists(path) && !self.is_dir(path)
    }

    fn list_dir(&self, path: &Path) -> Option<Vec<OsString>> {
        if !self.is_dir(path) {
            return None;
        }
        let real = self.resolve(path)?;
        let mut names: BTreeSet<OsString> = BTreeSet::new();
        let known = self
            .files
            .iter()
            .chain(&self.dirs)
            .chain(&self.executables)
            .chain(self.symlinks.keys());
        for p in known {
            if let Ok(rest) = p.strip_prefix(&real)
                && let Some(Component::Normal(first)) = rest.components().next()
            {
                names.insert(first.to_owned());
            }
        }
        Some(names.into_iter().collect())
    }
}
