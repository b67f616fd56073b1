//! The mandatory write-deny set (R-PATHS-3) inside writable binds: which
//! host entries get a read-only bind over the writable one, and which cannot.
//!
//! # Mount order
//!
//! The order of `--mount` flags in argv does not decide which mount wins.
//! The engine keeps a container's mount points in a map keyed by
//! destination (moby `daemon/volumes.go`, `registerMountPoints`, which also
//! refuses two mounts with the same destination as a "duplicate mount
//! point"), and before starting the container `setupMounts` calls
//! `sortMounts` (moby `daemon/volumes_unix.go`), which sorts them by the
//! number of `/` separators in the cleaned destination (`mounts.Less`
//! compares `parts`, `strings.Count(filepath.Clean(dest), "/")`). So a
//! deeper destination is always mounted after, and on top of, a shallower
//! one: a read-only bind at `/work/.git/hooks` lands over the writable
//! `/work` whatever the argv order. The read-only binds are still rendered
//! after every bind of the spec, so the argv reads in mount order too.
//!
//! # Symlinks
//!
//! Docker follows symlinks on both sides of a bind: the daemon and runc
//! stat and mount the source through its symlinks, and runc resolves the
//! destination inside the container root (`securejoin.SecureJoin(rootfs,
//! m.Destination)` in runc's `libcontainer/rootfs_linux.go`), so a mount can
//! never sit on a symlink itself. An entry is therefore bound from its
//! canonical host path, at the guest path that canonical path has inside the
//! writable bind that holds it, and never when it resolves outside every
//! writable bind (binding it would show the container a host file it
//! otherwise cannot see). When the entry's literal name goes through a
//! symlink inside a writable bind, the name itself stays replaceable; such
//! entries are reported, not hidden.

use crate::mount::check_path;
use sandbox_core::git::write_denies_at_roots;
use sandbox_core::{Access, HostView};
use std::path::{Component, Path, PathBuf};

/// A writable bind, as the builder holds it.
struct Root<'a> {
    /// Index in the builder's mounts.
    index: usize,
    host: &'a str,
    canonical: Option<PathBuf>,
    guest: &'a str,
}

/// What the mandatory set adds to a container.
#[derive(Debug, Default)]
pub(crate) struct Protection {
    /// Read-only binds to add: (canonical host source, guest target).
    pub binds: Vec<(String, String)>,
    /// Writable self-binds of the directories between a writable bind and
    /// a read-only bind inside it (canonical host source, guest target): a
    /// mount point cannot be renamed or removed, so `.git` cannot be moved
    /// away from under `.git/hooks` and replaced.
    pub pins: Vec<(String, String)>,
    /// Indexes of writable binds that are themselves mandatory entries and
    /// become read-only.
    pub read_only: Vec<usize>,
    /// Entries inside a writable bind that do not exist on the host.
    pub missing: Vec<String>,
    /// Entries inside a writable bind whose name goes through a symlink.
    pub symlinked: Vec<String>,
}

/// Plans the mandatory write denies for `mounts` (source, target, access):
/// anchored at `home`, at every writable bind, and at every repository of
/// `nested_repos` inside one; plus, for each anchor whose `.git` is a file,
/// that file and the hooks and config of the git directory it names; an
/// anchor that is a git directory itself (a linked worktree's common
/// directory) gets the git directory's own set instead of the mandatory one.
pub(crate) fn plan<H: HostView + ?Sized>(
    mounts: &[(String, String, Access)],
    home: &Path,
    nested_repos: &[String],
    host: &H,
) -> Protection {
    let roots: Vec<Root<'_>> = mounts
        .iter()
        .enumerate()
        // An invalid source fails the build anyway; never resolve it here.
        .filter(|(_, (h, _, a))| *a == Access::ReadWrite && check_path(h).is_ok())
        .map(|(index, (h, g, _))| Root {
            index,
            host: h.as_str(),
            canonical: host.canonicalize(Path::new(h)),
            guest: g.as_str(),
        })
        .collect();
    let mut anchors: Vec<&str> = Vec::new();
    for r in &roots {
        push_unique(&mut anchors, r.host);
    }
    for repo in nested_repos {
        let canonical = host.canonicalize(Path::new(repo));
        let inside = roots.iter().any(|r| {
            Path::new(repo).starts_with(r.host)
                || matches!((&canonical, &r.canonical), (Some(c), Some(rc)) if c.starts_with(rc))
        });
        if inside {
            push_unique(&mut anchors, repo.as_str());
        }
    }
    let entries = write_denies_at_roots(home, anchors.iter().copied(), host);

    let mut out = Protection::default();
    for entry in &entries {
        let literal = Path::new(entry);
        // Where the entry's name sits in the writable trees, as host paths.
        let mut positions: Vec<PathBuf> = Vec::new();
        for r in &roots {
            if let (Ok(rest), Some(c)) = (literal.strip_prefix(r.host), &r.canonical) {
                positions.push(join(c, rest));
            }
        }
        let by_parent = literal
            .parent()
            .zip(literal.file_name())
            .and_then(|(p, name)| host.canonicalize(p).map(|p| p.join(name)));
        if let Some(p) = by_parent
            && roots
                .iter()
                .any(|r| r.canonical.as_ref().is_some_and(|c| p.starts_with(c)))
        {
            positions.push(p);
        }
        let Some(real) = host.canonicalize(literal) else {
            if !positions.is_empty() {
                push_unique(&mut out.missing, entry.clone());
            }
            continue;
        };
        let real_str = real.to_str();
        if positions.iter().any(|p| *p != real) || real_str.is_none() {
            push_unique(&mut out.symlinked, entry.clone());
        }
        let Some(real_str) = real_str else { continue };
        for r in &roots {
            let Some(rel) = r.canonical.as_ref().and_then(|c| real.strip_prefix(c).ok()) else {
                continue;
            };
            if rel.as_os_str().is_empty() {
                // The writable bind is itself a mandatory entry.
                if !out.read_only.contains(&r.index) {
                    out.read_only.push(r.index);
                }
                continue;
            }
            let target = join(Path::new(r.guest), rel);
            let Some(target) = target.to_str() else {
                continue;
            };
            // Only where this bind is what the guest sees at the target: a
            // deeper mount of the spec there shows other files (or is
            // read-only already and anchored on its own).
            if deepest_cover(mounts, target) != Some(r.index) {
                continue;
            }
            if !out.binds.iter().any(|(_, t)| t == target) {
                out.binds.push((real_str.to_owned(), target.to_owned()));
            }
        }
    }
    // A bind inside another read-only bind of the set, or inside a writable
    // bind the set makes read-only, adds nothing.
    let targets: Vec<String> = out
        .binds
        .iter()
        .map(|(_, t)| t.clone())
        .chain(
            out.read_only
                .iter()
                .filter_map(|i| mounts.get(*i))
                .map(|m| m.1.clone()),
        )
        .collect();
    out.binds.retain(|(_, t)| {
        !targets
            .iter()
            .any(|o| o != t && Path::new(t).starts_with(o))
    });
    // Pin every directory between the writable bind and each read-only
    // bind, shallowest first (the engine sorts by depth anyway).
    for (_, target) in &out.binds {
        let Some(ri) = deepest_cover(mounts, target) else {
            continue;
        };
        let Some(root) = roots.iter().find(|r| r.index == ri) else {
            continue;
        };
        let Some(canonical) = &root.canonical else {
            continue;
        };
        let Ok(rel) = Path::new(target).strip_prefix(root.guest) else {
            continue;
        };
        let mut guest = PathBuf::from(root.guest);
        let mut source = canonical.clone();
        let parts: Vec<_> = rel.components().collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            guest.push(part);
            source.push(part);
            let (Some(g), Some(s)) = (guest.to_str(), source.to_str()) else {
                break;
            };
            // Only real directories of this bind, never through a symlink.
            if host.canonicalize(&source).as_deref() != Some(source.as_path())
                || !host.is_dir(&source)
            {
                break;
            }
            if !out.pins.iter().any(|(_, t)| t == g) && !mounts.iter().any(|(_, t, _)| t == g) {
                out.pins.push((s.to_owned(), g.to_owned()));
            }
        }
    }
    out.pins
        .sort_by_key(|(_, t)| Path::new(t).components().count());
    // An entry whose nearest existing ancestor is read-only after all (the
    // `.git` file of a linked worktree, a bound `~/.claude`, a writable bind
    // made read-only) and reached without a symlink can neither be created
    // nor replaced: not reported.
    let frozen: Vec<PathBuf> = out
        .binds
        .iter()
        .map(|(s, _)| PathBuf::from(s))
        .chain(
            out.read_only
                .iter()
                .filter_map(|i| roots.iter().find(|r| r.index == *i))
                .filter_map(|r| r.canonical.clone()),
        )
        .collect();
    let settled = |entry: &String| {
        let mut p = Path::new(entry);
        loop {
            match p.parent() {
                Some(up) => p = up,
                None => return false,
            }
            if host.exists(p) {
                break;
            }
        }
        let Some(c) = host.canonicalize(p) else {
            return false;
        };
        let no_symlink = c == p
            || roots
                .iter()
                .any(|r| match (p.strip_prefix(r.host), &r.canonical) {
                    (Ok(rest), Some(rc)) => join(rc, rest) == c,
                    _ => false,
                });
        no_symlink && frozen.iter().any(|f| c.starts_with(f))
    };
    out.missing.retain(|m| !settled(m));
    out.symlinked.retain(|m| !settled(m));
    out
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// `base` joined with the normal components of `rest`.
fn join(base: &Path, rest: &Path) -> PathBuf {
    let mut out = base.to_path_buf();
    for c in rest.components() {
        if let Component::Normal(s) = c {
            out.push(s);
        }
    }
    out
}

/// The index of the mount with the deepest target at or above `target`.
fn deepest_cover(mounts: &[(String, String, Access)], target: &str) -> Option<usize> {
    let target = Path::new(target);
    mounts
        .iter()
        .enumerate()
        .filter(|(_, (_, t, _))| target.starts_with(t))
        .max_by_key(|(i, (_, t, _))| (Path::new(t).components().count(), usize::MAX - i))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deepest_mount_covers_a_target() {
        let m = |s: &str, t: &str| (s.to_owned(), t.to_owned(), Access::ReadWrite);
        let mounts = [
            m("/srv", "/work"),
            m("/other", "/work/sub"),
            m("/x", "/workx"),
        ];
        assert_eq!(deepest_cover(&mounts, "/work/.bashrc"), Some(0));
        assert_eq!(deepest_cover(&mounts, "/work/sub/.bashrc"), Some(1));
        assert_eq!(deepest_cover(&mounts, "/work/sub"), Some(1));
        assert_eq!(deepest_cover(&mounts, "/workx/a"), Some(2));
        assert_eq!(deepest_cover(&mounts, "/elsewhere"), None);
    }
}
