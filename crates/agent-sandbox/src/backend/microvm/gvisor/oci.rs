//! The session's OCI bundle: the bubblewrap plan's file system, read as
//! OCI mounts, so that the gVisor sandbox shows exactly what a bubblewrap
//! sandbox of the same spec shows (system directories read-only, the
//! mounts per mode, a private home and `/tmp`, secrets masked, protected
//! paths and the write-deny set read-only).
//!
//! The plan's options are read one by one and anything not known is an
//! error: a plan option dropped here would be a rule silently lost.

use super::runsc::Network;
use crate::{Error, ErrorKind};
use serde_json::{Value, json};
use std::ffi::OsString;

/// One OCI mount, in order.
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
    /// The sandbox's own `/dev` (gVisor fills it).
    Dev,
}

/// The bundle's file system: the empty root's directories and symlinks,
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
/// gVisor gives every sandbox anyway.
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
/// root, gVisor opens each mount's destination as the caller, so such a
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

/// The OCI mounts of `layout`.
pub(crate) fn mounts_json(layout: &Layout) -> Vec<Value> {
    layout
        .mounts
        .iter()
        .map(|m| {
            let ro = m.access == sandbox_core::Access::ReadOnly;
            match &m.kind {
                MountKind::Bind(src) => json!({
                    "destination": m.destination,
                    "type": "bind",
                    "source": src,
                    "options": ["rbind", if ro { "ro" } else { "rw" }, "nosuid", "nodev"],
                }),
                MountKind::Tmpfs => json!({
                    "destination": m.destination,
                    "type": "tmpfs",
                    "source": "tmpfs",
                    "options": if ro {
                        vec!["ro", "nosuid", "nodev", "mode=755"]
                    } else {
                        vec!["nosuid", "nodev", "mode=1777"]
                    },
                }),
                MountKind::Proc => json!({
                    "destination": m.destination, "type": "proc", "source": "proc",
                }),
                MountKind::Dev => json!({
                    "destination": m.destination, "type": "tmpfs", "source": "tmpfs",
                    "options": ["nosuid", "mode=755"],
                }),
            }
        })
        .collect()
}

/// A process the bundle or `runsc exec` starts: argv, environment,
/// working directory, the caller's uid and gid, no capabilities, no new
/// privileges.
pub(crate) fn process_json(
    argv: &[String],
    env: &[String],
    cwd: &str,
    ids: (u32, u32),
    terminal: bool,
) -> Value {
    let none: [&str; 0] = [];
    json!({
        "terminal": terminal,
        "user": { "uid": ids.0, "gid": ids.1 },
        "args": argv,
        "env": env,
        "cwd": cwd,
        "capabilities": {
            "bounding": none, "effective": none, "inheritable": none,
            "permitted": none, "ambient": none,
        },
        "noNewPrivileges": true,
        "rlimits": [{ "type": "RLIMIT_NOFILE", "hard": 1048576u64, "soft": 1048576u64 }],
    })
}

/// The bundle's `config.json`: the read-only root `rootfs` beside it, the
/// layout's mounts, `init` as the sandbox's first process, no network
/// namespace of the host's.
pub(crate) fn config_json(layout: &Layout, init: Value, network: Network) -> Value {
    let mut namespaces = vec![
        json!({ "type": "pid" }),
        json!({ "type": "ipc" }),
        json!({ "type": "uts" }),
        json!({ "type": "mount" }),
    ];
    // The host's network (the terminal surface) is the runtime's own
    // namespace's: a namespace of its own would leave loopback only.
    if network == Network::None {
        namespaces.insert(1, json!({ "type": "network" }));
    }
    json!({
        "ociVersion": "1.0.0",
        "process": init,
        "root": { "path": "rootfs", "readonly": true },
        "hostname": "sandbox",
        "mounts": mounts_json(layout),
        "linux": { "namespaces": namespaces },
    })
}

/// A text form of `v` for an OCI field, or an error naming what it is.
pub(crate) fn utf8(v: &std::ffi::OsStr, what: &'static str) -> Result<String, Error> {
    v.to_str().map(str::to_owned).ok_or_else(|| {
        Error::io(
            format!("passing {what} into the gVisor sandbox"),
            std::io::Error::other(format!("{v:?} is not UTF-8 (OCI specs carry text only)")),
        )
    })
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
    fn the_json_says_read_only_where_the_plan_does() {
        let l = layout_from_bwrap_args(
            &args(&[
                "--ro-bind",
                "/p",
                "/p",
                "--tmpfs",
                "/t",
                "--remount-ro",
                "/t",
            ]),
            |_| true,
        )
        .unwrap();
        let m = mounts_json(&l);
        assert_eq!(m[0]["options"][1], "ro");
        assert_eq!(m[1]["options"][0], "ro");
        let init = || process_json(&["true".into()], &[], "/", (1, 2), false);
        let c = config_json(&l, init(), Network::None);
        assert_eq!(c["root"]["readonly"], true);
        assert_eq!(c["process"]["user"]["uid"], 1);
        assert_eq!(c["process"]["capabilities"]["bounding"], json!([]));
        let kinds = |c: &Value| -> Vec<String> {
            c["linux"]["namespaces"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["type"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(kinds(&c), ["pid", "network", "ipc", "uts", "mount"]);
        // The terminal surface: the host's network, no namespace of its own.
        let c = config_json(&l, init(), Network::Host);
        assert_eq!(kinds(&c), ["pid", "ipc", "uts", "mount"]);
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
