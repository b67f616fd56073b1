//! Finding git repositories nested inside writable roots, so that their
//! hooks and config are denied too (R-PATHS-3).

use sandbox_core::HostView;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// Longest `gitdir:` or `commondir` value read.
const MAX_GITDIR_LEN: usize = 4096;

/// How deep below a root the search goes.
pub const REPO_SEARCH_MAX_DEPTH: usize = 4;
/// How many directories the search visits in total before it stops.
pub const REPO_SEARCH_MAX_DIRS: usize = 5_000;

/// Directories that are never searched (large and never repositories of
/// their own that a host would run git in).
const SKIP: &[&str] = &["node_modules", "target", ".cache", ".venv", "__pycache__"];

/// Walks each root on the host file system (breadth first, symlinks not
/// followed, at most [`REPO_SEARCH_MAX_DEPTH`] levels and
/// [`REPO_SEARCH_MAX_DIRS`] directories) and returns every directory that
/// holds a `.git` entry, the roots included. Reads the host, as its name
/// says; unreadable directories are skipped.
pub fn discover_git_repos_on_host(roots: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut visited = 0usize;
    let mut queue: VecDeque<(PathBuf, usize)> =
        roots.iter().map(|r| (PathBuf::from(r), 0)).collect();
    while let Some((dir, depth)) = queue.pop_front() {
        visited += 1;
        if visited > REPO_SEARCH_MAX_DIRS {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(ft) = entry.file_type() else { continue };
            if name == ".git" {
                let s = dir.to_string_lossy().into_owned();
                if !found.contains(&s) {
                    found.push(s);
                }
                continue;
            }
            if ft.is_dir() && depth < REPO_SEARCH_MAX_DEPTH && !SKIP.iter().any(|s| name == *s) {
                queue.push_back((entry.path(), depth + 1));
            }
        }
    }
    found
}

/// The write denies a repository at `anchor` needs when its `.git` is a
/// file (a linked worktree, `git worktree add`, or a submodule): the `.git`
/// file itself, which would otherwise let the sandbox point the repository
/// at a git directory of its own with hooks the host then runs, and in the
/// git directory it names, the hooks and config of the common directory and
/// the worktree's own `config.worktree`. Returns nothing for a `.git`
/// directory (the mandatory set covers it) or when there is no `.git`. Reads
/// the host only through `host`; a `.git` file that cannot be read or
/// followed still yields the file itself.
pub(crate) fn linked_git_dir_entries<H: HostView + ?Sized>(anchor: &str, host: &H) -> Vec<String> {
    let dotgit = Path::new(anchor).join(".git");
    if !host.exists(&dotgit) || host.is_dir(&dotgit) {
        return Vec::new();
    }
    let mut out = vec![dotgit.to_string_lossy().into_owned()];
    let Some(gitdir) = pointer(host, &dotgit, "gitdir:") else {
        return out;
    };
    let Some(gitdir) = host.canonicalize(&Path::new(anchor).join(gitdir)) else {
        return out;
    };
    let common = pointer(host, &gitdir.join("commondir"), "")
        .and_then(|c| host.canonicalize(&gitdir.join(c)))
        .unwrap_or_else(|| gitdir.clone());
    for p in [
        common.join("hooks"),
        common.join("config"),
        gitdir.join("config.worktree"),
    ] {
        let p = p.to_string_lossy().into_owned();
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The path a git pointer file holds (`gitdir: PATH` in a `.git` file, a
/// bare path in `commondir`): the first line after `prefix`, trimmed; `None`
/// when missing, empty, too long or holding a NUL.
fn pointer<H: HostView + ?Sized>(host: &H, file: &Path, prefix: &str) -> Option<PathBuf> {
    let text = host.read_small_file(file)?;
    let line = text.lines().next()?.strip_prefix(prefix)?.trim();
    if line.is_empty() || line.len() > MAX_GITDIR_LEN || line.contains('\0') {
        return None;
    }
    Some(PathBuf::from(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::{FakeHost, Os};

    #[test]
    fn linked_worktrees_and_submodules() {
        let mut h = FakeHost::new(Os::Linux);
        h.dir("/w/main/.git/hooks")
            .file("/w/main/.git/config")
            .dir("/w/main/.git/worktrees/wt")
            .contents("/w/main/.git/worktrees/wt/commondir", "../..\n")
            .contents("/w/wt/.git", "gitdir: /w/main/.git/worktrees/wt\n")
            .dir("/w/main/.git/modules/sub/hooks")
            .contents("/w/main/sub/.git", "gitdir: ../.git/modules/sub\n")
            .contents("/w/bad/.git", "gitdir: \n")
            .contents("/w/junk/.git", "not a pointer\n")
            .dir("/w/plain/.git");
        assert_eq!(
            linked_git_dir_entries("/w/wt", &h),
            [
                "/w/wt/.git",
                "/w/main/.git/hooks",
                "/w/main/.git/config",
                "/w/main/.git/worktrees/wt/config.worktree",
            ]
        );
        // A submodule: relative gitdir, no commondir file.
        assert_eq!(
            linked_git_dir_entries("/w/main/sub", &h),
            [
                "/w/main/sub/.git",
                "/w/main/.git/modules/sub/hooks",
                "/w/main/.git/modules/sub/config",
                "/w/main/.git/modules/sub/config.worktree",
            ]
        );
        // Unreadable pointers still protect the file itself.
        assert_eq!(linked_git_dir_entries("/w/bad", &h), ["/w/bad/.git"]);
        assert_eq!(linked_git_dir_entries("/w/junk", &h), ["/w/junk/.git"]);
        // A .git directory or none: nothing extra.
        assert!(linked_git_dir_entries("/w/plain", &h).is_empty());
        assert!(linked_git_dir_entries("/w/none", &h).is_empty());
    }
}
