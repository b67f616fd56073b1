//! The guest's file system, served from the host: one `virtiofsd` per
//! guest, in a bubblewrap jail whose `/share` is the session's [`Layout`]
//! (the system directories read-only, the spec's mounts with their
//! access, a private home and `/tmp`, the secret set masked, protected
//! paths and the write-deny set read-only). The guest mounts that share as
//! its root, and moves its own `/proc` and `/dev` onto it.
//!
//! Every rule is the host kernel's: a read-only bind in the jail stays
//! read-only whatever the guest asks (the file server has no
//! `CAP_SYS_ADMIN` to remount it), a mask is a mount of the jail, and what
//! is not in the layout is not in the jail. A guest kernel that is taken
//! over reaches what the file server reaches and nothing more.
//!
//! The file server drops its own capabilities before it reads anything
//! the guest sends (the bounding set emptied, no new privileges, its own
//! seccomp filter, `chroot` into the share): it keeps only those that make
//! files as the guest's users (ownership, set-id bits, its credentials),
//! and not those to make device nodes (`CAP_MKNOD`), to pass by file
//! permissions (`CAP_DAC_OVERRIDE`) or to set file capabilities. It starts
//! with all of root's, because its capability library fails under a
//! smaller bounding set once it is in the share (seen here: killed by its
//! own filter). Without root its jail is a user namespace whose root is
//! the caller, and those capabilities are that namespace's.

use crate::backend::microvm::layout::{Layout, MountKind};
use sandbox_core::Access;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where Debian's QEMU packages put the file server.
pub(crate) const VIRTIOFSD_PATHS: &[&str] = &["/usr/lib/qemu/virtiofsd"];
/// The share's tag, which the guest's agent mounts as its root.
pub(crate) const ROOT_TAG: &str = "root";
/// Where the share is inside the file server's jail.
const SHARE: &str = "/share";
/// How long the file server may take to make its socket.
const SOCKET_WAIT: Duration = Duration::from_secs(10);

/// The host's file server, when installed. Reads the ambient machine.
pub(crate) fn find_virtiofsd_ambient() -> Option<PathBuf> {
    VIRTIOFSD_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// A share path: `dst` under [`SHARE`].
fn shared(dst: &str) -> String {
    format!("{SHARE}{}", if dst == "/" { "" } else { dst })
}

/// bubblewrap's options for the file server's jail: the file server's own
/// needs (the system's `/usr`, its `/proc`, the socket's directory `dir`)
/// and the layout under [`SHARE`]. Without root (`rootless`) the jail is a
/// user namespace mapping the caller to root.
pub(crate) fn jail_args(layout: &Layout, dir: &Path, rootless: bool) -> Vec<String> {
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
    a.extend(["--ro-bind", "/usr", "/usr"].map(String::from));
    for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64"] {
        match std::fs::read_link(top) {
            Ok(to) => a.extend(["--symlink".into(), to.display().to_string(), top.into()]),
            Err(_) => a.extend(["--ro-bind-try".into(), top.into(), top.into()]),
        }
    }
    a.extend(
        [
            "--ro-bind-try",
            "/etc/ld.so.cache",
            "/etc/ld.so.cache",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
        ]
        .map(String::from),
    );
    let d = dir.display().to_string();
    a.extend(["--bind".into(), d.clone(), d]);
    a.extend(["--dir".into(), SHARE.into()]);
    for d in &layout.root_dirs {
        a.extend(["--dir".into(), shared(d)]);
    }
    for (target, link) in &layout.root_symlinks {
        a.extend(["--symlink".into(), target.clone(), shared(link)]);
    }
    // A read-only tmpfs (a masked directory) is made read-only after what
    // is bound beneath it.
    let mut remount = Vec::new();
    for m in &layout.mounts {
        let dst = shared(&m.destination);
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
            // The guest's own, moved onto these directories.
            MountKind::Proc | MountKind::Dev => a.extend(["--dir".into(), dst]),
        }
    }
    for dst in remount.into_iter().rev() {
        a.extend(["--remount-ro".into(), dst]);
    }
    a
}

/// The file server's own arguments: its socket, the share, `chroot` into
/// it (the jail is its namespace), no cache (the host may change the
/// files), no extended attributes, and the capabilities it drops besides
/// those it drops by default.
pub(crate) fn virtiofsd_args(virtiofsd: &Path, socket: &Path) -> Vec<String> {
    vec![
        virtiofsd.display().to_string(),
        format!("--socket-path={}", socket.display()),
        "-o".into(),
        format!("source={SHARE}"),
        "-o".into(),
        "sandbox=chroot".into(),
        "-o".into(),
        "cache=none".into(),
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
}

impl FileServer {
    /// Starts `virtiofsd` with `bwrap` in its jail for `layout`, its socket
    /// and log in `dir`, and waits for the socket.
    pub(crate) async fn start(
        bwrap: &Path,
        virtiofsd: &Path,
        layout: &Layout,
        dir: &Path,
        rootless: bool,
    ) -> Result<FileServer, String> {
        let socket = dir.join("fs.sock");
        let log_path = dir.join("fileserver.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| format!("creating {}: {e}", log_path.display()))?;
        let mut args = jail_args(layout, dir, rootless);
        args.push("--".into());
        args.extend(virtiofsd_args(virtiofsd, &socket));
        let mut child = tokio::process::Command::new(bwrap)
            .args(&args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bwrap.display()))?;
        let deadline = tokio::time::Instant::now() + SOCKET_WAIT;
        loop {
            if socket.exists() {
                return Ok(FileServer { child, socket });
            }
            if let Ok(Some(st)) = child.try_wait() {
                return Err(format!(
                    "the file server ended ({st}): {}",
                    last_words(&log_path)
                ));
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!(
                    "the file server made no socket within {} s: {}",
                    SOCKET_WAIT.as_secs(),
                    last_words(&log_path)
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Ends the file server.
    pub(crate) async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
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
    fn the_jail_holds_the_layout_under_the_share_with_its_access() {
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
        let a = jail_args(&layout, Path::new("/s"), false);
        for seq in [
            &["--unshare-all"][..],
            &["--bind", "/s", "/s"],
            &["--dir", "/share/var"],
            &["--symlink", "usr/bin", "/share/bin"],
            &["--ro-bind", "/usr", "/share/usr"],
            &["--bind", "/host/w", "/share/w"],
            &["--tmpfs", "/share/h/.ssh"],
            &["--ro-bind", "/host/w/.git/hooks", "/share/w/.git/hooks"],
            &["--tmpfs", "/share/tmp"],
            &["--dir", "/share/proc"],
            &["--dir", "/share/dev"],
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
            pos(&["--remount-ro", "/share/h/.ssh"])
                > pos(&["--ro-bind", "/h/.ssh/ok", "/share/h/.ssh/ok"])
        );
        assert!(!has(&a, &["--remount-ro", "/share/tmp"]));
        assert!(!a.iter().any(|x| x == "--unshare-user"));
        let a = jail_args(&layout, Path::new("/s"), true);
        assert!(has(&a, &["--unshare-user", "--uid", "0", "--gid", "0"]));
        // It keeps no capability to make devices, pass by permissions or
        // set file capabilities.
        let v = virtiofsd_args(Path::new("/v"), Path::new("/s/fs.sock"));
        assert!(has(&v, &["-o", "modcaps=-dac_override:-mknod:-setfcap"]));
        assert!(has(&v, &["-o", "sandbox=chroot"]));
    }
}
