//! The system calls the guard knows, one table per architecture.
//!
//! A table is plain data: each entry names a call, gives its number on that
//! architecture and its [`Role`], which says what the filter does with it
//! and, for a call sent to the supervisor, where its arguments are. The
//! filter ([`crate::filter`]) is built from a table and the supervisor
//! decodes a notification by the same table, so no code compares against a
//! `libc::SYS_*` constant that exists on one architecture only (aarch64 has
//! no `open`, `creat`, `mkdir`, `rename`, `link`, `symlink` or `mknod`, only
//! their `*at` forms).
//!
//! Every table is compiled on every Linux target, so each is tested
//! everywhere (`tests.rs`, against `testdata/syscalls-*.toml` and, for the
//! native one, against `libc`); [`NATIVE`] selects the one this build runs
//! on.

mod aarch64;
mod x86_64;

#[cfg(test)]
mod tests;

#[cfg(any(test, target_arch = "aarch64"))]
pub(crate) use aarch64::AARCH64;
#[cfg(any(test, target_arch = "x86_64"))]
pub(crate) use x86_64::X86_64;

/// The table of the architecture this build runs on; `None` where the guard
/// has none (the run then fails with
/// [`ErrorKind::UnsupportedPlatform`](crate::ErrorKind::UnsupportedPlatform)).
#[cfg(target_arch = "x86_64")]
pub(crate) const NATIVE: Option<&Abi> = Some(&X86_64);
/// The table of the architecture this build runs on; `None` where the guard
/// has none (the run then fails with
/// [`ErrorKind::UnsupportedPlatform`](crate::ErrorKind::UnsupportedPlatform)).
#[cfg(target_arch = "aarch64")]
pub(crate) const NATIVE: Option<&Abi> = Some(&AARCH64);
/// The table of the architecture this build runs on; `None` where the guard
/// has none (the run then fails with
/// [`ErrorKind::UnsupportedPlatform`](crate::ErrorKind::UnsupportedPlatform)).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) const NATIVE: Option<&Abi> = None;

/// One architecture's system call ABI as the filter sees it.
#[derive(Debug)]
pub(crate) struct Abi {
    /// The architecture's name, as the testdata files name it.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "the tests read it to match the testdata")
    )]
    pub(crate) name: &'static str,
    /// The `AUDIT_ARCH_*` value of `seccomp_data.arch` for this ABI; a call
    /// made through any other ABI (i386 `int 0x80` on x86-64, 32-bit compat
    /// on aarch64) is refused with `EPERM`.
    pub(crate) audit_arch: u32,
    /// A bit that marks a number of another ABI sharing `audit_arch` (x32
    /// on x86-64): a number at or above it is refused with `EPERM`.
    pub(crate) foreign_nr_bit: Option<u32>,
    /// The calls, in the order the filter tests them.
    pub(crate) calls: &'static [Syscall],
}

impl Abi {
    /// The role of call number `nr`, if the table has it.
    pub(crate) fn role(&self, nr: i64) -> Option<&'static Role> {
        self.calls
            .iter()
            .find(|c| i64::from(c.nr) == nr)
            .map(|c| &c.role)
    }
}

/// One system call of one architecture.
#[derive(Debug)]
pub(crate) struct Syscall {
    /// The kernel's name for it (`openat`, `renameat2`).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "the tests read it to match the testdata")
    )]
    pub(crate) name: &'static str,
    /// Its number on this architecture.
    pub(crate) nr: u32,
    /// What the filter does with it.
    pub(crate) role: Role,
}

/// What the filter does with a call, and where a notified call keeps its
/// arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// An open (`open`, `openat`): sent to the supervisor when its flags
    /// hold `O_CREAT` or `O_TMPFILE`, allowed otherwise.
    OpenIfCreating(OpenArgs),
    /// A call that may create a name: always sent to the supervisor.
    Notified(Args),
    /// A way around the supervisor: refused with `EPERM`.
    Refused,
    /// Answered `ENOSYS` (`clone3`, whose flags are in memory the filter
    /// cannot read; the C library falls back to `clone`).
    NoSys,
    /// Refused with `EPERM` when one argument's low word passes a test,
    /// allowed otherwise.
    RefusedWhen {
        /// The argument tested.
        arg: u8,
        /// The test.
        test: ArgTest,
    },
    /// Only on the host (`--landlock`): always sent to the supervisor, which
    /// refuses it on a protected path (a truncation, a removal). Allowed
    /// inside bubblewrap, whose mounts protect those paths.
    HostNotified(Args),
    /// Only on the host: `socket` and `socketpair`, allowed only for
    /// `AF_UNIX` stream and seqpacket sockets and `AF_INET`/`AF_INET6`
    /// TCP stream sockets; every other family or type (UDP, raw, packet,
    /// netlink, Unix datagrams, which reach a host socket by address on
    /// each send) is refused with `EACCES`.
    HostSocket(SocketArgs),
    /// Only on the host: refused with `EPERM` when one argument's low word
    /// holds any of these bits (`MSG_FASTOPEN`, which connects without
    /// `connect`); allowed otherwise.
    HostRefusedWhen {
        /// The argument tested.
        arg: u8,
        /// The bits.
        bits: u32,
    },
    /// `umask`: sent to the supervisor, which lets it go on unchanged
    /// (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`: its one argument is a number, so
    /// nothing the decision rests on can change before the call runs) and
    /// forgets the callers' umasks it had read, so that each creation is
    /// made under the mask its caller has at that moment.
    UmaskChange,
    /// `prctl`: `PR_SET_DUMPABLE` with 0 answers 0 and changes nothing
    /// (the supervisor, without capabilities, could not read a
    /// non-dumpable caller's path arguments); everything else is allowed.
    KeepDumpable,
}

/// Where `socket(domain, type, protocol)` and `socketpair` keep their
/// arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SocketArgs {
    /// The address family.
    pub(crate) domain: u8,
    /// The type (with `SOCK_NONBLOCK` and `SOCK_CLOEXEC` bits).
    pub(crate) kind: u8,
    /// The protocol.
    pub(crate) protocol: u8,
}

/// What an `unlink`-like call removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnlinkFlags {
    /// `unlinkat`: the flags are in this argument (`AT_REMOVEDIR` or 0).
    Arg(u8),
    /// `unlink`: a file.
    File,
    /// `rmdir`: a directory.
    Dir,
}

/// `MSG_FASTOPEN`: a send that connects a TCP socket itself.
pub(crate) const MSG_FASTOPEN: u32 = 0x2000_0000;

/// The test of a [`Role::RefusedWhen`] argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArgTest {
    /// It equals the supervisor's pid (`ptrace`, `process_vm_writev`).
    IsSupervisor,
    /// It holds any of these bits.
    AnyBit(u32),
}

/// The directory a path argument is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    /// The current directory (the call has no directory argument).
    Cwd,
    /// The descriptor in this argument (`AT_FDCWD` allowed).
    Arg(u8),
}

/// Where an `open` or `openat` keeps its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenArgs {
    /// The directory.
    pub(crate) dir: Dir,
    /// The path.
    pub(crate) path: u8,
    /// The flags (the filter tests them).
    pub(crate) flags: u8,
    /// The mode.
    pub(crate) mode: u8,
}

/// Where a notified call keeps its arguments; the variant says how the
/// supervisor performs it. Numbers are argument indexes (0 to 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Args {
    /// `creat(path, mode)`: an open with `O_CREAT | O_WRONLY | O_TRUNC`.
    Creat {
        /// The path.
        path: u8,
        /// The mode.
        mode: u8,
    },
    /// `openat2(dirfd, path, how, size)`: the flags are in `struct open_how`.
    Openat2 {
        /// The directory descriptor.
        dirfd: u8,
        /// The path.
        path: u8,
        /// The address of `struct open_how`.
        how: u8,
        /// Its size.
        size: u8,
    },
    /// `mknod`, `mknodat`.
    Mknod {
        /// The directory.
        dir: Dir,
        /// The path.
        path: u8,
        /// The mode (file type and permissions).
        mode: u8,
        /// The device number.
        dev: u8,
    },
    /// `rename`, `renameat`, `renameat2`.
    Rename {
        /// The old name's directory.
        old_dir: Dir,
        /// The old name.
        old: u8,
        /// The new name's directory.
        new_dir: Dir,
        /// The new name.
        new: u8,
        /// The flags (`None`: the call has none).
        flags: Option<u8>,
    },
    /// `link`, `linkat`.
    Link {
        /// The existing name's directory.
        old_dir: Dir,
        /// The existing name.
        old: u8,
        /// The new name's directory.
        new_dir: Dir,
        /// The new name.
        new: u8,
        /// The flags (`None`: the call has none).
        flags: Option<u8>,
    },
    /// `symlink`, `symlinkat`.
    Symlink {
        /// The link's content.
        target: u8,
        /// The new name's directory.
        new_dir: Dir,
        /// The new name.
        new: u8,
    },
    /// `mkdir`, `mkdirat`.
    Mkdir {
        /// The directory.
        dir: Dir,
        /// The path.
        path: u8,
        /// The mode.
        mode: u8,
    },
    /// `bind(fd, addr, len)`.
    Bind {
        /// The socket.
        fd: u8,
        /// The address.
        addr: u8,
        /// The address's length.
        len: u8,
    },
    /// `getdents`, `getdents64` (on the host): a listing, refused for a
    /// read-denied directory and performed by the supervisor otherwise.
    Getdents {
        /// The directory descriptor.
        fd: u8,
        /// The caller's buffer.
        buf: u8,
        /// Its size.
        count: u8,
    },
    /// `truncate(path, length)`.
    Truncate {
        /// The path.
        path: u8,
        /// The length.
        len: u8,
    },
    /// `unlink`, `unlinkat`, `rmdir`.
    Unlink {
        /// The directory.
        dir: Dir,
        /// The path.
        path: u8,
        /// Whether a file or a directory goes.
        flags: UnlinkFlags,
    },
    /// `connect(fd, addr, len)`.
    Connect {
        /// The socket.
        fd: u8,
        /// The address.
        addr: u8,
        /// The address's length.
        len: u8,
    },
}

/// `CLONE_NEWNS | CLONE_NEWUSER`: new mount or user namespaces, refused in
/// `unshare` and `clone` (whose flags the filter can read).
pub(crate) const NEW_NAMESPACE_BITS: u32 = 0x0002_0000 | 0x1000_0000;
