//! Socket addresses as `bind` and `connect` pass them: read once from the
//! caller, the path of a Unix address taken out, and replaced by the path
//! the supervisor performs the call through; and the caller's socket.

use super::target::Target;
use crate::sys::{self, Notif};
use std::os::fd::{AsRawFd, OwnedFd};

/// `sizeof(sun_path)`.
const SUN_PATH: usize = 108;
/// Where `sun_path` starts (after `sun_family`).
const SUN_OFFSET: usize = 2;
/// `sizeof(struct sockaddr_storage)`: no address is longer.
const MAX_ADDR: usize = 128;

/// A socket address read from the caller.
pub(super) struct SockAddr(Vec<u8>);

impl SockAddr {
    /// Reads `len` bytes at `addr` from the caller of `n`.
    pub(super) fn read(n: &Notif, addr: u64, len: u64) -> Result<SockAddr, i32> {
        let len = usize::try_from(len).map_err(|_| libc::EINVAL)?;
        if len > MAX_ADDR {
            return Err(libc::EINVAL);
        }
        sys::read_target(n.pid, addr, len).map(SockAddr)
    }

    /// The path of a Unix address bound to a path (not an abstract or an
    /// unnamed one), up to its first NUL.
    pub(super) fn unix_path(&self) -> Option<Vec<u8>> {
        let a = &self.0;
        let family = (a.len() >= SUN_OFFSET).then(|| i32::from(u16::from_ne_bytes([a[0], a[1]])));
        if family != Some(libc::AF_UNIX) || a.len() <= SUN_OFFSET || a[SUN_OFFSET] == 0 {
            return None;
        }
        let raw = &a[SUN_OFFSET..];
        Some(raw[..raw.iter().position(|&c| c == 0).unwrap_or(raw.len())].to_vec())
    }

    /// Makes this a Unix address of `path` (what the supervisor performs
    /// the call through).
    pub(super) fn set_unix_path(&mut self, path: &[u8]) -> Result<(), i32> {
        if path.len() >= SUN_PATH {
            return Err(libc::ENAMETOOLONG);
        }
        self.0.truncate(SUN_OFFSET);
        self.0.extend_from_slice(path);
        self.0.push(0);
        Ok(())
    }

    /// The raw bytes, for the system call.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The raw bytes, to move to a worker thread.
    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// The caller's socket `fd`, taken with `pidfd_getfd` (the same open file
/// description: what the supervisor does with it, the caller's socket does).
pub(super) fn callers_socket(t: &mut Target, fd: u64) -> Result<OwnedFd, i32> {
    let sockfd = i32::try_from(fd as i64).map_err(|_| libc::EBADF)?;
    let tgid = t.status()?.0;
    let pidfd = sys::pidfd_open(i32::try_from(tgid).map_err(|_| libc::ESRCH)?)?;
    sys::pidfd_getfd(pidfd.as_raw_fd(), sockfd)
}
