//! Each table against `testdata/syscalls-<arch>.toml` (the calls the guard
//! must know, with the kernel's numbers), and the native table against the
//! C library's numbers as the `libc` crate gives them for this target.

use super::{AARCH64, Abi, Args, Dir, NATIVE, Role, X86_64};

#[derive(serde::Deserialize)]
struct Case {
    intent: String,
    name: String,
    nr: u32,
    role: String,
}

/// The testdata's word for a role.
fn role_word(role: &Role) -> &'static str {
    match role {
        Role::OpenIfCreating(_) => "open-if-creating",
        Role::Notified(_) => "notified",
        Role::Refused => "refused",
        Role::NoSys => "enosys",
        Role::RefusedWhen { .. } => "refused-when",
        Role::KeepDumpable => "keep-dumpable",
        Role::UmaskChange => "umask-change",
        Role::HostNotified(_) => "host-notified",
        Role::HostSocket(_) => "host-socket",
        Role::HostRefusedWhen { .. } => "host-refused-when",
    }
}

fn cases(abi: &Abi) -> Vec<Case> {
    test_support::cases::load(
        test_support::testdata_dir!(),
        &format!("syscalls-{}.toml", abi.name),
    )
}

#[test]
fn every_table_holds_exactly_its_testdata() {
    for abi in [&X86_64, &AARCH64] {
        let cases = cases(abi);
        for case in &cases {
            let Some(call) = abi.calls.iter().find(|c| c.name == case.name) else {
                panic!(
                    "{}: the table lacks {} ({})",
                    abi.name, case.name, case.intent
                );
            };
            assert_eq!(
                call.nr, case.nr,
                "{}: {} has number {}, the kernel's is {} ({})",
                abi.name, case.name, call.nr, case.nr, case.intent
            );
            assert_eq!(
                role_word(&call.role),
                case.role,
                "{}: {} ({})",
                abi.name,
                case.name,
                case.intent
            );
        }
        for call in abi.calls {
            assert!(
                cases.iter().any(|c| c.name == call.name),
                "{}: {} is in the table but not in the testdata",
                abi.name,
                call.name
            );
        }
    }
}

#[test]
fn every_table_names_each_call_and_number_once() {
    for abi in [&X86_64, &AARCH64] {
        for (i, a) in abi.calls.iter().enumerate() {
            for b in &abi.calls[i + 1..] {
                assert_ne!(a.name, b.name, "{}: twice", abi.name);
                assert_ne!(a.nr, b.nr, "{}: {} and {}", abi.name, a.name, b.name);
            }
            assert_eq!(abi.role(i64::from(a.nr)), Some(&a.role));
        }
    }
}

#[test]
fn argument_indexes_are_arguments() {
    fn dir(d: Dir) -> Vec<u8> {
        match d {
            Dir::Cwd => Vec::new(),
            Dir::Arg(i) => vec![i],
        }
    }
    for abi in [&X86_64, &AARCH64] {
        for call in abi.calls {
            let used: Vec<u8> = match call.role {
                Role::OpenIfCreating(o) => [dir(o.dir), vec![o.path, o.flags, o.mode]].concat(),
                Role::Notified(args) | Role::HostNotified(args) => match args {
                    Args::Creat { path, mode } => vec![path, mode],
                    Args::Openat2 {
                        dirfd,
                        path,
                        how,
                        size,
                    } => vec![dirfd, path, how, size],
                    Args::Mknod {
                        dir: d,
                        path,
                        mode,
                        dev,
                    } => [dir(d), vec![path, mode, dev]].concat(),
                    Args::Rename {
                        old_dir,
                        old,
                        new_dir,
                        new,
                        flags,
                    }
                    | Args::Link {
                        old_dir,
                        old,
                        new_dir,
                        new,
                        flags,
                    } => [
                        dir(old_dir),
                        vec![old],
                        dir(new_dir),
                        vec![new],
                        flags.into_iter().collect(),
                    ]
                    .concat(),
                    Args::Symlink {
                        target,
                        new_dir,
                        new,
                    } => [vec![target], dir(new_dir), vec![new]].concat(),
                    Args::Mkdir { dir: d, path, mode } => [dir(d), vec![path, mode]].concat(),
                    Args::Bind { fd, addr, len } | Args::Connect { fd, addr, len } => {
                        vec![fd, addr, len]
                    }
                    Args::Truncate { path, len } => vec![path, len],
                    Args::Getdents { fd, buf, count } => vec![fd, buf, count],
                    Args::Unlink {
                        dir: d,
                        path,
                        flags,
                    } => {
                        let flags = match flags {
                            super::UnlinkFlags::Arg(i) => vec![i],
                            _ => Vec::new(),
                        };
                        [dir(d), vec![path], flags].concat()
                    }
                },
                Role::HostSocket(s) => vec![s.domain, s.kind, s.protocol],
                Role::RefusedWhen { arg, .. } | Role::HostRefusedWhen { arg, .. } => vec![arg],
                Role::Refused | Role::NoSys | Role::KeepDumpable | Role::UmaskChange => Vec::new(),
            };
            // In the call's order: each argument once, all among the six.
            let what = format!("{}: {} {used:?}", abi.name, call.name);
            assert!(used.iter().all(|&i| i < 6), "{what}");
            assert!(used.windows(2).all(|w| w[0] < w[1]), "{what}");
        }
    }
}

/// The native table's calls with the `libc` crate's numbers for this
/// target.
#[cfg(target_arch = "x86_64")]
const LIBC: &[(&str, libc::c_long)] = &[
    ("open", libc::SYS_open),
    ("openat", libc::SYS_openat),
    ("creat", libc::SYS_creat),
    ("openat2", libc::SYS_openat2),
    ("mknod", libc::SYS_mknod),
    ("mknodat", libc::SYS_mknodat),
    ("rename", libc::SYS_rename),
    ("renameat", libc::SYS_renameat),
    ("renameat2", libc::SYS_renameat2),
    ("link", libc::SYS_link),
    ("linkat", libc::SYS_linkat),
    ("symlink", libc::SYS_symlink),
    ("symlinkat", libc::SYS_symlinkat),
    ("mkdir", libc::SYS_mkdir),
    ("mkdirat", libc::SYS_mkdirat),
    ("bind", libc::SYS_bind),
    ("connect", libc::SYS_connect),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("fsopen", libc::SYS_fsopen),
    ("fsmount", libc::SYS_fsmount),
    ("fsconfig", libc::SYS_fsconfig),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("setns", libc::SYS_setns),
    ("clone3", libc::SYS_clone3),
    ("prctl", libc::SYS_prctl),
    ("umask", libc::SYS_umask),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("seccomp", libc::SYS_seccomp),
    ("unshare", libc::SYS_unshare),
    ("clone", libc::SYS_clone),
    ("truncate", libc::SYS_truncate),
    ("getdents", libc::SYS_getdents),
    ("getdents64", libc::SYS_getdents64),
    ("unlink", libc::SYS_unlink),
    ("rmdir", libc::SYS_rmdir),
    ("unlinkat", libc::SYS_unlinkat),
    ("socket", libc::SYS_socket),
    ("socketpair", libc::SYS_socketpair),
    ("sendto", libc::SYS_sendto),
    ("sendmsg", libc::SYS_sendmsg),
    ("sendmmsg", libc::SYS_sendmmsg),
];

/// The native table's calls with the `libc` crate's numbers for this
/// target. `renameat` (38) is missing: the crate names no `SYS_renameat`
/// for aarch64 with the GNU C library, though the kernel has the call; the
/// testdata holds its number.
#[cfg(target_arch = "aarch64")]
const LIBC: &[(&str, libc::c_long)] = &[
    ("openat", libc::SYS_openat),
    ("openat2", libc::SYS_openat2),
    ("mknodat", libc::SYS_mknodat),
    ("renameat2", libc::SYS_renameat2),
    ("linkat", libc::SYS_linkat),
    ("symlinkat", libc::SYS_symlinkat),
    ("mkdirat", libc::SYS_mkdirat),
    ("bind", libc::SYS_bind),
    ("connect", libc::SYS_connect),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("fsopen", libc::SYS_fsopen),
    ("fsmount", libc::SYS_fsmount),
    ("fsconfig", libc::SYS_fsconfig),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("setns", libc::SYS_setns),
    ("clone3", libc::SYS_clone3),
    ("prctl", libc::SYS_prctl),
    ("umask", libc::SYS_umask),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("seccomp", libc::SYS_seccomp),
    ("unshare", libc::SYS_unshare),
    ("clone", libc::SYS_clone),
    ("truncate", libc::SYS_truncate),
    ("getdents64", libc::SYS_getdents64),
    ("unlinkat", libc::SYS_unlinkat),
    ("socket", libc::SYS_socket),
    ("socketpair", libc::SYS_socketpair),
    ("sendto", libc::SYS_sendto),
    ("sendmsg", libc::SYS_sendmsg),
    ("sendmmsg", libc::SYS_sendmmsg),
];

/// Calls of the native table that [`LIBC`] cannot name.
#[cfg(target_arch = "aarch64")]
const NOT_IN_LIBC: &[&str] = &["renameat"];
/// Calls of the native table that [`LIBC`] cannot name.
#[cfg(target_arch = "x86_64")]
const NOT_IN_LIBC: &[&str] = &[];

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn the_native_table_has_the_c_library_s_numbers() {
    let Some(abi) = NATIVE else {
        panic!("no native table on a target that has one")
    };
    for call in abi.calls {
        match LIBC.iter().find(|(name, _)| *name == call.name) {
            Some(&(_, nr)) => assert_eq!(i64::from(call.nr), nr, "{}", call.name),
            None => assert!(
                NOT_IN_LIBC.contains(&call.name),
                "{}: {} not compared with libc",
                abi.name,
                call.name
            ),
        }
    }
    for (name, _) in LIBC {
        assert!(abi.calls.iter().any(|c| c.name == *name), "{name}");
    }
}
