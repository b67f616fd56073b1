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
    Ok(b.build()?.apply(base.iter().cloned()))
}
