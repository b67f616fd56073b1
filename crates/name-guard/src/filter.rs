//! The seccomp program installed in the guarded process (x86-64).

use crate::sys::{FILTER_FLAG_NEW_LISTENER, SockFilter};

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const fn off_arg(i: u32) -> u32 {
    16 + 8 * i
}

/// `O_CREAT | __O_TMPFILE`: an open with either bit may create a file.
pub(crate) const CREATING_OPEN_BITS: u32 = 0o100 | 0o20_000_000;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> SockFilter {
    SockFilter { code, jt, jf, k }
}

fn nr(n: libc::c_long) -> u32 {
    n as u32
}

/// System calls always sent to the supervisor.
pub(crate) const NOTIFIED: &[libc::c_long] = &[
    libc::SYS_creat,
    libc::SYS_openat2,
    libc::SYS_mknod,
    libc::SYS_mknodat,
    libc::SYS_rename,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_link,
    libc::SYS_linkat,
    libc::SYS_symlink,
    libc::SYS_symlinkat,
    libc::SYS_mkdir,
    libc::SYS_mkdirat,
    libc::SYS_bind,
];

/// System calls refused with `EPERM`: ways around the supervisor. The
/// mount calls would let a process that gained a mount namespace make a
/// file appear under a denied name with no call the guard sees (an overlay
/// copies a file up on a plain write); `setns` would join one.
pub(crate) const REFUSED: &[libc::c_long] = &[
    libc::SYS_io_uring_setup,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_setns,
];

/// `CLONE_NEWNS | CLONE_NEWUSER`: new mount or user namespaces, refused in
/// `unshare` and `clone` (whose flags the filter can read).
const NEW_NAMESPACE_BITS: u32 = 0x0002_0000 | 0x1000_0000;

/// `PR_SET_DUMPABLE`.
const PR_SET_DUMPABLE: u32 = 4;

/// Build the program. `supervisor` is the supervisor's pid as the guarded
/// process sees it; `ptrace` and `process_vm_writev` aimed at it are
/// refused, as is a nested filter asking for its own listener (which could
/// answer "continue" in place of the supervisor).
pub(crate) fn program(supervisor: i32) -> Vec<SockFilter> {
    let eperm = RET_ERRNO | libc::EPERM as u32;
    let sup = supervisor as u32;
    let mut p = vec![
        ins(LD_W_ABS, 0, 0, OFF_ARCH),
        ins(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        ins(RET_K, 0, 0, eperm),
        ins(LD_W_ABS, 0, 0, OFF_NR),
        ins(JGE_K, 0, 1, X32_SYSCALL_BIT),
        ins(RET_K, 0, 0, eperm),
    ];
    // open(path, flags) and openat(dirfd, path, flags): notify only when
    // the flags may create a file.
    for (call, arg) in [(libc::SYS_open, 1), (libc::SYS_openat, 2)] {
        p.extend([
            ins(JEQ_K, 0, 4, nr(call)),
            ins(LD_W_ABS, 0, 0, off_arg(arg)),
            ins(JSET_K, 0, 1, CREATING_OPEN_BITS),
            ins(RET_K, 0, 0, RET_USER_NOTIF),
            ins(RET_K, 0, 0, RET_ALLOW),
        ]);
    }
    for &call in NOTIFIED {
        p.extend([ins(JEQ_K, 0, 1, nr(call)), ins(RET_K, 0, 0, RET_USER_NOTIF)]);
    }
    for &call in REFUSED {
        p.extend([ins(JEQ_K, 0, 1, nr(call)), ins(RET_K, 0, 0, eperm)]);
    }
    // clone3 passes its flags in memory the filter cannot read: ENOSYS,
    // so the C library falls back to clone, whose flags it can.
    p.extend([
        ins(JEQ_K, 0, 1, nr(libc::SYS_clone3)),
        ins(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
    ]);
    // A non-dumpable process could not have its path arguments read by the
    // supervisor (which holds no capability), so every call it made that
    // creates a name would fail: `prctl(PR_SET_DUMPABLE, 0)` answers 0 and
    // changes nothing. Inside the sandbox only the guarded processes could
    // read each other anyway.
    p.extend([
        ins(JEQ_K, 0, 5, nr(libc::SYS_prctl)),
        ins(LD_W_ABS, 0, 0, off_arg(0)),
        ins(JEQ_K, 0, 3, PR_SET_DUMPABLE),
        ins(LD_W_ABS, 0, 0, off_arg(1)),
        ins(JEQ_K, 0, 1, 0),
        ins(RET_K, 0, 0, RET_ERRNO),
    ]);
    p.push(ins(LD_W_ABS, 0, 0, OFF_NR));
    // Calls refused only when aimed at the supervisor, asking for a
    // listener, or asking for a new mount or user namespace: compare one
    // argument's low word.
    let aimed: [(libc::c_long, u32, u16, u32); 5] = [
        (libc::SYS_ptrace, 1, JEQ_K, sup),
        (libc::SYS_process_vm_writev, 0, JEQ_K, sup),
        (libc::SYS_seccomp, 1, JSET_K, FILTER_FLAG_NEW_LISTENER),
        (libc::SYS_unshare, 0, JSET_K, NEW_NAMESPACE_BITS),
        (libc::SYS_clone, 0, JSET_K, NEW_NAMESPACE_BITS),
    ];
    for (call, arg, test, k) in aimed {
        p.extend([
            ins(JEQ_K, 0, 4, nr(call)),
            ins(LD_W_ABS, 0, 0, off_arg(arg)),
            ins(test, 0, 1, k),
            ins(RET_K, 0, 0, eperm),
            ins(RET_K, 0, 0, RET_ALLOW),
        ]);
    }
    p.push(ins(RET_K, 0, 0, RET_ALLOW));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_is_well_formed() {
        let p = program(7);
        assert!(p.len() < 200);
        // Every jump lands inside the program.
        for (i, f) in p.iter().enumerate() {
            if f.code & 0x07 == 0x05 {
                assert!(i + 1 + usize::from(f.jt.max(f.jf)) < p.len());
            }
        }
        assert_eq!(p.last().map(|f| f.k), Some(RET_ALLOW));
    }
}
