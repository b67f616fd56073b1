//! Finding git repositories nested inside writable roots, so that their
//! hooks and config are denied too (R-PATHS-3).
//!
//! The walk is breadth first and goes one depth at a time: the directories
//! of a depth are read (by a few threads when there are many of them), and
//! their subdirectories, in the order read, make the next depth. That
//! visits the very directories, in the very order, that a one-queue
//! breadth-first walk would, so the limits cut it off at the same place;
//! only the reading is shared out. A directory's subdirectories are taken
//! in name order, so where the limits cut does not depend on the order a
//! file system lists them in. On Linux a directory is opened with
//! `O_DIRECTORY` (and `O_NOFOLLOW` below the roots) and read with
//! `getdents64` into a 32 KiB buffer each reader reuses: four system calls
//! a directory of up to several hundred entries, where `std::fs::read_dir`
//! adds an `fstat` and a buffer of its own.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How deep below a root the search goes.
pub const REPO_SEARCH_MAX_DEPTH: usize = 4;
/// How many directories the search visits in total before it stops.
pub const REPO_SEARCH_MAX_DIRS: usize = 5_000;

/// Directories that are never searched (large and never repositories of
/// their own that a host would run git in).
const SKIP: &[&str] = &["node_modules", "target", ".cache", ".venv", "__pycache__"];

/// A depth with fewer directories than this is read on the calling thread:
/// a thread's start costs about as much as reading a few directories.
const SHARE_FROM: usize = 64;
/// At most this many threads read one depth.
const MAX_READERS: usize = 4;

/// Walks each root on the host file system (breadth first, symlinks not
/// followed, at most [`REPO_SEARCH_MAX_DEPTH`] levels and
/// [`REPO_SEARCH_MAX_DIRS`] directories) and returns every directory that
/// holds a `.git` entry, the roots included, in the order the walk met
/// them. Reads the host, as its name says; unreadable directories are
/// skipped. A depth of many directories is read by up to four scoped
/// threads, all joined before it returns.
///
/// [`search_git_repos_on_host`] is the same walk, and also says whether the
/// directory limit cut it short.
pub fn discover_git_repos_on_host(roots: &[String]) -> Vec<String> {
    search_git_repos_on_host(roots).repos
}

/// The walk of [`discover_git_repos_on_host`], with how it ended: a host
/// should say so when [`RepoSearchEnd::DirectoryLimit`] left directories
/// unread, since a repository among them gets no denies of its own.
pub fn search_git_repos_on_host(roots: &[String]) -> RepoSearch {
    walk(roots, REPO_SEARCH_MAX_DEPTH, REPO_SEARCH_MAX_DIRS)
}

/// What [`search_git_repos_on_host`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoSearch {
    /// Every directory holding a `.git` entry, in the order met.
    pub repos: Vec<String>,
    /// Whether every directory within [`REPO_SEARCH_MAX_DEPTH`] was read.
    pub end: RepoSearchEnd,
}

/// How a search for repositories ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepoSearchEnd {
    /// Every directory within the depth limit was read.
    Complete,
    /// [`REPO_SEARCH_MAX_DIRS`] directories were read and the walk stopped
    /// with more in reach: `unread` of them were already known, and any
    /// below those were never seen.
    DirectoryLimit {
        /// Directories found but not read.
        unread: usize,
    },
}

/// What one directory holds, as far as the walk cares.
#[derive(Debug, Default)]
struct Listing {
    has_git: bool,
    subdirs: Vec<PathBuf>,
}

fn walk(roots: &[String], max_depth: usize, max_dirs: usize) -> RepoSearch {
    let mut found: Vec<String> = Vec::new();
    let mut budget = max_dirs;
    let mut level: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
    let mut end = RepoSearchEnd::Complete;
    for depth in 0..=max_depth {
        if level.is_empty() {
            break;
        }
        if level.len() > budget {
            end = RepoSearchEnd::DirectoryLimit {
                unread: level.len() - budget,
            };
            level.truncate(budget);
        }
        budget -= level.len();
        let descend = depth < max_depth;
        let listings = read_level(&level, depth == 0, descend);
        let mut next = Vec::new();
        for (dir, listing) in level.iter().zip(listings) {
            if listing.has_git {
                let s = dir.to_string_lossy().into_owned();
                if !found.contains(&s) {
                    found.push(s);
                }
            }
            next.extend(listing.subdirs);
        }
        if end != RepoSearchEnd::Complete {
            break;
        }
        level = next;
    }
    RepoSearch { repos: found, end }
}

/// Reads every directory of one depth; the listings come back in the
/// order of `dirs`.
fn read_level(dirs: &[PathBuf], roots: bool, descend: bool) -> Vec<Listing> {
    let readers = if dirs.len() < SHARE_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_READERS)
    };
    if readers <= 1 {
        let mut scratch = Scratch::new();
        return dirs
            .iter()
            .map(|d| list(d, roots, descend, &mut scratch))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, Listing)>> = std::thread::scope(|scope| {
        let read = || {
            let mut out = Vec::new();
            let mut scratch = Scratch::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dir) = dirs.get(i) else { break };
                out.push((i, list(dir, roots, descend, &mut scratch)));
            }
            out
        };
        let helpers: Vec<_> = (1..readers).map(|_| scope.spawn(read)).collect();
        let mut parts = vec![read()];
        for h in helpers {
            // A reader that panicked read nothing more; what it had read
            // is lost with it and those directories count as unreadable.
            if let Ok(part) = h.join() {
                parts.push(part);
            }
        }
        parts
    });
    let mut slots: Vec<Option<Listing>> = (0..dirs.len()).map(|_| None).collect();
    for (i, listing) in parts.iter_mut().flat_map(std::mem::take) {
        if let Some(slot) = slots.get_mut(i) {
            *slot = Some(listing);
        }
    }
    slots.into_iter().map(Option::unwrap_or_default).collect()
}

/// Whether the walk goes into a subdirectory of this name.
fn searched(name: &OsStr) -> bool {
    !SKIP.iter().any(|s| name == *s)
}

/// Room for one `getdents64` call: most directories fit in one.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIRENT_BUFFER: usize = 32 * 1024;

/// A reader's buffer for directory entries, reused for every directory it
/// reads.
#[cfg(any(target_os = "linux", target_os = "android"))]
struct Scratch(Vec<u8>);

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Scratch {
    fn new() -> Scratch {
        Scratch(Vec::with_capacity(DIRENT_BUFFER))
    }
}

/// Lists one directory; an unreadable one lists as empty. A root may be
/// reached through a symlink; a directory below one is opened only if it
/// is not one (it could have been swapped for a symlink since its parent
/// was read).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn list(dir: &Path, root: bool, descend: bool, scratch: &mut Scratch) -> Listing {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
    use std::os::unix::ffi::OsStrExt;

    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !root {
        flags |= OFlags::NOFOLLOW;
    }
    let mut listing = Listing::default();
    let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) else {
        return listing;
    };
    let mut entries = RawDir::new(&fd, scratch.0.spare_capacity_mut());
    while let Some(Ok(entry)) = entries.next() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        if name == ".git" {
            listing.has_git = true;
            continue;
        }
        if !descend || !searched(name) {
            continue;
        }
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            // The file system did not say (`DT_UNKNOWN`): ask the inode.
            FileType::Unknown => {
                rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
            }
            _ => false,
        };
        if is_dir {
            listing.subdirs.push(dir.join(name));
        }
    }
    listing.subdirs.sort_unstable();
    listing
}

/// No reusable buffer where `std::fs::read_dir` does the reading.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
struct Scratch;

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl Scratch {
    fn new() -> Scratch {
        Scratch
    }
}

/// Lists one directory; an unreadable one lists as empty.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn list(dir: &Path, _root: bool, descend: bool, _scratch: &mut Scratch) -> Listing {
    let mut listing = Listing::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return listing;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == ".git" {
            listing.has_git = true;
            continue;
        }
        if descend && searched(&name) && entry.file_type().is_ok_and(|ft| ft.is_dir()) {
            listing.subdirs.push(entry.path());
        }
    }
    listing.subdirs.sort_unstable();
    listing
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::fs;

    /// The one-queue breadth-first walk the level walk must agree with.
    fn reference(roots: &[String], max_depth: usize, max_dirs: usize) -> Vec<String> {
        let mut found = Vec::new();
        let mut visited = 0usize;
        let mut queue: VecDeque<(PathBuf, usize)> =
            roots.iter().map(|r| (PathBuf::from(r), 0)).collect();
        while let Some((dir, depth)) = queue.pop_front() {
            visited += 1;
            if visited > max_dirs {
                break;
            }
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let name = entry.file_name();
                let Ok(ft) = entry.file_type() else { continue };
                if name == ".git" {
                    let s = dir.to_string_lossy().into_owned();
                    if !found.contains(&s) {
                        found.push(s);
                    }
                    continue;
                }
                if ft.is_dir() && depth < max_depth && searched(&name) {
                    queue.push_back((entry.path(), depth + 1));
                }
            }
        }
        found
    }

    fn tree() -> tempdir::Dir {
        let t = tempdir::Dir::new();
        let r = t.path();
        for d in [
            "a/.git/hooks",
            "a/b/c/.git",
            "a/b/c/d/.git",
            "a/b/c/d/e/.git",
            "node_modules/x/.git",
            "target/.git",
            "p/q",
            "wide",
        ] {
            fs::create_dir_all(r.join(d)).unwrap();
        }
        // A gitlink file counts as much as a directory.
        fs::write(r.join("p/q/.git"), "gitdir: ../../a/.git\n").unwrap();
        // Many directories in one depth, so that it is read by threads.
        for i in 0..200 {
            fs::create_dir_all(r.join(format!("wide/w{i:03}"))).unwrap();
        }
        fs::create_dir_all(r.join("wide/w150/.git")).unwrap();
        // A symlink to a repository is not followed.
        #[cfg(unix)]
        std::os::unix::fs::symlink(r.join("a"), r.join("link")).unwrap();
        t
    }

    #[test]
    fn finds_nested_repositories_within_the_limits() {
        let t = tree();
        let root = t.path().to_string_lossy().into_owned();
        let mut got = discover_git_repos_on_host(std::slice::from_ref(&root));
        got.sort();
        let mut want: Vec<String> = ["a", "a/b/c", "a/b/c/d", "p/q", "wide/w150"]
            .iter()
            .map(|d| format!("{root}/{d}"))
            .collect();
        want.sort();
        assert_eq!(
            got, want,
            "depth 5 (a/b/c/d/e), skipped names and the symlink stay out"
        );
    }

    #[test]
    fn says_when_the_directory_limit_left_directories_unread() {
        let t = tree();
        let root = t.path().to_string_lossy().into_owned();
        let roots = std::slice::from_ref(&root);
        let all = walk(roots, 4, 10_000);
        assert_eq!(all.end, RepoSearchEnd::Complete);
        // The root and its depth-one directories (a, node_modules, p,
        // target, wide, and the symlink where there is one) are read
        // first; the limit then falls inside depth two.
        let cut = walk(roots, 4, 3);
        assert!(
            matches!(cut.end, RepoSearchEnd::DirectoryLimit { unread } if unread > 0),
            "{cut:?}"
        );
        // Exactly as many directories as there are in reach: complete.
        let within = walk(roots, 0, 1);
        assert_eq!(within.end, RepoSearchEnd::Complete);
        let nothing = walk(roots, 0, 0);
        assert_eq!(nothing.end, RepoSearchEnd::DirectoryLimit { unread: 1 });
        assert!(nothing.repos.is_empty());
    }

    #[test]
    fn agrees_with_a_one_queue_breadth_first_walk_at_every_cut() {
        let t = tree();
        let root = t.path().to_string_lossy().into_owned();
        let roots = vec![root.clone(), format!("{root}/a"), format!("{root}/missing")];
        for max_depth in 0..=5 {
            for max_dirs in [0, 1, 2, 3, 5, 8, 13, 60, 100, 150, 250, 10_000] {
                assert_eq!(
                    walk(&roots, max_depth, max_dirs).repos,
                    reference(&roots, max_depth, max_dirs),
                    "depth {max_depth}, {max_dirs} directories"
                );
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_root_that_is_a_symlink_is_followed_and_a_file_root_is_skipped() {
        let t = tree();
        let link = t.path().join("link").to_string_lossy().into_owned();
        let file = t.path().join("p/q/.git").to_string_lossy().into_owned();
        let got = walk(&[link.clone(), file], 0, 10);
        assert_eq!(got.repos, vec![link]);
        assert_eq!(got.end, RepoSearchEnd::Complete);
    }

    /// A temporary directory removed on drop (the crate has no temp-dir
    /// dependency).
    mod tempdir {
        use std::path::{Path, PathBuf};

        pub(super) struct Dir(PathBuf);

        impl Dir {
            pub(super) fn new() -> Dir {
                static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let p = std::env::temp_dir()
                    .join(format!("bwrap-spec-repos-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }

            pub(super) fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
