//! A linked git worktree as mounts: the worktree and its repository's
//! common directory, which git needs to run inside.

use crate::git::{GitDirLayout, is_git_dir, linked_git_dirs};
use crate::{Access, AmbientHost, Error, ErrorKind, HostView, SandboxBindMount};
use std::path::Path;

impl SandboxBindMount {
    /// The mounts a linked git worktree (`git worktree add`) needs for git
    /// to read it inside: the worktree itself with `access`, and the
    /// repository's common directory (objects, refs, every worktree's git
    /// directory) **read-only** whatever `access` says, at their host
    /// paths (the common directory by its canonical path, which is what
    /// the worktree's `.git` file leads to).
    ///
    /// The common directory is shared by every worktree and the main
    /// checkout: written from inside, it would let a session move the
    /// user's branches and tags, rewrite `packed-refs`, other tasks'
    /// worktrees, `info/` and alternates, or prune the object store. So
    /// inside, `git status`, `git log` and `git diff` work and a file of
    /// the worktree can be edited, but `git commit` fails (no object can be
    /// written). A session that commits works in a workspace of its own
    /// instead (the facade's `launch_in_workspace`), whose work comes back
    /// through a gate.
    ///
    /// Refused with [`ErrorKind::NotALinkedWorktree`] when `worktree` is
    /// a main checkout (its `.git` is a directory), has no `.git`, or its
    /// `.git` file does not lead to a linked worktree's git directory (a
    /// submodule's is whole: mount it with [`SandboxBindMount::new`]).
    /// Reads the host only through `host`.
    pub fn linked_worktree<H: HostView + ?Sized>(
        worktree: &str,
        access: Access,
        host: &H,
    ) -> Result<[SandboxBindMount; 2], Error> {
        let mount = SandboxBindMount::new(worktree, access)?;
        let refuse = |reason| {
            Err(ErrorKind::NotALinkedWorktree {
                path: worktree.to_owned(),
                reason,
            }
            .into())
        };
        let dotgit = Path::new(worktree).join(".git");
        if host.is_dir(&dotgit) {
            return refuse("its .git is a directory: a main checkout");
        }
        if !host.exists(&dotgit) {
            return refuse("it has no .git");
        }
        let Some(dirs) = linked_git_dirs(worktree, host) else {
            return refuse("its .git file does not lead to a git directory");
        };
        if dirs.layout != GitDirLayout::LinkedWorktree {
            return refuse("its git directory is whole (a submodule or a separate git directory)");
        }
        if !is_git_dir(&dirs.common_dir, host) {
            return refuse("the common directory it names is not a git directory");
        }
        let common = SandboxBindMount::new(dirs.common_dir.to_string_lossy(), Access::ReadOnly)?;
        Ok([mount, common])
    }

    /// [`SandboxBindMount::linked_worktree`] reading the real host.
    pub fn linked_worktree_from_ambient(
        worktree: &str,
        access: Access,
    ) -> Result<[SandboxBindMount; 2], Error> {
        SandboxBindMount::linked_worktree(worktree, access, &AmbientHost::from_ambient())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FakeHost, Os};

    fn repo() -> FakeHost {
        let mut h = FakeHost::new(Os::Linux);
        h.file("/w/main/.git/HEAD")
            .dir("/w/main/.git/objects")
            .dir("/w/main/.git/refs")
            .dir("/w/main/.git/worktrees/wt")
            .contents("/w/main/.git/worktrees/wt/commondir", "../..\n")
            .contents("/w/wt/.git", "gitdir: /w/main/.git/worktrees/wt\n")
            .dir("/w/main/.git/modules/sub")
            .contents("/w/main/sub/.git", "gitdir: ../.git/modules/sub\n")
            .contents("/w/odd/.git", "gitdir: /w/odd-git\n")
            .contents("/w/odd-git/commondir", "/w/nothing\n")
            .dir("/w/nothing")
            .dir("/w/none");
        h
    }

    #[test]
    fn a_linked_worktree_comes_with_its_common_directory() {
        let h = repo();
        let [wt, common] =
            SandboxBindMount::linked_worktree("/w/wt", Access::ReadWrite, &h).unwrap();
        assert_eq!((wt.host_path.as_str(), wt.read_only), ("/w/wt", false));
        assert_eq!(
            (common.host_path.as_str(), common.read_only),
            ("/w/main/.git", true),
            "the shared common directory is never writable"
        );
        let [_, common] = SandboxBindMount::linked_worktree("/w/wt", Access::ReadOnly, &h).unwrap();
        assert!(common.read_only);
    }

    #[test]
    fn anything_else_is_refused_with_what_it_is() {
        let h = repo();
        for (path, says) in [
            ("/w/main", "main checkout"),
            ("/w/none", "no .git"),
            ("/w/main/sub", "submodule"),
            ("/w/odd", "not a git directory"),
        ] {
            let err = SandboxBindMount::linked_worktree(path, Access::ReadWrite, &h).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::NotALinkedWorktree { .. }),
                "{path}: {err}"
            );
            assert!(err.to_string().contains(says), "{path}: {err}");
        }
        let err = SandboxBindMount::linked_worktree("rel", Access::ReadWrite, &h).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::RelativeMountPath { .. }));
    }
}
