//! Finding git repositories nested inside writable roots, so that their
//! hooks and config are denied too (R-PATHS-3).

use std::collections::VecDeque;
use std::path::PathBuf;

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
