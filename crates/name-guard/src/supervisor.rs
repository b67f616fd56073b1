//! The supervisor: receive a notification, read the path arguments once,
//! decide on the final component, perform the call itself and answer.

use crate::report::{self, DeniedCall};
use crate::rules::Rules;
use crate::sys::{self, Notif};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Longest path read from the guarded process, terminating NUL included.
pub const PATH_MAX: usize = 4096;
/// Most symbolic links followed for one creating open.
pub const MAX_SYMLINK_HOPS: usize = 40;
/// Most times a creating open is retried when a symbolic link appears at
/// its final component while it is being performed.
pub const MAX_RETRIES: usize = 8;
/// Largest `struct open_how` accepted from `openat2`.
const MAX_OPEN_HOW: usize = 512;
const OPEN_HOW_SIZE: usize = 24;

const AT_FDCWD: i32 = libc::AT_FDCWD;
const O_TMPFILE_BITS: i32 = 0o20_000_000;
const DENIED: i32 = libc::EACCES;
const RENAME_EXCHANGE: u32 = 1 << 1;
const RENAME_WHITEOUT: u32 = 1 << 2;

/// What to answer.
enum Reply {
    Val(i64),
    Fd(OwnedFd, bool),
    /// A worker thread answers (an open that may block, see
    /// [`Supervisor::open_fifo_elsewhere`]).
    Deferred,
}

/// Most opens of existing FIFOs waiting at once on worker threads; past
/// it, an open of a FIFO answers `EAGAIN` rather than stall the supervisor.
pub const MAX_WAITING_FIFO_OPENS: usize = 256;

/// A FIFO open waiting on a worker thread.
struct FifoWait {
    id: u64,
    parent: OwnedFd,
    name: CString,
    /// Whether the caller opens for writing (it waits for a reader).
    writer: bool,
}

type Res = Result<Reply, i32>;

/// Counters of what the supervisor did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Notifications answered.
    pub handled: u64,
    /// Calls refused because a rule matched.
    pub denied: u64,
    /// Denial report lines dropped because the report descriptor did not
    /// accept them without blocking (or failed).
    pub reports_dropped: u64,
}

/// Facts about the calling thread, read from `/proc` on demand.
struct Target {
    tid: u32,
    status: Option<(u32, u32)>,
}

impl Target {
    fn status(&mut self) -> Result<(u32, u32), i32> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.tid))
            .map_err(|e| e.raw_os_error().unwrap_or(libc::ESRCH))?;
        let mut tgid = None;
        let mut umask = None;
        for line in text.lines().take(64) {
            if let Some(v) = line.strip_prefix("Tgid:") {
                tgid = v.trim().parse::<u32>().ok();
            } else if let Some(v) = line.strip_prefix("Umask:") {
                umask = u32::from_str_radix(v.trim(), 8).ok();
            }
        }
        let s = (tgid.ok_or(libc::ESRCH)?, umask.unwrap_or(0o022));
        self.status = Some(s);
        Ok(s)
    }

    fn umask(&mut self) -> Result<u32, i32> {
        self.status().map(|s| s.1)
    }

    /// `/proc/self` and `/proc/thread-self` name the caller, not the
    /// supervisor: rewrite that prefix, and `/dev/fd`, `/dev/stdin`,
    /// `/dev/stdout`, `/dev/stderr` (links into `/proc/self/fd`) to the
    /// caller's descriptor directory. The final component is unchanged.
    fn rewrite(&mut self, path: Vec<u8>) -> Result<Vec<u8>, i32> {
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

fn cstring(b: &[u8]) -> Result<CString, i32> {
    CString::new(b).map_err(|_| libc::EINVAL)
}

fn open_path(path: &str, dir: bool) -> Result<OwnedFd, i32> {
    let flags = libc::O_PATH | if dir { libc::O_DIRECTORY } else { 0 };
    sys::openat(AT_FDCWD, &cstring(path.as_bytes())?, flags, 0)
}

/// A directory to resolve a path from, and the path relative to it.
struct Anchor {
    base: OwnedFd,
    rel: Vec<u8>,
}

/// The parent directory of a name and the name itself (with a trailing
/// slash kept for the kernel, not for the decision).
struct Resolved {
    parent: OwnedFd,
    name: Vec<u8>,
    call_name: CString,
    /// The parent is in the caller's own `/proc/PID` (its descriptor
    /// directory, a thread's, ...): the name is one of its own entries, a
    /// magic link to one of its open files for `fd/N`.
    caller_proc: bool,
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

/// Read a NUL-terminated string of at most [`PATH_MAX`] bytes from the
/// caller's memory, one page at a time (a string may end just before an
/// unmapped page).
fn read_c_string(tid: u32, addr: u64) -> Result<Vec<u8>, i32> {
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

/// The guard's state for one guarded process tree.
pub(crate) struct Supervisor<'a> {
    listener: RawFd,
    rules: &'a Rules,
    pub(crate) stats: Stats,
    refused: std::cell::Cell<u64>,
    /// The denial report descriptor (non-blocking).
    report_fd: Option<RawFd>,
    /// The unwritten end of a report line a short write left behind.
    pending: std::cell::RefCell<Vec<u8>>,
    dropped: std::cell::Cell<u64>,
    /// FIFO opens waiting on worker threads.
    waiting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// The same opens, to release those whose caller is gone.
    fifo_waits: std::sync::Arc<std::sync::Mutex<Vec<FifoWait>>>,
}

impl<'a> Supervisor<'a> {
    pub(crate) fn new(listener: RawFd, rules: &'a Rules, report_fd: Option<RawFd>) -> Self {
        Supervisor {
            listener,
            rules,
            stats: Stats::default(),
            refused: std::cell::Cell::new(0),
            report_fd,
            pending: std::cell::RefCell::new(Vec::new()),
            dropped: std::cell::Cell::new(0),
            waiting: std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            fifo_waits: std::sync::Arc::new(std::sync::Mutex::new(Vec::new())),
        }
    }

    /// Write what a short write left of a report line, without blocking.
    /// Returns whether nothing is left.
    fn flush_pending(&self, fd: RawFd) -> bool {
        let mut p = self.pending.borrow_mut();
        while !p.is_empty() {
            match sys::write_once(fd, &p) {
                Ok(0) => return false,
                Ok(n) => {
                    let n = n.min(p.len());
                    p.drain(..n);
                }
                Err(libc::EINTR) => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Best-effort: write one report line; a line that cannot be written
    /// at once is dropped and counted. A short write keeps the rest for the
    /// next report, so lines are never interleaved.
    fn report(&self, call: DeniedCall, path: &[u8]) {
        let Some(fd) = self.report_fd else { return };
        if !self.flush_pending(fd) {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        let line = report::format_denial_line(call, path);
        let mut tries = 0;
        loop {
            match sys::write_once(fd, &line) {
                Ok(n) if n >= line.len() => return,
                Ok(0) => break,
                Ok(n) => {
                    *self.pending.borrow_mut() = line[n..].to_vec();
                    return;
                }
                Err(libc::EINTR) if tries < 3 => tries += 1,
                Err(_) => break,
            }
        }
        self.dropped.set(self.dropped.get() + 1);
    }

    /// Give the rest of a cut report line a little time to be read when the
    /// guarded command ends; count it as dropped otherwise.
    pub(crate) fn finish_reports(&mut self) {
        if let Some(fd) = self.report_fd {
            for _ in 0..10 {
                if self.flush_pending(fd) {
                    break;
                }
                sys::poll_out(fd, 100);
            }
            if !self.pending.get_mut().is_empty() {
                self.pending.get_mut().clear();
                self.dropped.set(self.dropped.get() + 1);
            }
        }
        self.stats.reports_dropped += self.dropped.take();
    }

    /// Handle one notification completely.
    pub(crate) fn handle(&mut self, n: &Notif) {
        let mut t = Target {
            tid: n.pid,
            status: None,
        };
        let reply = self.dispatch(n, &mut t);
        self.stats.handled += 1;
        self.stats.denied += self.refused.take();
        self.stats.reports_dropped += self.dropped.take();
        let sent = match reply {
            Ok(Reply::Deferred) => Ok(()),
            Ok(Reply::Val(v)) => sys::notif_send(self.listener, n.id, Ok(v)),
            Err(e) => sys::notif_send(self.listener, n.id, Err(e)),
            Ok(Reply::Fd(fd, cloexec)) => {
                match sys::notif_addfd_send(self.listener, n.id, &fd, cloexec) {
                    Ok(_) => Ok(()),
                    Err(libc::ENOENT) => Ok(()),
                    Err(e) => sys::notif_send(self.listener, n.id, Err(e)),
                }
            }
        };
        // ENOENT: the caller is gone or was interrupted; nothing to answer.
        let _ = sent;
    }

    fn read_path(&self, t: &mut Target, addr: u64) -> Result<Vec<u8>, i32> {
        let raw = read_c_string(t.tid, addr)?;
        t.rewrite(raw)
    }

    /// The starting directory of `path` for `dirfd` in the caller.
    fn anchor(&self, t: &Target, dirfd: i32, path: Vec<u8>) -> Result<Anchor, i32> {
        if path.first() == Some(&b'/') {
            let rel: Vec<u8> = path.iter().copied().skip_while(|&c| c == b'/').collect();
            let rel = if rel.is_empty() { b".".to_vec() } else { rel };
            return Ok(Anchor {
                base: open_path(&format!("/proc/{}/root", t.tid), true)?,
                rel,
            });
        }
        let base = if dirfd == AT_FDCWD {
            open_path(&format!("/proc/{}/cwd", t.tid), true)?
        } else if dirfd < 0 {
            return Err(libc::EBADF);
        } else {
            open_path(&format!("/proc/{}/fd/{dirfd}", t.tid), false)?
        };
        Ok(Anchor { base, rel: path })
    }

    fn resolve(&self, t: &mut Target, a: &Anchor) -> Result<Resolved, i32> {
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
        let parent = sys::openat(
            a.base.as_raw_fd(),
            &cstring(&dir)?,
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )?;
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
    fn is_caller_proc_dir(&self, t: &mut Target, dir: &OwnedFd) -> Result<bool, i32> {
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
    fn full_path(r: &Resolved) -> Option<Vec<u8>> {
        let dir = std::fs::read_link(format!("/proc/self/fd/{}", r.parent.as_raw_fd())).ok()?;
        let mut full = dir.into_os_string().into_encoded_bytes();
        if full.last() != Some(&b'/') {
            full.push(b'/');
        }
        full.extend_from_slice(&r.name);
        Some(full)
    }

    fn denied(&self, r: &Resolved) -> bool {
        if self.rules.denies_name(&r.name) {
            return true;
        }
        if self.rules.has_path_rules() {
            // Fail closed when the parent cannot be named.
            return Self::full_path(r).is_none_or(|full| self.rules.denies_path(&full));
        }
        false
    }

    /// For a name that a rename or a symbolic link brings into being with
    /// whatever lies below it: also denied when a path rule lies below it.
    fn denied_with_below(&self, r: &Resolved) -> bool {
        if self.denied(r) {
            return true;
        }
        if self.rules.has_path_rules() {
            return Self::full_path(r).is_none_or(|full| self.rules.denies_ancestor(&full));
        }
        false
    }

    /// For calls that never replace an existing entry (mkdir, mknod,
    /// symlink, link): when the denied name already exists the kernel would
    /// answer `EEXIST`, and so does the guard, without a report (nothing was
    /// attempted that the rules forbid; `mkdir -p` through an existing
    /// directory keeps working). Otherwise a refusal.
    fn refuse_new(&self, call: DeniedCall, r: &Resolved) -> i32 {
        use std::os::unix::ffi::OsStrExt;
        let mut at = format!("/proc/self/fd/{}/", r.parent.as_raw_fd()).into_bytes();
        at.extend_from_slice(&r.name);
        if std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(&at)).is_ok() {
            return libc::EEXIST;
        }
        self.refuse(call, r)
    }

    /// A refusal of `call` because a rule matched the name `r`: counted and
    /// reported.
    fn refuse(&self, call: DeniedCall, r: &Resolved) -> i32 {
        self.refused.set(self.refused.get() + 1);
        if self.report_fd.is_some() {
            let path = Self::full_path(r).unwrap_or_else(|| r.name.clone());
            self.report(call, &path);
        }
        DENIED
    }

    fn valid(&self, n: &Notif) -> Result<(), i32> {
        if sys::notif_id_valid(self.listener, n.id) {
            Ok(())
        } else {
            Err(libc::ENOENT)
        }
    }

    fn dispatch(&self, n: &Notif, t: &mut Target) -> Res {
        let a = n.args;
        let fd = |i: usize| a[i] as i32;
        let nr = n.nr;
        if nr == libc::SYS_open || nr == libc::SYS_openat || nr == libc::SYS_creat {
            let (dirfd, p, flags, mode) = match nr {
                libc::SYS_open => (AT_FDCWD, a[0], a[1] as i32, a[2] as u32),
                libc::SYS_openat => (fd(0), a[1], a[2] as i32, a[3] as u32),
                _ => (
                    AT_FDCWD,
                    a[0],
                    libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                    a[1] as u32,
                ),
            };
            let call = if nr == libc::SYS_creat {
                DeniedCall::Creat
            } else {
                DeniedCall::Open
            };
            let path = self.read_path(t, p)?;
            self.valid(n)?;
            return self.open(n.id, t, self.anchor(t, dirfd, path)?, flags, mode, call);
        }
        if nr == libc::SYS_openat2 {
            let path = self.read_path(t, a[1])?;
            let size = a[3] as usize;
            if size < OPEN_HOW_SIZE {
                return Err(libc::EINVAL);
            }
            if size > MAX_OPEN_HOW {
                return Err(libc::E2BIG);
            }
            let how = sys::read_target(n.pid, a[2], size)?;
            if how[OPEN_HOW_SIZE..].iter().any(|&b| b != 0) {
                return Err(libc::E2BIG);
            }
            let word = |i: usize| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&how[i * 8..i * 8 + 8]);
                u64::from_ne_bytes(w)
            };
            let (flags, mode, resolve) = (word(0), word(1), word(2));
            if mode & !0o7777 != 0 {
                return Err(libc::EINVAL);
            }
            self.valid(n)?;
            if resolve != 0 {
                // Resolve restrictions apply to the whole path as the
                // caller's kernel walk would see it, which the supervisor's
                // own walk cannot reproduce: not performed here; callers
                // fall back to openat.
                return Err(libc::ENOSYS);
            }
            // Every openat2 comes here (its flags are in memory the filter
            // cannot read), creating or not: the same checked open, which
            // also keeps the supervisor's own /proc entries out of reach.
            let flags = i32::try_from(flags).map_err(|_| libc::EINVAL)?;
            let anchor = self.anchor(t, fd(0), path)?;
            return self.open(n.id, t, anchor, flags, mode as u32, DeniedCall::Open);
        }
        if nr == libc::SYS_mknod || nr == libc::SYS_mknodat {
            let (dirfd, p, mode, dev) = if nr == libc::SYS_mknod {
                (AT_FDCWD, a[0], a[1] as u32, a[2] & 0xffff_ffff)
            } else {
                (fd(0), a[1], a[2] as u32, a[3] & 0xffff_ffff)
            };
            let path = self.read_path(t, p)?;
            self.valid(n)?;
            let r = self.resolve(t, &self.anchor(t, dirfd, path)?)?;
            if self.denied(&r) {
                return Err(self.refuse_new(DeniedCall::Mknod, &r));
            }
            let old = sys::umask(t.umask()?);
            let res = sys::mknodat(r.parent.as_raw_fd(), &r.call_name, mode, dev);
            sys::umask(old);
            return res.map(|()| Reply::Val(0));
        }
        if nr == libc::SYS_rename || nr == libc::SYS_renameat || nr == libc::SYS_renameat2 {
            let (od, op, nd, np, flags) = match nr {
                libc::SYS_rename => (AT_FDCWD, a[0], AT_FDCWD, a[1], 0),
                libc::SYS_renameat => (fd(0), a[1], fd(2), a[3], 0),
                _ => (fd(0), a[1], fd(2), a[3], a[4] as u32),
            };
            let old = self.read_path(t, op)?;
            let new = self.read_path(t, np)?;
            self.valid(n)?;
            let o = self.resolve(t, &self.anchor(t, od, old)?)?;
            let r = self.resolve(t, &self.anchor(t, nd, new)?)?;
            if self.denied_with_below(&r) {
                return Err(self.refuse(DeniedCall::Rename, &r));
            }
            // An exchange gives the old name the new one's content, and a
            // whiteout leaves a device node under it: both create the old
            // name too.
            if flags & (RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 && self.denied_with_below(&o) {
                return Err(self.refuse(DeniedCall::Rename, &o));
            }
            return sys::renameat2(
                o.parent.as_raw_fd(),
                &o.call_name,
                r.parent.as_raw_fd(),
                &r.call_name,
                flags,
            )
            .map(|()| Reply::Val(0));
        }
        if nr == libc::SYS_link || nr == libc::SYS_linkat {
            let (od, op, nd, np, flags) = if nr == libc::SYS_link {
                (AT_FDCWD, a[0], AT_FDCWD, a[1], 0)
            } else {
                (fd(0), a[1], fd(2), a[3], a[4] as i32)
            };
            if flags & !(libc::AT_SYMLINK_FOLLOW | libc::AT_EMPTY_PATH) != 0 {
                return Err(libc::EINVAL);
            }
            let old = self.read_path(t, op)?;
            let new = self.read_path(t, np)?;
            self.valid(n)?;
            let r = self.resolve(t, &self.anchor(t, nd, new)?)?;
            if self.denied_with_below(&r) {
                return Err(self.refuse_new(DeniedCall::Link, &r));
            }
            let follow = flags & libc::AT_SYMLINK_FOLLOW;
            if old.is_empty() {
                if flags & libc::AT_EMPTY_PATH == 0 {
                    return Err(libc::ENOENT);
                }
                // The caller's descriptor itself, through its /proc link.
                let src = if od == AT_FDCWD {
                    format!("/proc/{}/cwd", t.tid)
                } else if od < 0 {
                    return Err(libc::EBADF);
                } else {
                    format!("/proc/{}/fd/{od}", t.tid)
                };
                return sys::linkat(
                    AT_FDCWD,
                    &cstring(src.as_bytes())?,
                    r.parent.as_raw_fd(),
                    &r.call_name,
                    libc::AT_SYMLINK_FOLLOW,
                )
                .map(|()| Reply::Val(0));
            }
            let o = self.resolve(t, &self.anchor(t, od, old)?)?;
            return sys::linkat(
                o.parent.as_raw_fd(),
                &o.call_name,
                r.parent.as_raw_fd(),
                &r.call_name,
                follow,
            )
            .map(|()| Reply::Val(0));
        }
        if nr == libc::SYS_symlink || nr == libc::SYS_symlinkat {
            let (target_p, nd, np) = if nr == libc::SYS_symlink {
                (a[0], AT_FDCWD, a[1])
            } else {
                (a[0], fd(1), a[2])
            };
            // The link's content is data, not a name: read it unrewritten.
            let target = read_c_string(t.tid, target_p)?;
            let new = self.read_path(t, np)?;
            self.valid(n)?;
            let r = self.resolve(t, &self.anchor(t, nd, new)?)?;
            if self.denied_with_below(&r) {
                return Err(self.refuse_new(DeniedCall::Symlink, &r));
            }
            return sys::symlinkat(&cstring(&target)?, r.parent.as_raw_fd(), &r.call_name)
                .map(|()| Reply::Val(0));
        }
        if nr == libc::SYS_mkdir || nr == libc::SYS_mkdirat {
            let (dirfd, p, mode) = if nr == libc::SYS_mkdir {
                (AT_FDCWD, a[0], a[1] as u32)
            } else {
                (fd(0), a[1], a[2] as u32)
            };
            let path = self.read_path(t, p)?;
            self.valid(n)?;
            // A trailing slash is kept for the kernel; the decision is on
            // the component without it.
            let r = self.resolve(t, &self.anchor(t, dirfd, path)?)?;
            if self.denied(&r) {
                return Err(self.refuse_new(DeniedCall::Mkdir, &r));
            }
            let old = sys::umask(t.umask()?);
            let res = sys::mkdirat(r.parent.as_raw_fd(), &r.call_name, mode & 0o7777);
            sys::umask(old);
            return res.map(|()| Reply::Val(0));
        }
        if nr == libc::SYS_bind {
            return self.bind(n, t);
        }
        // Not a call the filter sends here.
        Err(libc::ENOSYS)
    }

    /// `bind(fd, addr, len)`. Only a Unix socket bound to a path creates a
    /// name; its path is resolved and checked like any other. The call is
    /// then performed here, never left to the kernel: the caller's socket
    /// is taken with `pidfd_getfd` and bound to the address as read (for a
    /// path, through the checked parent directory), so neither a thread that
    /// rewrites the address nor a symbolic link resolved differently can
    /// change what is bound. A caller the supervisor may not trace (one that
    /// runs an unreadable binary) gets `EPERM`.
    fn bind(&self, n: &Notif, t: &mut Target) -> Res {
        const SUN_PATH: usize = 108;
        const SUN_OFFSET: usize = 2;
        let len = usize::try_from(n.args[2]).map_err(|_| libc::EINVAL)?;
        if len > 128 {
            return Err(libc::EINVAL);
        }
        let addr = sys::read_target(n.pid, n.args[1], len)?;
        let sockfd = i32::try_from(n.args[0] as i64).map_err(|_| libc::EBADF)?;
        let family = if addr.len() >= SUN_OFFSET {
            i32::from(u16::from_ne_bytes([addr[0], addr[1]]))
        } else {
            -1
        };
        let path_bind = family == libc::AF_UNIX && addr.len() > SUN_OFFSET && addr[SUN_OFFSET] != 0;
        let mut addr = addr;
        let mut checked: Option<Resolved> = None;
        if path_bind {
            let raw = &addr[SUN_OFFSET..];
            let path = raw[..raw.iter().position(|&c| c == 0).unwrap_or(raw.len())].to_vec();
            let path = t.rewrite(path)?;
            self.valid(n)?;
            let r = self.resolve(t, &self.anchor(t, AT_FDCWD, path)?)?;
            if r.caller_proc {
                return Err(libc::EACCES);
            }
            if self.denied_with_below(&r) {
                // An existing name is EADDRINUSE for bind, as the kernel says.
                return Err(match self.refuse_new(DeniedCall::Bind, &r) {
                    libc::EEXIST => libc::EADDRINUSE,
                    e => e,
                });
            }
            // Bind through the checked parent: /proc/self/fd/N/NAME.
            let mut via = format!("/proc/self/fd/{}/", r.parent.as_raw_fd()).into_bytes();
            via.extend_from_slice(&r.name);
            if via.len() >= SUN_PATH {
                return Err(libc::ENAMETOOLONG);
            }
            addr.truncate(SUN_OFFSET);
            addr.extend_from_slice(&via);
            addr.push(0);
            checked = Some(r);
        } else {
            self.valid(n)?;
        }
        let tgid = t.status()?.0;
        let pidfd = sys::pidfd_open(i32::try_from(tgid).map_err(|_| libc::ESRCH)?)?;
        let sock = sys::pidfd_getfd(pidfd.as_raw_fd(), sockfd)?;
        let old = sys::umask(t.umask()?);
        let res = sys::bind_raw(sock.as_raw_fd(), &addr);
        sys::umask(old);
        // The checked parent stays open until the bind has gone through it.
        drop(checked);
        res.map(|()| Reply::Val(0))
    }

    /// Whether FIFO opens wait on worker threads.
    pub(crate) fn has_waiting_fifo_opens(&self) -> bool {
        self.waiting.load(std::sync::atomic::Ordering::Acquire) > 0
    }

    /// A worker blocked opening a FIFO for a caller that has since gone
    /// (killed, or interrupted) would wait for ever: open the other end for
    /// an instant, so its open completes, its answer finds no caller, and
    /// the worker ends.
    pub(crate) fn release_abandoned_fifo_opens(&self) {
        let Ok(waits) = self.fifo_waits.lock() else {
            return;
        };
        for w in waits.iter() {
            if sys::notif_id_valid(self.listener, w.id) {
                continue;
            }
            let other = if w.writer {
                libc::O_RDONLY
            } else {
                libc::O_WRONLY
            };
            let _ = sys::openat(
                w.parent.as_raw_fd(),
                &w.name,
                other | libc::O_NONBLOCK | libc::O_NOFOLLOW,
                0,
            );
        }
    }

    /// Opens the existing FIFO `r` (without `O_CREAT`: if it vanished, the
    /// caller gets `ENOENT` rather than a new file) on a worker thread, which
    /// answers the notification `id` itself.
    fn open_fifo_elsewhere(&self, id: u64, r: Resolved, flags: i32, cloexec: bool) -> Res {
        use std::sync::atomic::Ordering;
        let listener = sys::dup_cloexec(self.listener)?;
        let parent = r
            .parent
            .try_clone()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EMFILE))?;
        if let Ok(mut waits) = self.fifo_waits.lock() {
            waits.push(FifoWait {
                id,
                parent,
                name: r.call_name.clone(),
                writer: flags & libc::O_ACCMODE != libc::O_RDONLY,
            });
        }
        let waiting = self.waiting.clone();
        let waits = self.fifo_waits.clone();
        waiting.fetch_add(1, Ordering::AcqRel);
        let done = move |waiting: &std::sync::atomic::AtomicUsize| {
            if let Ok(mut w) = waits.lock() {
                w.retain(|w| w.id != id);
            }
            waiting.fetch_sub(1, Ordering::AcqRel);
        };
        let spawned = std::thread::Builder::new()
            .name("name-guard-fifo".into())
            .spawn({
                let waiting = waiting.clone();
                let done = done.clone();
                move || {
                    let l = listener.as_raw_fd();
                    let sent = match sys::openat(r.parent.as_raw_fd(), &r.call_name, flags, 0) {
                        Ok(fd) => match sys::notif_addfd_send(l, id, &fd, cloexec) {
                            Ok(_) | Err(libc::ENOENT) => Ok(()),
                            Err(e) => sys::notif_send(l, id, Err(e)),
                        },
                        Err(e) => sys::notif_send(l, id, Err(e)),
                    };
                    let _ = sent;
                    done(&waiting);
                }
            });
        match spawned {
            Ok(_) => Ok(Reply::Deferred),
            Err(_) => {
                done(&waiting);
                Err(libc::EAGAIN)
            }
        }
    }

    /// A creating open (`O_CREAT` or `O_TMPFILE`), performed on the checked
    /// final component with `O_NOFOLLOW`; symbolic links at the final
    /// component are followed here, so the name decided on is the name
    /// created.
    fn open(
        &self,
        id: u64,
        t: &mut Target,
        start: Anchor,
        flags: i32,
        mode: u32,
        call: DeniedCall,
    ) -> Res {
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let mode = mode & 0o7777;
        if flags & O_TMPFILE_BITS != 0 {
            // O_TMPFILE names a directory and creates no name.
            let old = sys::umask(t.umask()?);
            let r = sys::openat(start.base.as_raw_fd(), &cstring(&start.rel)?, flags, mode);
            sys::umask(old);
            return r.map(|f| Reply::Fd(f, cloexec));
        }
        let excl = flags & libc::O_EXCL != 0;
        let user_nofollow = flags & libc::O_NOFOLLOW != 0;
        let umask = t.umask()?;
        let mut retries = 0;
        'retry: loop {
            let mut anchor = Anchor {
                base: start
                    .base
                    .try_clone()
                    .map_err(|e| e.raw_os_error().unwrap_or(libc::EMFILE))?,
                rel: start.rel.clone(),
            };
            let mut hops = 0;
            let r = loop {
                let r = self.resolve(t, &anchor)?;
                if r.caller_proc {
                    break r;
                }
                if excl || user_nofollow {
                    break r;
                }
                match sys::readlinkat(r.parent.as_raw_fd(), &r.call_name, PATH_MAX) {
                    Ok(target) => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(libc::ELOOP);
                        }
                        anchor = if target.first() == Some(&b'/') {
                            let target = t.rewrite(target)?;
                            self.anchor(t, AT_FDCWD, target)?
                        } else {
                            Anchor {
                                base: r.parent,
                                rel: target,
                            }
                        };
                    }
                    Err(libc::EINVAL) | Err(libc::ENOENT) => break r,
                    Err(e) => return Err(e),
                }
            };
            if r.caller_proc {
                // One of the caller's open files, through its magic link:
                // nothing is created, and the caller could open it itself.
                let f = sys::openat(
                    r.parent.as_raw_fd(),
                    &r.call_name,
                    flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW),
                    0,
                )?;
                return Ok(Reply::Fd(f, cloexec));
            }
            let flags_nf = flags | libc::O_NOFOLLOW;
            // An existing FIFO creates nothing, and opening it waits for the
            // other end, which may first need the supervisor itself (a
            // reader that creates a log file before opening the pipe): wait
            // on a worker thread instead.
            if !excl && sys::is_fifo_at(r.parent.as_raw_fd(), &r.call_name) {
                if self.waiting.load(std::sync::atomic::Ordering::Acquire) >= MAX_WAITING_FIFO_OPENS
                {
                    return Err(libc::EAGAIN);
                }
                return self.open_fifo_elsewhere(id, r, flags_nf & !libc::O_CREAT, cloexec);
            }
            let res = if self.denied(&r) {
                if excl {
                    return Err(self.refuse(call, &r));
                }
                // An existing file of that name may be opened; none may be
                // created.
                match sys::openat(
                    r.parent.as_raw_fd(),
                    &r.call_name,
                    flags_nf & !libc::O_CREAT,
                    0,
                ) {
                    // A missing denied name: refused when the call would
                    // create it; a plain open (openat2 without O_CREAT)
                    // gets what the kernel would answer.
                    Err(libc::ENOENT) if flags & libc::O_CREAT == 0 => {
                        return Err(libc::ENOENT);
                    }
                    Err(libc::ENOENT) => return Err(self.refuse(call, &r)),
                    other => other,
                }
            } else {
                let old = sys::umask(umask);
                let res = sys::openat(r.parent.as_raw_fd(), &r.call_name, flags_nf, mode);
                sys::umask(old);
                res
            };
            match res {
                Ok(f) => return Ok(Reply::Fd(f, cloexec)),
                Err(libc::ELOOP) if !user_nofollow && !excl && retries < MAX_RETRIES => {
                    retries += 1;
                    continue 'retry;
                }
                Err(e) => return Err(e),
            }
        }
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
