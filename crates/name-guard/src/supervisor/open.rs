//! The creating open: symbolic links at the final component followed here,
//! hop by hop, and the checked name opened with `O_NOFOLLOW`.

use super::{AT_FDCWD, O_TMPFILE_BITS, Reply, Res, Supervisor};
use crate::report::DeniedCall;
use crate::supervisor::resolve::{Anchor, Base, cstring};
use crate::supervisor::target::Target;
use crate::sys;
use crate::{MAX_RETRIES, MAX_SYMLINK_HOPS, MAX_WAITING_FIFO_OPENS, PATH_MAX};
use std::os::fd::AsRawFd;

/// Whether an open's flags may write: `O_WRONLY`, `O_RDWR` or `O_TRUNC`.
fn writes(flags: i32) -> bool {
    flags & (libc::O_ACCMODE | libc::O_TRUNC) != 0
}

impl Supervisor {
    /// On the host (`--landlock`), an open that may write or create: a
    /// protected path, or a file that was protected at launch under any
    /// name, is refused; an existing file is reopened through the very
    /// descriptor that was checked, so a name swapped meanwhile changes
    /// nothing. `None`: not on the host, or a name to create (decided by
    /// the rules as anywhere), or `O_EXCL` on an existing name (the kernel
    /// answers `EEXIST`).
    fn host_open(
        &self,
        r: &super::Resolved,
        flags: i32,
        excl: bool,
        cloexec: bool,
        call: DeniedCall,
    ) -> Option<Res> {
        let h = self.host.as_ref()?;
        if !writes(flags) && flags & libc::O_CREAT == 0 {
            return None;
        }
        if Self::full_path(r).is_none_or(|full| h.protects(&full)) {
            return Some(Err(self.refuse(call, r)));
        }
        let p = match sys::openat(
            r.parent.as_raw_fd(),
            &r.call_name,
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0,
        ) {
            Ok(p) => p,
            Err(libc::ENOENT) => return None,
            Err(e) => return Some(Err(e)),
        };
        if self.protected_file(&p) {
            return Some(Err(self.refuse(call, r)));
        }
        if excl {
            return None;
        }
        match sys::file_id(p.as_raw_fd()) {
            Ok((_, _, kind)) if kind == libc::S_IFLNK => return Some(Err(libc::ELOOP)),
            Ok(_) => {}
            Err(e) => return Some(Err(e)),
        }
        let via = format!("/proc/self/fd/{}", p.as_raw_fd());
        let reopened = cstring(via.as_bytes()).and_then(|via| {
            sys::openat(
                AT_FDCWD,
                &via,
                flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW),
                0,
            )
        });
        Some(reopened.map(|f| Reply::Fd(f, cloexec)))
    }

    /// A creating open (`O_CREAT` or `O_TMPFILE`), performed on the checked
    /// final component with `O_NOFOLLOW`; symbolic links at the final
    /// component are followed here, so the name decided on is the name
    /// created.
    pub(super) fn open(
        &self,
        id: u64,
        t: &mut Target<'_>,
        start: Anchor,
        flags: i32,
        mode: u32,
        call: DeniedCall,
    ) -> Res {
        let cloexec = flags & libc::O_CLOEXEC != 0;
        let mode = mode & 0o7777;
        if flags & O_TMPFILE_BITS != 0 {
            // O_TMPFILE names a directory and creates no name.
            let r = sys::with_umask(t.umask()?, || start.openat(&start.rel, flags, mode));
            return r.map(|f| Reply::Fd(f, cloexec));
        }
        let excl = flags & libc::O_EXCL != 0;
        let user_nofollow = flags & libc::O_NOFOLLOW != 0;
        let umask = t.umask()?;
        let mut retries = 0;
        'retry: loop {
            // The anchor a symbolic link led to; none: the start.
            let mut hopped: Option<Anchor> = None;
            let mut hops = 0;
            let r = loop {
                let r = self.resolve(t, hopped.as_ref().unwrap_or(&start))?;
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
                        hopped = Some(if target.first() == Some(&b'/') {
                            let target = t.rewrite(target)?;
                            self.anchor(t, AT_FDCWD, target)?
                        } else {
                            Anchor {
                                base: Base::Fd(r.parent),
                                rel: target,
                            }
                        });
                    }
                    Err(libc::EINVAL) | Err(libc::ENOENT) => break r,
                    Err(e) => return Err(e),
                }
            };
            if r.caller_proc {
                // On the host, a protected file held open for reading is
                // not reopened for writing.
                if self.host.is_some() && writes(flags) {
                    let p = sys::openat(
                        r.parent.as_raw_fd(),
                        &r.call_name,
                        libc::O_PATH | libc::O_CLOEXEC,
                        0,
                    )?;
                    if self.protected_file(&p) {
                        return Err(self.refuse(call, &r));
                    }
                }
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
            if let Some(decided) = self.host_open(&r, flags, excl, cloexec, call) {
                return decided;
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
                sys::with_umask(umask, || {
                    sys::openat(r.parent.as_raw_fd(), &r.call_name, flags_nf, mode)
                })
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
