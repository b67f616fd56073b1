//! The supervisor: receive a notification, read the path arguments once,
//! decide on the final component, perform the call itself and answer.
//!
//! One job per module: [`target`] reads the calling thread (its memory,
//! its `/proc` facts), [`resolve`] finds the parent directory a name is
//! created in, [`calls`] decodes each notified system call and performs it,
//! [`open`] is the creating open (symbolic links followed here), [`fifo`]
//! waits for FIFOs on worker threads, [`connect`] decides which Unix
//! sockets may be reached, [`loopback`] which TCP binds and connects on the
//! host's loopback, and [`reports`] writes denial lines.
//! This module holds the state and the decisions.

mod calls;
mod connect;
mod fifo;
mod loopback;
mod open;
mod reports;
mod resolve;
mod sockaddr;
pub(crate) mod target;

use crate::Stats;
use crate::report::DeniedCall;
use crate::rules::Rules;
use crate::sys::{self, Notif};
use crate::syscalls::Abi;
use fifo::FifoWait;
use resolve::Resolved;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use target::{Target, read_c_string};

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
    /// The call goes on in the kernel as made (only `umask`, whose one
    /// argument is a number).
    Continue,
}

type Res = Result<Reply, i32>;

/// The guard's state for one guarded process tree.
pub(crate) struct Supervisor {
    /// The table the filter was built from: a notification's number is
    /// decoded by it.
    abi: &'static Abi,
    listener: RawFd,
    rules: Rules,
    /// On the host (`--landlock`): the protected paths and TCP ports.
    host: Option<crate::HostRules>,
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
    /// The Unix sockets the guarded tree bound (device, inode): the only
    /// ones it may connect to by path.
    bound: std::cell::RefCell<std::collections::HashSet<(u64, u64)>>,
    /// On the host: the inodes of the TCP sockets the guarded tree bound
    /// (on loopback), the only listeners besides the proxies it may reach.
    tcp_bound: std::cell::RefCell<std::collections::HashSet<u64>>,
    /// The callers' status files, kept open between notifications.
    status_files: target::StatusFiles,
    /// The callers' umasks, remembered between notifications.
    umasks: target::Umasks,
    /// Whether an update could not be taken on (the guard failed closed).
    closed_by_update: bool,
    /// Where a byte says that a name `.git` was made or a directory
    /// renamed (non-blocking).
    notify_fd: Option<RawFd>,
}

impl Supervisor {
    pub(crate) fn new(
        abi: &'static Abi,
        listener: RawFd,
        rules: Rules,
        host: Option<crate::HostRules>,
        report_fd: Option<RawFd>,
    ) -> Self {
        Supervisor {
            abi,
            listener,
            rules,
            host,
            stats: Stats::default(),
            refused: std::cell::Cell::new(0),
            report_fd,
            pending: std::cell::RefCell::new(Vec::new()),
            dropped: std::cell::Cell::new(0),
            waiting: std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            fifo_waits: std::sync::Arc::new(std::sync::Mutex::new(Vec::new())),
            bound: std::cell::RefCell::new(std::collections::HashSet::new()),
            tcp_bound: std::cell::RefCell::new(std::collections::HashSet::new()),
            status_files: target::StatusFiles::default(),
            umasks: target::Umasks::default(),
            closed_by_update: false,
            notify_fd: None,
        }
    }

    /// Handle one notification completely.
    pub(crate) fn handle(&mut self, n: &Notif) {
        self.umasks.seen(n.pid);
        let listener = self.listener;
        let still_valid = || sys::notif_id_valid(listener, n.id);
        let mut t = Target {
            tid: n.pid,
            status: None,
            files: &self.status_files,
            umasks: &self.umasks,
            still_valid: &still_valid,
        };
        let reply = self.dispatch(n, &mut t);
        self.stats.handled += 1;
        self.stats.denied += self.refused.take();
        self.stats.reports_dropped += self.dropped.take();
        let sent = match reply {
            Ok(Reply::Deferred) => Ok(()),
            Ok(Reply::Continue) => sys::notif_continue(self.listener, n.id),
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

    /// Notes on `fd` what may have made a git repository.
    pub(crate) fn notify_to(&mut self, fd: Option<RawFd>) {
        self.notify_fd = fd;
    }

    /// Says that a git repository may have been made: a name `.git` came
    /// into being, or a directory (with whatever lies below it) was moved.
    /// A full pipe drops the byte: the bytes already in it say the same.
    fn note_possible_repository(&self) {
        if let Some(fd) = self.notify_fd {
            let _ = sys::write_once(fd, b"g");
        }
    }

    /// Takes on one rule sent while the guard runs. A rule that cannot be
    /// taken on (a bad line, a path the limits refuse, a protected path
    /// where the guard has no host confinement) makes the guard fail
    /// closed: every name is denied and, on the host, every path is
    /// protected, and the guard says so on stderr once.
    pub(crate) fn take_update(
        &mut self,
        update: Result<sandbox_core::GuardUpdate, sandbox_core::UpdateProblem>,
    ) {
        use sandbox_core::GuardUpdate;
        let taken = match &update {
            Ok(GuardUpdate::Deny(p)) => self.rules.add_path(p).is_ok(),
            Ok(GuardUpdate::Protect(p)) => match &mut self.host {
                Some(h) => h.add_protected(p).is_ok(),
                None => false,
            },
            Err(_) => false,
        };
        if !taken && !self.closed_by_update {
            self.closed_by_update = true;
            eprintln!(
                "name-guard-exec: a rule sent while running could not be taken on; from now on no name may be created and no protected-path check passes"
            );
            self.rules.deny_every_name();
            if let Some(h) = &mut self.host {
                h.protect_everything();
            }
        }
    }

    fn read_path(&self, t: &mut Target<'_>, addr: u64) -> Result<Vec<u8>, i32> {
        let raw = read_c_string(t.tid, addr)?;
        t.rewrite(raw)
    }

    fn denied(&self, r: &Resolved) -> bool {
        let denied = self.denied_name(r);
        if !denied && r.name.eq_ignore_ascii_case(b".git") {
            self.note_possible_repository();
        }
        denied
    }

    fn denied_name(&self, r: &Resolved) -> bool {
        if self.rules.denies_name(&r.name) && !self.in_state_dir(r) && !self.in_tool_dir(r) {
            return true;
        }
        if let Some(h) = &self.host {
            // Fail closed when the parent cannot be named.
            if Self::full_path(r).is_none_or(|full| h.protects(&full)) {
                return true;
            }
        }
        if self.rules.has_path_rules() {
            // Fail closed when the parent cannot be named.
            return Self::full_path(r).is_none_or(|full| self.rules.denies_path(&full));
        }
        false
    }

    /// Whether the name `r` lies inside a runner state directory, where the
    /// name rules do not hold. Not when its parent cannot be named (fail
    /// closed: the rules hold).
    fn in_state_dir(&self, r: &Resolved) -> bool {
        self.rules.has_state_dirs()
            && Self::full_path(r).is_some_and(|full| self.rules.in_state_dir(&full))
    }

    /// Whether the name `r` lies below a directory package managers own,
    /// where the name rules do not hold. Not when its parent cannot be
    /// named (fail closed: the rules hold).
    fn in_tool_dir(&self, r: &Resolved) -> bool {
        self.rules.has_tool_dirs()
            && Self::full_path(r).is_some_and(|full| self.rules.in_tool_dir(&full))
    }

    /// Whether a rename from `o` to `r` would cross the edge of a
    /// directory package managers own (either way): answered `EXDEV` as
    /// for a state directory ([`Self::crosses_state_dir`]).
    fn crosses_tool_dir(&self, o: &Resolved, r: &Resolved) -> bool {
        self.rules.has_tool_dirs() && Self::crosses(o, r, |f| self.rules.at_or_in_tool_dir(f))
    }

    /// Whether `o` and `r` lie on two sides of an edge (`inside` tells
    /// one side); a name whose parent cannot be named counts as crossing.
    fn crosses(o: &Resolved, r: &Resolved, inside: impl Fn(&[u8]) -> bool) -> bool {
        let side = |x: &Resolved| Self::full_path(x).map(|f| inside(&f));
        match (side(o), side(r)) {
            (Some(a), Some(b)) => a != b,
            _ => true,
        }
    }

    /// Whether a rename from `o` to `r` would cross the edge of a runner
    /// state directory (either way): such a rename is answered `EXDEV`, as
    /// between two mounts, so that a tree made where the name rules do not
    /// hold reaches the rest only by a copy, each file created under the
    /// rules. A name whose parent cannot be named counts as crossing.
    fn crosses_state_dir(&self, o: &Resolved, r: &Resolved) -> bool {
        self.rules.has_state_dirs() && Self::crosses(o, r, |f| self.rules.at_or_in_state_dir(f))
    }

    /// For a name that a rename or a symbolic link brings into being with
    /// whatever lies below it: also denied when a path rule lies below it.
    fn denied_with_below(&self, r: &Resolved) -> bool {
        if self.denied(r) {
            return true;
        }
        if let Some(h) = &self.host
            && Self::full_path(r).is_none_or(|full| h.protects_below(&full))
        {
            return true;
        }
        if self.rules.has_path_rules() {
            return Self::full_path(r).is_none_or(|full| self.rules.denies_ancestor(&full));
        }
        false
    }

    /// On the host: whether the open file `fd` (an `O_PATH` descriptor
    /// will do) is protected, by device and inode or by the path it has
    /// now. Fails closed when neither can be read.
    fn protected_file(&self, fd: &OwnedFd) -> bool {
        let Some(h) = &self.host else { return false };
        let Ok((dev, ino, _)) = sys::file_id(fd.as_raw_fd()) else {
            return true;
        };
        if h.protects_inode((dev, ino)) {
            return true;
        }
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        match resolve::cstring(link.as_bytes())
            .and_then(|l| sys::readlinkat(AT_FDCWD, &l, crate::PATH_MAX))
        {
            Ok(path) => h.protects(&path),
            Err(_) => true,
        }
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

    /// A refusal of `call` on the open file `fd`, reported with the path
    /// it has now.
    fn refuse_path(&self, call: DeniedCall, fd: &OwnedFd) -> i32 {
        self.refused.set(self.refused.get() + 1);
        if self.report_fd.is_some() {
            let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                .map(|p| p.into_os_string().into_encoded_bytes())
                .unwrap_or_else(|_| b"?".to_vec());
            self.report(call, &path);
        }
        DENIED
    }

    /// A refused TCP connect, reported as `ADDRESS:PORT`.
    fn refuse_address(&self, target: &str) -> i32 {
        self.refused.set(self.refused.get() + 1);
        if self.report_fd.is_some() {
            self.report(DeniedCall::Connect, target.as_bytes());
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
}
