//! The environment a command starts with (R-ENV-1, R-EGRESS-5): env-guard's
//! pipeline over the base environment the host program passes in, with the
//! run's home and, when the session has proxies, the proxy variables
//! pointing at the bridges inside the sandbox.

use crate::Error;
use env_guard::{EnvGuard, Inherit, ProxyEnv, Sanitized};
use std::ffi::{OsStr, OsString};
use std::net::SocketAddr;

/// Sanitises `base` (inherit `core`, loader and injection variables and
/// secrets dropped), sets `HOME` to `home`, and adds the proxy variables
/// (and a `GIT_SSH_COMMAND` through the SOCKS proxy) when `proxies` is given.
pub fn sanitized_env(
    base: &[(OsString, OsString)],
    home: &OsStr,
    proxies: Option<(SocketAddr, SocketAddr)>,
) -> Result<Sanitized, Error> {
    sanitized_env_with(base, home, proxies, &EnvExtras::default())
}

/// What a brokered session adds: the CA bundle the sandbox trusts and the
/// phantom-token variables.
#[derive(Debug, Default, Clone)]
pub(crate) struct EnvExtras {
    pub(crate) ca_bundle: Option<std::path::PathBuf>,
    pub(crate) set: Vec<(String, String)>,
    /// The credentials the proxies require (a loopback listener other
    /// processes could reach). `GIT_SSH_COMMAND` is then not written:
    /// OpenBSD nc cannot authenticate to SOCKS5, so git over ssh has no way
    /// out (it fails closed).
    pub(crate) proxy_auth: Option<env_guard::ProxyAuth>,
}

pub(crate) fn sanitized_env_with(
    base: &[(OsString, OsString)],
    home: &OsStr,
    proxies: Option<(SocketAddr, SocketAddr)>,
    extras: &EnvExtras,
) -> Result<Sanitized, Error> {
    let mut b = EnvGuard::builder();
    b.inherit(Inherit::Core).set("HOME", home.to_owned());
    if let Some((http, socks)) = proxies {
        b.proxy(ProxyEnv { http, socks });
    }
    if let Some(auth) = &extras.proxy_auth {
        b.proxy_auth(auth.clone())
            .ssh_proxy_tool(env_guard::SshProxyTool::Omit);
    }
    if let Some(ca) = &extras.ca_bundle {
        b.ca_bundle(ca.clone());
    }
    for (k, v) in &extras.set {
        b.set(k.clone(), OsString::from(v));
    }
    // A base without PATH would start every command without one, where a
    // bare `git` is not found: the system's directories, then.
    if !base.iter().any(|(k, _)| k == "PATH") {
        b.set("PATH", OsString::from(crate::DEFAULT_PATH));
    }
    Ok(b.build()?.apply(base.iter().cloned()))
}

/// The session's environment with a command's own variables on top. Each
/// is checked as env-guard checks an explicit `set`: a valid name, no
/// loader or injection variable (refused with the rule that names it), no
/// NUL byte, no override of a variable the proxy or CA stage wrote for the
/// session.
pub(crate) fn with_command_env(
    session: &[(OsString, OsString)],
    extra: &[(OsString, OsString)],
) -> Result<Vec<(OsString, OsString)>, Error> {
    if extra.is_empty() {
        return Ok(session.to_vec());
    }
    let has = |name: &str| session.iter().any(|(k, _)| k == name);
    let mut b = EnvGuard::builder();
    if has("HTTPS_PROXY") || has("ALL_PROXY") {
        // Only to have env-guard refuse overrides of the proxy variables.
        let unused = SocketAddr::from(([127, 0, 0, 1], 9));
        b.proxy(ProxyEnv {
            http: unused,
            socks: unused,
        });
    }
    if has("SSL_CERT_FILE") {
        b.ca_bundle("/run/agent-sandbox/ca.pem");
    }
    let mut named = Vec::with_capacity(extra.len());
    for (k, v) in extra {
        let name = k.to_str().ok_or_else(|| {
            Error::from(env_guard::Error::from(env_guard::ErrorKind::InvalidName {
                name: k.to_string_lossy().into_owned(),
            }))
        })?;
        b.set(name, v.clone());
        named.retain(|(n, _)| n != k);
        named.push((OsString::from(name), v.clone()));
    }
    b.build()?;
    let mut env: Vec<(OsString, OsString)> = session
        .iter()
        .filter(|(k, _)| !named.iter().any(|(n, _)| n == k))
        .cloned()
        .collect();
    env.extend(named);
    Ok(env)
}
