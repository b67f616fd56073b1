//! The calling thread: facts read from its `/proc` entry on demand, and
//! strings read from its memory.

use crate::PATH_MAX;
use crate::sys;
use std::cell::RefCell;
use std::os::fd::{AsRawFd, OwnedFd};

/// Most `/proc/TID/status` files kept open between notifications.
const MAX_STATUS_FILES: usize = 64;
/// Bytes of a status file read: its first lines (`Name`, `Umask`, `State`,
/// `Tgid`) are all the supervisor needs.
const STATUS_PREFIX: usize = 1024;

/// The callers' `/proc/TID/status` files, kept open so that a notification
/// costs one `pread` instead of an open, a read and a close. An open file
/// stays bound to the thread it was opened for: once that thread is gone
/// reading it fails, and a new thread given the same id gets a file of its
/// own, opened anew.
#[derive(Default)]
pub(super) struct StatusFiles {
    open: RefCell<Vec<(u32, OwnedFd)>>,
}

impl StatusFiles {
    /// The first bytes of `tid`'s status file, into `buf`.
    fn read(&self, tid: u32, buf: &mut [u8]) -> Result<usize, i32> {
        let mut open = self.open.borrow_mut();
        if let Some(i) = open.iter().position(|(t, _)| *t == tid) {
            match sys::pread_start(open[i].1.as_raw_fd(), buf) {
                Ok(n) if n > 0 => return Ok(n),
                _ => {
                    open.remove(i);
                }
            }
        }
        let path = cstring(format!("/proc/{tid}/status").as_bytes())?;
        let fd = sys::openat(libc::AT_FDCWD, &path, libc::O_RDONLY | libc::O_CLOEXEC, 0)?;
        let n = sys::pread_start(fd.as_raw_fd(), buf)?;
        if open.len() >= MAX_STATUS_FILES {
            open.remove(0);
        }
        open.push((tid, fd));
        Ok(n)
    }
}

/// Most callers whose umask is remembered.
const MAX_KNOWN_UMASKS: usize = 64;
/// Most `umask` calls waited for at once; past it nothing is remembered
/// again.
const MAX_CHANGING: usize = 64;

/// The callers' umasks, remembered between notifications, so that a
/// creation costs no read of `/proc/TID/status` (the kernel formats the
/// whole file for each read).
///
/// A umask changes only by the `umask` call, which the filter sends here
/// ([`crate::syscalls::Role::UmaskChange`]) before it runs. Then every
/// remembered mask is forgotten (threads and `CLONE_FS` children share
/// one), and nothing is remembered until the caller's next notification,
/// which it can only make once its `umask` call has returned, or until it
/// is gone. Each entry holds a pidfd of its thread: a thread id given anew
/// to another thread finds the old one exited and its entry dropped.
#[derive(Default)]
pub(super) struct Umasks {
    known: RefCell<Vec<(u32, u32, OwnedFd)>>,
    /// Callers whose `umask` call may still be running, with a pidfd when
    /// one could be opened.
    changing: RefCell<Vec<(u32, Option<OwnedFd>)>>,
    /// More `umask` calls at once than followed: never remember again.
    given_up: std::cell::Cell<bool>,
}

impl Umasks {
    /// A notification from `tid`: any `umask` call it made has returned.
    pub(super) fn seen(&self, tid: u32) {
        let mut changing = self.changing.borrow_mut();
        if !changing.is_empty() {
            changing.retain(|(t, _)| *t != tid);
        }
    }

    /// `tid` is about to change its umask: forget every mask, and remember
    /// none until its call has returned.
    pub(super) fn changing(&self, tid: u32) {
        self.known.borrow_mut().clear();
        let mut changing = self.changing.borrow_mut();
        if changing.len() >= MAX_CHANGING {
            self.given_up.set(true);
            return;
        }
        let fd = i32::try_from(tid).ok().and_then(|t| {
            sys::pidfd_open_task(t, true)
                .or_else(|_| sys::pidfd_open_task(t, false))
                .ok()
        });
        changing.push((tid, fd));
    }

    /// The remembered umask of `tid`, if its thread is the one it was
    /// read for.
    fn known(&self, tid: u32) -> Option<u32> {
        let mut known = self.known.borrow_mut();
        let i = known.iter().position(|(t, _, _)| *t == tid)?;
        if sys::pidfd_exited(known[i].2.as_raw_fd()) {
            known.swap_remove(i);
            return None;
        }
        Some(known[i].1)
    }

    /// Remember `umask`, just read for `tid` (of process `tgid`), when no
    /// `umask` call may be running; `still_valid` says whether the
    /// notification is still pending, which proves the pidfd opened names
    /// the caller and no thread that took its id since.
    fn remember(&self, tid: u32, tgid: u32, umask: u32, still_valid: impl FnOnce() -> bool) {
        if self.given_up.get() || !self.settled() {
            return;
        }
        let Ok(t) = i32::try_from(tid) else { return };
        let Ok(fd) = sys::pidfd_open_task(t, tid == tgid) else {
            return;
        };
        if !still_valid() {
            return;
        }
        let mut known = self.known.borrow_mut();
        if known.len() >= MAX_KNOWN_UMASKS {
            known.remove(0);
        }
        known.push((tid, umask, fd));
    }

    /// No `umask` call may be running: every caller that made one has been
    /// seen since, or has exited.
    fn settled(&self) -> bool {
        let mut changing = self.changing.borrow_mut();
        changing.retain(|(_, fd)| {
            fd.as_ref()
                .is_none_or(|fd| !sys::pidfd_exited(fd.as_raw_fd()))
        });
        changing.is_empty()
    }
}

/// Facts about the calling thread, read from `/proc` on demand.
pub(super) struct Target<'s> {
    pub(super) tid: u32,
    pub(super) status: Option<(u32, u32)>,
    pub(super) files: &'s StatusFiles,
    pub(super) umasks: &'s Umasks,
    /// Whether the notification being handled is still pending.
    pub(super) still_valid: &'s dyn Fn() -> bool,
}

impl Target<'_> {
    pub(super) fn status(&mut self) -> Result<(u32, u32), i32> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let mut buf = [0u8; STATUS_PREFIX];
        let n = self.files.read(self.tid, &mut buf)?;
        let s = parse_status(&buf[..n]).ok_or(libc::ESRCH)?;
        self.status = Some(s);
        Ok(s)
    }

    /// The caller's umask: remembered, else read from its status file.
    pub(super) fn umask(&mut self) -> Result<u32, i32> {
        if let Some(m) = self.umasks.known(self.tid) {
            return Ok(m);
        }
        let (tgid, umask) = self.status()?;
        self.umasks
            .remember(self.tid, tgid, umask, || (self.still_valid)());
        Ok(umask)
    }

    /// `/proc/self` and `/proc/thread-self` name the caller, not the
    /// supervisor: rewrite that prefix, and `/dev/fd`, `/dev/stdin`,
    /// `/dev/stdout`, `/dev/stderr` (links into `/proc/self/fd`) to the
    /// caller's descriptor directory. The final component is unchanged.
    pub(super) fn rewrite(&mut self, path: Vec<u8>) -> Result<Vec<u8>, i32> {
        // The standard links into `/proc/self/fd`.
        for (prefix, fd) in [
            (&b"/dev/fd"[..], ""),
            (&b"/dev/stdin"[..], "/0"),
            (&b"/dev/stdout"[..], "/1"),
            (&b"/dev/stderr"[..], "/2"),
        ] {
            if path.starts_with(prefix)
                && (path.len() == prefix.len() || path[prefix.len()] == b'/')
            {
                let tgid = self.status()?.0;
                let mut out = format!("/proc/{tgid}/fd{fd}").into_bytes();
                out.extend_from_slice(&path[prefix.len()..]);
                return Ok(out);
            }
        }
        for (prefix, thread) in [
            (&b"/proc/self"[..], false),
            (&b"/proc/thread-self"[..], true),
        ] {
            if path.starts_with(prefix)
                && (path.len() == prefix.len() || path[prefix.len()] == b'/')
            {
                let tgid = self.status()?.0;
                let mut out = if thread {
                    format!("/proc/{tgid}/task/{}", self.tid).into_bytes()
                } else {
                    format!("/proc/{tgid}").into_bytes()
                };
                out.extend_from_slice(&path[prefix.len()..]);
                return Ok(out);
            }
        }
        Ok(path)
    }
}

/// The thread group id and umask from the start of a status file; only
/// whole lines count. A missing umask line (kernels before 4.7) reads as
/// the usual 022.
pub(crate) fn parse_status(text: &[u8]) -> Option<(u32, u32)> {
    let (mut tgid, mut umask) = (None, None);
    let whole = &text[..text.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1)];
    for line in whole.split(|&c| c == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        if let Some(v) = line.strip_prefix("Tgid:") {
            tgid = v.trim().parse::<u32>().ok();
        } else if let Some(v) = line.strip_prefix("Umask:") {
            umask = u32::from_str_radix(v.trim(), 8).ok();
        }
    }
    Some((tgid?, umask.unwrap_or(0o022)))
}

/// Read a NUL-terminated string of at most [`PATH_MAX`] bytes from the
/// caller's memory, one page at a time (a string may end just before an
/// unmapped page).
pub(super) fn read_c_string(tid: u32, addr: u64) -> Result<Vec<u8>, i32> {
    if addr == 0 {
        return Err(libc::EFAULT);
    }
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < PATH_MAX {
        let page_left = 4096 - (at % 4096) as usize;
        let want = page_left.min(PATH_MAX - out.len());
        let chunk = sys::read_target(tid, at, want)?;
        if let Some(i) = chunk.iter().position(|&c| c == 0) {
            out.extend_from_slice(&chunk[..i]);
            return Ok(out);
        }
        out.extend_from_slice(&chunk);
        at = at.checked_add(want as u64).ok_or(libc::EFAULT)?;
    }
    Err(libc::ENAMETOOLONG)
}

/// `b` as a C string; a NUL inside is `EINVAL`.
pub(super) fn cstring(b: &[u8]) -> Result<std::ffi::CString, i32> {
    std::ffi::CString::new(b).map_err(|_| libc::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::parse_status;

    #[test]
    fn status_lines() {
        let text = b"Name:\ttar\nUmask:\t0027\nState:\tS (sleeping)\nTgid:\t41\nPid:\t42\n";
        assert_eq!(parse_status(text), Some((41, 0o027)));
        // A cut line does not count, and no umask line reads as 022.
        assert_eq!(
            parse_status(b"Name:\tx\nTgid:\t7\nPid:\t7"),
            Some((7, 0o022))
        );
        assert_eq!(parse_status(b"Name:\tx\nTgid:\t7"), None);
        assert_eq!(parse_status(b"Name:\t\xff\nTgid:\t9\n"), Some((9, 0o022)));
    }

    /// A child process that runs until killed, and its pid.
    fn sleeper() -> (std::process::Child, u32) {
        let child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        (child, pid)
    }

    #[test]
    fn a_umask_is_remembered_only_while_no_umask_call_may_be_running() {
        let umasks = super::Umasks::default();
        let me = std::process::id();
        let (mut other, other_pid) = sleeper();
        umasks.remember(me, me, 0o022, || true);
        assert_eq!(umasks.known(me), Some(0o022));
        // Another caller's umask call: everything is forgotten, and nothing
        // is remembered while it may still be running.
        umasks.changing(other_pid);
        assert_eq!(umasks.known(me), None);
        umasks.remember(me, me, 0o077, || true);
        assert_eq!(umasks.known(me), None);
        // Its next notification shows that the call has returned.
        umasks.seen(other_pid);
        umasks.remember(me, me, 0o077, || true);
        assert_eq!(umasks.known(me), Some(0o077));
        // A caller that exits instead settles it as well.
        umasks.changing(other_pid);
        umasks.remember(me, me, 0o022, || true);
        assert_eq!(umasks.known(me), None);
        other.kill().unwrap();
        other.wait().unwrap();
        umasks.remember(me, me, 0o022, || true);
        assert_eq!(umasks.known(me), Some(0o022));
        // A notification gone meanwhile leaves nothing remembered.
        umasks.changing(me);
        umasks.seen(me);
        umasks.remember(me, me, 0o027, || false);
        assert_eq!(umasks.known(me), None);
    }

    #[test]
    fn a_remembered_umask_is_dropped_with_its_thread() {
        // The id of an exited caller may be given to a new one: its mask
        // is not.
        let umasks = super::Umasks::default();
        let (mut child, pid) = sleeper();
        umasks.remember(pid, pid, 0o077, || true);
        assert_eq!(umasks.known(pid), Some(0o077));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(umasks.known(pid), None);
        assert!(umasks.known.borrow().is_empty());
    }

    #[test]
    fn a_kept_status_file_answers_for_its_thread_only() {
        let files = super::StatusFiles::default();
        let umasks = super::Umasks::default();
        let pid = std::process::id();
        let mut t = super::Target {
            tid: pid,
            status: None,
            files: &files,
            umasks: &umasks,
            still_valid: &|| true,
        };
        assert_eq!(t.status().map(|s| s.0), Ok(pid));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (end_tx, end_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let link = std::fs::read_link("/proc/thread-self").unwrap();
            let tid: u32 = link.file_name().unwrap().to_str().unwrap().parse().unwrap();
            tid_tx.send(tid).unwrap();
            let _ = end_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        // The thread's own file, read twice through the one kept open.
        let mut buf = [0u8; 1024];
        for _ in 0..2 {
            let n = files.read(tid, &mut buf).unwrap();
            assert_eq!(parse_status(&buf[..n]).map(|s| s.0), Some(pid));
        }
        assert_eq!(files.open.borrow().len(), 2);
        end_tx.send(()).unwrap();
        thread.join().unwrap();
        // Once the thread is gone its kept file is dropped, and its id
        // reads as nothing. A joined thread may still be finishing its exit
        // for a moment (the kernel, or qemu-user, wakes the joiner first).
        let gone = (0..200).any(|_| {
            let failed = files.read(tid, &mut buf).is_err();
            if !failed {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            failed
        });
        assert!(gone, "thread {tid} still reads as alive");
        assert_eq!(files.open.borrow().len(), 1);
    }
}
