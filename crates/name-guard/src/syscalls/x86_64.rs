//! x86-64: the numbers of `arch/x86/entry/syscalls/syscall_64.tbl` (the
//! 64-bit ABI; x32 numbers carry bit 30 and are refused).

use super::Args::{
    Bind, Connect, Creat, Getdents, Link, Mkdir, Mknod, Openat2, Rename, Symlink, Truncate, Unlink,
};
use super::Dir::{Arg, Cwd};
use super::Role::{
    HostNotified, HostRefusedWhen, HostSocket, KeepDumpable, NoSys, Notified, OpenIfCreating,
    Refused, RefusedWhen, UmaskChange,
};
use super::{
    Abi, ArgTest, MSG_FASTOPEN, NEW_NAMESPACE_BITS, OpenArgs, SocketArgs, Syscall, UnlinkFlags,
};
use crate::sys::FILTER_FLAG_NEW_LISTENER;

/// The x86-64 table.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(
        dead_code,
        reason = "every table is compiled on every Linux target, so that each is tested everywhere"
    )
)]
pub(crate) const X86_64: Abi = Abi {
    name: "x86_64",
    // AUDIT_ARCH_X86_64
    audit_arch: 0xc000_003e,
    // __X32_SYSCALL_BIT
    foreign_nr_bit: Some(0x4000_0000),
    calls: CALLS,
};

#[rustfmt::skip]
const CALLS: &[Syscall] = &[
    // Opens: notified when the flags may create a file.
    Syscall { name: "open", nr: 2, role: OpenIfCreating(OpenArgs { dir: Cwd, path: 0, flags: 1, mode: 2 }) },
    Syscall { name: "openat", nr: 257, role: OpenIfCreating(OpenArgs { dir: Arg(0), path: 1, flags: 2, mode: 3 }) },
    // Calls that may create a name: always notified.
    Syscall { name: "creat", nr: 85, role: Notified(Creat { path: 0, mode: 1 }) },
    Syscall { name: "openat2", nr: 437, role: Notified(Openat2 { dirfd: 0, path: 1, how: 2, size: 3 }) },
    Syscall { name: "mknod", nr: 133, role: Notified(Mknod { dir: Cwd, path: 0, mode: 1, dev: 2 }) },
    Syscall { name: "mknodat", nr: 259, role: Notified(Mknod { dir: Arg(0), path: 1, mode: 2, dev: 3 }) },
    Syscall { name: "rename", nr: 82, role: Notified(Rename { old_dir: Cwd, old: 0, new_dir: Cwd, new: 1, flags: None }) },
    Syscall { name: "renameat", nr: 264, role: Notified(Rename { old_dir: Arg(0), old: 1, new_dir: Arg(2), new: 3, flags: None }) },
    Syscall { name: "renameat2", nr: 316, role: Notified(Rename { old_dir: Arg(0), old: 1, new_dir: Arg(2), new: 3, flags: Some(4) }) },
    Syscall { name: "link", nr: 86, role: Notified(Link { old_dir: Cwd, old: 0, new_dir: Cwd, new: 1, flags: None }) },
    Syscall { name: "linkat", nr: 265, role: Notified(Link { old_dir: Arg(0), old: 1, new_dir: Arg(2), new: 3, flags: Some(4) }) },
    Syscall { name: "symlink", nr: 88, role: Notified(Symlink { target: 0, new_dir: Cwd, new: 1 }) },
    Syscall { name: "symlinkat", nr: 266, role: Notified(Symlink { target: 0, new_dir: Arg(1), new: 2 }) },
    Syscall { name: "mkdir", nr: 83, role: Notified(Mkdir { dir: Cwd, path: 0, mode: 1 }) },
    Syscall { name: "mkdirat", nr: 258, role: Notified(Mkdir { dir: Arg(0), path: 1, mode: 2 }) },
    Syscall { name: "bind", nr: 49, role: Notified(Bind { fd: 0, addr: 1, len: 2 }) },
    // A connect is checked (a Unix socket must be one the guarded tree
    // bound) and performed by the supervisor.
    Syscall { name: "connect", nr: 42, role: Notified(Connect { fd: 0, addr: 1, len: 2 }) },
    // Ways around the supervisor: EPERM.
    Syscall { name: "io_uring_setup", nr: 425, role: Refused },
    Syscall { name: "open_by_handle_at", nr: 304, role: Refused },
    Syscall { name: "name_to_handle_at", nr: 303, role: Refused },
    Syscall { name: "pidfd_getfd", nr: 438, role: Refused },
    Syscall { name: "mount", nr: 165, role: Refused },
    Syscall { name: "umount2", nr: 166, role: Refused },
    Syscall { name: "pivot_root", nr: 155, role: Refused },
    Syscall { name: "fsopen", nr: 430, role: Refused },
    Syscall { name: "fsmount", nr: 432, role: Refused },
    Syscall { name: "fsconfig", nr: 431, role: Refused },
    Syscall { name: "move_mount", nr: 429, role: Refused },
    Syscall { name: "open_tree", nr: 428, role: Refused },
    Syscall { name: "mount_setattr", nr: 442, role: Refused },
    Syscall { name: "setns", nr: 308, role: Refused },
    Syscall { name: "clone3", nr: 435, role: NoSys },
    Syscall { name: "prctl", nr: 157, role: KeepDumpable },
    // Seen, then let through: the umasks read for creations are forgotten.
    Syscall { name: "umask", nr: 95, role: UmaskChange },
    // Refused only when aimed at the supervisor, asking for a listener, or
    // asking for a new mount or user namespace.
    Syscall { name: "ptrace", nr: 101, role: RefusedWhen { arg: 1, test: ArgTest::IsSupervisor } },
    Syscall { name: "process_vm_writev", nr: 311, role: RefusedWhen { arg: 0, test: ArgTest::IsSupervisor } },
    Syscall { name: "seccomp", nr: 317, role: RefusedWhen { arg: 1, test: ArgTest::AnyBit(FILTER_FLAG_NEW_LISTENER) } },
    Syscall { name: "unshare", nr: 272, role: RefusedWhen { arg: 0, test: ArgTest::AnyBit(NEW_NAMESPACE_BITS) } },
    Syscall { name: "clone", nr: 56, role: RefusedWhen { arg: 0, test: ArgTest::AnyBit(NEW_NAMESPACE_BITS) } },
    // On the host only (--landlock): what bubblewrap's mounts and network
    // namespace decide inside it.
    Syscall { name: "truncate", nr: 76, role: HostNotified(Truncate { path: 0, len: 1 }) },
    Syscall { name: "getdents", nr: 78, role: HostNotified(Getdents { fd: 0, buf: 1, count: 2 }) },
    Syscall { name: "getdents64", nr: 217, role: HostNotified(Getdents { fd: 0, buf: 1, count: 2 }) },
    Syscall { name: "unlink", nr: 87, role: HostNotified(Unlink { dir: Cwd, path: 0, flags: UnlinkFlags::File }) },
    Syscall { name: "rmdir", nr: 84, role: HostNotified(Unlink { dir: Cwd, path: 0, flags: UnlinkFlags::Dir }) },
    Syscall { name: "unlinkat", nr: 263, role: HostNotified(Unlink { dir: Arg(0), path: 1, flags: UnlinkFlags::Arg(2) }) },
    Syscall { name: "socket", nr: 41, role: HostSocket(SocketArgs { domain: 0, kind: 1, protocol: 2 }) },
    Syscall { name: "socketpair", nr: 53, role: HostSocket(SocketArgs { domain: 0, kind: 1, protocol: 2 }) },
    Syscall { name: "sendto", nr: 44, role: HostRefusedWhen { arg: 3, bits: MSG_FASTOPEN } },
    Syscall { name: "sendmsg", nr: 46, role: HostRefusedWhen { arg: 2, bits: MSG_FASTOPEN } },
    Syscall { name: "sendmmsg", nr: 307, role: HostRefusedWhen { arg: 3, bits: MSG_FASTOPEN } },
];
