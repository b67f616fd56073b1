//! Each notified system call: its arguments decoded, its paths read once
//! and checked, and the call performed on the checked parent directory.

use super::{
    AT_FDCWD, MAX_OPEN_HOW, OPEN_HOW_SIZE, RENAME_EXCHANGE, RENAME_WHITEOUT, Reply, Res, Supervisor,
};
use crate::report::DeniedCall;
use crate::supervisor::resolve::{Resolved, cstring};
use crate::supervisor::target::{Target, read_c_string};
use crate::sys::{self, Notif};
use std::os::fd::AsRawFd;

impl Supervisor<'_> {
    pub(super) fn dispatch(&self, n: &Notif, t: &mut Target) -> Res {
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
    pub(super) fn bind(&self, n: &Notif, t: &mut Target) -> Res {
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
}
