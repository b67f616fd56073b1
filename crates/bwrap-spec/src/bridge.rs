//! The socat bridges (R-BWRAP-2): the sandbox has no network of its own, so
//! each proxy is reached through a Unix socket bound into it.
//!
//! Outside: `socat UNIX-LISTEN:<dir>/<name>.sock,fork TCP:127.0.0.1:<proxy>`
//! (or an in-process forwarder on the same socket). Inside: a small `sh`
//! wrapper starts `socat TCP-LISTEN:<port>,bind=127.0.0.1,fork
//! UNIX-CONNECT:/run/agent-sandbox/<name>.sock` per bridge, waits until the
//! listeners are up, then `exec`s the command.

use crate::{Error, ErrorKind};
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Where the bridge socket directory appears inside the sandbox.
pub const BRIDGE_GUEST_DIR: &str = "/run/agent-sandbox";

/// One bridge: a loopback port inside, a Unix socket in the host directory
/// outside (whoever serves that socket decides where it leads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bridge {
    name: String,
    guest_port: u16,
}

impl Bridge {
    /// The bridge's name (`http`, `socks`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The loopback port the sandbox connects to.
    pub fn guest_port(&self) -> u16 {
        self.guest_port
    }
}

/// The bridges of one session, with the host directory that holds their
/// sockets (created by the caller with mode 0700).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgePlan {
    host_dir: PathBuf,
    bridges: Vec<Bridge>,
}

fn socat_safe(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b))
}

impl BridgePlan {
    /// A plan whose sockets live in `host_dir`. The path must be absolute and
    /// use only `[A-Za-z0-9/._-]` (socat's address syntax gives meaning to
    /// `:` and `,`).
    pub fn new(host_dir: impl Into<PathBuf>) -> Result<BridgePlan, Error> {
        let host_dir = host_dir.into();
        let s = host_dir.to_string_lossy();
        if !host_dir.is_absolute() || !socat_safe(&s) || s.contains("..") {
            return Err(ErrorKind::BadPath {
                path: s.into_owned(),
                reason: "the bridge directory must be absolute and use only [A-Za-z0-9/._-]",
            }
            .into());
        }
        Ok(BridgePlan {
            host_dir,
            bridges: Vec::new(),
        })
    }

    /// Adds a bridge named `name` (`[a-z0-9-]`, unique) from loopback port
    /// `guest_port` inside to the socket `<host_dir>/<name>.sock` outside.
    pub fn add(&mut self, name: &str, guest_port: u16) -> Result<&mut BridgePlan, Error> {
        let ok_name = !name.is_empty()
            && name.len() <= 32
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok_name
            || self
                .bridges
                .iter()
                .any(|b| b.name == name || b.guest_port == guest_port)
            || guest_port == 0
        {
            return Err(ErrorKind::BadPath {
                path: name.to_string(),
                reason: "bridge names are unique [a-z0-9-]{1,32} with distinct non-zero ports",
            }
            .into());
        }
        self.bridges.push(Bridge {
            name: name.to_string(),
            guest_port,
        });
        Ok(self)
    }

    /// The host directory holding the sockets.
    pub fn host_dir(&self) -> &Path {
        &self.host_dir
    }

    /// The bridges, in the order added.
    pub fn bridges(&self) -> &[Bridge] {
        &self.bridges
    }

    /// The host-side socket of `bridge`.
    pub fn host_socket(&self, bridge: &Bridge) -> PathBuf {
        self.host_dir.join(format!("{}.sock", bridge.name))
    }

    /// The guest-side socket of `bridge`.
    pub fn guest_socket(&self, bridge: &Bridge) -> String {
        format!("{BRIDGE_GUEST_DIR}/{}.sock", bridge.name)
    }

    /// The socat argv for the host side of `bridge`, forwarding to a proxy
    /// at `upstream`.
    pub fn outer_socat_argv(
        &self,
        socat: &Path,
        bridge: &Bridge,
        upstream: SocketAddr,
    ) -> Vec<OsString> {
        vec![
            socat.as_os_str().to_owned(),
            "-lp".into(),
            "agent-sandbox-bridge".into(),
            format!(
                "UNIX-LISTEN:{},fork,mode=600,unlink-early",
                self.host_socket(bridge).display()
            )
            .into(),
            format!("TCP:{upstream}").into(),
        ]
    }

    /// The command that runs inside the sandbox: a `sh` wrapper that starts
    /// the inner listeners with `socat` (at `socat`, a path inside the
    /// sandbox), waits up to two seconds for them, then `exec`s `command`.
    pub fn inner_command<I, S>(&self, sh: &str, socat: &str, command: I) -> Vec<OsString>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut script = String::from("set -e\n");
        let mut patterns = Vec::new();
        for b in &self.bridges {
            script.push_str(&format!(
                "\"$SOCAT\" TCP-LISTEN:{port},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:{sock} </dev/null &\n",
                port = b.guest_port,
                sock = self.guest_socket(b),
            ));
            patterns.push(format!("0100007F:{:04X} 00000000:0000 0A", b.guest_port));
        }
        // Wait for the listeners without forking: read /proc/net/tcp with
        // the shell's own `read`.
        script.push_str(
            "i=0\nwhile [ $i -lt 1000 ]; do\n  up=0\n  while read -r l; do\n    case $l in\n",
        );
        for p in &patterns {
            script.push_str(&format!("      *'{p}'*) up=$((up+1)) ;;\n"));
        }
        script.push_str(&format!(
            "    esac\n  done < /proc/net/tcp\n  [ $up -ge {} ] && break\n  i=$((i+1))\n  sleep 0.002\ndone\nunset SOCAT\nexec \"$@\"\n",
            patterns.len()
        ));
        let mut out: Vec<OsString> = vec![
            "/usr/bin/env".into(),
            format!("SOCAT={socat}").into(),
            sh.into(),
            "-c".into(),
            script.into(),
            "agent-sandbox-init".into(),
        ];
        out.extend(command.into_iter().map(Into::into));
        out
    }
}
