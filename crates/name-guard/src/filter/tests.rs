//! The program of each architecture's table, run through the interpreter on
//! synthetic calls: what it answers for each role, and for calls of another
//! ABI.

use super::interpreter::{Data, run};
use super::*;
use crate::syscalls::{AARCH64, X86_64};

const SUP: i32 = 7;
const EPERM: u32 = RET_ERRNO | libc::EPERM as u32;
const ENOSYS: u32 = RET_ERRNO | libc::ENOSYS as u32;
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;
const O_CREAT: u64 = 0o100;
const O_TMPFILE: u64 = 0o20_000_000 | 0o200_000;
const O_WRONLY_TRUNC: u64 = 0o1 | 0o1000;

fn both() -> [&'static Abi; 2] {
    [&X86_64, &AARCH64]
}

/// The program's answer to call `name` of `abi` with `args`.
fn answer(abi: &Abi, name: &str, args: &[u64]) -> u32 {
    let nr = nr_of(abi, name);
    run(
        &program(abi, SUP, Place::Bubblewrap),
        &Data::new(abi.audit_arch, nr, args),
    )
}

fn nr_of(abi: &Abi, name: &str) -> u32 {
    match abi.calls.iter().find(|c| c.name == name) {
        Some(c) => c.nr,
        None => panic!("{}: no {name} in the table", abi.name),
    }
}

#[test]
fn program_is_well_formed() {
    for abi in both() {
        let p = program(abi, SUP, Place::Bubblewrap);
        assert!(p.len() < 200, "{}: {} instructions", abi.name, p.len());
        // Every jump lands inside the program.
        for (i, f) in p.iter().enumerate() {
            if f.code & 0x07 == 0x05 {
                assert!(i + 1 + usize::from(f.jt.max(f.jf)) < p.len());
            }
        }
        assert_eq!(p.last().map(|f| f.k), Some(RET_ALLOW));
    }
}

#[test]
fn a_call_of_another_architecture_is_refused() {
    let others = [
        AUDIT_ARCH_I386,
        AUDIT_ARCH_ARM,
        X86_64.audit_arch,
        AARCH64.audit_arch,
        0,
    ];
    for abi in both() {
        let p = program(abi, SUP, Place::Bubblewrap);
        for arch in others.into_iter().filter(|&a| a != abi.audit_arch) {
            // Every number, listed or not (i386's 5 is its open, 39 and 172
            // are getpid somewhere), with flags that would create.
            let listed = abi.calls.iter().map(|c| c.nr);
            for nr in listed.chain([0, 5, 39, 172]) {
                let d = Data::new(arch, nr, &[0, O_CREAT, O_CREAT, O_CREAT]);
                assert_eq!(run(&p, &d), EPERM, "{}: arch {arch:#x} nr {nr}", abi.name);
            }
        }
    }
}

#[test]
fn x32_calls_are_refused_on_x86_64() {
    let p = program(&X86_64, SUP, Place::Bubblewrap);
    // x32's openat (257), its own numbers from 512, getpid (39).
    for nr in [257, 512, 519, 39, 0] {
        let d = Data::new(X86_64.audit_arch, 0x4000_0000 | nr, &[0, 0, 0]);
        assert_eq!(run(&p, &d), EPERM, "x32 nr {nr}");
    }
    // aarch64 has no such bit: a number there is just a number.
    assert_eq!(AARCH64.foreign_nr_bit, None);
}

#[test]
fn every_notified_call_is_sent_to_the_supervisor() {
    for abi in both() {
        let mut seen = 0;
        for call in abi.calls {
            if let Role::Notified(_) = call.role {
                seen += 1;
                assert_eq!(
                    answer(abi, call.name, &[]),
                    RET_USER_NOTIF,
                    "{}: {}",
                    abi.name,
                    call.name
                );
            }
        }
        assert!(seen >= 8, "{}: {seen} notified calls", abi.name);
    }
}

#[test]
fn umask_is_sent_to_the_supervisor_in_both_places() {
    // The supervisor remembers umasks only because it sees every change.
    for abi in both() {
        for place in [Place::Bubblewrap, Place::Host] {
            let p = program(abi, SUP, place);
            assert_eq!(
                run(
                    &p,
                    &Data::new(abi.audit_arch, nr_of(abi, "umask"), &[0o077])
                ),
                RET_USER_NOTIF,
                "{}",
                abi.name
            );
        }
    }
}

#[test]
fn an_open_is_sent_only_when_it_may_create() {
    for abi in both() {
        for call in abi.calls {
            let Role::OpenIfCreating(o) = call.role else {
                continue;
            };
            let with = |flags: u64| {
                let mut args = [0u64; 6];
                args[usize::from(o.flags)] = flags;
                run(
                    &program(abi, SUP, Place::Bubblewrap),
                    &Data::new(abi.audit_arch, call.nr, &args),
                )
            };
            let what = format!("{}: {}", abi.name, call.name);
            assert_eq!(with(0), RET_ALLOW, "{what} O_RDONLY");
            assert_eq!(with(O_WRONLY_TRUNC), RET_ALLOW, "{what} O_WRONLY|O_TRUNC");
            assert_eq!(with(O_CREAT), RET_USER_NOTIF, "{what} O_CREAT");
            assert_eq!(with(O_CREAT | 0o200), RET_USER_NOTIF, "{what} O_EXCL");
            assert_eq!(with(O_TMPFILE | 0o2), RET_USER_NOTIF, "{what} O_TMPFILE");
            // The flags are an int: only the low word counts.
            assert_eq!(with(O_CREAT << 32), RET_ALLOW, "{what} high word");
        }
        assert_eq!(
            answer(abi, "openat", &[libc::AT_FDCWD as u64, 0, 0]),
            RET_ALLOW,
            "{}: openat without O_CREAT",
            abi.name
        );
    }
}

#[test]
fn refused_calls_answer_eperm() {
    for abi in both() {
        for call in abi.calls.iter().filter(|c| c.role == Role::Refused) {
            assert_eq!(
                answer(abi, call.name, &[]),
                EPERM,
                "{}: {}",
                abi.name,
                call.name
            );
        }
        for name in ["io_uring_setup", "open_by_handle_at", "mount", "setns"] {
            assert_eq!(answer(abi, name, &[]), EPERM, "{}: {name}", abi.name);
        }
    }
}

#[test]
fn clone3_answers_enosys_and_prctl_keeps_dumpable() {
    for abi in both() {
        let n = abi.name;
        assert_eq!(answer(abi, "clone3", &[]), ENOSYS, "{n}");
        assert_eq!(answer(abi, "prctl", &[4, 0]), RET_ERRNO, "{n}: answers 0");
        assert_eq!(answer(abi, "prctl", &[4, 1]), RET_ALLOW, "{n}");
        assert_eq!(
            answer(abi, "prctl", &[15, 0]),
            RET_ALLOW,
            "{n}: PR_SET_NAME"
        );
    }
}

#[test]
fn calls_aimed_at_the_supervisor_or_a_new_namespace_are_refused() {
    let sup = SUP as u64;
    let new_user = 0x1000_0000;
    let new_ns = 0x0002_0000;
    let new_net = 0x4000_0000;
    for abi in both() {
        let n = abi.name;
        assert_eq!(answer(abi, "ptrace", &[16, sup]), EPERM, "{n}");
        assert_eq!(answer(abi, "ptrace", &[16, sup + 1]), RET_ALLOW, "{n}");
        assert_eq!(answer(abi, "process_vm_writev", &[sup]), EPERM, "{n}");
        assert_eq!(answer(abi, "process_vm_writev", &[1]), RET_ALLOW, "{n}");
        let listener = u64::from(crate::sys::FILTER_FLAG_NEW_LISTENER);
        assert_eq!(answer(abi, "seccomp", &[1, listener]), EPERM, "{n}");
        assert_eq!(answer(abi, "seccomp", &[1, 0]), RET_ALLOW, "{n}");
        for call in ["unshare", "clone"] {
            assert_eq!(answer(abi, call, &[new_user]), EPERM, "{n}: {call}");
            assert_eq!(answer(abi, call, &[new_ns]), EPERM, "{n}: {call}");
            assert_eq!(answer(abi, call, &[new_net]), RET_ALLOW, "{n}: {call}");
        }
    }
}

#[test]
fn a_call_the_table_does_not_name_is_allowed() {
    // read and getpid: x86-64 0 and 39, aarch64 63 and 172.
    for (abi, nrs) in [(&X86_64, [0, 39]), (&AARCH64, [63, 172])] {
        for nr in nrs {
            assert!(abi.role(i64::from(nr)).is_none());
            let d = Data::new(abi.audit_arch, nr, &[0, O_CREAT, O_CREAT]);
            assert_eq!(
                run(&program(abi, SUP, Place::Bubblewrap), &d),
                RET_ALLOW,
                "{}: {nr}",
                abi.name
            );
        }
    }
}

#[test]
fn the_creating_bits_are_the_native_c_library_s() {
    let tmpfile = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32;
    assert_eq!(CREATING_OPEN_BITS, libc::O_CREAT as u32 | tmpfile);
}

/// The host program's answer to call `name` of `abi` with `args`.
fn host_answer(abi: &Abi, name: &str, args: &[u64]) -> u32 {
    let nr = nr_of(abi, name);
    run(
        &program(abi, SUP, Place::Host),
        &Data::new(abi.audit_arch, nr, args),
    )
}

#[test]
fn on_the_host_write_opens_truncations_and_removals_reach_the_supervisor() {
    for abi in both() {
        let n = abi.name;
        let at = libc::AT_FDCWD as u64;
        assert_eq!(
            host_answer(abi, "openat", &[at, 0, 0]),
            RET_ALLOW,
            "{n}: read"
        );
        for flags in [0o1, 0o2, 0o1000, O_CREAT, 0o2 | 0o2000] {
            assert_eq!(
                host_answer(abi, "openat", &[at, 0, flags]),
                RET_USER_NOTIF,
                "{n}: flags {flags:#o}"
            );
            // Inside bubblewrap a write-open of an existing file is the
            // kernel's to decide.
            let want = if flags & O_CREAT == 0 {
                RET_ALLOW
            } else {
                RET_USER_NOTIF
            };
            assert_eq!(answer(abi, "openat", &[at, 0, flags]), want, "{n}");
        }
        for name in ["truncate", "unlinkat"] {
            assert_eq!(host_answer(abi, name, &[]), RET_USER_NOTIF, "{n}: {name}");
            assert_eq!(answer(abi, name, &[]), RET_ALLOW, "{n}: {name} in bwrap");
        }
    }
    assert_eq!(host_answer(&X86_64, "unlink", &[]), RET_USER_NOTIF);
    assert_eq!(host_answer(&X86_64, "rmdir", &[]), RET_USER_NOTIF);
}

#[test]
fn on_the_host_only_unix_and_tcp_stream_sockets_are_made() {
    let eacces = RET_ERRNO | libc::EACCES as u32;
    let (unix, inet, inet6) = (
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
    );
    let (stream, dgram, seq, raw) = (
        libc::SOCK_STREAM as u64,
        libc::SOCK_DGRAM as u64,
        libc::SOCK_SEQPACKET as u64,
        libc::SOCK_RAW as u64,
    );
    let flags = (libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) as u64;
    let tcp = libc::IPPROTO_TCP as u64;
    let cases: [(&str, [u64; 3], u32); 14] = [
        ("unix stream", [unix, stream, 0], RET_ALLOW),
        (
            "unix stream, nonblocking",
            [unix, stream | flags, 0],
            RET_ALLOW,
        ),
        ("unix seqpacket", [unix, seq, 0], RET_ALLOW),
        ("unix datagram", [unix, dgram, 0], eacces),
        ("tcp", [inet, stream, 0], RET_ALLOW),
        ("tcp by number", [inet, stream | flags, tcp], RET_ALLOW),
        ("tcp over v6", [inet6, stream, tcp], RET_ALLOW),
        ("udp", [inet, dgram, 0], eacces),
        ("udp over v6", [inet6, dgram, 17], eacces),
        ("mptcp", [inet, stream, 262], eacces),
        ("raw", [inet, raw, 1], eacces),
        ("packet", [libc::AF_PACKET as u64, raw, 0], eacces),
        ("netlink", [libc::AF_NETLINK as u64, dgram, 0], eacces),
        ("vsock", [libc::AF_VSOCK as u64, stream, 0], eacces),
    ];
    for abi in both() {
        for (intent, args, want) in cases {
            for call in ["socket", "socketpair"] {
                assert_eq!(
                    host_answer(abi, call, &args),
                    want,
                    "{}: {call} {intent}",
                    abi.name
                );
                assert_eq!(answer(abi, call, &args), RET_ALLOW, "{}: bwrap", abi.name);
            }
        }
        // The calls after the block are still decided.
        assert_eq!(host_answer(abi, "mount", &[]), EPERM, "{}", abi.name);
    }
}

#[test]
fn on_the_host_a_send_that_connects_by_itself_is_refused() {
    let fastopen = u64::from(crate::syscalls::MSG_FASTOPEN);
    for abi in both() {
        let n = abi.name;
        assert_eq!(
            host_answer(abi, "sendto", &[3, 0, 1, fastopen]),
            EPERM,
            "{n}"
        );
        assert_eq!(
            host_answer(abi, "sendto", &[3, 0, 1, 0x40]),
            RET_ALLOW,
            "{n}"
        );
        assert_eq!(host_answer(abi, "sendmsg", &[3, 0, fastopen]), EPERM, "{n}");
        assert_eq!(
            host_answer(abi, "sendmmsg", &[3, 0, 1, fastopen]),
            EPERM,
            "{n}"
        );
        assert_eq!(
            answer(abi, "sendto", &[3, 0, 1, fastopen]),
            RET_ALLOW,
            "{n}"
        );
    }
}

#[test]
fn the_statx_trace_stops_only_stats_that_carry_no_automount() {
    const TRACE: u32 = 0x7ff0_0000;
    for (abi, statx, fstatat) in [(&X86_64, 332, 262), (&AARCH64, 291, 79)] {
        let p = statx_trace(abi, statx, fstatat);
        let call = |arch, nr, args: &[u64]| run(&p, &Data::new(arch, nr, args));
        let a = abi.audit_arch;
        assert_eq!(call(a, statx, &[0, 0, 0x800 | 0x100, 0x7ff]), TRACE);
        assert_eq!(call(a, statx, &[0, 0, 0x100, 0x7ff]), RET_ALLOW);
        assert_eq!(call(a, fstatat, &[0, 0, 0, 0x800]), TRACE);
        assert_eq!(call(a, fstatat, &[0, 0, 0x800, 0x100]), RET_ALLOW);
        assert_eq!(call(a, statx + 1, &[0, 0, 0x800, 0x800]), RET_ALLOW);
        assert_eq!(
            call(AUDIT_ARCH_I386, statx, &[0, 0, 0x800, 0x800]),
            RET_ALLOW
        );
    }
}
