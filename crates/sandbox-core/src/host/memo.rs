//! A host view that answers each `canonicalize` once.

use super::{HostView, Os};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Most answers kept; past this many, further paths are asked every time.
const MAX_REMEMBERED: usize = 4096;

/// Wraps a [`HostView`] for one computation that asks about many paths below
/// the same few directories (a policy's secret and write-deny sets ask for
/// the home directory's canonical path once per missing entry). Each path
/// `canonicalize` resolved is kept for the life of the wrapper; a missing
/// path, and everything else, is asked of the wrapped view every time.
///
/// A kept answer is one the wrapped view gave a moment earlier, so it is
/// as current as the first asking was: keep the wrapper for one
/// computation, not across launches.
///
/// ```
/// use sandbox_core::{FakeHost, HostView, Os, RememberingHost};
/// use std::path::Path;
///
/// let mut host = FakeHost::new(Os::Linux);
/// host.symlink("/tmp", "/private/tmp").dir("/private/tmp");
/// let view = RememberingHost::new(&host);
/// assert_eq!(view.canonicalize(Path::new("/tmp")).unwrap(), Path::new("/private/tmp"));
/// assert_eq!(view.canonicalize(Path::new("/tmp")).unwrap(), Path::new("/private/tmp"));
/// ```
pub struct RememberingHost<'h, H: HostView + ?Sized> {
    host: &'h H,
    /// Keyed by the path's bytes, not by `Path` (whose hash walks the
    /// components): two spellings of one path only miss a kept answer.
    canonical: RefCell<HashMap<OsString, PathBuf>>,
}

impl<'h, H: HostView + ?Sized> RememberingHost<'h, H> {
    /// Wraps `host`; nothing is remembered yet.
    pub fn new(host: &'h H) -> RememberingHost<'h, H> {
        RememberingHost {
            host,
            canonical: RefCell::new(HashMap::new()),
        }
    }
}

impl<H: HostView + ?Sized> HostView for RememberingHost<'_, H> {
    fn os(&self) -> Os {
        self.host.os()
    }

    fn var_os(&self, name: &str) -> Option<OsString> {
        self.host.var_os(name)
    }

    fn read_small_file(&self, path: &Path) -> Option<String> {
        self.host.read_small_file(path)
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        self.host.is_executable_file(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.host.exists(path)
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        if let Some(known) = self.canonical.borrow().get(path.as_os_str()) {
            return Some(known.clone());
        }
        let answer = self.host.canonicalize(path);
        // Only what exists is kept: the directories asked again and again
        // are the ancestors of missing entries, and each missing entry is
        // asked about once.
        let mut kept = self.canonical.borrow_mut();
        if let Some(real) = &answer
            && kept.len() < MAX_REMEMBERED
        {
            kept.insert(path.as_os_str().to_owned(), real.clone());
        }
        answer
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.host.is_dir(path)
    }

    fn is_file(&self, path: &Path) -> bool {
        self.host.is_file(path)
    }

    fn list_dir(&self, path: &Path) -> Option<Vec<OsString>> {
        self.host.list_dir(path)
    }

    fn try_bubblewrap(&self, bwrap: &Path) -> Result<(), String> {
        self.host.try_bubblewrap(bwrap)
    }

    fn try_landlock(&self) -> Result<(), String> {
        self.host.try_landlock()
    }

    fn try_gvisor(&self, runsc: &Path) -> Result<String, String> {
        self.host.try_gvisor(runsc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FakeHost;
    use std::cell::Cell;

    /// A fake host that counts the `canonicalize` calls it answers.
    struct Counting {
        host: FakeHost,
        asked: Cell<usize>,
    }

    impl HostView for Counting {
        fn os(&self) -> Os {
            self.host.os()
        }
        fn var_os(&self, name: &str) -> Option<OsString> {
            self.host.var_os(name)
        }
        fn read_small_file(&self, path: &Path) -> Option<String> {
            self.host.read_small_file(path)
        }
        fn is_executable_file(&self, path: &Path) -> bool {
            self.host.is_executable_file(path)
        }
        fn exists(&self, path: &Path) -> bool {
            self.host.exists(path)
        }
        fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
            self.asked.set(self.asked.get() + 1);
            self.host.canonicalize(path)
        }
    }

    #[test]
    fn a_resolved_path_is_asked_once_and_a_missing_one_every_time() {
        let mut host = FakeHost::new(Os::Linux);
        host.symlink("/home", "/data/home").dir("/data/home/me");
        let counting = Counting {
            host,
            asked: Cell::new(0),
        };
        let view = RememberingHost::new(&counting);
        for _ in 0..3 {
            assert_eq!(
                view.canonicalize(Path::new("/home/me")),
                Some(PathBuf::from("/data/home/me"))
            );
        }
        assert_eq!(counting.asked.get(), 1);
        for _ in 0..2 {
            assert_eq!(view.canonicalize(Path::new("/home/me/.ssh")), None);
        }
        assert_eq!(counting.asked.get(), 3, "a missing path may appear later");
    }
}
