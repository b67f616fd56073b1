//! `connect`: which Unix sockets the guarded tree may reach, and every
//! connect performed here on the caller's socket.
//!
//! A Unix socket reached by path must be one the guarded tree bound itself
//! (the supervisor performs every bind and records the socket it made, by
//! device and inode). Any other socket file, in particular one a host
//! process creates in a writable mount after launch, is refused with
//! `EACCES` and reported as a `connect` denial. Abstract and unnamed Unix
//! addresses are not judged here; `AF_INET` and `AF_INET6` are, on the
//! host only: the proxies, and the tree's own loopback servers
//! ([`super::loopback`]); inside bubblewrap the sandbox's network namespace
//! decides what they reach.
//!
//! As for `bind`, the call is never left to the kernel after the check: the
//! caller's socket is taken with `pidfd_getfd` and connected to the address
//! as read, a path through an `O_PATH` descriptor of the very socket that
//! was checked, so neither a thread that rewrites the address nor a name
//! relinked between the check and the call changes what is reached.
//! A blocking socket is connected on a worker thread (a connect may wait
//! for a long time, and the supervisor must not); a non-blocking one here.

use super::{AT_FDCWD, Reply, Res, Supervisor};
use crate::report::DeniedCall;
use crate::supervisor::resolve::Resolved;
use crate::supervisor::sockaddr::{HostTarget, SockAddr, callers_socket};
use crate::supervisor::target::Target;
use crate::sys::{self, Notif};
use std::os::fd::{AsRawFd, OwnedFd};

impl Supervisor {
    /// Records the socket a performed bind made at `r`, so that the guarded
    /// tree may connect to it.
    pub(super) fn record_bound(&self, r: &Resolved) {
        if let Ok(id) = sys::socket_id(r.parent.as_raw_fd(), &r.call_name) {
            self.bound.borrow_mut().insert(id);
        }
    }

    /// Lets the guarded tree connect to the sockets at `paths` too (what each
    /// names now; a path that names no socket grants nothing).
    pub(crate) fn grant_sockets(&self, paths: &[std::ffi::OsString]) {
        use std::os::unix::ffi::OsStrExt;
        for p in paths {
            let Ok(c) = std::ffi::CString::new(p.as_bytes()) else {
                continue;
            };
            if let Ok(id) = sys::socket_id(AT_FDCWD, &c) {
                self.bound.borrow_mut().insert(id);
            }
        }
    }

    /// `connect(fd, addr, len)`.
    pub(super) fn connect(
        &self,
        n: &Notif,
        t: &mut Target<'_>,
        fd: u64,
        addr: u64,
        len: u64,
    ) -> Res {
        let mut addr = SockAddr::read(n, addr, len)?;
        if let Some(h) = &self.host {
            // On the host the address is the only boundary: TCP reaches
            // the session's proxies on 127.0.0.1 and nothing else.
            match addr.host_target() {
                HostTarget::Local => {}
                HostTarget::Tcp(ip, port) if ip == [127, 0, 0, 1] && h.allows_tcp(port) => {}
                // Anything else on loopback only when it is the tree's own
                // server (see `loopback`).
                target @ (HostTarget::Tcp(..) | HostTarget::Tcp6(..)) => {
                    self.valid(n)?;
                    self.loopback_connect(&target)?;
                }
                HostTarget::Unusable(errno) => return Err(errno),
            }
        }
        let mut checked: Option<OwnedFd> = None;
        if let Some(r) = self.socket_name(n, t, &addr)? {
            // What the kernel would answer for a missing name or a file
            // that is not a socket comes from the lookup itself.
            let (socket, id) = sys::open_socket(r.parent.as_raw_fd(), &r.call_name)?;
            if !self.bound.borrow().contains(&id) {
                return Err(self.refuse(DeniedCall::Connect, &r));
            }
            // Through the descriptor of the socket that was checked.
            addr.set_unix_path(format!("/proc/self/fd/{}", socket.as_raw_fd()).as_bytes())?;
            checked = Some(socket);
        }
        let sock = callers_socket(t, fd)?;
        if sys::is_nonblocking(sock.as_raw_fd())? {
            let res = sys::connect_raw(sock.as_raw_fd(), addr.bytes());
            // The checked socket stays open until the connect has gone
            // through it.
            drop(checked);
            return res.map(|()| Reply::Val(0));
        }
        self.connect_elsewhere(n.id, sock, addr.into_bytes(), checked)
    }

    /// Connects the blocking socket `sock` to `addr` on a worker thread,
    /// which answers the notification `id` itself. `checked` (the socket a
    /// path goes through) stays open until then.
    fn connect_elsewhere(
        &self,
        id: u64,
        sock: OwnedFd,
        addr: Vec<u8>,
        checked: Option<OwnedFd>,
    ) -> Res {
        let listener = sys::dup_cloexec(self.listener)?;
        let spawned = std::thread::Builder::new()
            .name("name-guard-connect".into())
            .spawn(move || {
                let res = sys::connect_raw(sock.as_raw_fd(), &addr).map(|()| 0);
                drop(checked);
                let _ = sys::notif_send(listener.as_raw_fd(), id, res);
            });
        match spawned {
            Ok(_) => Ok(Reply::Deferred),
            Err(_) => Err(libc::EAGAIN),
        }
    }
}
