//! The write and read denies of a plan: which ancestors to pin, which paths
//! to re-bind read-only, which missing ones get a placeholder and which
//! become creation-time rules; and the masks over secrets.

use crate::args::Args;
use crate::{Placeholder, PlaceholderKind};
use sandbox_core::{Access, HostView, PathSet};
use std::path::{Path, PathBuf};

/// Mandatory write-deny entries that are directories (the rest are files),
/// used when a placeholder must be created for a missing entry.
const DIR_ENTRIES: &[&str] = &[
    ".git/hooks",
    ".config/fish",
    ".config/git",
    ".local/bin",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".claude/commands",
    ".claude/agents",
    ".vscode",
    ".idea",
    ".claude",
];

/// Mandatory write-deny entries that may not be given an empty placeholder
/// when missing, because git reads an empty one as an error.
const NO_PLACEHOLDER: &[&str] = &["/.git/commondir"];

/// What the write denies leave to the rest of the plan.
pub(crate) struct WriteDenies {
    /// Missing denied paths to create empty before the launch.
    pub(crate) placeholders: Vec<Placeholder>,
    /// Missing denied paths that may not get a placeholder: creation-time
    /// rules, like the filename globs.
    pub(crate) unenforced: Vec<String>,
}

/// Adds the write denies to `a`: every ancestor of a denied path inside a
/// writable root is pinned by a self-bind so that it cannot be renamed away,
/// then the path is re-bound read-only (shallowest first; a path under one
/// already re-bound needs nothing more).
pub(crate) fn write_denies<H: HostView + ?Sized>(
    a: &mut Args,
    write_deny: &PathSet,
    exposed: &[(String, Access)],
    home: &Path,
    host: &H,
) -> WriteDenies {
    let mut pins: Vec<String> = Vec::new();
    let mut ro: Vec<String> = Vec::new();
    let mut placeholders: Vec<Placeholder> = Vec::new();
    let mut unenforced: Vec<String> = Vec::new();
    for p in write_deny.spellings() {
        if sandbox_core::is_glob(&p) || !is_under_any(&p, exposed) {
            continue;
        }
        let root = writable_root_of(&p, exposed);
        let path = Path::new(&p);
        if !host.exists(path) {
            let Some(root) = root else { continue };
            // A missing denied path inside a writable root must exist to
            // be mounted read-only. Inside `.git/` and the home directory
            // it gets a placeholder (removed at teardown); elsewhere a
            // placeholder would show up in the worktree (and in the next
            // `git add -A`), so it is a creation-time rule like the
            // filename globs: enforced by a name guard or dropped by the
            // same opt-out.
            let git_at = p.find("/.git/");
            let in_git = git_at.is_some_and(|i| host.is_dir(Path::new(&p[..i + "/.git".len()])));
            // A git directory mounted as a root of its own (a linked
            // worktree's common directory) gets nothing placed in it: the
            // host's repository holds nothing of ours, during or after.
            let root_is_git_dir = sandbox_core::git::is_git_dir(Path::new(root), host);
            let in_home = path.starts_with(home) && git_at.is_none();
            // An empty `.git/commondir` makes every git command fail:
            // never a placeholder, always a creation-time rule.
            let placeholder_breaks_git = NO_PLACEHOLDER.iter().any(|e| p.ends_with(e));
            if !(in_git || in_home) || placeholder_breaks_git || root_is_git_dir {
                if !unenforced.contains(&p) {
                    unenforced.push(p);
                }
                continue;
            }
            let kind = if DIR_ENTRIES.iter().any(|d| p.ends_with(d)) {
                PlaceholderKind::Dir
            } else {
                PlaceholderKind::File
            };
            placeholders.push(Placeholder {
                path: PathBuf::from(&p),
                kind,
                root: PathBuf::from(root),
            });
        }
        if let Some(root) = root {
            for anc in ancestors_between(root, &p) {
                if !pins.contains(&anc) {
                    pins.push(anc);
                }
            }
        }
        if !ro.contains(&p) {
            ro.push(p);
        }
    }
    pins.sort_by_key(|p| depth(p));
    // Shallow first; a path under one already re-bound read-only needs
    // nothing more.
    ro.sort_by_key(|p| depth(p));
    let mut kept: Vec<String> = Vec::new();
    for p in ro {
        if !kept.iter().any(|k| is_under(&p, k)) {
            kept.push(p);
        }
    }
    let ro = kept;
    pins.retain(|p| !ro.iter().any(|r| is_under(p, r)));
    for p in &pins {
        a.triple("--bind", p, p);
    }
    for p in &ro {
        a.triple("--ro-bind", p, p);
    }
    WriteDenies {
        placeholders,
        unenforced,
    }
}

/// The paths hidden from reading: the curated secret set (`fixed`), the
/// host's extra denies (`extra`) and the paths read again inside those
/// (`reopen`).
pub(crate) struct ReadDenies {
    pub(crate) fixed: PathSet,
    pub(crate) extra: PathSet,
    pub(crate) reopen: PathSet,
}

/// Adds the read denies to `a`: directories become an
/// empty read-only tmpfs, files `/dev/null`. Only paths visible inside
/// need a mask (under an exposed root, and not already under an extra
/// deny's tmpfs unless read again there). Inside an extra deny's tmpfs,
/// before it is made read-only, each path read again is bound back
/// read-only; a secret under such a path is masked after it.
pub(crate) fn read_denies<H: HostView + ?Sized>(
    a: &mut Args,
    denies: &ReadDenies,
    exposed: &[(String, Access)],
    host: &H,
) {
    let extra = denies.extra.spellings();
    let fixed = denies.fixed.spellings();
    let reopen = denies.reopen.spellings();
    // The extra denies first, shallow first (each with what is read again
    // inside it), then the secrets: a secret under a path read again is
    // masked after that path is bound back.
    let mut extra_first: Vec<(String, bool)> = extra.iter().map(|p| (p.clone(), true)).collect();
    extra_first.sort_by_key(|(p, _)| depth(p));
    let all = extra_first
        .into_iter()
        .chain(fixed.iter().map(|p| (p.clone(), false)));
    let mut masked: Vec<String> = Vec::new();
    for (p, is_extra) in all {
        let (p, is_extra) = (p.as_str(), is_extra);
        if sandbox_core::is_glob(p) || !is_under_any(p, exposed) {
            continue;
        }
        let read_again = |q: &str| reopen.iter().any(|r| is_under(q, r));
        if masked.iter().any(|m| is_under(p, m)) && !read_again(p) {
            continue;
        }
        let path = Path::new(p);
        if host.is_dir(path) {
            a.pair("--tmpfs", p);
            if is_extra {
                for r in reopen.iter().filter(|r| is_under(r, p) && *r != p) {
                    if host.exists(Path::new(r)) {
                        a.triple("--ro-bind", r, r);
                    }
                }
                masked.push(p.to_owned());
            }
            a.pair("--remount-ro", p);
        } else if host.exists(path) {
            a.triple("--ro-bind", "/dev/null", p);
        }
    }
}

impl ReadDenies {
    /// The first path read again that reaches into the secret set: inside
    /// a secret, or around a secret pattern no mask can hide (what it
    /// matches is not known here). Such a grant is refused, never skipped.
    pub(crate) fn reopen_into_secrets(&self) -> Option<String> {
        let fixed = self.fixed.spellings();
        self.reopen
            .spellings()
            .into_iter()
            .find(|r| sandbox_core::reaches_into(r, &fixed))
    }
}

pub(crate) fn depth(p: &str) -> usize {
    p.split('/').filter(|s| !s.is_empty()).count()
}

pub(crate) fn is_under(p: &str, root: &str) -> bool {
    Path::new(p).starts_with(root)
}

fn is_under_any(p: &str, exposed: &[(String, Access)]) -> bool {
    exposed.iter().any(|(r, _)| is_under(p, r))
}

/// The deepest exposed root containing `p`, if that root is writable.
fn writable_root_of<'a>(p: &str, exposed: &'a [(String, Access)]) -> Option<&'a str> {
    exposed
        .iter()
        .filter(|(r, _)| is_under(p, r))
        .max_by_key(|(r, _)| depth(r))
        .filter(|(_, acc)| *acc == Access::ReadWrite)
        .map(|(r, _)| r.as_str())
}

/// Directories strictly between `root` and `p`.
fn ancestors_between(root: &str, p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = Path::new(p).parent();
    while let Some(dir) = cur {
        if dir == Path::new(root) || !dir.starts_with(root) {
            break;
        }
        out.push(dir.to_string_lossy().into_owned());
        cur = dir.parent();
    }
    out.reverse();
    out
}
