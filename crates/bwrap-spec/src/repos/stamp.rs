//! A directory's stamp: what tells a later search that a directory still
//! lists what it listed, without reading it again.
//!
//! A directory's change time (`ctime`) moves whenever an entry is added,
//! removed or renamed in it, and also when its times or owner are set, so
//! the sandboxed process cannot put it back (setting the change time takes
//! setting the clock). The same device, inode and change time therefore
//! mean the same entries, with two exceptions this module guards against:
//!
//! - A change in the same clock tick as the one before it may leave the
//!   change time as it was. A directory is only trusted when its change
//!   time is older than the start of the recording walk by a margin far
//!   longer than a tick, so that every later change gives a later time.
//! - A network or user-space file system may hand out cached attributes.
//!   Only directories on local file systems whose change times the kernel
//!   keeps itself (ext2/3/4, XFS, Btrfs, tmpfs, F2FS) are trusted;
//!   anywhere else the directory is read again.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// The identity and change time of one directory.
#[cfg_attr(
    not(any(target_os = "linux", target_os = "android")),
    allow(dead_code, reason = "stamps are taken on Linux only")
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    ctime: (i128, i128),
}

/// How long before a recording walk's start a directory must have last
/// changed to be trusted: many clock ticks (a tick is 10 ms at most). A
/// later change is seen when its time differs from the recorded one, so a
/// clock set back later does not hide it unless it lands on the very same
/// nanosecond.
pub(super) const TRUST_MARGIN: Duration = Duration::from_secs(2);

/// Decides, during a recording walk, which directories' stamps may be
/// trusted later.
#[cfg_attr(
    not(any(target_os = "linux", target_os = "android")),
    allow(dead_code, reason = "stamps are taken on Linux only")
)]
pub(super) struct Recorder {
    /// Change times before this (seconds, nanoseconds since the epoch)
    /// are old enough.
    before: (i128, i128),
    /// Whether each device met so far holds a trusted file system.
    devices: std::sync::Mutex<Vec<(u64, bool)>>,
}

impl Recorder {
    /// A recorder for a walk starting at `start`, trusting change times at
    /// least `margin` older.
    pub(super) fn new(start: SystemTime, margin: Duration) -> Recorder {
        let before = start
            .checked_sub(margin)
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .map_or((0, 0), |d| {
                (i128::from(d.as_secs()), i128::from(d.subsec_nanos()))
            });
        Recorder {
            before,
            devices: std::sync::Mutex::new(Vec::new()),
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use super::{Recorder, Stamp};
    use rustix::fd::AsFd;
    use rustix::fs::{AtFlags, FileType, Stat};
    use std::path::Path;

    fn stamp_of(st: &Stat) -> Option<Stamp> {
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return None;
        }
        Some(Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            ctime: (i128::from(st.st_ctime), i128::from(st.st_ctime_nsec)),
        })
    }

    /// The stamp of the directory open as `fd`, when `recorder` may trust
    /// it later. Taken before the directory is read, so that a change
    /// between the two moves the change time past the stamp.
    pub(in super::super) fn trusted(fd: impl AsFd, recorder: &Recorder) -> Option<Stamp> {
        let st = rustix::fs::fstat(&fd).ok()?;
        let stamp = stamp_of(&st)?;
        if stamp.ctime >= recorder.before {
            return None;
        }
        let known = recorder
            .devices
            .lock()
            .ok()?
            .iter()
            .find(|(dev, _)| *dev == stamp.dev)
            .map(|(_, ok)| *ok);
        let local = match known {
            Some(ok) => ok,
            None => {
                let ok = rustix::fs::fstatfs(&fd).is_ok_and(|fs| {
                    // ext2/3/4, XFS, Btrfs, tmpfs, F2FS.
                    matches!(
                        fs.f_type,
                        0xEF53 | 0x5846_5342 | 0x9123_683E | 0x0102_1994 | 0xF2F5_2010
                    )
                });
                if let Ok(mut devices) = recorder.devices.lock() {
                    devices.push((stamp.dev, ok));
                }
                ok
            }
        };
        local.then_some(stamp)
    }

    /// The stamp `dir` has now: a root may be reached through a symlink,
    /// a directory below one may not.
    pub(in super::super) fn current(dir: &Path, root: bool) -> Option<Stamp> {
        let flags = if root {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let st = rustix::fs::statat(rustix::fs::CWD, dir, flags).ok()?;
        stamp_of(&st)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    use super::Stamp;
    use std::path::Path;

    /// Elsewhere than Linux a directory is always read again.
    pub(in super::super) fn current(_dir: &Path, _root: bool) -> Option<Stamp> {
        None
    }
}

pub(super) use imp::*;

/// Whether `dir` still has the stamp `then`.
pub(super) fn unchanged(dir: &Path, root: bool, then: &Stamp) -> bool {
    current(dir, root).is_some_and(|now| now == *then)
}
