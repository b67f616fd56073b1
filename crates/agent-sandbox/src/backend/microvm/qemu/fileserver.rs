//! The guest's file system, served from the host: one `virtiofsd` per
//! guest, in a bubblewrap jail whose root is the session's [`Layout`] (the
//! system directories read-only, the spec's mounts with their access, a
//! private home and `/tmp`, the secret set masked, protected paths and the
//! write-deny set read-only), exactly the file system a bubblewrap sandbox
//! of the same spec shows. The guest mounts the jail's root as its own,
//! and its own `/proc` and `/dev` over the jail's.
//!
//! Every rule is the host kernel's: a read-only bind in the jail stays
//! read-only whatever the guest asks (the file server has no
//! `CAP_SYS_ADMIN` to remount it), a mask is a mount of the jail, and what
//! is not in the layout is not in the jail. With filename rules, the file
//! server runs under the name guard in the jail, as a native sandbox's
//! command does: a name the rules deny is refused when the file server
//! would make it, whatever the guest's kernel does. A guest kernel that is
//! taken over reaches what the file server reaches and nothing more.
//!
//! The file server drops its own capabilities before it reads anything
//! the guest sends (the bounding set emptied, no new privileges, its own
//! seccomp filter, `chroot`): it keeps only those that make files as the
//! guest's users (ownership, set-id bits, its credentials), and not those
//! to make device nodes (`CAP_MKNOD`), to pass by file permissions
//! (`CAP_DAC_OVERRIDE`) or to set file capabilities. It starts with all of
//! root's, because its capability library fails under a smaller bounding
//! set once it is chrooted (seen here: killed by its own filter). Without
//! root its jail is a user namespace whose root is the caller, and those
//! capabilities are that namespace's. Its socket is handed to it already
//! listening, so nothing of the host's but the layout is in its jail.

use crate::backend::microvm::layout::{Layout, MountKind};
use sandbox_core::Access;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Where Debian's QEMU packages put the file server.
pub(crate) const VIRTIOFSD_PATHS: &[&str] = &["/usr/lib/qemu/virtiofsd"];
/// The capabilities the file server keeps under the name guard (all of
/// [`sandbox_core::KEEPABLE_CAPABILITIES`]): those it keeps once it has
/// dropped the rest itself, and `setpcap`, which it needs to empty its
/// bounding set (its capability library fails without it) and drops then.
pub(crate) const KEPT_CAPABILITIES: [&str; 7] = sandbox_core::KEEPABLE_CAPABILITIES;
/// The share's tag, which the guest's agent mounts as its root.
pub(crate) const ROOT_TAG: &str = "root";

/// The host's file server, when installed. Reads the ambient machine.
pub(crate) fn find_virtiofsd_ambient() -> Option<PathBuf> {
    VIRTIOFSD_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// bubblewrap's options for the file server's jail: the layout as its
/// root. Without root (`rootless`) the jail is a user namespace mapping the
/// caller to root.
pub(crate) fn jail_args(layout: &Layout, rootless: bool) -> Vec<String> {
    let mut a: Vec<String> = ["--unshare-all", "--die-with-parent", "--new-session"]
        .map(String::from)
        .to_vec();
    if rootless {
        a.extend(
            [
                "--unshare-user",
                "--uid",
                "0",
                "--gid",
                "0",
                "--cap-add",
                "ALL",
            ]
            .map(String::from),
        );
    }
    for d in &layout.root_dirs {
        a.extend(["--dir".into(), d.clone()]);
    }
    for (target, link) in &layout.root_symlinks {
        a.extend(["--symlink".into(), target.clone(), link.clone()]);
    }
    // A read-only tmpfs (a masked directory) is made read-only after what
    // is bound beneath it.
    let mut remount = Vec::new();
    for m in &layout.mounts {
        let dst = m.destination.clone();
        match &m.kind {
            MountKind::Bind(src) => {
                let opt = match m.access {
                    Access::ReadOnly => "--ro-bind",
                    _ => "--bind",
                };
                a.extend([opt.into(), src.clone(), dst]);
            }
            MountKind::Tmpfs => {
                a.extend(["--tmpfs".into(), dst.clone()]);
                if m.access == Access::ReadOnly {
                    remount.push(dst);
                }
            }
            // The file server's own (it reads its descriptors there); the
            // guest mounts its own over them.
            MountKind::Proc => a.extend(["--proc".into(), dst]),
            MountKind::Dev => a.extend(["--dev".into(), dst]),
        }
    }
    for dst in remount.into_iter().rev() {
        a.extend(["--remount-ro".into(), dst]);
    }
    a
}

/// The file server's own command line: its socket (listening on
/// descriptor `socket_fd`), the jail's root as the share, `chroot` into
/// it, the guest's caching as virtiofsd sets it by default (`auto`: what
/// the host changes shows within a second), no extended attributes, and
/// the capabilities it drops besides those it drops by default.
pub(crate) fn virtiofsd_args(virtiofsd: &Path, socket_fd: i32) -> Vec<String> {
    vec![
        virtiofsd.display().to_string(),
        format!("--fd={socket_fd}"),
        "-o".into(),
        "source=/".into(),
        "-o".into(),
        "sandbox=chroot".into(),
        "-o".into(),
        "cache=auto".into(),
        "-o".into(),
        "no_xattr".into(),
        "-o".into(),
        "modcaps=-dac_override:-mknod:-setfcap".into(),
    ]
}

/// A running file server; it ends when dropped.
pub(crate) struct FileServer {
    child: tokio::process::Child,
    pub(crate) socket: PathBuf,
    log: PathBuf,
}

impl FileServer {
    /// Starts the file server with `bwrap` in the jail of `layout`: the
    /// command `command` makes of its socket's descriptor (the file
    /// server's, [`virtiofsd_args`], or the name guard's around it), its
    /// socket bound at `dir/fs.sock` and listening before it starts, its
    /// log in `dir`; `inherit`: a descriptor it keeps at the same number
    /// (the guard's report pipe).
    pub(crate) fn start(
        bwrap: &Path,
        command: impl FnOnce(i32) -> Vec<std::ffi::OsString>,
        layout: &Layout,
        dir: &Path,
        rootless: bool,
        inherit: Option<i32>,
    ) -> Result<FileServer, String> {
        let socket = dir.join("fs.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket)
            .map_err(|e| format!("binding {}: {e}", socket.display()))?;
        let fd = listener.as_raw_fd();
        let log_path = dir.join("fileserver.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
        // Without root, the file server's jail runs it with the caller's
        // supplementary groups, which it cannot drop there (see
        // [`groups_kept_filter`]): its `setgroups` is answered for it.
        let groups_filter = match rootless {
            true => Some(filter_pipe(&groups_kept_filter())?),
            false => None,
        };
        let mut c = tokio::process::Command::new(bwrap);
        c.args(jail_args(layout, rootless));
        if let Some(f) = &groups_filter {
            c.arg("--seccomp").arg(f.as_raw_fd().to_string());
        }
        c.arg("--")
            .args(command(fd))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        crate::process_fds::close_inherited_fds(&mut c);
        crate::process_fds::inherit_fds(&mut c, [fd]);
        if let Some(fd) = inherit {
            crate::process_fds::inherit_fds(&mut c, [fd]);
        }
        if let Some(f) = &groups_filter {
            crate::process_fds::inherit_fds(&mut c, [f.as_raw_fd()]);
        }
        let child = c
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bwrap.display()))?;
        drop(groups_filter);
        // The file server holds the socket now; QEMU connects to its path.
        drop(listener);
        Ok(FileServer {
            child,
            socket,
            log: log_path,
        })
    }

    /// The jail's process (bubblewrap's), while it runs.
    #[cfg(test)]
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Why the file server ended, when it has.
    pub(crate) fn ended(&mut self) -> Option<String> {
        let st = self.child.try_wait().ok()??;
        Some(format!(
            "the file server ended ({st}): {}",
            last_words(&self.log)
        ))
    }

    /// Ends the file server.
    pub(crate) async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// A seccomp program (classic BPF, as bubblewrap's `--seccomp` reads it)
/// under which `setgroups` succeeds without doing anything, and every
/// other call is let through.
///
/// The file server drops its supplementary groups at start and exits when
/// it cannot. Without root it cannot: its jail is a user namespace, where
/// `setgroups` is refused to an unprivileged caller. Its groups are then
/// the caller's own, the ones every other process of the session's user
/// holds (the native sandboxes' commands keep them too), and its jail
/// still holds only the session's layout; so the call is answered as done
/// and the file server runs, rather than the runtime failing for every
/// user who belongs to a group.
fn groups_kept_filter() -> Vec<u8> {
    #[cfg(target_arch = "aarch64")]
    const ARCH_AND_CALL: (u32, u32) = (0xC000_00B7, 159);
    #[cfg(not(target_arch = "aarch64"))]
    const ARCH_AND_CALL: (u32, u32) = (0xC000_003E, 116);
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const RET_ERRNO_ZERO: u32 = 0x0005_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    let (arch, call) = ARCH_AND_CALL;
    // (code, jump if true, jump if false, k); seccomp_data: nr at 0, arch at 4.
    let program: [(u16, u8, u8, u32); 6] = [
        (LD_W_ABS, 0, 0, 4),
        (JEQ_K, 0, 3, arch),
        (LD_W_ABS, 0, 0, 0),
        (JEQ_K, 0, 1, call),
        (RET_K, 0, 0, RET_ERRNO_ZERO),
        (RET_K, 0, 0, RET_ALLOW),
    ];
    let mut out = Vec::with_capacity(program.len() * 8);
    for (code, jt, jf, k) in program {
        out.extend_from_slice(&code.to_ne_bytes());
        out.extend_from_slice(&[jt, jf]);
        out.extend_from_slice(&k.to_ne_bytes());
    }
    out
}

/// A pipe's read end holding `bytes` (small: within a pipe's buffer),
/// its write end closed.
fn filter_pipe(bytes: &[u8]) -> Result<std::os::fd::OwnedFd, String> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| format!("creating a pipe: {e}"))?;
    let mut write = std::fs::File::from(write);
    std::io::Write::write_all(&mut write, bytes)
        .map_err(|e| format!("writing the file server's seccomp program: {e}"))?;
    Ok(read)
}

/// The end of the file server's log, for an error.
fn last_words(log: &Path) -> String {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(4)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::microvm::layout::Mount;

    fn has(args: &[String], seq: &[&str]) -> bool {
        args.windows(seq.len())
            .any(|w| w.iter().zip(seq).all(|(a, b)| a == b))
    }

    #[test]
    fn the_groups_filter_answers_setgroups_alone() {
        let p = groups_kept_filter();
        assert_eq!(p.len(), 6 * 8);
        let insn = |i: usize| {
            let b = &p[i * 8..i * 8 + 8];
            (
                u16::from_ne_bytes([b[0], b[1]]),
                b[2],
                b[3],
                u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
            )
        };
        // Another architecture's calls, and every other call, are let through.
        assert_eq!(insn(1).2, 3);
        assert_eq!(insn(5), (0x06, 0, 0, 0x7fff_0000));
        assert_eq!(insn(4), (0x06, 0, 0, 0x0005_0000));
        let read = filter_pipe(&p).unwrap();
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(read), &mut got).unwrap();
        assert_eq!(got, p);
    }

    #[test]
    fn the_jail_holds_the_layout_with_its_access() {
        let m = |d: &str, kind, access| Mount {
            destination: d.into(),
            kind,
            access,
        };
        let layout = Layout {
            root_dirs: vec!["/var".into()],
            root_symlinks: vec![("usr/bin".into(), "/bin".into())],
            mounts: vec![
                m("/usr", MountKind::Bind("/usr".into()), Access::ReadOnly),
                m("/w", MountKind::Bind("/host/w".into()), Access::ReadWrite),
                m("/h/.ssh", MountKind::Tmpfs, Access::ReadOnly),
                m(
                    "/h/.ssh/ok",
                    MountKind::Bind("/h/.ssh/ok".into()),
                    Access::ReadOnly,
                ),
                m(
                    "/w/.git/hooks",
                    MountKind::Bind("/host/w/.git/hooks".into()),
                    Access::ReadOnly,
                ),
                m("/tmp", MountKind::Tmpfs, Access::ReadWrite),
                m("/proc", MountKind::Proc, Access::ReadWrite),
                m("/dev", MountKind::Dev, Access::ReadWrite),
            ],
            cwd: None,
        };
        let a = jail_args(&layout, false);
        for seq in [
            &["--unshare-all"][..],
            &["--dir", "/var"],
            &["--symlink", "usr/bin", "/bin"],
            &["--ro-bind", "/usr", "/usr"],
            &["--bind", "/host/w", "/w"],
            &["--tmpfs", "/h/.ssh"],
            &["--ro-bind", "/host/w/.git/hooks", "/w/.git/hooks"],
            &["--tmpfs", "/tmp"],
            &["--proc", "/proc"],
            &["--dev", "/dev"],
        ] {
            assert!(has(&a, seq), "{seq:?} in {a:?}");
        }
        // The masked directory is read-only after its contents are bound,
        // the private /tmp stays writable.
        let pos = |s: &[&str]| {
            a.windows(s.len())
                .position(|w| w.iter().zip(s).all(|(x, y)| x == y))
        };
        assert!(
            pos(&["--remount-ro", "/h/.ssh"]) > pos(&["--ro-bind", "/h/.ssh/ok", "/h/.ssh/ok"])
        );
        assert!(!has(&a, &["--remount-ro", "/tmp"]));
        // Nothing of the host's besides the layout.
        assert!(!a.iter().any(|x| x.contains("sock")));
        assert!(!a.iter().any(|x| x == "--unshare-user"));
        let a = jail_args(&layout, true);
        assert!(has(&a, &["--unshare-user", "--uid", "0", "--gid", "0"]));
        // It keeps no capability to make devices, pass by permissions or
        // set file capabilities.
        let v = virtiofsd_args(Path::new("/v"), 3);
        assert!(has(&v, &["-o", "modcaps=-dac_override:-mknod:-setfcap"]));
        assert!(has(&v, &["-o", "sandbox=chroot"]));
        assert!(has(&v, &["--fd=3"]));
    }
}
