//! The breadth-first walk itself: one depth at a time, each depth's
//! directories read (or reused from an earlier walk) by one or a few threads.

use super::list::{Scratch, list};
use super::stamp::{self, Recorder, Stamp};
use super::{Listing, RepoSearch, RepoSearchEnd, RepoSearchRecord, Seen};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A depth with fewer directories than this is read on the calling thread:
/// a thread's start costs about as much as reading a few directories.
const SHARE_FROM: usize = 64;
/// At most this many threads read one depth.
const MAX_READERS: usize = 4;

/// How a walk reads each directory.
#[derive(Clone, Copy)]
pub(super) enum How<'a> {
    /// Read every directory.
    Plain,
    /// Reuse an earlier walk's reading of every unchanged directory, read
    /// the others, and record both for a later walk.
    Record(&'a Recorder, &'a RepoSearchRecord),
}

/// What a walk found and did.
pub(super) struct WalkOut {
    pub(super) search: RepoSearch,
    pub(super) record: RepoSearchRecord,
    /// Directories opened and read (the others were reused).
    #[cfg_attr(
        not(all(test, target_os = "linux")),
        allow(dead_code, reason = "counted for the tests, which run on Linux")
    )]
    pub(super) read: usize,
}

/// One directory, read or reused.
#[derive(Debug, Default)]
struct Visited {
    listing: Arc<Listing>,
    read: bool,
    stamp: Option<Stamp>,
}

pub(super) fn walk(roots: &[String], max_depth: usize, max_dirs: usize, how: How<'_>) -> WalkOut {
    let mut record = RepoSearchRecord::default();
    let mut read = 0usize;
    let mut found: Vec<String> = Vec::new();
    let mut budget = max_dirs;
    let mut level: Vec<PathBuf> = roots.iter().map(PathBuf::from).collect();
    let mut end = RepoSearchEnd::Complete;
    for depth in 0..=max_depth {
        if level.is_empty() {
            break;
        }
        if level.len() > budget {
            end = RepoSearchEnd::DirectoryLimit {
                unread: level.len() - budget,
            };
            level.truncate(budget);
        }
        budget -= level.len();
        let descend = depth < max_depth;
        let visits = read_level(&level, depth == 0, descend, how);
        let mut next = Vec::new();
        for (dir, visit) in level.iter().zip(visits) {
            let Visited {
                listing,
                read: was_read,
                stamp,
            } = visit;
            read += usize::from(was_read);
            if let Some(stamp) = stamp {
                let seen = Seen {
                    stamp,
                    descend,
                    listing: Arc::clone(&listing),
                };
                record.seen.insert(dir.clone(), seen);
            }
            if listing.has_git {
                let s = dir.to_string_lossy().into_owned();
                if !found.contains(&s) {
                    found.push(s);
                }
            }
            next.extend(listing.subdirs.iter().cloned());
        }
        if end != RepoSearchEnd::Complete {
            break;
        }
        level = next;
    }
    WalkOut {
        search: RepoSearch { repos: found, end },
        record,
        read,
    }
}

/// One directory: its earlier reading when it is unchanged since, else a
/// reading now.
fn visit(dir: &Path, root: bool, descend: bool, scratch: &mut Scratch, how: How<'_>) -> Visited {
    let recorder = match how {
        How::Plain => None,
        How::Record(recorder, earlier) => {
            if let Some(seen) = earlier.seen.get(dir)
                && seen.descend == descend
                && stamp::unchanged(dir, root, &seen.stamp)
            {
                // Still trusted: any later change moves the change time.
                return Visited {
                    listing: Arc::clone(&seen.listing),
                    read: false,
                    stamp: Some(seen.stamp),
                };
            }
            Some(recorder)
        }
    };
    let (listing, stamp) = list(dir, root, descend, scratch, recorder);
    Visited {
        listing: Arc::new(listing),
        read: true,
        stamp,
    }
}

/// Reads every directory of one depth; the listings come back in the
/// order of `dirs`.
fn read_level(dirs: &[PathBuf], roots: bool, descend: bool, how: How<'_>) -> Vec<Visited> {
    let readers = if dirs.len() < SHARE_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_READERS)
    };
    if readers <= 1 {
        let mut scratch = Scratch::new();
        return dirs
            .iter()
            .map(|d| visit(d, roots, descend, &mut scratch, how))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, Visited)>> = std::thread::scope(|scope| {
        let read = || {
            let mut out = Vec::new();
            let mut scratch = Scratch::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dir) = dirs.get(i) else { break };
                out.push((i, visit(dir, roots, descend, &mut scratch, how)));
            }
            out
        };
        let helpers: Vec<_> = (1..readers).map(|_| scope.spawn(read)).collect();
        let mut parts = vec![read()];
        for h in helpers {
            // A reader that panicked read nothing more; what it had read
            // is lost with it and those directories count as unreadable.
            if let Ok(part) = h.join() {
                parts.push(part);
            }
        }
        parts
    });
    let mut slots: Vec<Option<Visited>> = (0..dirs.len()).map(|_| None).collect();
    for (i, visited) in parts.iter_mut().flat_map(std::mem::take) {
        if let Some(slot) = slots.get_mut(i) {
            *slot = Some(visited);
        }
    }
    slots.into_iter().map(Option::unwrap_or_default).collect()
}
