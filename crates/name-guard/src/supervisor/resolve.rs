//! From a path in the caller's view to the directory the name is created
//! in: the starting directory (the caller's root, working directory or
//! descriptor, through `/proc`), the parent opened with `O_PATH`, and the
//! final component the decision is made on.

use super::{AT_FDCWD, Supervisor};
use crate::supervisor::target::Target;
use crate::sys;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

pub(super) use super::target::cstring;

/// Where a path is resolved from.
pub(super) enum Base {
    /// A directory the supervisor holds open.
    Fd(OwnedFd),
    /// The caller's root, working directory or descriptor as its `/proc`
    /// link (`/proc/TID/cwd`, ...), opened together with the path that
    /// follows it: one lookup instead of opening the link first.
    Proc(String),
}

/// A directory to resolve a path from, and the path relative to it.
pub(super) struct Anchor {
    pub(super) base: Base,
    pub(super) rel: Vec<u8>,
}

impl Anchor {
    /// `openat(2)` of `rel` (a path relative to the base) from the base.
    pub(super) fn openat(&self, rel: &[u8], flags: i32, mode: u32) -> Result<OwnedFd, i32> {
        // As the kernel answers an empty path (not the base itself).
        if rel.is_empty() {
            return Err(libc::ENOENT);
        }
        match &self.base {
            Base::Fd(fd) => sys::openat(fd.as_raw_fd(), &cstring(rel)?, flags, mode),
            Base::Proc(link) => {
                let mut path = link.as_bytes().to_vec();
                if rel != b"." {
                    path.push(b'/');
                    path.extend_from_slice(rel);
                }
                sys::openat(AT_FDCWD, &cstring(&path)?, flags, mode)
            }
        }
    }
}

/// The parent directory of a name and the name itself (with a trailing
/// slash kept for the kernel, not for the decision).
pub(super) struct Resolved {
    pub(super) parent: OwnedFd,
    pub(super) name: Vec<u8>,
    pub(super) call_name: CString,
    /// The parent is in the caller's own `/proc/PID` (its descriptor
    /// directory, a thread's, ...): the name is one of its own entries, a
    /// magic link to one of its open files for `fd/N`.
    pub(super) caller_proc: bool,
}

/// Split a path into the directory part and the final component.
fn split(path: &[u8]) -> (Vec<u8>, Vec<u8>, bool) {
    let mut end = path.len();
    while end > 1 && path[end - 1] == b'/' {
        end -= 1;
    }
    let trimmed = &path[..end];
    let slash = end != path.len();
    if trimmed == b"/" {
        return (b"/".to_vec(), b".".to_vec(), false);
    }
    match trimmed.iter().rposition(|&c| c == b'/') {
        Some(i) => (trimmed[..=i].to_vec(), trimmed[i + 1..].to_vec(), slash),
        None => (b".".to_vec(), trimmed.to_vec(), slash),
    }
}

impl Supervisor {
    /// The starting directory of `path` for `dirfd` in the caller.
    pub(super) fn anchor(&self, t: &Target<'_>, dirfd: i32, path: Vec<u8>) -> Result<Anchor, i32> {
        if path.first() == Some(&b'/') {
            let rel: Vec<u8> = path.iter().copied().skip_while(|&c| c == b'/').collect();
            let rel = if rel.is_empty() { b".".to_vec() } else { rel };
            return Ok(Anchor {
                base: Base::Proc(format!("/proc/{}/root", t.tid)),
                rel,
            });
        }
        let base = if dirfd == AT_FDCWD {
            format!("/proc/{}/cwd", t.tid)
        } else if dirfd < 0 {
            return Err(libc::EBADF);
        } else {
            format!("/proc/{}/fd/{dirfd}", t.tid)
        };
        Ok(Anchor {
            base: Base::Proc(base),
            rel: path,
        })
    }

    pub(super) fn resolve(&self, t: &mut Target<'_>, a: &Anchor) -> Result<Resolved, i32> {
        if a.rel.is_empty() {
            return Err(libc::ENOENT);
        }
        let (dir, name, slash) = split(&a.rel);
        let dir = if dir.first() == Some(&b'/') {
            let d: Vec<u8> = dir.iter().copied().skip_while(|&c| c == b'/').collect();
            if d.is_empty() { b".".to_vec() } else { d }
        } else {
            dir
        };
        let parent = a.openat(&dir, libc::O_PATH | libc::O_DIRECTORY, 0)?;
        // The supervisor acts as itself: in procfs, a path such as
        // `/proc/PID/mem` of the supervisor would be its own, and no other
        // process's entries are the caller's to reach through it. Only the
        // caller's own entries are served (`/dev/stdout`, `/proc/self/fd/N`,
        // bash's `>(...)`, `/proc/self/oom_score_adj`).
        let caller_proc = if sys::is_procfs(parent.as_raw_fd()) {
            if !self.is_caller_proc_dir(t, &parent)? {
                return Err(libc::EACCES);
            }
            true
        } else {
            false
        };
        let mut call = name.clone();
        if slash {
            call.push(b'/');
        }
        Ok(Resolved {
            parent,
            call_name: cstring(&call)?,
            name,
            caller_proc,
        })
    }

    /// Whether the procfs directory `dir` is the calling process's
    /// `/proc/TGID` or a directory below it.
    fn is_caller_proc_dir(&self, t: &mut Target<'_>, dir: &OwnedFd) -> Result<bool, i32> {
        let Ok(path) = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())) else {
            return Ok(false);
        };
        let path = path.into_os_string().into_encoded_bytes();
        let tgid = t.status()?.0;
        // The process's own directory, or the calling thread's (`/proc/TID`
        // names a thread too).
        Ok([tgid, t.tid].iter().any(|id| {
            let own = format!("/proc/{id}");
            path.strip_prefix(own.as_bytes())
                .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
        }))
    }

    /// The absolute path of the name as the supervisor sees it: its parent
    /// directory's path joined with the final component, or `None` when the
    /// parent cannot be named.
    pub(super) fn full_path(r: &Resolved) -> Option<Vec<u8>> {
        let dir = std::fs::read_link(format!("/proc/self/fd/{}", r.parent.as_raw_fd())).ok()?;
        let mut full = dir.into_os_string().into_encoded_bytes();
        if full.last() != Some(&b'/') {
            full.push(b'/');
        }
        full.extend_from_slice(&r.name);
        Some(full)
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_paths() {
        assert_eq!(split(b"x.pem"), (b".".to_vec(), b"x.pem".to_vec(), false));
        assert_eq!(
            split(b"a/b/x.pem"),
            (b"a/b/".to_vec(), b"x.pem".to_vec(), false)
        );
        assert_eq!(split(b"/x.pem"), (b"/".to_vec(), b"x.pem".to_vec(), false));
        assert_eq!(
            split(b"a/x.pem//"),
            (b"a/".to_vec(), b"x.pem".to_vec(), true)
        );
        assert_eq!(split(b"/"), (b"/".to_vec(), b".".to_vec(), false));
        assert_eq!(split(b"a/.."), (b"a/".to_vec(), b"..".to_vec(), false));
    }
}
