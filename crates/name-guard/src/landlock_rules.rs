//! The Landlock ruleset of a host confinement, applied by the launcher to
//! itself before it forks (so the supervisor, which performs calls for the
//! command, is held to the same rules).
//!
//! - Reads (read, list, execute) everywhere but the read denies. Landlock
//!   only grants, so the grant is made on the siblings along each denied
//!   path, computed now: from `/` down, a tree with no deny below it is
//!   granted whole; a tree with one is only listable, and each of its
//!   entries is looked at in turn; a denied path gets nothing (unless a
//!   path read again lies below it). An entry made later beside a denied
//!   path is unreadable (fail closed). Symbolic links get no rule: what
//!   they lead to is decided where it lies.
//!   Listing is a right Landlock grants on a whole tree: a listable home
//!   makes `~/.ssh` listable too. So the filter also sends the supervisor
//!   every `getdents`, which refuses listing a read-denied directory (see
//!   [`crate::HostRules::hides_listing`]) and performs the others.
//! - Writes (every other file right) below the writable trees, and writes
//!   and device ioctls on the terminal and null devices.
//! - TCP is not handled here: the command's own domain, nested in this
//!   one at the fork, refuses it every `bind` and every `connect` but to
//!   the given ports, and the supervisor performs each one the filter sends
//!   it after deciding (the proxies on 127.0.0.1, and on loopback the
//!   servers the command started itself).
//! - Scopes: no abstract Unix socket and no signal outside the sandbox.
//!
//! Every right is a hard requirement: a kernel that cannot enforce one makes
//! [`restrict`] fail, and the command does not run.

use crate::{Error, ErrorKind, HostRules};
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Component, Path, PathBuf};

/// The ABI whose rights are handled: 6 (Linux 6.12) brought the scopes.
const ABI_USED: ABI = ABI::V6;
/// Devices every program may open for writing (and, for terminals, ioctl).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];
/// Most file rules a ruleset gets; a deny set that needs more is refused.
pub(crate) const MAX_FILE_RULES: usize = 65_536;

fn landlock_err(e: impl std::fmt::Display) -> Error {
    ErrorKind::Landlock {
        reason: e.to_string(),
    }
    .into()
}

/// The read grants: (path, rights), computed from the current tree.
pub(crate) fn read_grants(h: &HostRules) -> Result<Vec<(PathBuf, BitFlags<AccessFs>)>, Error> {
    grants_below(Path::new("/"), h)
}

/// The read denies and the paths read again, as a tree of names from `/`,
/// so that each directory's entries are matched by name, not against every
/// path of both lists.
#[derive(Default)]
struct Marks<'a> {
    /// A read deny names this path.
    deny: bool,
    /// A path read again names this path.
    again: bool,
    /// A read deny lies strictly below.
    deny_below: bool,
    /// A path read again lies strictly below.
    again_below: bool,
    below: HashMap<&'a OsStr, Marks<'a>>,
}

impl<'a> Marks<'a> {
    fn of(h: &'a HostRules) -> Marks<'a> {
        let mut root = Marks::default();
        for d in &h.read_deny {
            root.mark(d, |m| m.deny = true, |m| m.deny_below = true);
        }
        for a in &h.read_again {
            root.mark(a, |m| m.again = true, |m| m.again_below = true);
        }
        root
    }

    /// Marks the node of `p` with `at` and each node above it with `above`.
    /// The paths are absolute and normal (`HostRules::new` checked them).
    fn mark(&mut self, p: &'a Path, at: fn(&mut Self), above: fn(&mut Self)) {
        let mut node = self;
        for name in names(p) {
            above(node);
            node = node.below.entry(name).or_default();
        }
        at(node);
    }
}

/// The names of an absolute path's components below `/`.
fn names(p: &Path) -> impl Iterator<Item = &OsStr> {
    p.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name),
        _ => None,
    })
}

/// Where a visited path stands: its node, if a listed path lies at or
/// below it, and whether it is at or below a deny and a path read again.
#[derive(Clone, Copy)]
struct Standing<'m, 'a> {
    node: Option<&'m Marks<'a>>,
    in_deny: bool,
    in_again: bool,
}

impl<'m, 'a> Standing<'m, 'a> {
    /// The nearest mark decides: a deny below a path read again denies
    /// again (the more precise rule wins), and a path read again inside a
    /// deny is readable; a path both denied and read again is readable.
    fn child(self, name: &OsStr) -> Standing<'m, 'a> {
        let node = self.node.and_then(|n| n.below.get(name));
        let (deny, again) = node.map_or((false, false), |n| (n.deny, n.again));
        Standing {
            node,
            in_deny: self.in_deny || deny,
            in_again: again || (self.in_again && !deny),
        }
    }
}

/// The read grants of the tree at `root` (the whole file system for `/`).
fn grants_below(root: &Path, h: &HostRules) -> Result<Vec<(PathBuf, BitFlags<AccessFs>)>, Error> {
    let marks = Marks::of(h);
    let mut at = Standing {
        node: Some(&marks),
        in_deny: marks.deny,
        in_again: marks.again,
    };
    for name in names(root) {
        at = at.child(name);
    }
    let mut out = Vec::new();
    visit(root, at, &mut out)?;
    Ok(out)
}

fn visit(
    p: &Path,
    at: Standing<'_, '_>,
    out: &mut Vec<(PathBuf, BitFlags<AccessFs>)>,
) -> Result<(), Error> {
    if out.len() > MAX_FILE_RULES {
        return Err(landlock_err(format!(
            "the read denies need more than {MAX_FILE_RULES} rules"
        )));
    }
    // A path read again is readable even inside a deny.
    let denied = !at.in_again && at.in_deny;
    let descend = if denied {
        at.node.is_some_and(|n| n.again_below)
    } else if at.node.is_some_and(|n| n.deny_below) {
        true
    } else {
        out.push((p.to_path_buf(), AccessFs::from_read(ABI_USED)));
        return Ok(());
    };
    if !descend {
        return Ok(());
    }
    // Listable, so that a path below can be found and named.
    if !denied {
        out.push((p.to_path_buf(), BitFlags::from(AccessFs::ReadDir)));
    }
    // An unreadable directory grants nothing below it.
    let Ok(entries) = std::fs::read_dir(p) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        visit(&e.path(), at.child(&e.file_name()), out)?;
    }
    Ok(())
}

/// Applies the rules of `h` to this thread and every process it starts
/// after (it must be the only thread). Sets `no_new_privs`.
pub(crate) fn restrict(h: &HostRules) -> Result<(), Error> {
    let all = AccessFs::from_all(ABI_USED);
    let write = all & !AccessFs::from_read(ABI_USED);
    let mut grants = read_grants(h)?;
    for w in &h.writable {
        grants.push((w.clone(), write));
    }
    for d in DEVICES {
        grants.push((
            PathBuf::from(d),
            AccessFs::WriteFile | AccessFs::IoctlDev | AccessFs::Truncate,
        ));
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(all)
        // TCP is the command's own nested domain's to refuse (see the
        // spawn), and the supervisor's to perform after its decision.
        .and_then(|r| r.scope(Scope::from_all(ABI_USED)))
        .and_then(|r| r.create())
        .map_err(landlock_err)?;
    for (path, access) in grants {
        // A path gone since (or never there) grants nothing.
        let Ok(fd) = PathFd::new(&path) else { continue };
        // The kind of the file opened, not of whatever the path names by
        // now (and one fstat instead of another walk of the path).
        let is_dir = crate::sys::file_id(fd.as_fd().as_raw_fd())
            .is_ok_and(|(_, _, kind)| kind == libc::S_IFDIR);
        let access = if is_dir {
            access
        } else {
            access & AccessFs::from_file(ABI_USED)
        };
        if access.is_empty() {
            continue;
        }
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(landlock_err)?;
    }
    let status = ruleset.restrict_self().map_err(landlock_err)?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(landlock_err(format!(
            "the kernel enforces the rules only partly ({:?})",
            status.ruleset
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_granted_on_the_siblings_of_each_deny() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in [
            "home/.ssh",
            "home/.config/gh",
            "home/.config/other",
            "home/code",
        ] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("home/.ssh/config"), "").unwrap();
        std::fs::write(r.join("home/.ssh/id_rsa"), "").unwrap();
        std::os::unix::fs::symlink(r.join("home/.ssh"), r.join("home/link")).unwrap();
        let h = HostRules {
            read_deny: vec![r.join("home/.ssh"), r.join("home/.config/gh")],
            read_again: vec![r.join("home/.ssh/config")],
            ..HostRules::default()
        };
        // From the tree's own root: what `/` lists depends on the machine
        // (under qemu-user it is the cross sysroot's).
        let grants = grants_below(r, &h).unwrap();
        let rights = |rel: &str| {
            grants
                .iter()
                .find(|(p, _)| *p == r.join(rel))
                .map(|(_, a)| *a)
        };
        let read = Some(AccessFs::from_read(ABI_USED));
        assert_eq!(rights("home/code"), read);
        assert_eq!(rights("home/.config/other"), read);
        assert_eq!(rights("home/.ssh/config"), read, "read again");
        assert_eq!(rights("home"), Some(BitFlags::from(AccessFs::ReadDir)));
        assert_eq!(
            rights("home/.config"),
            Some(BitFlags::from(AccessFs::ReadDir))
        );
        for never in [
            "home/.ssh",
            "home/.ssh/id_rsa",
            "home/.config/gh",
            "home/link",
        ] {
            assert_eq!(rights(never), None, "{never}");
        }
        // The root on the way to the denies is listable only.
        assert_eq!(rights(""), Some(BitFlags::from(AccessFs::ReadDir)));
    }

    #[test]
    fn a_deny_inside_a_path_read_again_holds() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for d in ["tmp/session-a", "tmp/project/certs", "tmp/project/src"] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(r.join("tmp/project/certs/site.pem"), "").unwrap();
        let h = HostRules {
            read_deny: vec![r.join("tmp"), r.join("tmp/project/certs/site.pem")],
            read_again: vec![r.join("tmp/project")],
            ..HostRules::default()
        };
        let grants = grants_below(r, &h).unwrap();
        let rights = |rel: &str| {
            grants
                .iter()
                .find(|(p, _)| *p == r.join(rel))
                .map(|(_, a)| *a)
        };
        assert_eq!(
            rights("tmp/project/src"),
            Some(AccessFs::from_read(ABI_USED))
        );
        assert_eq!(
            rights("tmp/project/certs"),
            Some(BitFlags::from(AccessFs::ReadDir))
        );
        for never in ["tmp/session-a", "tmp/project/certs/site.pem", "tmp"] {
            assert_eq!(rights(never), None, "{never}");
        }
    }

    /// The rule as first written: every visited path against every listed
    /// path, component by component.
    fn reference(p: &Path, h: &HostRules, out: &mut Vec<(PathBuf, BitFlags<AccessFs>)>) {
        let strictly_below = |list: &[PathBuf]| list.iter().any(|d| d != p && d.starts_with(p));
        // The nearest listed path at or above decides; at one path, read
        // again wins.
        let deepest = |list: &[PathBuf]| {
            list.iter()
                .filter(|d| p.starts_with(d))
                .map(|d| d.components().count())
                .max()
        };
        let denied = match (deepest(&h.read_deny), deepest(&h.read_again)) {
            (Some(d), Some(a)) => d > a,
            (Some(_), None) => true,
            _ => false,
        };
        let descend = if denied {
            strictly_below(&h.read_again)
        } else if strictly_below(&h.read_deny) {
            true
        } else {
            out.push((p.to_path_buf(), AccessFs::from_read(ABI_USED)));
            return;
        };
        if !descend {
            return;
        }
        if !denied {
            out.push((p.to_path_buf(), BitFlags::from(AccessFs::ReadDir)));
        }
        for e in std::fs::read_dir(p).unwrap().flatten() {
            if !e.file_type().unwrap().is_symlink() {
                reference(&e.path(), h, out);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// On random trees with random denies and paths read again (some
        /// absent, some nested in each other), the grants are the rule's.
        #[test]
        fn the_name_tree_grants_what_the_rule_says(
            dirs in proptest::collection::vec("[abc](/[abc]){0,3}", 1..12),
            denies in proptest::collection::vec("[abc](/[abc]){0,3}", 0..5),
            agains in proptest::collection::vec("[abc](/[abc]){0,3}", 0..3),
        ) {
            let root = tempfile::tempdir().unwrap();
            let r = root.path();
            for d in &dirs {
                std::fs::create_dir_all(r.join(d)).unwrap();
            }
            let h = HostRules {
                read_deny: denies.iter().map(|d| r.join(d)).collect(),
                read_again: agains.iter().map(|a| r.join(a)).collect(),
                ..HostRules::default()
            };
            let mut want = Vec::new();
            reference(r, &h, &mut want);
            let mut got = grants_below(r, &h).unwrap();
            want.sort();
            got.sort();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
