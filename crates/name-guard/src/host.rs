//! Confinement on the host without namespaces (`--landlock`): the paths and
//! ports of a [`sandbox_core::HostConfinement`], checked and kept in the
//! form the supervisor decides on.
//!
//! Landlock (applied by the launcher to itself before it forks, so the
//! supervisor is confined as the command is) grants writes below the
//! writable trees and reads everywhere but the read denies. What Landlock
//! cannot carve out of a granted tree, the protected paths inside it, the
//! supervisor refuses: every write-open and truncation, every name made,
//! removed or moved there, by path and, for files that exist at launch, by
//! device and inode (a hard link made before launch reaches the same
//! file).

use crate::{Error, ErrorKind};
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// The checked host confinement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostRules {
    /// Writable trees.
    pub(crate) writable: Vec<PathBuf>,
    /// Unreadable paths.
    pub(crate) read_deny: Vec<PathBuf>,
    /// Paths readable again inside an unreadable one.
    pub(crate) read_again: Vec<PathBuf>,
    /// Protected paths, normalised and ASCII lower-cased (fail closed on a
    /// case-insensitive file system).
    pub(crate) protect: Vec<Vec<u8>>,
    /// Device and inode of each protected path that existed at launch.
    pub(crate) inodes: HashSet<(u64, u64)>,
    /// Device and inode of each read-denied path that existed at launch.
    pub(crate) deny_inodes: HashSet<(u64, u64)>,
    /// Ports on 127.0.0.1 that may be reached.
    pub(crate) tcp_ports: Vec<u16>,
}

/// A path without `..` components, doubled or trailing slashes (`.`
/// components are dropped, as [`Path::components`] drops them).
fn normal(option: &'static str, p: &OsString) -> Result<PathBuf, Error> {
    let bad = |reason: &'static str| -> Error {
        ErrorKind::InvalidHostPath {
            option,
            path: p.to_string_lossy().chars().take(256).collect(),
            reason,
        }
        .into()
    };
    if !p.as_encoded_bytes().starts_with(b"/") {
        return Err(bad("not an absolute path"));
    }
    let mut out = PathBuf::from("/");
    for c in Path::new(p).components() {
        match c {
            Component::RootDir => {}
            Component::Normal(c) => out.push(c),
            _ => return Err(bad("has a .. component")),
        }
    }
    Ok(out)
}

/// The device and inode of what `p` names now (symbolic links followed).
#[cfg(unix)]
fn inode_of(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Off Unix there are no inodes to compare (the guard does not run there).
#[cfg(not(unix))]
fn inode_of(_: &Path) -> Option<(u64, u64)> {
    None
}

#[cfg(unix)]
fn os_from_bytes(b: &[u8]) -> OsString {
    use std::os::unix::ffi::OsStrExt as _;
    std::ffi::OsStr::from_bytes(b).to_owned()
}

/// Off Unix the guard does not run; paths are taken as UTF-8.
#[cfg(not(unix))]
fn os_from_bytes(b: &[u8]) -> OsString {
    String::from_utf8_lossy(b).into_owned().into()
}

fn bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

fn under(path: &[u8], root: &[u8]) -> bool {
    root == b"/"
        || path == root
        || (path.len() > root.len() && path.starts_with(root) && path[root.len()] == b'/')
}

impl HostRules {
    /// Checks `h`'s paths (absolute, no `.` or `..`) and records the device
    /// and inode of each protected path that exists now.
    pub fn new(h: &sandbox_core::HostConfinement) -> Result<HostRules, Error> {
        let paths = |option: &'static str, list: &[OsString]| -> Result<Vec<PathBuf>, Error> {
            list.iter().map(|p| normal(option, p)).collect()
        };
        let mut protect = Vec::with_capacity(h.protect.len());
        let mut inodes = HashSet::new();
        for p in &h.protect {
            let n = normal("--protect", p)?;
            if let Some(id) = inode_of(&n) {
                inodes.insert(id);
            }
            protect.push(bytes(&n).to_ascii_lowercase());
        }
        let read_deny = paths("--read-deny", &h.read_deny)?;
        let deny_inodes = read_deny.iter().filter_map(|p| inode_of(p)).collect();
        Ok(HostRules {
            writable: paths("--write", &h.writable)?,
            read_deny,
            read_again: paths("--read-again", &h.read_again)?,
            protect,
            inodes,
            deny_inodes,
            tcp_ports: h.tcp_ports.clone(),
        })
    }

    /// Protects one more path from now on (a running guard's update,
    /// [`sandbox_core::GuardUpdate::Protect`]): by path, and by device and
    /// inode when it exists now. Refused for a path that is not absolute
    /// and normal, and past [`sandbox_core::MAX_UPDATES`] added paths.
    pub fn add_protected(&mut self, path: &[u8]) -> Result<(), Error> {
        let raw = os_from_bytes(path);
        let n = normal("--updates-fd", &raw)?;
        if self.protect.len()
            >= sandbox_core::NameGuardInvocation::MAX_HOST_VALUES + sandbox_core::MAX_UPDATES
        {
            return Err(ErrorKind::InvalidHostPath {
                option: "--updates-fd",
                path: String::from_utf8_lossy(&path[..path.len().min(256)]).into_owned(),
                reason: "more protected paths than the limit",
            }
            .into());
        }
        if let Some(id) = inode_of(&n) {
            self.inodes.insert(id);
        }
        self.protect.push(bytes(&n).to_ascii_lowercase());
        Ok(())
    }

    /// Protects everything from now on: what a guard does when it cannot
    /// take on a path it was sent (it fails closed).
    pub fn protect_everything(&mut self) {
        self.protect.push(b"/".to_vec());
    }

    /// Whether `path` (absolute) is a protected path or below one.
    pub fn protects(&self, path: &[u8]) -> bool {
        let path = path.to_ascii_lowercase();
        self.protect.iter().any(|p| under(&path, p))
    }

    /// Whether a protected path lies strictly below `path` (moving or
    /// removing `path` would move or remove it).
    pub fn protects_below(&self, path: &[u8]) -> bool {
        let path = path.to_ascii_lowercase();
        self.protect
            .iter()
            .any(|p| p.as_slice() != path.as_slice() && under(p, &path))
    }

    /// Whether the file with this device and inode was a protected path at
    /// launch.
    pub fn protects_inode(&self, id: (u64, u64)) -> bool {
        self.inodes.contains(&id)
    }

    /// Whether the directory at `path` (absolute), or with this device and
    /// inode, may not be listed: a read-denied path or one below it, unless
    /// a path read again holds it. (Landlock's listing right, granted on a
    /// directory above a secret so that it can be listed, holds for the
    /// secret too; the supervisor refuses that listing instead.)
    pub fn hides_listing(&self, path: &[u8], id: Option<(u64, u64)>) -> bool {
        if id.is_some_and(|id| self.deny_inodes.contains(&id)) {
            return true;
        }
        self.read_deny.iter().any(|d| under(path, bytes(d)))
            && !self.read_again.iter().any(|a| under(path, bytes(a)))
    }

    /// Whether `port` on 127.0.0.1 may be reached.
    pub fn allows_tcp(&self, port: u16) -> bool {
        self.tcp_ports.contains(&port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(protect: &[&str]) -> HostRules {
        HostRules::new(&sandbox_core::HostConfinement {
            protect: protect.iter().map(Into::into).collect(),
            tcp_ports: vec![3128],
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn protection_covers_the_path_and_below_and_ignores_case() {
        let r = rules(&["/w/.git/hooks", "/w/.bashrc/"]);
        for (path, want) in [
            ("/w/.git/hooks", true),
            ("/w/.git/hooks/pre-commit", true),
            ("/w/.GIT/Hooks/x", true),
            ("/w/.bashrc", true),
            ("/w/.git/hooksx", false),
            ("/w/.git", false),
            ("/w/other", false),
        ] {
            assert_eq!(r.protects(path.as_bytes()), want, "{path}");
        }
        for (path, want) in [
            ("/w/.git", true),
            ("/w", true),
            ("/", true),
            ("/w/.git/hooks", false),
            ("/w/.gi", false),
            ("/x", false),
        ] {
            assert_eq!(r.protects_below(path.as_bytes()), want, "{path}");
        }
        assert!(r.allows_tcp(3128) && !r.allows_tcp(3129));
    }

    #[test]
    fn a_read_denied_directory_and_what_is_below_it_are_not_listed() {
        let r = HostRules::new(&sandbox_core::HostConfinement {
            read_deny: vec!["/h/.ssh".into(), "/h/.config/gh".into()],
            read_again: vec!["/h/.ssh/public".into()],
            ..Default::default()
        })
        .unwrap();
        for (path, want) in [
            ("/h/.ssh", true),
            ("/h/.ssh/keys", true),
            ("/h/.ssh/public", false),
            ("/h/.ssh/public/sub", false),
            ("/h/.config/gh", true),
            ("/h/.config", false),
            ("/h", false),
            ("/", false),
            ("/h/.sshx", false),
        ] {
            assert_eq!(r.hides_listing(path.as_bytes(), None), want, "{path}");
        }
        let mut r = r;
        r.deny_inodes.insert((1, 2));
        assert!(r.hides_listing(b"/elsewhere", Some((1, 2))), "by inode");
        assert!(!r.hides_listing(b"/elsewhere", Some((1, 3))));
    }

    #[test]
    fn relative_and_dotted_paths_are_refused() {
        for bad in ["w", "/w/../etc", ""] {
            let e = HostRules::new(&sandbox_core::HostConfinement {
                protect: vec![bad.into()],
                ..Default::default()
            })
            .unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::InvalidHostPath { .. }),
                "{bad}: {e}"
            );
        }
    }
}
