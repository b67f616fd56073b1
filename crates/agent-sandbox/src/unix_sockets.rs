//! The Unix sockets a manager's sessions may reach, by explicit grant
//! ([`ManagerBuilder::allow_unix_socket`](crate::ManagerBuilder::allow_unix_socket)):
//! under bubblewrap the socket alone is bound into the sandbox at its path
//! (nothing else of its directory) and the name guard lets the command
//! connect to it; under Seatbelt the profile allows connecting to exactly
//! that path. A socket that hands out control of the host (a container
//! engine's, the system bus, systemd's private socket) is refused unless
//! it is granted with the louder
//! [`ManagerBuilder::allow_root_equivalent_unix_socket`](crate::ManagerBuilder::allow_root_equivalent_unix_socket),
//! which also logs a warning. `SSH_AUTH_SOCK` reaches the sandbox only
//! when the socket it names is granted.

use crate::{Error, ErrorKind};
use sandbox_core::HostView;
use std::ffi::OsString;
use std::path::Path;

/// Sockets whose peer gives a client control of the host (root or its
/// equivalent), by their usual paths.
pub const ROOT_EQUIVALENT_SOCKETS: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/k3s/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/systemd/private",
    "/run/snapd.socket",
    "/run/libvirt/libvirt-sock",
];

/// One grant as the builder received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Requested {
    pub(crate) path: String,
    /// Granted with the louder call.
    pub(crate) root_equivalent_allowed: bool,
}

/// Whether `path` (or what it resolves to on `host`) is one of
/// [`ROOT_EQUIVALENT_SOCKETS`].
fn hands_out_root(path: &str, host: &dyn HostView) -> bool {
    let listed = |p: &Path| ROOT_EQUIVALENT_SOCKETS.iter().any(|r| Path::new(r) == p);
    listed(Path::new(path))
        || host
            .canonicalize(Path::new(path))
            .is_some_and(|c| listed(&c))
}

/// Checks the grants: absolute paths, and a root-equivalent socket only
/// when granted as such. Returns the paths to grant and the warning lines
/// to log.
pub(crate) fn check(
    requested: &[Requested],
    host: &dyn HostView,
) -> Result<(Vec<String>, Vec<String>), Error> {
    let mut paths = Vec::new();
    let mut warnings = Vec::new();
    for r in requested {
        if !r.path.starts_with('/') || r.path.contains('\0') {
            return Err(ErrorKind::BadSocketGrant {
                path: r.path.clone(),
                reason: "a granted Unix socket must be an absolute path",
            }
            .into());
        }
        if hands_out_root(&r.path, host) {
            if !r.root_equivalent_allowed {
                return Err(ErrorKind::BadSocketGrant {
                    path: r.path.clone(),
                    reason: "whoever can connect to it controls the host; grant it with allow_root_equivalent_unix_socket if that is meant",
                }
                .into());
            }
            warnings.push(format!(
                "WARNING: sessions may connect to {}, which gives control of the host (granted with allow_root_equivalent_unix_socket)",
                r.path
            ));
        }
        if !paths.contains(&r.path) {
            paths.push(r.path.clone());
        }
    }
    Ok((paths, warnings))
}

/// `SSH_AUTH_SOCK` from the base environment, when the socket it names is
/// granted (so `git` and `ssh` inside can use the agent's keys).
pub(crate) fn ssh_auth_sock(
    base_env: &[(OsString, OsString)],
    granted: &[String],
) -> Option<(OsString, OsString)> {
    let (k, v) = base_env.iter().find(|(k, _)| k == "SSH_AUTH_SOCK")?;
    granted
        .iter()
        .any(|g| OsString::from(g) == *v)
        .then(|| (k.clone(), v.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::{FakeHost, Os};

    fn req(path: &str, loud: bool) -> Requested {
        Requested {
            path: path.to_owned(),
            root_equivalent_allowed: loud,
        }
    }

    #[test]
    fn grants_table() {
        let mut host = FakeHost::new(Os::Linux);
        host.symlink("/var/run", "/run")
            .file("/run/docker.sock")
            .symlink("/home/u/docker.sock", "/run/docker.sock")
            .file("/run/user/1000/ssh-agent.sock");
        let cases: [(&str, Requested, Result<usize, &str>); 7] = [
            (
                "an ordinary socket is granted",
                req("/run/user/1000/ssh-agent.sock", false),
                Ok(0),
            ),
            (
                "the Docker socket needs the loud grant",
                req("/run/docker.sock", false),
                Err("controls the host"),
            ),
            (
                "also by its /var/run spelling",
                req("/var/run/docker.sock", false),
                Err("controls the host"),
            ),
            (
                "also through a symbolic link elsewhere",
                req("/home/u/docker.sock", false),
                Err("controls the host"),
            ),
            (
                "granted loudly it passes, with a warning",
                req("/run/docker.sock", true),
                Ok(1),
            ),
            (
                "the system bus is root-equivalent too",
                req("/run/dbus/system_bus_socket", false),
                Err("controls the host"),
            ),
            (
                "a relative path is refused",
                req("agent.sock", false),
                Err("absolute path"),
            ),
        ];
        for (intent, r, want) in cases {
            let got = check(std::slice::from_ref(&r), &host);
            match (got, want) {
                (Ok((paths, warnings)), Ok(n)) => {
                    assert_eq!(paths, std::slice::from_ref(&r.path), "{intent}");
                    assert_eq!(warnings.len(), n, "{intent}");
                }
                (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{intent}: {e}"),
                (got, want) => panic!("{intent}: {got:?} against {want:?}"),
            }
        }
    }

    #[test]
    fn ssh_auth_sock_passes_only_when_its_socket_is_granted() {
        let env = vec![("SSH_AUTH_SOCK".into(), "/run/a.sock".into())];
        assert_eq!(
            ssh_auth_sock(&env, &["/run/a.sock".to_owned()]),
            Some(("SSH_AUTH_SOCK".into(), "/run/a.sock".into()))
        );
        assert_eq!(ssh_auth_sock(&env, &["/run/b.sock".to_owned()]), None);
        assert_eq!(ssh_auth_sock(&[], &["/run/a.sock".to_owned()]), None);
    }
}
