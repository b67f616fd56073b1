//! The session's OCI bundle: the [`Layout`] read from the bubblewrap plan,
//! as OCI mounts.

use super::runsc::Network;
use crate::Error;
use crate::backend::microvm::layout::{Layout, MountKind};
use serde_json::{Value, json};

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

/// The sandbox's first process (the agent): argv, environment, working
/// directory, uid and gid, the capabilities it keeps inside gVisor's
/// kernel (none of the host's), no new privileges, no terminal.
pub(crate) fn process_json(
    argv: &[String],
    env: &[String],
    cwd: &str,
    ids: (u32, u32),
    caps: &[&str],
) -> Value {
    let none: [&str; 0] = [];
    json!({
        "terminal": false,
        "user": { "uid": ids.0, "gid": ids.1 },
        "args": argv,
        "env": env,
        "cwd": cwd,
        "capabilities": {
            "bounding": caps, "effective": caps, "inheritable": none,
            "permitted": caps, "ambient": none,
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
    use crate::backend::microvm::layout::layout_from_bwrap_args;
    use std::ffi::OsString;

    fn args(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
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
        let init = || process_json(&["true".into()], &[], "/", (1, 2), &["CAP_SYS_ADMIN"]);
        let c = config_json(&l, init(), Network::None);
        assert_eq!(c["root"]["readonly"], true);
        assert_eq!(c["process"]["user"]["uid"], 1);
        assert_eq!(
            c["process"]["capabilities"]["bounding"],
            json!(["CAP_SYS_ADMIN"])
        );
        assert_eq!(c["process"]["capabilities"]["ambient"], json!([]));
        assert_eq!(c["process"]["noNewPrivileges"], true);
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
}
