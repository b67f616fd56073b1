//! Reading one directory: whether it holds `.git`, and which subdirectories
//! the walk goes into next.

use super::Listing;
#[cfg(any(target_os = "linux", target_os = "android"))]
use super::stamp;
use super::stamp::{Recorder, Stamp};
use std::ffi::OsStr;
use std::path::Path;

/// Directories that are never searched (large and never repositories of
/// their own that a host would run git in).
const SKIP: &[&str] = &["node_modules", "target", ".cache", ".venv", "__pycache__"];

/// Whether the walk goes into a subdirectory of this name.
pub(super) fn searched(name: &OsStr) -> bool {
    !SKIP.iter().any(|s| name == *s)
}

/// Room for one `getdents64` call: most directories fit in one.
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIRENT_BUFFER: usize = 32 * 1024;

/// A reader's buffer for directory entries, reused for every directory it
/// reads.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) struct Scratch(Vec<u8>);

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch(Vec::with_capacity(DIRENT_BUFFER))
    }
}

/// Lists one directory; an unreadable one lists as empty. A root may be
/// reached through a symlink; a directory below one is opened only if it
/// is not one (it could have been swapped for a symlink since its parent
/// was read). With a recorder, the directory's stamp is taken (before its
/// entries are read) when a later search may trust it.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn list(
    dir: &Path,
    root: bool,
    descend: bool,
    scratch: &mut Scratch,
    recorder: Option<&Recorder>,
) -> (Listing, Option<Stamp>) {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
    use std::os::unix::ffi::OsStrExt;

    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !root {
        flags |= OFlags::NOFOLLOW;
    }
    let mut listing = Listing::default();
    let Ok(fd) = rustix::fs::open(dir, flags, Mode::empty()) else {
        return (listing, None);
    };
    let stamp = recorder.and_then(|r| stamp::trusted(&fd, r));
    let mut entries = RawDir::new(&fd, scratch.0.spare_capacity_mut());
    while let Some(Ok(entry)) = entries.next() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        if name == ".git" {
            listing.has_git = true;
            continue;
        }
        if !descend || !searched(name) {
            continue;
        }
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            // The file system did not say (`DT_UNKNOWN`): ask the inode.
            FileType::Unknown => {
                rustix::fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
            }
            _ => false,
        };
        if is_dir {
            listing.subdirs.push(dir.join(name));
        }
    }
    listing.subdirs.sort_unstable();
    (listing, stamp)
}

/// No reusable buffer where `std::fs::read_dir` does the reading.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) struct Scratch;

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch
    }
}

/// Lists one directory; an unreadable one lists as empty. No stamps are
/// taken here.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) fn list(
    dir: &Path,
    _root: bool,
    descend: bool,
    _scratch: &mut Scratch,
    _recorder: Option<&Recorder>,
) -> (Listing, Option<Stamp>) {
    let mut listing = Listing::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (listing, None);
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == ".git" {
            listing.has_git = true;
            continue;
        }
        if descend && searched(&name) && entry.file_type().is_ok_and(|ft| ft.is_dir()) {
            listing.subdirs.push(entry.path());
        }
    }
    listing.subdirs.sort_unstable();
    (listing, None)
}
