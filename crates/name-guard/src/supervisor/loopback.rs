//! TCP on the host's loopback (`--landlock`): the guarded tree's own
//! servers, and nothing else of the host's.
//!
//! On the host there is no network namespace: loopback is the host's, with
//! the host's services on it. The command's own Landlock domain refuses it
//! every TCP bind and every connect but to the session's proxies, so each
//! one reaches the supervisor (the filter sends every `bind` and `connect`
//! here), which performs it on the caller's socket after deciding:
//!
//! - **bind**: to a loopback address (`127.0.0.0/8`, `::1`, or an IPv4
//!   loopback address mapped into IPv6) as asked; to a wildcard address on
//!   loopback instead (`0.0.0.0` as `127.0.0.1`; `::` as `::1` for an
//!   IPv6-only socket, else as `::ffff:127.0.0.1`, so that clients of
//!   `127.0.0.1` reach a dual-stack server), so a server the command starts
//!   is never on the host's other interfaces; to any other address refused
//!   with `EACCES` and reported (`network-bind`). The socket's inode is
//!   recorded.
//! - **connect** to a loopback address that is not one of the proxies:
//!   allowed only when the listening sockets that could take the
//!   connection (read from the kernel's tables) are all sockets the tree
//!   bound, by inode. A host service on that port, or one that took the
//!   port after the tree's server closed, is refused and reported
//!   (`network-outbound`); a port nothing listens on is `ECONNREFUSED`,
//!   as the kernel would answer, without a report.
//!
//! Not decided here: which host processes connect to the tree's servers.
//! Like any loopback server on the host, a server the command starts can
//! be reached by the host's other processes (the tree's own are the only
//! ones that cannot be told apart by address). A check made before the
//! connect cannot see a listener that replaces the tree's in the
//! microseconds between the check and the connect.

use super::sockaddr::{HostTarget, SockAddr, callers_socket};
use super::target::Target;
use super::{Reply, Res, Supervisor};
use crate::proc_net::{self, Listener};
use crate::report::DeniedCall;
use crate::sys;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

/// The most TCP sockets remembered as the tree's; past it, those no longer
/// listening are forgotten, and a bind with none to forget is `ENOBUFS`.
pub(crate) const MAX_TREE_TCP_SOCKETS: usize = 4096;

/// Where a bind to `ip` is performed: the same loopback address, a
/// loopback address in place of a wildcard (IPv6's by `v6only`), or
/// nowhere (`None`).
pub(super) fn bind_address(ip: IpAddr, v6only: bool) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(a) if a.is_loopback() => Some(ip),
        IpAddr::V4(a) if a.is_unspecified() => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(a) if a.is_loopback() => Some(ip),
        IpAddr::V6(a) if a.is_unspecified() && v6only => Some(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        IpAddr::V6(a) if a.is_unspecified() => {
            Some(IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()))
        }
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) if v4.is_loopback() => Some(ip),
            Some(v4) if v4.is_unspecified() => {
                Some(IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()))
            }
            _ => None,
        },
        IpAddr::V4(_) => None,
    }
}

/// What a connect to a loopback address meets.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Meets {
    /// Only listening sockets of the tree.
    Ours,
    /// At least one socket the tree did not bind.
    Foreign,
    /// Nothing listens there.
    Nothing,
    /// Not a loopback address.
    NotLoopback,
}

/// The IPv4 loopback address `ip` stands for, or IPv6's.
fn loopback(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(a) if a.is_loopback() => Some(ip),
        IpAddr::V6(a) if a.is_loopback() => Some(ip),
        IpAddr::V6(a) => a
            .to_ipv4_mapped()
            .filter(Ipv4Addr::is_loopback)
            .map(IpAddr::V4),
        IpAddr::V4(_) => None,
    }
}

/// Whether a listener bound to `bound` may take a connection to `dst` (a
/// loopback address as [`loopback`] gives it). An IPv6 wildcard counts for
/// IPv4 too (it may be IPv6-only; counting it can only refuse more).
fn may_take(bound: IpAddr, dst: IpAddr) -> bool {
    if bound == dst {
        return true;
    }
    match (bound, dst) {
        (IpAddr::V4(b), IpAddr::V4(_)) => b.is_unspecified(),
        (IpAddr::V6(b), IpAddr::V6(_)) => b.is_unspecified(),
        (IpAddr::V6(b), IpAddr::V4(d)) => {
            b.is_unspecified()
                || b.to_ipv4_mapped()
                    .is_some_and(|m| m == d || m.is_unspecified())
        }
        (IpAddr::V4(_), IpAddr::V6(_)) => false,
    }
}

/// What a connect to `dst:port` meets among `listeners`, `ours` being the
/// inodes of the tree's sockets.
pub(super) fn meets(dst: IpAddr, port: u16, listeners: &[Listener], ours: &HashSet<u64>) -> Meets {
    let Some(dst) = loopback(dst) else {
        return Meets::NotLoopback;
    };
    let mut any = false;
    for l in listeners
        .iter()
        .filter(|l| l.port == port && may_take(l.addr, dst))
    {
        if !ours.contains(&l.inode) {
            return Meets::Foreign;
        }
        any = true;
    }
    if any { Meets::Ours } else { Meets::Nothing }
}

fn ip_of(t: &HostTarget) -> Option<(IpAddr, u16)> {
    match *t {
        HostTarget::Tcp(a, p) => Some((IpAddr::V4(Ipv4Addr::from(a)), p)),
        HostTarget::Tcp6(a, p) => Some((IpAddr::V6(Ipv6Addr::from(a)), p)),
        _ => None,
    }
}

/// `ADDRESS:PORT`, an IPv6 address in brackets.
fn target_text(ip: IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(ip, port).to_string()
}

impl Supervisor {
    /// On the host: a TCP `bind`, performed on loopback (see the module
    /// docs). `addr` is an `AF_INET` or `AF_INET6` address.
    pub(super) fn bind_tcp(&self, t: &mut Target<'_>, fd: u64, mut addr: SockAddr) -> Res {
        let target = addr.host_target();
        let Some((ip, port)) = ip_of(&target) else {
            return match target {
                HostTarget::Unusable(errno) => Err(errno),
                _ => Err(libc::EINVAL),
            };
        };
        let sock = callers_socket(t, fd)?;
        let v6only = matches!(ip, IpAddr::V6(_)) && sys::ipv6_only(sock.as_raw_fd())?;
        let Some(at) = bind_address(ip, v6only) else {
            self.refused.set(self.refused.get() + 1);
            if self.report_fd.is_some() {
                self.report(DeniedCall::NetworkBind, target_text(ip, port).as_bytes());
            }
            return Err(libc::EACCES);
        };
        match at {
            IpAddr::V4(a) => addr.set_ip(&a.octets()),
            IpAddr::V6(a) => addr.set_ip(&a.octets()),
        }
        let (_, inode, _) = sys::file_id(sock.as_raw_fd())?;
        self.room_for_one_more()?;
        sys::bind_raw(sock.as_raw_fd(), addr.bytes())?;
        self.tcp_bound.borrow_mut().insert(inode);
        Ok(Reply::Val(0))
    }

    /// Room for one more remembered socket: past the limit, the sockets
    /// that no longer listen are forgotten.
    fn room_for_one_more(&self) -> Result<(), i32> {
        if self.tcp_bound.borrow().len() < MAX_TREE_TCP_SOCKETS {
            return Ok(());
        }
        let listening: HashSet<u64> = proc_net::listeners_ambient()
            .map_err(|_| libc::ENOBUFS)?
            .into_iter()
            .map(|l| l.inode)
            .collect();
        let mut bound = self.tcp_bound.borrow_mut();
        bound.retain(|i| listening.contains(i));
        if bound.len() < MAX_TREE_TCP_SOCKETS {
            Ok(())
        } else {
            Err(libc::ENOBUFS)
        }
    }

    /// On the host: whether a TCP connect to `target`, which is not one of
    /// the proxies, may go ahead: `Ok` for a server of the tree's own on
    /// loopback; otherwise the errno to answer (a refusal is reported).
    pub(super) fn loopback_connect(&self, target: &HostTarget) -> Result<(), i32> {
        let Some((ip, port)) = ip_of(target) else {
            return Err(libc::EINVAL);
        };
        // The tables are read only when the tree has a server at all.
        let meets = if self.tcp_bound.borrow().is_empty() || loopback(ip).is_none() {
            Meets::NotLoopback
        } else {
            match proc_net::listeners_ambient() {
                Ok(l) => meets(ip, port, &l, &self.tcp_bound.borrow()),
                // Unreadable: any of them could be a host's.
                Err(_) => Meets::Foreign,
            }
        };
        match meets {
            Meets::Ours => Ok(()),
            Meets::Nothing => Err(libc::ECONNREFUSED),
            Meets::Foreign | Meets::NotLoopback => Err(self.refuse_address(&target_text(ip, port))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn binds_stay_on_loopback() {
        for (asked, v6only, want) in [
            ("127.0.0.1", false, Some("127.0.0.1")),
            ("127.3.4.5", false, Some("127.3.4.5")),
            ("0.0.0.0", false, Some("127.0.0.1")),
            ("::1", false, Some("::1")),
            ("::", true, Some("::1")),
            ("::", false, Some("::ffff:127.0.0.1")),
            ("::ffff:127.0.0.1", false, Some("::ffff:127.0.0.1")),
            ("::ffff:0.0.0.0", false, Some("::ffff:127.0.0.1")),
            ("10.0.0.5", false, None),
            ("192.168.1.2", false, None),
            ("fe80::1", false, None),
            ("::ffff:10.0.0.1", false, None),
            ("255.255.255.255", false, None),
        ] {
            assert_eq!(bind_address(ip(asked), v6only), want.map(ip), "{asked}");
        }
    }

    fn l(addr: &str, port: u16, inode: u64) -> Listener {
        Listener {
            addr: ip(addr),
            port,
            inode,
        }
    }

    #[test]
    fn a_connect_meets_only_the_trees_listeners_or_is_refused() {
        let ours: HashSet<u64> = [1, 2].into_iter().collect();
        let tables = [
            l("127.0.0.1", 8000, 1),
            l("::ffff:127.0.0.1", 8001, 2),
            l("127.0.0.1", 5432, 9),
            l("0.0.0.0", 6379, 9),
            l("::", 9000, 9),
            l("::1", 8000, 9),
            l("127.0.0.1", 7000, 1),
            l("0.0.0.0", 7000, 9),
        ];
        for (dst, port, want) in [
            ("127.0.0.1", 8000, Meets::Ours),
            ("::ffff:127.0.0.1", 8000, Meets::Ours),
            ("127.0.0.1", 8001, Meets::Ours),
            // A host service beside the tree's server on IPv6 loopback.
            ("::1", 8000, Meets::Foreign),
            ("127.0.0.1", 5432, Meets::Foreign),
            ("127.0.0.1", 6379, Meets::Foreign),
            ("127.0.0.2", 6379, Meets::Foreign),
            ("127.0.0.1", 9000, Meets::Foreign),
            ("::1", 9000, Meets::Foreign),
            // The tree's listener and a host wildcard on one port.
            ("127.0.0.1", 7000, Meets::Foreign),
            ("127.0.0.1", 1234, Meets::Nothing),
            ("127.0.0.2", 8000, Meets::Nothing),
            ("10.0.0.1", 8000, Meets::NotLoopback),
            ("::ffff:10.0.0.1", 8000, Meets::NotLoopback),
        ] {
            assert_eq!(meets(ip(dst), port, &tables, &ours), want, "{dst}:{port}");
        }
    }
}
