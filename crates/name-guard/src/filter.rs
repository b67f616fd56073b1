//! The seccomp program installed in the guarded process, built from one
//! architecture's system call table ([`crate::syscalls`]).

use crate::sys::SockFilter;
use crate::syscalls::{Abi, ArgTest, Role, SocketArgs};

#[cfg(test)]
mod interpreter;
#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod tests;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;
const ALU_AND_K: u16 = 0x54;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_USER_NOTIF: u32 = 0x7fc0_0000;
const RET_ERRNO: u32 = 0x0005_0000;

const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
fn off_arg(i: u8) -> u32 {
    16 + 8 * u32::from(i)
}

/// `O_CREAT | __O_TMPFILE`: an open with either bit may create a file (the
/// same bits on x86-64 and aarch64).
pub(crate) const CREATING_OPEN_BITS: u32 = 0o100 | 0o20_000_000;

/// On the host, opens that may write are notified too: `O_WRONLY`,
/// `O_RDWR` and `O_TRUNC` (the same bits on x86-64 and aarch64), so that
/// the supervisor can refuse a protected path; read-only opens never reach
/// it.
pub(crate) const WRITING_OPEN_BITS: u32 = 0o1 | 0o2 | 0o1000;

/// Where the filter runs: what differs is only which calls reach the
/// supervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Inside bubblewrap: mounts and the network namespace do the rest.
    Bubblewrap,
    /// On the host, under Landlock (`--landlock`): also write-opens,
    /// truncations and removals, and only Unix and TCP stream sockets.
    Host,
}

/// `PR_SET_DUMPABLE`.
const PR_SET_DUMPABLE: u32 = 4;

fn ins(code: u16, jt: u8, jf: u8, k: u32) -> SockFilter {
    SockFilter { code, jt, jf, k }
}

/// Build the program for `abi`. `supervisor` is the supervisor's pid as the
/// guarded process sees it; `ptrace` and `process_vm_writev` aimed at it
/// are refused.
///
/// A call made through another ABI than `abi`'s (another `AUDIT_ARCH_*`
/// value, or a number with `abi`'s foreign bit) is refused with `EPERM`.
/// Then each call of the table is one block that returns when the number
/// matches and falls through, with the number loaded, when it does not;
/// a call the table does not name is allowed.
pub(crate) fn program(abi: &Abi, supervisor: i32, place: Place) -> Vec<SockFilter> {
    let eperm = RET_ERRNO | libc::EPERM as u32;
    let host = place == Place::Host;
    let open_bits = if host {
        CREATING_OPEN_BITS | WRITING_OPEN_BITS
    } else {
        CREATING_OPEN_BITS
    };
    let sup = supervisor as u32;
    let mut p = vec![
        ins(LD_W_ABS, 0, 0, OFF_ARCH),
        ins(JEQ_K, 1, 0, abi.audit_arch),
        ins(RET_K, 0, 0, eperm),
        ins(LD_W_ABS, 0, 0, OFF_NR),
    ];
    if let Some(bit) = abi.foreign_nr_bit {
        p.extend([ins(JGE_K, 0, 1, bit), ins(RET_K, 0, 0, eperm)]);
    }
    for call in abi.calls {
        let nr = call.nr;
        match call.role {
            // Notify only when the flags may create a file.
            Role::OpenIfCreating(o) => p.extend([
                ins(JEQ_K, 0, 4, nr),
                ins(LD_W_ABS, 0, 0, off_arg(o.flags)),
                ins(JSET_K, 0, 1, open_bits),
                ins(RET_K, 0, 0, RET_USER_NOTIF),
                ins(RET_K, 0, 0, RET_ALLOW),
            ]),
            Role::Notified(_) | Role::UmaskChange => {
                p.extend([ins(JEQ_K, 0, 1, nr), ins(RET_K, 0, 0, RET_USER_NOTIF)]);
            }
            // Inside bubblewrap these are allowed: no block at all.
            Role::HostNotified(_) | Role::HostSocket(_) | Role::HostRefusedWhen { .. } if !host => {
            }
            Role::HostNotified(_) => {
                p.extend([ins(JEQ_K, 0, 1, nr), ins(RET_K, 0, 0, RET_USER_NOTIF)]);
            }
            Role::HostSocket(args) => p.extend(socket_block(nr, args)),
            Role::HostRefusedWhen { arg, bits } => p.extend([
                ins(JEQ_K, 0, 4, nr),
                ins(LD_W_ABS, 0, 0, off_arg(arg)),
                ins(JSET_K, 0, 1, bits),
                ins(RET_K, 0, 0, eperm),
                ins(RET_K, 0, 0, RET_ALLOW),
            ]),
            Role::Refused => p.extend([ins(JEQ_K, 0, 1, nr), ins(RET_K, 0, 0, eperm)]),
            Role::NoSys => p.extend([
                ins(JEQ_K, 0, 1, nr),
                ins(RET_K, 0, 0, RET_ERRNO | libc::ENOSYS as u32),
            ]),
            // `prctl(PR_SET_DUMPABLE, 0)` answers 0; otherwise the number
            // is loaded again for the blocks after this one. Inside the
            // sandbox only the guarded processes could read each other
            // anyway.
            Role::KeepDumpable => p.extend([
                ins(JEQ_K, 0, 5, nr),
                ins(LD_W_ABS, 0, 0, off_arg(0)),
                ins(JEQ_K, 0, 3, PR_SET_DUMPABLE),
                ins(LD_W_ABS, 0, 0, off_arg(1)),
                ins(JEQ_K, 0, 1, 0),
                ins(RET_K, 0, 0, RET_ERRNO),
                ins(LD_W_ABS, 0, 0, OFF_NR),
            ]),
            // Compare one argument's low word.
            Role::RefusedWhen { arg, test } => {
                let (op, k) = match test {
                    ArgTest::IsSupervisor => (JEQ_K, sup),
                    ArgTest::AnyBit(bits) => (JSET_K, bits),
                };
                p.extend([
                    ins(JEQ_K, 0, 4, nr),
                    ins(LD_W_ABS, 0, 0, off_arg(arg)),
                    ins(op, 0, 1, k),
                    ins(RET_K, 0, 0, eperm),
                    ins(RET_K, 0, 0, RET_ALLOW),
                ]);
            }
        }
    }
    p.push(ins(RET_K, 0, 0, RET_ALLOW));
    p
}

/// `socket` or `socketpair` on the host: `AF_UNIX` with `SOCK_STREAM` or
/// `SOCK_SEQPACKET`, or `AF_INET`/`AF_INET6` with `SOCK_STREAM` and protocol
/// 0 or `IPPROTO_TCP`; anything else `EACCES`. The type's flag bits
/// (`SOCK_NONBLOCK`, `SOCK_CLOEXEC`) are masked off. Every path returns
/// but the first jump, which leaves the number loaded.
fn socket_block(nr: u32, a: SocketArgs) -> [SockFilter; 17] {
    let eacces = RET_ERRNO | libc::EACCES as u32;
    let (unix, inet, inet6) = (
        libc::AF_UNIX as u32,
        libc::AF_INET as u32,
        libc::AF_INET6 as u32,
    );
    let (stream, seqpacket) = (libc::SOCK_STREAM as u32, libc::SOCK_SEQPACKET as u32);
    [
        /* 0 */ ins(JEQ_K, 0, 16, nr),
        /* 1 */ ins(LD_W_ABS, 0, 0, off_arg(a.domain)),
        /* 2 */ ins(JEQ_K, 0, 4, unix),
        /* 3 */ ins(LD_W_ABS, 0, 0, off_arg(a.kind)),
        /* 4 */ ins(ALU_AND_K, 0, 0, 0xf),
        /* 5 */ ins(JEQ_K, 10, 0, stream),
        /* 6 */ ins(JEQ_K, 9, 8, seqpacket),
        /* 7 */ ins(JEQ_K, 1, 0, inet),
        /* 8 */ ins(JEQ_K, 0, 6, inet6),
        /* 9 */ ins(LD_W_ABS, 0, 0, off_arg(a.kind)),
        /* 10 */ ins(ALU_AND_K, 0, 0, 0xf),
        /* 11 */ ins(JEQ_K, 0, 3, stream),
        /* 12 */ ins(LD_W_ABS, 0, 0, off_arg(a.protocol)),
        /* 13 */ ins(JEQ_K, 2, 0, 0),
        /* 14 */ ins(JEQ_K, 1, 0, libc::IPPROTO_TCP as u32),
        /* 15 */ ins(RET_K, 0, 0, eacces),
        /* 16 */ ins(RET_K, 0, 0, RET_ALLOW),
    ]
}

/// `SECCOMP_RET_TRACE`: the call stops for the tracer first (and fails
/// with `ENOSYS` when there is none).
const RET_TRACE: u32 = 0x7ff0_0000;
/// `AT_NO_AUTOMOUNT`: a flag of `statx` and `newfstatat` some user-space
/// kernels refuse.
pub(crate) const AT_NO_AUTOMOUNT: u32 = 0x800;

/// A program that stops `statx` (flags: its third argument) and
/// `newfstatat` (its fourth) for the tracer when they carry
/// [`AT_NO_AUTOMOUNT`], and allows everything else (a call through another
/// ABI too: the program narrows nothing). The tracer takes the flag out: a
/// kernel that refuses it (gVisor's release 20221219 answers `EINVAL`, so
/// `ls` and `stat` fail on every path) then answers the call.
pub(crate) fn statx_trace(abi: &Abi, statx_nr: u32, newfstatat_nr: u32) -> Vec<SockFilter> {
    vec![
        // 0-1: another ABI: allowed (10).
        ins(LD_W_ABS, 0, 0, OFF_ARCH),
        ins(JEQ_K, 0, 8, abi.audit_arch),
        // 2-5: statx, its flags: traced (9) or allowed (10).
        ins(LD_W_ABS, 0, 0, OFF_NR),
        ins(JEQ_K, 0, 2, statx_nr),
        ins(LD_W_ABS, 0, 0, off_arg(2)),
        ins(JSET_K, 3, 4, AT_NO_AUTOMOUNT),
        // 6-8: newfstatat, its flags.
        ins(JEQ_K, 0, 3, newfstatat_nr),
        ins(LD_W_ABS, 0, 0, off_arg(3)),
        ins(JSET_K, 0, 1, AT_NO_AUTOMOUNT),
        ins(RET_K, 0, 0, RET_TRACE),
        ins(RET_K, 0, 0, RET_ALLOW),
    ]
}
