//! Git layout facts the write denies need: where a checkout whose `.git` is
//! a file keeps its hooks and config.

use crate::HostView;
use std::path::{Path, PathBuf};

/// Longest `gitdir:` or `commondir` value read.
pub const MAX_GITDIR_LEN: usize = 4096;

/// The write denies a repository at `anchor` needs when its `.git` is a
/// file (a linked worktree, `git worktree add`, or a submodule): the `.git`
/// file itself, which would otherwise let the sandbox point the repository
/// at a git directory of its own with hooks the host then runs, and in the
/// git directory it names, the hooks and config of the common directory and
/// the worktree's own `config.worktree`. Returns nothing for a `.git`
/// directory (the mandatory set covers it) or when there is no `.git`. Reads
/// the host only through `host`; a `.git` file that cannot be read or
/// followed still yields the file itself.
pub fn linked_git_dir_entries<H: HostView + ?Sized>(anchor: &str, host: &H) -> Vec<String> {
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
    use crate::{FakeHost, Os};

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
            .contents("/w/nul/.git", "gitdir: /w/main/.git\0\n")
            .contents(
                "/w/long/.git",
                format!("gitdir: /{}\n", "a".repeat(MAX_GITDIR_LEN)),
            )
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
        // Unreadable, NUL-holding or too long pointers protect the file itself.
        for bad in ["/w/bad", "/w/junk", "/w/nul", "/w/long"] {
            assert_eq!(linked_git_dir_entries(bad, &h), [format!("{bad}/.git")]);
        }
        // A .git directory or none: nothing extra.
        assert!(linked_git_dir_entries("/w/plain", &h).is_empty());
        assert!(linked_git_dir_entries("/w/none", &h).is_empty());
    }

    proptest::proptest! {
        /// Whatever a `.git` file and a `commondir` file hold (the sandbox
        /// may have written both in an earlier run), reading them never
        /// panics, the `.git` file itself always comes first, and nothing
        /// outside the pointed-to git directory is named but its hooks,
        /// config and config.worktree.
        #[test]
        fn any_pointer_contents(dotgit in ".{0,300}", commondir in ".{0,300}") {
            let mut h = FakeHost::new(Os::Linux);
            h.dir("/w/main/.git/worktrees/wt")
                .contents("/w/wt/.git", dotgit)
                .contents("/w/main/.git/worktrees/wt/commondir", commondir);
            let out = linked_git_dir_entries("/w/wt", &h);
            proptest::prop_assert_eq!(out.first().map(String::as_str), Some("/w/wt/.git"));
            proptest::prop_assert!(out.len() == 1 || out.len() == 4);
            for p in &out[1..] {
                proptest::prop_assert!(
                    p.ends_with("/hooks") || p.ends_with("/config") || p.ends_with("/config.worktree"),
                    "{}", p
                );
            }
        }
    }
}
