//! Socket addresses as `bind` and `connect` pass them: read once from the
//! caller, the path of a Unix address taken out, and replaced by the path
//! the supervisor performs the call through; and the caller's socket.

use super::resolve::Resolved;
use super::target::Target;
use super::{AT_FDCWD, Supervisor};
use crate::sys::{self, Notif};
use std::os::fd::{AsRawFd, OwnedFd};

/// `sizeof(sun_path)`.
const SUN_PATH: usize = 108;
/// Where `sun_path` starts (after `sun_family`).
const SUN_OFFSET: usize = 2;
/// `sizeof(struct sockaddr_storage)`: no address is longer.
const MAX_ADDR: usize = 128;

/// What a connect on the host reaches, by the address's family.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum HostTarget {
    /// A Unix address (decided like inside bubblewrap: by path, or by the
    /// Landlock scope for an abstract one) or `AF_UNSPEC` (a disconnect).
    Local,
    /// An IPv4 address and port.
    Tcp([u8; 4], u16),
    /// An IPv6 address and port.
    Tcp6([u8; 16], u16),
    /// Too short for its family, or a family no socket on the host can
    /// have: this `errno`.
    Unusable(i32),
}

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

    /// What a connect to this address reaches on the host.
    pub(super) fn host_target(&self) -> HostTarget {
        let a = &self.0;
        if a.len() < SUN_OFFSET {
            return HostTarget::Unusable(libc::EINVAL);
        }
        let port = || u16::from_be_bytes([a[2], a[3]]);
        match i32::from(u16::from_ne_bytes([a[0], a[1]])) {
            libc::AF_UNIX | libc::AF_UNSPEC => HostTarget::Local,
            libc::AF_INET if a.len() >= 8 => HostTarget::Tcp([a[4], a[5], a[6], a[7]], port()),
            libc::AF_INET6 if a.len() >= 24 => {
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&a[8..24]);
                HostTarget::Tcp6(ip, port())
            }
            libc::AF_INET | libc::AF_INET6 => HostTarget::Unusable(libc::EINVAL),
            _ => HostTarget::Unusable(libc::EAFNOSUPPORT),
        }
    }

    /// Puts `ip` in place of an `AF_INET` (4 bytes) or `AF_INET6` (16
    /// bytes) address's own, keeping its port (and for IPv6 its flow and
    /// scope fields); the family must match what [`Self::host_target`]
    /// saw.
    pub(super) fn set_ip(&mut self, ip: &[u8]) {
        let at = if ip.len() == 4 { 4 } else { 8 };
        if let Some(dst) = self.0.get_mut(at..at + ip.len()) {
            dst.copy_from_slice(ip);
        }
    }

    /// Whether this is an `AF_INET` or `AF_INET6` address.
    pub(super) fn is_inet(&self) -> bool {
        let a = &self.0;
        a.len() >= SUN_OFFSET
            && matches!(
                i32::from(u16::from_ne_bytes([a[0], a[1]])),
                libc::AF_INET | libc::AF_INET6
            )
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
pub(super) fn callers_socket(t: &mut Target<'_>, fd: u64) -> Result<OwnedFd, i32> {
    let sockfd = i32::try_from(fd as i64).map_err(|_| libc::EBADF)?;
    let tgid = t.status()?.0;
    let pidfd = sys::pidfd_open(i32::try_from(tgid).map_err(|_| libc::ESRCH)?)?;
    sys::pidfd_getfd(pidfd.as_raw_fd(), sockfd)
}

impl Supervisor {
    /// The name a Unix address bound to a path stands for, resolved and
    /// checked like any other path (`None` for every other address), once
    /// the notification is known to be still valid. A name in the caller's
    /// own `/proc` entries is `EACCES`.
    pub(super) fn socket_name(
        &self,
        n: &Notif,
        t: &mut Target<'_>,
        addr: &SockAddr,
    ) -> Result<Option<Resolved>, i32> {
        let Some(path) = addr.unix_path() else {
            self.valid(n)?;
            return Ok(None);
        };
        let path = t.rewrite(path)?;
        self.valid(n)?;
        let r = self.resolve(t, &self.anchor(t, AT_FDCWD, path)?)?;
        if r.caller_proc {
            return Err(libc::EACCES);
        }
        Ok(Some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(path: &[u8]) -> Vec<u8> {
        let mut a = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(path);
        a
    }

    /// (intent, address bytes, the path it holds).
    type Case = (&'static str, Vec<u8>, Option<&'static [u8]>);

    #[test]
    fn only_a_unix_address_bound_to_a_path_has_one() {
        let inet = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        let cases: [Case; 7] = [
            (
                "a path, NUL-terminated",
                unix(b"/run/a.sock\0\0\0"),
                Some(b"/run/a.sock"),
            ),
            (
                "a path filling sun_path, no NUL",
                unix(b"rel.sock"),
                Some(b"rel.sock"),
            ),
            ("abstract", unix(b"\0name"), None),
            ("unnamed", unix(b""), None),
            ("too short for a family", vec![1], None),
            ("empty", Vec::new(), None),
            (
                "another family",
                [inet, b"/run/a.sock".to_vec()].concat(),
                None,
            ),
        ];
        for (intent, bytes, want) in cases {
            assert_eq!(SockAddr(bytes).unix_path().as_deref(), want, "{intent}");
        }
    }

    #[test]
    fn the_replacement_path_must_fit_sun_path() {
        let mut a = SockAddr(unix(b"/x"));
        a.set_unix_path(b"/proc/self/fd/7").unwrap();
        assert_eq!(a.unix_path().as_deref(), Some(&b"/proc/self/fd/7"[..]));
        assert_eq!(a.set_unix_path(&[b'a'; SUN_PATH]), Err(libc::ENAMETOOLONG));
    }

    #[test]
    fn a_host_connect_is_judged_by_family_address_and_port() {
        let inet = |ip: [u8; 4], port: u16| {
            let mut a = (libc::AF_INET as u16).to_ne_bytes().to_vec();
            a.extend_from_slice(&port.to_be_bytes());
            a.extend_from_slice(&ip);
            a.extend_from_slice(&[0; 8]);
            a
        };
        let mut v6 = (libc::AF_INET6 as u16).to_ne_bytes().to_vec();
        v6.extend_from_slice(&53u16.to_be_bytes());
        v6.extend_from_slice(&[0; 4]);
        let mut ip6 = [0u8; 16];
        ip6[15] = 1;
        v6.extend_from_slice(&ip6);
        let cases: [(&str, Vec<u8>, HostTarget); 7] = [
            (
                "loopback",
                inet([127, 0, 0, 1], 3128),
                HostTarget::Tcp([127, 0, 0, 1], 3128),
            ),
            (
                "anywhere",
                inet([1, 1, 1, 1], 53),
                HostTarget::Tcp([1, 1, 1, 1], 53),
            ),
            ("v6 loopback", v6, HostTarget::Tcp6(ip6, 53)),
            ("a path", unix(b"/run/x.sock"), HostTarget::Local),
            (
                "a disconnect",
                (libc::AF_UNSPEC as u16).to_ne_bytes().to_vec(),
                HostTarget::Local,
            ),
            (
                "too short",
                inet([127, 0, 0, 1], 1)[..6].to_vec(),
                HostTarget::Unusable(libc::EINVAL),
            ),
            (
                "netlink",
                (libc::AF_NETLINK as u16).to_ne_bytes().to_vec(),
                HostTarget::Unusable(libc::EAFNOSUPPORT),
            ),
        ];
        for (intent, bytes, want) in cases {
            assert_eq!(SockAddr(bytes).host_target(), want, "{intent}");
        }
    }
}
