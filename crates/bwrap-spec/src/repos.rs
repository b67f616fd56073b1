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
//!
//! A search can be recorded ([`record_git_repos_on_host`]) and made again
//! later over the same roots ([`search_git_repos_on_host_since`]): the
//! second search asks each directory it comes to for its device, inode and
//! change time (one `stat`) and reuses the first search's reading where
//! they are the same, reading only the directories that changed, and
//! records in turn for the search after it. See the `stamp` module for
//! when a directory's stamp is trusted.

mod list;
mod stamp;
mod walk;

use stamp::{Recorder, Stamp};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;
use walk::{How, walk};

/// How deep below a root the search goes.
pub const REPO_SEARCH_MAX_DEPTH: usize = 4;
/// How many directories the search visits in total before it stops.
pub const REPO_SEARCH_MAX_DIRS: usize = 5_000;

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
    walk(
        roots,
        REPO_SEARCH_MAX_DEPTH,
        REPO_SEARCH_MAX_DIRS,
        How::Plain,
    )
    .search
}

/// The search of [`search_git_repos_on_host`], and a record of what it read
/// for [`search_git_repos_on_host_since`]. Taking the record costs one
/// `fstat` a directory (and one `fstatfs` a file system) more.
pub fn record_git_repos_on_host(roots: &[String]) -> (RepoSearch, RepoSearchRecord) {
    search_git_repos_on_host_since(roots, &RepoSearchRecord::default())
}

/// The search of [`search_git_repos_on_host`], with the same result,
/// reading again only the directories that may have changed since the
/// search that made `earlier` (usually over the same `roots`): where a
/// directory has the same device, inode and change time as when it was
/// read, on a local file system and last changed well before that search
/// (see [`RepoSearchRecord`]), the earlier reading is used. Returns a
/// record for the next search, which keeps the unchanged directories'
/// stamps and takes new ones for those read now. Reads the host.
pub fn search_git_repos_on_host_since(
    roots: &[String],
    earlier: &RepoSearchRecord,
) -> (RepoSearch, RepoSearchRecord) {
    let recorder = Recorder::new(SystemTime::now(), stamp::TRUST_MARGIN);
    let out = walk(
        roots,
        REPO_SEARCH_MAX_DEPTH,
        REPO_SEARCH_MAX_DIRS,
        How::Record(&recorder, earlier),
    );
    (out.search, out.record)
}

/// What [`record_git_repos_on_host`] read, for a later search to skip the
/// directories that did not change since.
///
/// A directory is kept only when a later change to it is sure to show in
/// its change time: it is on ext2/3/4, XFS, Btrfs, tmpfs or F2FS (network
/// and user-space file systems may answer from cached attributes), and it
/// last changed at least two seconds before the search started (a change
/// within the same clock tick as the one before it may leave the time as
/// it was). The change time moves when the directory's times are set, so
/// setting them back does not hide a change. Every other directory is read
/// again. Elsewhere than Linux the record is empty.
#[derive(Clone, Debug, Default)]
pub struct RepoSearchRecord {
    seen: HashMap<PathBuf, Seen>,
}

impl RepoSearchRecord {
    /// How many directories a later search may find unchanged and skip.
    pub fn kept_directories(&self) -> usize {
        self.seen.len()
    }
}

/// One directory as a recording search read it.
#[derive(Clone, Debug)]
struct Seen {
    stamp: Stamp,
    descend: bool,
    listing: Arc<Listing>,
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

#[cfg(test)]
mod tests {
    use super::list::searched;
    #[cfg(target_os = "linux")]
    use super::walk::WalkOut;
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
        let all = walk(roots, 4, 10_000, How::Plain).search;
        assert_eq!(all.end, RepoSearchEnd::Complete);
        // The root and its depth-one directories (a, node_modules, p,
        // target, wide, and the symlink where there is one) are read
        // first; the limit then falls inside depth two.
        let cut = walk(roots, 4, 3, How::Plain).search;
        assert!(
            matches!(cut.end, RepoSearchEnd::DirectoryLimit { unread } if unread > 0),
            "{cut:?}"
        );
        // Exactly as many directories as there are in reach: complete.
        let within = walk(roots, 0, 1, How::Plain).search;
        assert_eq!(within.end, RepoSearchEnd::Complete);
        let nothing = walk(roots, 0, 0, How::Plain).search;
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
                    walk(&roots, max_depth, max_dirs, How::Plain).search.repos,
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
        let got = walk(&[link.clone(), file], 0, 10, How::Plain).search;
        assert_eq!(got.repos, vec![link]);
        assert_eq!(got.end, RepoSearchEnd::Complete);
    }

    /// Searches `roots` again since `earlier`, trusting directories that
    /// last changed `margin` before now.
    #[cfg(target_os = "linux")]
    fn since_with_margin(
        roots: &[String],
        earlier: &RepoSearchRecord,
        margin: std::time::Duration,
    ) -> WalkOut {
        let recorder = Recorder::new(SystemTime::now(), margin);
        walk(roots, 4, 10_000, How::Record(&recorder, earlier))
    }

    #[cfg(target_os = "linux")]
    const MARGIN: std::time::Duration = std::time::Duration::from_millis(50);

    /// Records `roots` trusting directories that last changed 50 ms
    /// before now.
    #[cfg(target_os = "linux")]
    fn record_with_margin(roots: &[String]) -> WalkOut {
        since_with_margin(roots, &RepoSearchRecord::default(), MARGIN)
    }

    /// A tree whose directories all last changed well before a record
    /// taken with a 50 ms margin.
    #[cfg(target_os = "linux")]
    fn settled_tree() -> tempdir::Dir {
        let t = tree();
        std::thread::sleep(std::time::Duration::from_millis(150));
        t
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_search_since_a_record_reads_only_the_directories_that_changed() {
        let t = settled_tree();
        let r = t.path();
        let root = r.to_string_lossy().into_owned();
        let roots = std::slice::from_ref(&root);
        let first = record_with_margin(roots);
        let kept = first.record.kept_directories();
        assert!(
            kept > 200,
            "the temporary directory's file system keeps trusted change times: {kept} of {} kept",
            first.read
        );
        let untouched = since_with_margin(roots, &first.record, MARGIN);
        assert_eq!(untouched.search, first.search);
        assert_eq!(
            untouched.read,
            first.read - kept,
            "nothing changed: only what was not kept is read again"
        );

        // A new repository in a directory whose times are then set back
        // to what they were.
        let w010 = r.join("wide/w010");
        let before = fs::metadata(&w010).unwrap().modified().unwrap();
        fs::create_dir(w010.join(".git")).unwrap();
        fs::File::open(&w010).unwrap().set_modified(before).unwrap();
        assert_eq!(fs::metadata(&w010).unwrap().modified().unwrap(), before);
        // A gitlink file, and a new directory holding a repository.
        fs::write(r.join("a/b/.git"), "gitdir: elsewhere\n").unwrap();
        fs::create_dir_all(r.join("a/b/n/.git")).unwrap();
        // A repository moved under a new name.
        fs::rename(r.join("p"), r.join("p2")).unwrap();
        // A repository removed.
        fs::remove_dir(r.join("wide/w150/.git")).unwrap();

        let again = since_with_margin(roots, &first.record, MARGIN);
        let fresh = walk(roots, 4, 10_000, How::Plain);
        assert_eq!(
            again.search, fresh.search,
            "the same result as a full search"
        );
        for repo in ["wide/w010", "a/b", "a/b/n", "p2/q"] {
            assert!(
                again.search.repos.contains(&format!("{root}/{repo}")),
                "{repo} in {:?}",
                again.search.repos
            );
        }
        assert!(!again.search.repos.contains(&format!("{root}/wide/w150")));
        // The root, wide/w010, wide/w150, a/b, a/b/n, p2 and p2/q changed or
        // are new; the rest is reused.
        assert!(
            again.read <= first.read - kept + 7,
            "{} read again of {}",
            again.read,
            first.read
        );
        assert!(again.read >= 7, "{} read again", again.read);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_search_since_agrees_with_a_full_search_after_each_kind_of_change() {
        let t = settled_tree();
        let r = t.path();
        let root = r.to_string_lossy().into_owned();
        let roots = vec![root.clone(), format!("{root}/a")];
        let first = record_with_margin(&roots);
        assert!(first.record.kept_directories() > 0);
        type Change<'a> = (&'static str, Box<dyn Fn() + 'a>);
        let changes: Vec<Change<'_>> = vec![
            (
                "a directory made a file of the same name",
                Box::new(|| {
                    fs::remove_dir(r.join("wide/w020")).unwrap();
                    fs::write(r.join("wide/w020"), "").unwrap();
                }),
            ),
            (
                "a directory swapped for a symlink to a repository",
                Box::new(|| {
                    fs::remove_dir(r.join("wide/w021")).unwrap();
                    std::os::unix::fs::symlink(r.join("a"), r.join("wide/w021")).unwrap();
                }),
            ),
            (
                "a repository in a skipped directory",
                Box::new(|| {
                    fs::create_dir_all(r.join("node_modules/y/.git")).unwrap();
                }),
            ),
            (
                "a repository one depth past the limit",
                Box::new(|| {
                    fs::create_dir_all(r.join("wide/w030/x/y/z/.git")).unwrap();
                }),
            ),
            (
                "a repository at the depth limit",
                Box::new(|| {
                    fs::create_dir_all(r.join("wide/w031/x/y/.git")).unwrap();
                }),
            ),
            (
                "a repository's .git removed",
                Box::new(|| {
                    fs::remove_dir_all(r.join("a/b/c/.git")).unwrap();
                }),
            ),
            (
                "a directory renamed over another",
                Box::new(|| {
                    fs::create_dir_all(r.join("fresh/.git")).unwrap();
                    fs::remove_dir_all(r.join("wide/w040")).unwrap();
                    fs::rename(r.join("fresh"), r.join("wide/w040")).unwrap();
                }),
            ),
            (
                "a root's own repository",
                Box::new(|| {
                    fs::create_dir(r.join(".git")).unwrap();
                }),
            ),
        ];
        for (what, change) in changes {
            change();
            let again = since_with_margin(&roots, &first.record, MARGIN);
            let fresh = walk(&roots, 4, 10_000, How::Plain);
            assert_eq!(again.search, fresh.search, "after {what}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn each_search_since_records_for_the_next() {
        let t = settled_tree();
        let r = t.path();
        let root = r.to_string_lossy().into_owned();
        let roots = std::slice::from_ref(&root);
        let first = record_with_margin(roots);
        let untrusted = first.read - first.record.kept_directories();
        fs::create_dir_all(r.join("wide/w050/.git")).unwrap();
        let second = since_with_margin(roots, &first.record, MARGIN);
        assert_eq!(second.search, walk(roots, 4, 10_000, How::Plain).search);
        // Only wide/w050 changed; it is read again and, having changed
        // within the margin, not kept.
        assert_eq!(second.read, untrusted + 1);
        assert_eq!(
            second.record.kept_directories(),
            first.record.kept_directories() - 1
        );
        fs::create_dir(r.join("a/b/.git")).unwrap();
        let third = since_with_margin(roots, &second.record, MARGIN);
        assert_eq!(third.search, walk(roots, 4, 10_000, How::Plain).search);
        for repo in ["wide/w050", "a/b"] {
            assert!(third.search.repos.contains(&format!("{root}/{repo}")));
        }
        // wide/w050 (not kept) and a/b (changed) are read again.
        assert_eq!(third.read, untrusted + 2);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn directories_that_changed_just_before_the_record_are_read_again() {
        let t = tree();
        let root = t.path().to_string_lossy().into_owned();
        let roots = std::slice::from_ref(&root);
        let (search, record) = record_git_repos_on_host(roots);
        assert_eq!(
            record.kept_directories(),
            0,
            "every directory changed within the trust margin"
        );
        let again = since_with_margin(roots, &record, stamp::TRUST_MARGIN);
        assert_eq!(again.search, search);
        assert!(again.read > 200, "all read again: {}", again.read);
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
