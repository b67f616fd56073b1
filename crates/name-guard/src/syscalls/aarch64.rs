//! aarch64: the generic numbering of `include/uapi/asm-generic/unistd.h`
//! (with `__ARCH_WANT_RENAMEAT`). There is no `open`, `creat`, `mknod`,
//! `rename`, `link`, `symlink` or `mkdir`: only their `*at` forms. 32-bit
//! compat calls (`AUDIT_ARCH_ARM`) are refused.

use super::Args::{
    Bind, Connect, Getdents, Link, Mkdir, Mknod, Openat2, Rename, Symlink, Truncate, Unlink,
};
use super::Dir::Arg;
use super::Role::{
    HostNotified, HostRefusedWhen, HostSocket, KeepDumpable, NoSys, Notified, OpenIfCreating,
    Refused, RefusedWhen, UmaskChange,
};
use super::{
    Abi, ArgTest, MSG_FASTOPEN, NEW_NAMESPACE_BITS, OpenArgs, SocketArgs, Syscall, UnlinkFlags,
};
use crate::sys::FILTER_FLAG_NEW_LISTENER;

/// The aarch64 table.
#[cfg_attr(
    not(target_arch = "aarch64"),
    allow(
        dead_code,
        reason = "every table is compiled on every Linux target, so that each is tested everywhere"
    )
)]
pub(crate) const AARCH64: Abi = Abi {
    name: "aarch64",
    // AUDIT_ARCH_AARCH64
    audit_arch: 0xc000_00b7,
    foreign_nr_bit: None,
    calls: CALLS,
};

#[rustfmt::skip]
const CALLS: &[Syscall] = &[
    // The open: notified when the flags may create a file.
    Syscall { name: "openat", nr: 56, role: OpenIfCreating(OpenArgs { dir: Arg(0), path: 1, flags: 2, mode: 3 }) },
    // Calls that may create a name: always notified.
    Syscall { name: "openat2", nr: 437, role: Notified(Openat2 { dirfd: 0, path: 1, how: 2, size: 3 }) },
    Syscall { name: "mknodat", nr: 33, role: Notified(Mknod { dir: Arg(0), path: 1, mode: 2, dev: 3 }) },
    Syscall { name: "renameat", nr: 38, role: Notified(Rename { old_dir: Arg(0), old: 1, new_dir: Arg(2), new: 3, flags: None }) },
    Syscall { name: "renameat2", nr: 276, role: Notified(Rename { old_dir: Arg(0), old: 1, new_dir: Arg(2), new: 3, flags: Some(4) }) },
    Syscall { name: "linkat", nr: 37, role: Notified(Link { old_dir: Arg(0), old: 1, new_dir: Arg(2), new: 3, flags: Some(4) }) },
    Syscall { name: "symlinkat", nr: 36, role: Notified(Symlink { target: 0, new_dir: Arg(1), new: 2 }) },
    Syscall { name: "mkdirat", nr: 34, role: Notified(Mkdir { dir: Arg(0), path: 1, mode: 2 }) },
    Syscall { name: "bind", nr: 200, role: Notified(Bind { fd: 0, addr: 1, len: 2 }) },
    // A connect is checked (a Unix socket must be one the guarded tree
    // bound) and performed by the supervisor.
    Syscall { name: "connect", nr: 203, role: Notified(Connect { fd: 0, addr: 1, len: 2 }) },
    // Ways around the supervisor: EPERM.
    Syscall { name: "io_uring_setup", nr: 425, role: Refused },
    Syscall { name: "open_by_handle_at", nr: 265, role: Refused },
    Syscall { name: "name_to_handle_at", nr: 264, role: Refused },
    Syscall { name: "pidfd_getfd", nr: 438, role: Refused },
    Syscall { name: "mount", nr: 40, role: Refused },
    Syscall { name: "umount2", nr: 39, role: Refused },
    Syscall { name: "pivot_root", nr: 41, role: Refused },
    Syscall { name: "fsopen", nr: 430, role: Refused },
    Syscall { name: "fsmount", nr: 432, role: Refused },
    Syscall { name: "fsconfig", nr: 431, role: Refused },
    Syscall { name: "move_mount", nr: 429, role: Refused },
    Syscall { name: "open_tree", nr: 428, role: Refused },
    Syscall { name: "mount_setattr", nr: 442, role: Refused },
    Syscall { name: "setns", nr: 268, role: Refused },
    Syscall { name: "clone3", nr: 435, role: NoSys },
    Syscall { name: "prctl", nr: 167, role: KeepDumpable },
    // Seen, then let through: the umasks read for creations are forgotten.
    Syscall { name: "umask", nr: 166, role: UmaskChange },
    // Refused only when aimed at the supervisor, asking for a listener, or
    // asking for a new mount or user namespace (clone's flags are its first
    // argument here too).
    Syscall { name: "ptrace", nr: 117, role: RefusedWhen { arg: 1, test: ArgTest::IsSupervisor } },
    Syscall { name: "process_vm_writev", nr: 271, role: RefusedWhen { arg: 0, test: ArgTest::IsSupervisor } },
    Syscall { name: "seccomp", nr: 277, role: RefusedWhen { arg: 1, test: ArgTest::AnyBit(FILTER_FLAG_NEW_LISTENER) } },
    Syscall { name: "unshare", nr: 97, role: RefusedWhen { arg: 0, test: ArgTest::AnyBit(NEW_NAMESPACE_BITS) } },
    Syscall { name: "clone", nr: 220, role: RefusedWhen { arg: 0, test: ArgTest::AnyBit(NEW_NAMESPACE_BITS) } },
    // On the host only (--landlock): what bubblewrap's mounts and network
    // namespace decide inside it.
    Syscall { name: "truncate", nr: 45, role: HostNotified(Truncate { path: 0, len: 1 }) },
    Syscall { name: "getdents64", nr: 61, role: HostNotified(Getdents { fd: 0, buf: 1, count: 2 }) },
    Syscall { name: "unlinkat", nr: 35, role: HostNotified(Unlink { dir: Arg(0), path: 1, flags: UnlinkFlags::Arg(2) }) },
    Syscall { name: "socket", nr: 198, role: HostSocket(SocketArgs { domain: 0, kind: 1, protocol: 2 }) },
    Syscall { name: "socketpair", nr: 199, role: HostSocket(SocketArgs { domain: 0, kind: 1, protocol: 2 }) },
    Syscall { name: "sendto", nr: 206, role: HostRefusedWhen { arg: 3, bits: MSG_FASTOPEN } },
    Syscall { name: "sendmsg", nr: 211, role: HostRefusedWhen { arg: 2, bits: MSG_FASTOPEN } },
    Syscall { name: "sendmmsg", nr: 269, role: HostRefusedWhen { arg: 3, bits: MSG_FASTOPEN } },
];
