//! Each notified system call: its arguments decoded by the native table's
//! [`Args`], its paths read once and checked, and the call performed on the
//! checked parent directory.

use super::{
    AT_FDCWD, MAX_OPEN_HOW, OPEN_HOW_SIZE, RENAME_EXCHANGE, RENAME_WHITEOUT, Reply, Res, Supervisor,
};
use crate::report::DeniedCall;
use crate::supervisor::resolve::{Resolved, cstring};
use crate::supervisor::sockaddr::{SockAddr, callers_socket};
use crate::supervisor::target::{Target, read_c_string};
use crate::sys::{self, Notif};
use crate::syscalls::{Args, Dir, Role, UnlinkFlags};
use std::os::fd::AsRawFd;

/// A notification's arguments, read by index.
#[derive(Clone, Copy)]
struct Raw([u64; 6]);

impl Raw {
    fn get(self, i: u8) -> u64 {
        self.0.get(usize::from(i)).copied().unwrap_or(0)
    }

    /// Argument `i` as the C `int` the call takes.
    fn int(self, i: u8) -> i32 {
        self.get(i) as i32
    }

    /// The directory descriptor a path is relative to.
    fn dir(self, d: Dir) -> i32 {
        match d {
            Dir::Cwd => AT_FDCWD,
            Dir::Arg(i) => self.int(i),
        }
    }

    /// An optional flags argument (0 for a call without one).
    fn flags(self, i: Option<u8>) -> u64 {
        i.map_or(0, |i| self.get(i))
    }
}

impl Supervisor {
    pub(super) fn dispatch(&self, n: &Notif, t: &mut Target<'_>) -> Res {
        let a = Raw(n.args);
        match self.abi.role(n.nr) {
            Some(Role::OpenIfCreating(o)) => {
                let path = self.read_path(t, a.get(o.path))?;
                self.valid(n)?;
                let anchor = self.anchor(t, a.dir(o.dir), path)?;
                let (flags, mode) = (a.int(o.flags), a.get(o.mode) as u32);
                self.open(n.id, t, anchor, flags, mode, DeniedCall::Open)
            }
            Some(&Role::Notified(args)) => self.notified(n, t, a, args),
            Some(&Role::HostNotified(args)) if self.host.is_some() => self.notified(n, t, a, args),
            Some(Role::UmaskChange) => {
                self.umasks.changing(t.tid);
                Ok(Reply::Continue)
            }
            // Not a call the filter sends here.
            _ => Err(libc::ENOSYS),
        }
    }

    fn notified(&self, n: &Notif, t: &mut Target<'_>, a: Raw, args: Args) -> Res {
        match args {
            Args::Creat { path, mode } => {
                let p = self.read_path(t, a.get(path))?;
                self.valid(n)?;
                let anchor = self.anchor(t, AT_FDCWD, p)?;
                let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC;
                let mode = a.get(mode) as u32;
                self.open(n.id, t, anchor, flags, mode, DeniedCall::Creat)
            }
            Args::Openat2 {
                dirfd,
                path,
                how,
                size,
            } => self.openat2(n, t, a.int(dirfd), a.get(path), a.get(how), a.get(size)),
            Args::Mknod {
                dir,
                path,
                mode,
                dev,
            } => {
                let p = self.read_path(t, a.get(path))?;
                self.valid(n)?;
                let r = self.resolve(t, &self.anchor(t, a.dir(dir), p)?)?;
                if self.denied(&r) {
                    return Err(self.refuse_new(DeniedCall::Mknod, &r));
                }
                let (mode, dev) = (a.get(mode) as u32, a.get(dev) & 0xffff_ffff);
                let res = sys::with_umask(t.umask()?, || {
                    sys::mknodat(r.parent.as_raw_fd(), &r.call_name, mode, dev)
                });
                res.map(|()| Reply::Val(0))
            }
            Args::Rename {
                old_dir,
                old,
                new_dir,
                new,
                flags,
            } => {
                let (od, nd) = (a.dir(old_dir), a.dir(new_dir));
                let flags = a.flags(flags) as u32;
                self.rename(n, t, (od, a.get(old)), (nd, a.get(new)), flags)
            }
            Args::Link {
                old_dir,
                old,
                new_dir,
                new,
                flags,
            } => {
                let (od, nd) = (a.dir(old_dir), a.dir(new_dir));
                let flags = a.flags(flags) as i32;
                self.link(n, t, (od, a.get(old)), (nd, a.get(new)), flags)
            }
            Args::Symlink {
                target,
                new_dir,
                new,
            } => {
                // The link's content is data, not a name: read it unrewritten.
                let target = read_c_string(t.tid, a.get(target))?;
                let new = self.read_path(t, a.get(new))?;
                self.valid(n)?;
                let r = self.resolve(t, &self.anchor(t, a.dir(new_dir), new)?)?;
                if self.denied_with_below(&r) {
                    return Err(self.refuse_new(DeniedCall::Symlink, &r));
                }
                sys::symlinkat(&cstring(&target)?, r.parent.as_raw_fd(), &r.call_name)
                    .map(|()| Reply::Val(0))
            }
            Args::Mkdir { dir, path, mode } => {
                let p = self.read_path(t, a.get(path))?;
                self.valid(n)?;
                // A trailing slash is kept for the kernel; the decision is on
                // the component without it.
                let r = self.resolve(t, &self.anchor(t, a.dir(dir), p)?)?;
                if self.denied(&r) {
                    return Err(self.refuse_new(DeniedCall::Mkdir, &r));
                }
                let mode = a.get(mode) as u32 & 0o7777;
                let res = sys::with_umask(t.umask()?, || {
                    sys::mkdirat(r.parent.as_raw_fd(), &r.call_name, mode)
                });
                res.map(|()| Reply::Val(0))
            }
            Args::Bind { fd, addr, len } => self.bind(n, t, a.get(fd), a.get(addr), a.get(len)),
            Args::Connect { fd, addr, len } => {
                self.connect(n, t, a.get(fd), a.get(addr), a.get(len))
            }
            Args::Getdents { fd, buf, count } => {
                self.getdents(n, t, a.get(fd), a.get(buf), a.get(count))
            }
            Args::Truncate { path, len } => {
                let p = self.read_path(t, a.get(path))?;
                self.valid(n)?;
                self.truncate(t, p, a.get(len) as i64)
            }
            Args::Unlink { dir, path, flags } => {
                let p = self.read_path(t, a.get(path))?;
                self.valid(n)?;
                let flags = match flags {
                    UnlinkFlags::Arg(i) => a.int(i),
                    UnlinkFlags::File => 0,
                    UnlinkFlags::Dir => libc::AT_REMOVEDIR,
                };
                if flags & !libc::AT_REMOVEDIR != 0 {
                    return Err(libc::EINVAL);
                }
                let r = self.resolve(t, &self.anchor(t, a.dir(dir), p)?)?;
                if self.moves_protected(&r) {
                    return Err(self.refuse(DeniedCall::Unlink, &r));
                }
                sys::unlinkat(r.parent.as_raw_fd(), &r.call_name, flags).map(|()| Reply::Val(0))
            }
        }
    }

    /// On the host: whether removing, moving or linking the name `r`
    /// would take a protected path with it (the path itself, one below it,
    /// or a file that was protected at launch under any name). Fails
    /// closed when the parent cannot be named.
    fn moves_protected(&self, r: &Resolved) -> bool {
        let Some(h) = &self.host else { return false };
        if Self::full_path(r).is_none_or(|full| h.protects(&full) || h.protects_below(&full)) {
            return true;
        }
        match sys::openat(
            r.parent.as_raw_fd(),
            &r.call_name,
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0,
        ) {
            Ok(p) => self.protected_file(&p),
            Err(_) => false,
        }
    }

    /// `getdents`/`getdents64(fd, buf, count)` on the host: the caller's
    /// descriptor is taken with `pidfd_getfd` (the same open file
    /// description, so the listing goes on where the caller's left off),
    /// refused (`EACCES`) when it is a read-denied directory or below one
    /// (by device and inode, and by the path it has now; fail closed when
    /// the path cannot be read), else listed here with the caller's own
    /// call and written into the caller's buffer.
    fn getdents(&self, n: &Notif, t: &mut Target<'_>, fd: u64, buf: u64, count: u64) -> Res {
        let Some(h) = &self.host else {
            return Err(libc::ENOSYS);
        };
        let dir = callers_socket(t, fd)?;
        let id = sys::file_id(dir.as_raw_fd())
            .ok()
            .map(|(dev, ino, _)| (dev, ino));
        let link = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let hidden = match cstring(link.as_bytes())
            .and_then(|l| sys::readlinkat(AT_FDCWD, &l, crate::PATH_MAX))
        {
            Ok(path) => h.hides_listing(&path, id),
            Err(_) => true,
        };
        if hidden {
            return Err(self.refuse_path(DeniedCall::List, &dir));
        }
        let count = usize::try_from(count)
            .unwrap_or(usize::MAX)
            .min(crate::limits::MAX_LISTING_READ);
        let mut data = vec![0u8; count];
        let got = sys::getdents(n.nr, dir.as_raw_fd(), &mut data)?;
        let data = data.get(..got).ok_or(libc::EIO)?;
        sys::write_target(n.pid, buf, data)?;
        Ok(Reply::Val(got as i64))
    }

    /// `truncate(path, len)` on the host: the path is looked up (symbolic
    /// links followed, as truncate follows them) to an `O_PATH` descriptor,
    /// refused when that file is protected, and truncated through that
    /// descriptor. Landlock decides whether the file may be truncated at
    /// all.
    fn truncate(&self, t: &mut Target<'_>, path: Vec<u8>, len: i64) -> Res {
        let anchor = self.anchor(t, AT_FDCWD, path)?;
        let p = anchor.openat(&anchor.rel, libc::O_PATH | libc::O_CLOEXEC, 0)?;
        if self.protected_file(&p) {
            return Err(self.refuse_path(DeniedCall::Truncate, &p));
        }
        let via = format!("/proc/self/fd/{}", p.as_raw_fd());
        sys::truncate(&cstring(via.as_bytes())?, len).map(|()| Reply::Val(0))
    }

    /// `openat2(dirfd, path, how, size)`.
    fn openat2(
        &self,
        n: &Notif,
        t: &mut Target<'_>,
        dirfd: i32,
        path: u64,
        how: u64,
        size: u64,
    ) -> Res {
        let path = self.read_path(t, path)?;
        let size = size as usize;
        if size < OPEN_HOW_SIZE {
            return Err(libc::EINVAL);
        }
        if size > MAX_OPEN_HOW {
            return Err(libc::E2BIG);
        }
        let how = sys::read_target(n.pid, how, size)?;
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
        let anchor = self.anchor(t, dirfd, path)?;
        self.open(n.id, t, anchor, flags, mode as u32, DeniedCall::Open)
    }

    /// `rename`, `renameat`, `renameat2`: each name as (directory, path
    /// address).
    fn rename(
        &self,
        n: &Notif,
        t: &mut Target<'_>,
        old: (i32, u64),
        new: (i32, u64),
        flags: u32,
    ) -> Res {
        let ((od, op), (nd, np)) = (old, new);
        let old = self.read_path(t, op)?;
        let new = self.read_path(t, np)?;
        self.valid(n)?;
        let o = self.resolve(t, &self.anchor(t, od, old)?)?;
        let r = self.resolve(t, &self.anchor(t, nd, new)?)?;
        if self.crosses_state_dir(&o, &r) || self.crosses_tool_dir(&o, &r) {
            return Err(libc::EXDEV);
        }
        if self.denied_with_below(&r) {
            return Err(self.refuse(DeniedCall::Rename, &r));
        }
        if self.moves_protected(&o) {
            return Err(self.refuse(DeniedCall::Rename, &o));
        }
        // An exchange gives the old name the new one's content, and a
        // whiteout leaves a device node under it: both create the old
        // name too.
        if flags & (RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 && self.denied_with_below(&o) {
            return Err(self.refuse(DeniedCall::Rename, &o));
        }
        // A directory moved may bring a repository with it (an exchange
        // may move the other name's directory the other way).
        if !sys::is_regular_at(o.parent.as_raw_fd(), &o.call_name)
            || (flags & RENAME_EXCHANGE != 0
                && !sys::is_regular_at(r.parent.as_raw_fd(), &r.call_name))
        {
            self.note_possible_repository();
        }
        sys::renameat2(
            o.parent.as_raw_fd(),
            &o.call_name,
            r.parent.as_raw_fd(),
            &r.call_name,
            flags,
        )
        .map(|()| Reply::Val(0))
    }

    /// `link`, `linkat`: each name as (directory, path address).
    fn link(
        &self,
        n: &Notif,
        t: &mut Target<'_>,
        old: (i32, u64),
        new: (i32, u64),
        flags: i32,
    ) -> Res {
        let ((od, op), (nd, np)) = (old, new);
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
        if self.moves_protected(&o) {
            return Err(self.refuse(DeniedCall::Link, &o));
        }
        sys::linkat(
            o.parent.as_raw_fd(),
            &o.call_name,
            r.parent.as_raw_fd(),
            &r.call_name,
            follow,
        )
        .map(|()| Reply::Val(0))
    }

    /// `bind(fd, addr, len)`. Only a Unix socket bound to a path creates a
    /// name; its path is resolved and checked like any other. The call is
    /// then performed here, never left to the kernel: the caller's socket
    /// is taken with `pidfd_getfd` and bound to the address as read (for a
    /// path, through the checked parent directory), so neither a thread that
    /// rewrites the address nor a symbolic link resolved differently can
    /// change what is bound. A caller the supervisor may not trace (one that
    /// runs an unreadable binary) gets `EPERM`.
    fn bind(&self, n: &Notif, t: &mut Target<'_>, fd: u64, addr: u64, len: u64) -> Res {
        let mut addr = SockAddr::read(n, addr, len)?;
        if self.host.is_some() && addr.is_inet() {
            self.valid(n)?;
            return self.bind_tcp(t, fd, addr);
        }
        let mut checked: Option<Resolved> = None;
        if let Some(r) = self.socket_name(n, t, &addr)? {
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
            addr.set_unix_path(&via)?;
            checked = Some(r);
        }
        let sock = callers_socket(t, fd)?;
        let res = sys::with_umask(t.umask()?, || sys::bind_raw(sock.as_raw_fd(), addr.bytes()));
        if let (Ok(()), Some(r)) = (&res, &checked) {
            // The guarded tree may connect to what it bound.
            self.record_bound(r);
        }
        // The checked parent stays open until the bind has gone through it.
        drop(checked);
        res.map(|()| Reply::Val(0))
    }
}
