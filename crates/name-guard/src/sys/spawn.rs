//! The fork that starts the guarded command: the child sets
//! `no_new_privs`, installs the filter with a new listener, passes the
//! listener to the parent over a socket pair and execs the command.
#![allow(
    unsafe_code,
    reason = "a system-call module of the guard: every block carries its SAFETY comment"
)]

use super::process::wait_child;
use super::{check, errno, owned};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One classic BPF instruction (`struct sock_filter`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SockFilter {
    pub(crate) code: u16,
    pub(crate) jt: u8,
    pub(crate) jf: u8,
    pub(crate) k: u32,
}

#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
pub(crate) const FILTER_FLAG_NEW_LISTENER: u32 = 1 << 3;
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (Linux 5.19): once the
/// supervisor has received a notification, the caller waits for the answer
/// through every signal but a fatal one. Without it a signal (a profiler's
/// timer, a runtime's preemption signal) interrupts the wait after the
/// supervisor performed the call, the call restarts, and is performed twice:
/// `EEXIST` for an exclusive create that succeeded, `ENOENT` for a rename
/// that did.
pub(crate) const FILTER_FLAG_WAIT_KILLABLE_RECV: u32 = 1 << 5;

fn child_fail(msg: &[u8]) -> ! {
    // SAFETY: writing a static buffer to stderr and exiting without running
    // any destructor of the forked copy of the parent's state.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    }
}

/// `struct landlock_ruleset_attr` (ABI 6): no file right handled, TCP
/// binds and connects, and scopes.
#[repr(C)]
struct NestedRuleset {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `LANDLOCK_SCOPE_SIGNAL`.
const LANDLOCK_SCOPE_SIGNAL: u64 = 1 << 1;
/// `LANDLOCK_ACCESS_NET_BIND_TCP`.
const LANDLOCK_ACCESS_NET_BIND_TCP: u64 = 1 << 0;
/// `LANDLOCK_ACCESS_NET_CONNECT_TCP`.
const LANDLOCK_ACCESS_NET_CONNECT_TCP: u64 = 1 << 1;
/// `LANDLOCK_RULE_NET_PORT`.
const LANDLOCK_RULE_NET_PORT: libc::c_int = 2;

/// `struct landlock_net_port_attr` (packed in the kernel's header: two
/// 64-bit fields, no padding either way).
#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

/// The command's own Landlock domain on the host, nested in the
/// supervisor's: scoped for signals, and handling TCP, with connects
/// granted to `proxy_ports` only and no bind. The supervisor's domain does
/// not handle TCP: it performs the command's binds and connects after its
/// own decision (see the supervisor's `loopback` module), so a TCP call
/// the command made itself, past the filter, would still be refused.
/// Made before the fork (its descriptor is close-on-exec), so that the
/// child only restricts itself with it.
fn nested_host_ruleset(proxy_ports: &[u16]) -> Result<OwnedFd, i32> {
    let attr = NestedRuleset {
        handled_access_fs: 0,
        handled_access_net: LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP,
        scoped: LANDLOCK_SCOPE_SIGNAL,
    };
    // SAFETY: `attr` is a valid ruleset attribute of the size given; the
    // kernel returns a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const NestedRuleset,
            std::mem::size_of::<NestedRuleset>(),
            0u32,
        )
    };
    let ruleset = owned(libc::c_int::try_from(fd).map_err(|_| libc::EINVAL)?)?;
    for &port in proxy_ports {
        let rule = NetPortAttr {
            allowed_access: LANDLOCK_ACCESS_NET_CONNECT_TCP,
            port: u64::from(port),
        };
        // SAFETY: `rule` is a valid net port attribute for the call, which
        // only reads it.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                LANDLOCK_RULE_NET_PORT,
                &rule as *const NetPortAttr,
                0u32,
            )
        };
        if ret != 0 {
            return Err(errno());
        }
    }
    Ok(ruleset)
}

/// Where the guarded command runs, as the fork needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nesting<'a> {
    /// Inside bubblewrap: its pid namespace holds the tree.
    Bubblewrap,
    /// On the host (`--landlock`): the command also gets a Landlock domain
    /// of its own nested in the supervisor's, scoped for signals, so that
    /// no process of the guarded tree can signal the supervisor (not by
    /// pid, group or `-1`), which must outlive the tree to end it; and
    /// handling TCP, with connects to these ports (the proxies') only.
    Host(&'a [u16]),
}

/// Fork; in the child restore an empty signal mask, ask for `SIGKILL`
/// when the supervisor dies, set `no_new_privs`, (on the host) enter a
/// nested Landlock domain scoped for signals, install `prog` with a new
/// listener, pass the listener to the parent over a socket pair, close it,
/// put back the dispositions in `restore` (signals the supervisor ignored
/// before the fork, so that none sent once the command runs finds the
/// supervisor unprepared) and exec `argv` (searched in `PATH`). Returns
/// the child pid and the listener.
pub(crate) fn spawn_filtered(
    prog: &[SockFilter],
    argv: &[CString],
    nesting: Nesting<'_>,
    restore: &[super::Disposition],
) -> Result<(i32, OwnedFd), i32> {
    if argv.is_empty() {
        return Err(libc::EINVAL);
    }
    let len = u16::try_from(prog.len()).map_err(|_| libc::E2BIG)?;
    let fprog = SockFprog {
        len,
        filter: prog.as_ptr(),
    };
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let mut sv = [-1 as libc::c_int; 2];
    // SAFETY: `sv` has room for the two descriptors.
    check(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    })?;
    // SAFETY: both descriptors are new and owned here.
    let (parent_sock, child_sock) =
        unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    // SAFETY: `sigset_t` is plain data; sigemptyset initialises it.
    let mut no_signals: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `no_signals` is a valid sigset.
    unsafe { libc::sigemptyset(&mut no_signals) };
    let nested = match nesting {
        Nesting::Host(ports) => Some(nested_host_ruleset(ports)?),
        Nesting::Bubblewrap => None,
    };
    let supervisor = super::getpid();
    // SAFETY: after the fork the child only makes async-signal-safe calls
    // (sigprocmask, prctl, getppid, the Landlock calls, seccomp, sendmsg,
    // close, signal, execvp, write, _exit) on data prepared before the
    // fork, so it is sound even if the caller has other threads.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        // SAFETY: child side; raw calls on prepared, valid pointers, then exec
        // or `_exit`.
        unsafe {
            // The supervisor blocks the signals it reads from a descriptor;
            // the command starts with none blocked, as a spawned program
            // does.
            libc::sigprocmask(libc::SIG_SETMASK, &no_signals, std::ptr::null_mut());
            // The command does not outlive its supervisor (its own children
            // are the supervisor's to end, see `tree`).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0
                || libc::getppid() != supervisor
            {
                child_fail(b"name-guard-exec: the supervisor is gone\n");
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                child_fail(b"name-guard-exec: cannot set no_new_privs\n");
            }
            if let Some(ruleset) = &nested
                && libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) != 0
            {
                child_fail(b"name-guard-exec: cannot enter the command's Landlock domain\n");
            }
            let mut listener = libc::syscall(
                libc::SYS_seccomp,
                SECCOMP_SET_MODE_FILTER,
                FILTER_FLAG_NEW_LISTENER | FILTER_FLAG_WAIT_KILLABLE_RECV,
                &fprog as *const SockFprog,
            );
            // Kernels before 5.19 do not know the flag: the guard still
            // holds, but a signal can make a performed call run twice.
            if listener < 0 && *libc::__errno_location() == libc::EINVAL {
                listener = libc::syscall(
                    libc::SYS_seccomp,
                    SECCOMP_SET_MODE_FILTER,
                    FILTER_FLAG_NEW_LISTENER,
                    &fprog as *const SockFprog,
                );
            }
            if listener < 0 {
                child_fail(b"name-guard-exec: cannot install the seccomp filter\n");
            }
            let listener = listener as libc::c_int;
            if send_fd_raw(child_sock.as_raw_fd(), listener) != 0 {
                child_fail(b"name-guard-exec: cannot pass the listener\n");
            }
            libc::close(listener);
            libc::close(child_sock.as_raw_fd());
            // The launcher may ignore SIGPIPE (Rust programs do); the
            // command gets the default, as `std::process::Command` gives.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            for d in restore {
                libc::signal(d.signal, d.handler);
            }
            libc::execvp(ptrs[0], ptrs.as_ptr());
            child_fail(b"name-guard-exec: cannot execute the command\n");
        }
    }
    drop(child_sock);
    drop(nested);
    match recv_fd(&parent_sock) {
        Ok(fd) => Ok((pid, fd)),
        Err(e) => {
            let _ = wait_child(pid);
            Err(e)
        }
    }
}

/// Send one descriptor over a Unix socket; 0 on success. Async-signal-safe
/// (no allocation), so the forked child may call it.
fn send_fd_raw(sock: libc::c_int, fd: libc::c_int) -> libc::c_int {
    let mut buf = FdMessage::new();
    // SAFETY: CMSG_SPACE only computes a size from its argument.
    let controllen =
        unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    let mut iov = buf.iov();
    let msg = buf.header(&mut iov, controllen);
    // SAFETY: `msg` points at `buf`'s byte and control buffer, both alive
    // for the block; the control message fits in it (CMSG_SPACE of one int
    // is 24 bytes of 64).
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return -1;
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
        if libc::sendmsg(sock, &msg, 0) == 1 {
            0
        } else {
            -1
        }
    }
}

fn recv_fd(sock: &OwnedFd) -> Result<OwnedFd, i32> {
    let mut buf = FdMessage::new();
    let controllen = std::mem::size_of_val(&buf.control);
    let mut iov = buf.iov();
    let mut msg = buf.header(&mut iov, controllen);
    // SAFETY: `msg` points at `buf`'s byte and control buffer, both alive
    // for the block; the control message is read only after the kernel
    // reports it present.
    unsafe {
        let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(errno());
        }
        if n == 0 {
            return Err(libc::EPIPE);
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(libc::EPROTO);
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        owned(fd)
    }
}

/// The buffers of a one-byte message carrying one descriptor. Building the
/// header allocates nothing, so the forked child may use it.
struct FdMessage {
    byte: [u8; 1],
    control: [u64; 8],
}

impl FdMessage {
    fn new() -> FdMessage {
        FdMessage {
            byte: [0],
            control: [0; 8],
        }
    }

    /// The vector over the one data byte.
    fn iov(&mut self) -> libc::iovec {
        libc::iovec {
            iov_base: self.byte.as_mut_ptr().cast(),
            iov_len: 1,
        }
    }

    /// The header over `iov` and the first `controllen` bytes of the control
    /// buffer (at most its size).
    fn header(&mut self, iov: &mut libc::iovec, controllen: usize) -> libc::msghdr {
        // SAFETY: `msghdr` is plain data for which all zeroes is a valid
        // (empty) value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov;
        msg.msg_iovlen = 1;
        msg.msg_control = self.control.as_mut_ptr().cast();
        msg.msg_controllen = controllen.min(std::mem::size_of_val(&self.control));
        msg
    }
}
