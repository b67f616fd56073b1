//! The session's file system read from the bubblewrap plan of its spec,
//! so that a microvm sandbox shows exactly what a bubblewrap sandbox of
//! the same spec shows (system directories read-only, the mounts per mode,
//! a private home and `/tmp`, secrets masked, protected paths and the
//! write-deny set read-only). gVisor turns it into OCI mounts; the VM
//! runtime into its file server's jail.
//!
//! The plan's options are read one by one and anything not known is an
//! error: a plan option dropped here would be a rule silently lost.

use crate::{Error, ErrorKind};
use std::ffi::OsString;

/// One mount of the sandbox's file system, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mount {
    pub(crate) destination: String,
    pub(crate) kind: MountKind,
    pub(crate) access: sandbox_core::Access,
}

/// What is mounted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MountKind {
    /// A host path (file or directory).
    Bind(String),
    /// An empty, private tmpfs.
    Tmpfs,
    /// The sandbox's own `/proc`.
    Proc,
    /// The sandbox's own `/dev` (the runtime fills it).
    Dev,
}

/// The sandbox's file system: the empty root's directories and symlinks,
/// then the mounts, and the working directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Directories to make in the (otherwise empty) root.
    pub(crate) root_dirs: Vec<String>,
    /// `(target, link)` symlinks to make in the root (usrmerge's `/bin`).
    pub(crate) root_symlinks: Vec<(String, String)>,
    pub(crate) mounts: Vec<Mount>,
    /// The plan's working directory.
    pub(crate) cwd: Option<String>,
}

/// Options that take no value and mean namespaces or process settings
/// every microvm sandbox has anyway.
const FLAGS: &[&str] = &[
    "--new-session",
    "--die-with-parent",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-user",
    "--unshare-cgroup-try",
    "--disable-userns",
];

fn unknown(what: String) -> Error {
    ErrorKind::Bundle { reason: what }.into()
}

/// Reads the plan's options (up to its final `--`). `exists` says whether
/// a host path exists (for `--bind-try`).
pub(crate) fn layout_from_bwrap_args(
    args: &[OsString],
    exists: impl Fn(&str) -> bool,
) -> Result<Layout, Error> {
    let mut out = Layout::default();
    let mut it = args.iter().map(|a| a.to_str());
    let text = |a: Option<Option<&str>>, opt: &str| -> Result<String, Error> {
        match a {
            Some(Some(s)) => Ok(s.to_owned()),
            Some(None) => Err(unknown(format!("{opt} with a path that is not UTF-8"))),
            None => Err(unknown(format!("{opt} without its value"))),
        }
    };
    while let Some(opt) = it.next() {
        let Some(opt) = opt else {
            return Err(unknown("an option that is not UTF-8".into()));
        };
        match opt {
            "--" => break,
            f if FLAGS.contains(&f) => {}
            "--cap-drop" => {
                // Every sandbox process runs with no capabilities.
                text(it.next(), opt)?;
            }
            "--ro-bind" | "--bind" | "--bind-try" => {
                let src = text(it.next(), opt)?;
                let dst = text(it.next(), opt)?;
                if opt == "--bind-try" && !exists(&src) {
                    continue;
                }
                out.mounts.push(Mount {
                    destination: dst,
                    kind: MountKind::Bind(src),
                    access: if opt == "--ro-bind" {
                        sandbox_core::Access::ReadOnly
                    } else {
                        sandbox_core::Access::ReadWrite
                    },
                });
            }
            "--tmpfs" => {
                let dst = text(it.next(), opt)?;
                out.mounts.push(Mount {
                    destination: dst,
                    kind: MountKind::Tmpfs,
                    access: sandbox_core::Access::ReadWrite,
                });
            }
            "--remount-ro" => {
                let dst = text(it.next(), opt)?;
                let Some(m) = out.mounts.iter_mut().rev().find(|m| m.destination == dst) else {
                    return Err(unknown(format!("--remount-ro {dst} of nothing mounted")));
                };
                m.access = sandbox_core::Access::ReadOnly;
            }
            "--proc" | "--dev" => {
                let dst = text(it.next(), opt)?;
                out.mounts.push(Mount {
                    destination: dst,
                    kind: if opt == "--proc" {
                        MountKind::Proc
                    } else {
                        MountKind::Dev
                    },
                    access: sandbox_core::Access::ReadWrite,
                });
            }
            "--dir" => {
                let dst = text(it.next(), opt)?;
                in_root(&out, &dst)?;
                out.root_dirs.push(dst);
            }
            "--symlink" => {
                let target = text(it.next(), opt)?;
                let link = text(it.next(), opt)?;
                in_root(&out, &link)?;
                out.root_symlinks.push((target, link));
            }
            "--chdir" => out.cwd = Some(text(it.next(), opt)?),
            other => return Err(unknown(other.to_owned())),
        }
    }
    Ok(out)
}

/// Leaves out the masks (`/dev/null` bound read-only over a file, a
/// read-only tmpfs over a directory) whose host path `reachable` says the
/// caller can neither read nor write nor, for a directory, search. Without
/// root, the runtime opens each mount's destination as the caller, so such a
/// mask (`/etc/shadow` for an unprivileged user) fails the launch; and it
/// hides nothing, since what the sandbox reaches it reaches as the caller,
/// who cannot open that path at all.
pub(crate) fn without_unreachable_masks(layout: &mut Layout, reachable: impl Fn(&str) -> bool) {
    layout.mounts.retain(|m| {
        let mask = m.access == sandbox_core::Access::ReadOnly
            && match &m.kind {
                MountKind::Bind(src) => src == "/dev/null",
                MountKind::Tmpfs => true,
                _ => false,
            };
        !mask || reachable(&m.destination)
    });
}

/// A path made in the root itself must not lie under a mount (it would be
/// made on the host, under the mounted path).
fn in_root(layout: &Layout, path: &str) -> Result<(), Error> {
    let p = std::path::Path::new(path);
    if !p.is_absolute() || path.split('/').any(|c| c == "..") {
        return Err(unknown(format!("{path} is not a plain absolute path")));
    }
    match layout.mounts.iter().find(|m| p.starts_with(&m.destination)) {
        Some(m) => Err(unknown(format!(
            "{path} is under the mount at {}",
            m.destination
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::Access::{ReadOnly, ReadWrite};

    fn args(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
    }

    fn bind(dst: &str, src: &str, access: sandbox_core::Access) -> Mount {
        Mount {
            destination: dst.into(),
            kind: MountKind::Bind(src.into()),
            access,
        }
    }

    /// (intent, plan options, mounts wanted, or the error's words).
    type Case = (
        &'static str,
        Vec<&'static str>,
        Result<Vec<Mount>, &'static str>,
    );

    #[test]
    fn plan_options_table() {
        let tmpfs = |d: &str, access| Mount {
            destination: d.into(),
            kind: MountKind::Tmpfs,
            access,
        };
        let cases: Vec<Case> = vec![
            (
                "namespace flags and capabilities need no mount",
                vec!["--unshare-pid", "--cap-drop", "ALL", "--new-session", "--"],
                Ok(vec![]),
            ),
            (
                "binds keep their order and access",
                vec!["--ro-bind", "/usr", "/usr", "--bind", "/w", "/w", "--"],
                Ok(vec![
                    bind("/usr", "/usr", ReadOnly),
                    bind("/w", "/w", ReadWrite),
                ]),
            ),
            (
                "a secret file is /dev/null read-only",
                vec!["--ro-bind", "/dev/null", "/h/.netrc"],
                Ok(vec![bind("/h/.netrc", "/dev/null", ReadOnly)]),
            ),
            (
                "a secret directory is a tmpfs made read-only after what is read again",
                vec![
                    "--tmpfs",
                    "/x",
                    "--ro-bind",
                    "/x/ok",
                    "/x/ok",
                    "--remount-ro",
                    "/x",
                ],
                Ok(vec![
                    tmpfs("/x", ReadOnly),
                    bind("/x/ok", "/x/ok", ReadOnly),
                ]),
            ),
            (
                "a runner state dir that does not exist is skipped",
                vec![
                    "--bind-try",
                    "/missing",
                    "/missing",
                    "--bind-try",
                    "/s",
                    "/s",
                ],
                Ok(vec![bind("/s", "/s", ReadWrite)]),
            ),
            (
                "options after the final -- are the command's",
                vec!["--", "--bind", "/etc", "/etc"],
                Ok(vec![]),
            ),
            (
                "an unknown option is an error, never dropped",
                vec!["--seccomp", "9"],
                Err("--seccomp"),
            ),
            (
                "a remount of nothing is an error",
                vec!["--remount-ro", "/nowhere"],
                Err("of nothing mounted"),
            ),
            (
                "an option without its value is an error",
                vec!["--ro-bind", "/usr"],
                Err("without its value"),
            ),
            (
                "a directory under a mount cannot be made in the root",
                vec!["--tmpfs", "/var", "--dir", "/var/x"],
                Err("under the mount at /var"),
            ),
        ];
        for (intent, a, want) in cases {
            let got = layout_from_bwrap_args(&args(&a), |p| p != "/missing");
            match (got, want) {
                (Ok(l), Ok(m)) => assert_eq!(l.mounts, m, "{intent}"),
                (Err(e), Err(words)) => {
                    assert!(format!("{e}").contains(words), "{intent}: {e}")
                }
                (got, want) => panic!("{intent}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn root_entries_and_the_working_directory() {
        let l = layout_from_bwrap_args(
            &args(&[
                "--symlink",
                "usr/bin",
                "/bin",
                "--dir",
                "/var",
                "--tmpfs",
                "/var/tmp",
                "--chdir",
                "/w",
                "--",
            ]),
            |_| true,
        )
        .unwrap();
        assert_eq!(l.root_symlinks, vec![("usr/bin".into(), "/bin".into())]);
        assert_eq!(l.root_dirs, vec!["/var".to_string()]);
        assert_eq!(l.cwd.as_deref(), Some("/w"));
    }

    #[test]
    fn only_masks_over_paths_the_caller_cannot_reach_are_left_out() {
        let mut layout = Layout::default();
        let m = |d: &str, kind, access| Mount {
            destination: d.into(),
            kind,
            access,
        };
        layout.mounts = vec![
            m("/etc", MountKind::Bind("/etc".into()), ReadOnly),
            m("/etc/shadow", MountKind::Bind("/dev/null".into()), ReadOnly),
            m("/h/.netrc", MountKind::Bind("/dev/null".into()), ReadOnly),
            m("/root/.ssh", MountKind::Tmpfs, ReadOnly),
            m("/h/.ssh", MountKind::Tmpfs, ReadOnly),
            m("/tmp", MountKind::Tmpfs, ReadWrite),
            m("/secret", MountKind::Bind("/secret".into()), ReadOnly),
        ];
        let unreachable = ["/etc/shadow", "/root/.ssh", "/tmp", "/secret"];
        without_unreachable_masks(&mut layout, |p| !unreachable.contains(&p));
        let left: Vec<&str> = layout
            .mounts
            .iter()
            .map(|m| m.destination.as_str())
            .collect();
        // The caller's own secrets stay masked; a writable tmpfs and a
        // plain bind are never masks.
        assert_eq!(left, ["/etc", "/h/.netrc", "/h/.ssh", "/tmp", "/secret"]);
    }
}
