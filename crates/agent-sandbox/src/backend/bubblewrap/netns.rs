//! Proxy listeners inside the sandbox's network namespace, bound from the
//! host side, so that no bridge process has to start inside the sandbox.
//!
//! bubblewrap is started with `--info-fd` (it reports the sandbox's init pid)
//! and `--block-fd` (it holds the command until released). A short-lived
//! helper process joins the sandbox's user and network namespaces, binds
//! 127.0.0.1:PORT listeners there (with `IP_FREEBIND`, since the loopback
//! interface may not be up yet) and passes them back over a socket pair
//! (`SCM_RIGHTS`). The host program then accepts on them and forwards each
//! connection to the session's proxy, and releases the command.
//!
//! Only `pre_exec` is unsafe here: the closure runs between fork and exec,
//! so it may only make async-signal-safe system calls and must not
//! allocate. Every call in it is a rustix system call wrapper on values
//! prepared before the fork.

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use std::io::{self, IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::unix::process::CommandExt;

/// The pipes that steer bubblewrap: it writes its info to one and waits for
/// a byte on the other.
pub(crate) struct Steering {
    /// Read end of the info pipe (ours).
    pub(crate) info_read: OwnedFd,
    /// Write end of the info pipe (bubblewrap's).
    pub(crate) info_write: OwnedFd,
    /// Read end of the block pipe (bubblewrap's).
    pub(crate) block_read: OwnedFd,
    /// Write end of the block pipe (ours).
    pub(crate) block_write: OwnedFd,
}

impl Steering {
    pub(crate) fn new() -> io::Result<Steering> {
        let (info_read, info_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let (block_read, block_write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok(Steering {
            info_read,
            info_write,
            block_read,
            block_write,
        })
    }

    /// The bubblewrap options that use the pipes.
    pub(crate) fn bwrap_args(&self) -> [String; 4] {
        [
            "--info-fd".into(),
            self.info_write.as_raw_fd().to_string(),
            "--block-fd".into(),
            self.block_read.as_raw_fd().to_string(),
        ]
    }

    /// Lets bubblewrap inherit its two pipe ends across exec.
    pub(crate) fn inherit_in(&self, cmd: &mut tokio::process::Command) {
        crate::process_fds::inherit_fds(
            cmd,
            [self.info_write.as_raw_fd(), self.block_read.as_raw_fd()],
        );
    }
}

/// Sends SIGKILL to the sandbox's first process (`pid`, from bubblewrap's
/// info descriptor), which takes its whole pid namespace with it. Only
/// called while that process is still waiting on the block descriptor, so
/// the pid cannot have been reused.
pub(crate) fn kill_sandbox(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a positive pid and a signal number; no memory is
    // involved.
    #[allow(
        unsafe_code,
        reason = "the namespace helper needs raw syscalls in pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Reads bubblewrap's info JSON from `info` and returns the sandbox's init
/// pid (`"child-pid"`). Reads at most 4 KiB.
pub(crate) fn read_child_pid(info: OwnedFd) -> io::Result<u32> {
    let mut file = std::fs::File::from(info);
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 || buf.len() + n > 4096 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.contains(&b'}') {
            break;
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let digits: String = text
        .split("\"child-pid\"")
        .nth(1)
        .unwrap_or("")
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits
        .parse()
        .map_err(|_| io::Error::other("bubblewrap reported no child pid"))
}

/// The first child of `pid` (bubblewrap's sandbox process, the first in
/// its namespaces, when `pid` is bubblewrap started without `--info-fd`),
/// from `/proc/PID/task/PID/children`; `None` until it exists, or where the
/// kernel has no such file. At most 4 KiB is read.
pub(crate) fn first_child(pid: u32) -> Option<u32> {
    use std::io::Read as _;
    let file = std::fs::File::open(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// Binds one listener per port on 127.0.0.1 inside the network namespace of
/// process `pid` and returns them, in port order.
pub(crate) fn bind_in_sandbox(
    pid: u32,
    ports: &[u16; 2],
) -> io::Result<[std::net::TcpListener; 2]> {
    let user_ns = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
    let net_ns = std::fs::File::open(format!("/proc/{pid}/ns/net"))?;
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let raw = (user_ns.as_raw_fd(), net_ns.as_raw_fd(), theirs.as_raw_fd());
    let ports = *ports;
    let mut helper = std::process::Command::new("/bin/true");
    helper
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    // SAFETY: the closure runs in the forked, single-threaded child before
    // exec. It borrows three descriptors that stay open in the parent until
    // the helper has exited, makes only system calls (setns, socket,
    // setsockopt, bind, listen, sendmsg) through rustix, and keeps every
    // buffer on the stack: nothing allocates and no lock is taken. It ends
    // with `_exit`, which is async-signal-safe and runs no destructor or
    // atexit handler of the parent's copy.
    #[allow(
        unsafe_code,
        reason = "the namespace helper needs raw syscalls in pre_exec; each block carries its SAFETY comment"
    )]
    unsafe {
        helper.pre_exec(move || {
            let user = BorrowedFd::borrow_raw(raw.0);
            let net = BorrowedFd::borrow_raw(raw.1);
            let chan = BorrowedFd::borrow_raw(raw.2);
            // Joining the network namespace needs CAP_SYS_ADMIN over the
            // user namespace that owns it, which a caller in the parent
            // user namespace (root, or the namespace's owner) has without
            // joining it. Joining the sandbox's user namespace first fails
            // once bubblewrap has moved the sandbox into a nested one
            // (`--disable-userns`), which does not own the network
            // namespace; that way is kept for the other cases.
            if rustix::thread::move_into_link_name_space(
                net,
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .is_err()
            {
                rustix::thread::move_into_link_name_space(
                    user,
                    Some(rustix::thread::LinkNameSpaceType::User),
                )?;
                rustix::thread::move_into_link_name_space(
                    net,
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )?;
            }
            let a = listener(ports[0])?;
            let b = listener(ports[1])?;
            let fds = [a.as_fd(), b.as_fd()];
            let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
                return Err(io::Error::from_raw_os_error(
                    rustix::io::Errno::NOBUFS.raw_os_error(),
                ));
            }
            rustix::net::sendmsg(
                chan,
                &[IoSlice::new(b"L")],
                &mut control,
                SendFlags::empty(),
            )?;
            // Done: exit here instead of loading a program only to end it
            // (an exec costs a millisecond and a hundred page faults on a
            // virtual machine). The spawn reads the closed status pipe as
            // success, and the exit status 0 is what `status` checks.
            libc::_exit(0)
        });
    }
    let status = helper.status()?;
    drop(theirs);
    if !status.success() {
        return Err(io::Error::other(format!(
            "the namespace helper failed: {status}"
        )));
    }
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    rustix::net::recvmsg(
        &ours,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
    )?;
    let mut got: Vec<OwnedFd> = Vec::with_capacity(2);
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = msg {
            got.extend(fds);
        }
    }
    drop((user_ns, net_ns));
    match <[OwnedFd; 2]>::try_from(got) {
        Ok([a, b]) => Ok([
            std::net::TcpListener::from(a),
            std::net::TcpListener::from(b),
        ]),
        Err(_) => Err(io::Error::other("the namespace helper passed no listeners")),
    }
}

fn listener(port: u16) -> io::Result<OwnedFd> {
    let s = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::sockopt::set_socket_reuseaddr(&s, true)?;
    rustix::net::sockopt::set_ip_freebind(&s, true)?;
    rustix::net::bind(&s, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))?;
    rustix::net::listen(&s, 1024)?;
    Ok(s)
}
