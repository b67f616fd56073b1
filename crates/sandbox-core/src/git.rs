//! Git layout facts the write denies need: where a checkout whose `.git` is
//! a file keeps its hooks and config, and what a git directory mounted
//! writable by itself (a linked worktree's common directory) must keep
//! unwritable.

use crate::HostView;
use std::path::{Path, PathBuf};

/// Longest `gitdir:` or `commondir` value read.
pub const MAX_GITDIR_LEN: usize = 4096;

/// The git directories of a checkout whose `.git` is a file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkedGitDirs {
    /// The directory the `.git` file names (for a linked worktree, its own
    /// under the common directory's `worktrees/`).
    pub git_dir: PathBuf,
    /// The repository's common directory (objects, refs, hooks, config):
    /// what `commondir` names, or the git directory itself.
    pub common_dir: PathBuf,
    /// Whether the git directory names a common directory of its own
    /// (a linked worktree) or is whole (a submodule).
    pub layout: GitDirLayout,
}

/// How a checkout's git directory is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GitDirLayout {
    /// A linked worktree: the git directory holds a `commondir` file.
    LinkedWorktree,
    /// A whole git directory elsewhere (a submodule, `--separate-git-dir`).
    Separate,
}

/// Follows the `.git` file of the checkout at `anchor` (canonical paths);
/// `None` for a `.git` directory, no `.git`, or a `.git` file that cannot
/// be read or followed.
pub fn linked_git_dirs<H: HostView + ?Sized>(anchor: &str, host: &H) -> Option<LinkedGitDirs> {
    let dotgit = Path::new(anchor).join(".git");
    if !host.exists(&dotgit) || host.is_dir(&dotgit) {
        return None;
    }
    let gitdir = pointer(host, &dotgit, "gitdir:")?;
    let gitdir = host.canonicalize(&Path::new(anchor).join(gitdir))?;
    let common = pointer(host, &gitdir.join("commondir"), "")
        .and_then(|c| host.canonicalize(&gitdir.join(c)));
    Some(match common {
        Some(common_dir) => LinkedGitDirs {
            git_dir: gitdir,
            common_dir,
            layout: GitDirLayout::LinkedWorktree,
        },
        None => LinkedGitDirs {
            common_dir: gitdir.clone(),
            git_dir: gitdir,
            layout: GitDirLayout::Separate,
        },
    })
}

/// Whether `path` is a git directory itself (what git checks: a `HEAD`
/// file, an `objects` and a `refs` directory), such as a repository's
/// `.git` or a bare repository.
pub fn is_git_dir<H: HostView + ?Sized>(path: &Path, host: &H) -> bool {
    host.is_file(&path.join("HEAD"))
        && host.is_dir(&path.join("objects"))
        && host.is_dir(&path.join("refs"))
}

/// The first writable mount of `mounts` that is a git directory or lies
/// inside one (its `objects`, `refs`, a worktree's entry, ...), looking
/// up to [`MAX_GIT_DIR_DEPTH`] parents: such a directory holds a
/// repository's refs and objects for every checkout of it, so a session
/// that writes it can move the user's branches or prune their objects. A
/// checkout (a working tree whose `.git` is below the mount) is not one.
/// Reads the host only through `host`.
pub fn writable_git_dir<'a, H: HostView + ?Sized>(
    mounts: &'a [crate::SandboxBindMount],
    host: &H,
) -> Option<&'a str> {
    mounts
        .iter()
        .filter(|m| !m.read_only)
        .map(|m| m.host_path.as_str())
        .find(|path| {
            Path::new(path)
                .ancestors()
                .take(MAX_GIT_DIR_DEPTH)
                .any(|dir| dir.parent().is_some() && is_git_dir(dir, host))
        })
}

/// How many levels [`writable_git_dir`] looks up from a mount.
pub const MAX_GIT_DIR_DEPTH: usize = 16;

/// What must stay unwritable in a git directory that is itself a writable
/// root (the common directory a linked worktree needs), as absolute paths:
/// its hooks, its config, `config.worktree` and `commondir` (git runs
/// commands they name, or takes hooks and config from where they point, on
/// the host), the main worktree's `HEAD` and `index` (never written from a
/// linked one), `modules` (the submodules' git directories, with their own
/// hooks and config), and in each linked worktree's directory found under
/// `worktrees/` its `commondir` and `config.worktree` (the host's git in
/// that worktree would follow them). The mandatory set's home-style entries
/// (`.bashrc`, `.claude/`, ...) mean nothing there and are not anchored at
/// it. Reads the host only through `host` (to list `worktrees/`).
pub fn git_dir_root_entries<H: HostView + ?Sized>(root: &str, host: &H) -> Vec<String> {
    let root = Path::new(root);
    let mut out: Vec<PathBuf> = GIT_DIR_ROOT_DENY.iter().map(|e| root.join(e)).collect();
    let worktrees = root.join("worktrees");
    match host.list_dir(&worktrees) {
        Some(mut names) => {
            names.sort();
            for name in names {
                let dir = worktrees.join(&name);
                if host.is_dir(&dir) {
                    out.push(dir.join("commondir"));
                    out.push(dir.join("config.worktree"));
                }
            }
        }
        // Cannot be listed (or over the listing limit): all of it stays
        // unwritable, which fails closed (a linked worktree's own git
        // directory is then read-only too).
        None if host.is_dir(&worktrees) => out.push(worktrees),
        None => {}
    }
    out.into_iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// The entries of [`git_dir_root_entries`] at the git directory's own top.
pub const GIT_DIR_ROOT_DENY: &[&str] = &[
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "HEAD",
    "index",
    "modules",
];

/// The write denies anchored at the run's home and at each writable root
/// (and nested repository) in `roots`, as absolute paths without
/// duplicates: the mandatory set
/// ([`crate::defaults::mandatory_write_deny_paths`]) at the home and at
/// every root that is not itself a git directory, the
/// [`linked_git_dir_entries`] of each such root, and
/// [`git_dir_root_entries`] for a root that is a git directory (a linked
/// worktree's common directory, a bare repository). Reads the host only
/// through `host`.
pub fn write_denies_at_roots<'a, H, I>(home: &Path, roots: I, host: &H) -> Vec<String>
where
    H: HostView + ?Sized,
    I: IntoIterator<Item = &'a str>,
{
    let (git_dirs, checkouts): (Vec<&str>, Vec<&str>) = roots
        .into_iter()
        .partition(|r| is_git_dir(Path::new(r), host));
    let mut out = crate::defaults::mandatory_write_deny_paths(home, checkouts.iter().copied());
    let extra = checkouts
        .iter()
        .flat_map(|a| linked_git_dir_entries(a, host))
        .chain(git_dirs.iter().flat_map(|g| git_dir_root_entries(g, host)));
    for p in extra {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The write denies a repository at `anchor` needs when its `.git` is a
/// file (a linked worktree, `git worktree add`, or a submodule): the `.git`
/// file itself, which would otherwise let the sandbox point the repository
/// at a git directory of its own with hooks the host then runs, and in the
/// git directory it names, the hooks and config of the common directory,
/// the worktree's own `config.worktree` and, for a linked worktree, its
/// `commondir` (which names where hooks and config come from). Returns
/// nothing for a `.git` directory (the mandatory set covers it) or when
/// there is no `.git`. Reads the host only through `host`; a `.git` file
/// that cannot be read or followed still yields the file itself.
pub fn linked_git_dir_entries<H: HostView + ?Sized>(anchor: &str, host: &H) -> Vec<String> {
    let dotgit = Path::new(anchor).join(".git");
    if !host.exists(&dotgit) || host.is_dir(&dotgit) {
        return Vec::new();
    }
    let mut out = vec![dotgit.to_string_lossy().into_owned()];
    let Some(dirs) = linked_git_dirs(anchor, host) else {
        return out;
    };
    let (gitdir, common) = (&dirs.git_dir, &dirs.common_dir);
    let commondir = match dirs.layout {
        GitDirLayout::LinkedWorktree => Some(gitdir.join("commondir")),
        _ => None,
    };
    for p in [
        Some(common.join("hooks")),
        Some(common.join("config")),
        Some(gitdir.join("config.worktree")),
        commondir,
    ]
    .into_iter()
    .flatten()
    {
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
                "/w/main/.git/worktrees/wt/commondir",
            ]
        );
        assert_eq!(
            linked_git_dirs("/w/wt", &h),
            Some(LinkedGitDirs {
                git_dir: "/w/main/.git/worktrees/wt".into(),
                common_dir: "/w/main/.git".into(),
                layout: GitDirLayout::LinkedWorktree,
            })
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
        assert_eq!(
            linked_git_dirs("/w/main/sub", &h).map(|d| d.layout),
            Some(GitDirLayout::Separate)
        );
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
            proptest::prop_assert!((1..=5).contains(&out.len()) && out.len() != 2 && out.len() != 3);
            for p in &out[1..] {
                proptest::prop_assert!(
                    p.ends_with("/hooks") || p.ends_with("/config") || p.ends_with("/config.worktree")
                        || p.ends_with("/commondir"),
                    "{}", p
                );
            }
        }
    }
}

#[cfg(test)]
mod git_dir_tests {
    use super::*;
    use crate::{FakeHost, Os};

    #[test]
    fn a_writable_git_directory_or_a_path_inside_one_is_found() {
        use crate::{Access, SandboxBindMount};
        let mut h = FakeHost::new(Os::Linux);
        h.file("/r/.git/HEAD")
            .dir("/r/.git/objects")
            .dir("/r/.git/refs/heads")
            .dir("/r/.git/worktrees/t")
            .file("/bare/HEAD")
            .dir("/bare/objects")
            .dir("/bare/refs")
            .dir("/r/src");
        let m = |p: &str, a| SandboxBindMount::new(p, a).unwrap();
        for path in [
            "/r/.git",
            "/r/.git/refs/heads",
            "/r/.git/worktrees/t",
            "/bare",
        ] {
            let mounts = [m("/r/src", Access::ReadWrite), m(path, Access::ReadWrite)];
            assert_eq!(writable_git_dir(&mounts, &h), Some(path));
            let mounts = [m(path, Access::ReadOnly)];
            assert_eq!(writable_git_dir(&mounts, &h), None, "{path} read-only");
        }
        // A checkout (its .git below the mount) is not a git directory.
        for path in ["/r", "/r/src", "/"] {
            assert_eq!(writable_git_dir(&[m(path, Access::ReadWrite)], &h), None);
        }
    }

    #[test]
    fn a_git_directory_is_told_by_head_objects_and_refs() {
        let mut h = FakeHost::new(Os::Linux);
        h.file("/r/.git/HEAD")
            .dir("/r/.git/objects")
            .dir("/r/.git/refs")
            .file("/half/HEAD")
            .dir("/half/objects")
            .dir("/r/src");
        assert!(is_git_dir(Path::new("/r/.git"), &h));
        assert!(!is_git_dir(Path::new("/half"), &h), "no refs");
        assert!(
            !is_git_dir(Path::new("/r"), &h),
            "a checkout is not its git directory"
        );
        h.dir("/r/.git/worktrees/b")
            .dir("/r/.git/worktrees/a")
            .file("/r/.git/worktrees/stray");
        assert_eq!(
            git_dir_root_entries("/r/.git", &h),
            [
                "/r/.git/hooks",
                "/r/.git/config",
                "/r/.git/config.worktree",
                "/r/.git/commondir",
                "/r/.git/HEAD",
                "/r/.git/index",
                "/r/.git/modules",
                "/r/.git/worktrees/a/commondir",
                "/r/.git/worktrees/a/config.worktree",
                "/r/.git/worktrees/b/commondir",
                "/r/.git/worktrees/b/config.worktree",
            ]
        );
        // As a root: these, and none of the home-style entries; a checkout
        // beside it keeps the mandatory set.
        let denies = write_denies_at_roots(Path::new("/home/u"), ["/r/.git", "/r"], &h);
        assert!(denies.contains(&"/r/.git/worktrees/a/commondir".to_string()));
        assert!(denies.contains(&"/r/.bashrc".to_string()));
        assert!(denies.contains(&"/r/.git/hooks".to_string()));
        assert!(
            !denies.iter().any(|d| d.starts_with("/r/.git/.")),
            "{denies:?}"
        );
    }
}
