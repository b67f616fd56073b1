//! Opens of existing FIFOs, which wait for the other end: performed on
//! worker threads, so that they never hold up the supervisor.

use super::{Reply, Res, Supervisor};
use crate::supervisor::resolve::Resolved;
use crate::sys;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

/// A FIFO open waiting on a worker thread.
pub(super) struct FifoWait {
    pub(super) id: u64,
    pub(super) parent: OwnedFd,
    pub(super) name: CString,
    /// Whether the caller opens for writing (it waits for a reader).
    pub(super) writer: bool,
}

impl Supervisor {
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
    pub(super) fn open_fifo_elsewhere(
        &self,
        id: u64,
        r: Resolved,
        flags: i32,
        cloexec: bool,
    ) -> Res {
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
}
