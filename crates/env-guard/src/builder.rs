//! `EnvGuardBuilder`: collects settings, validates them once in `build`.

use crate::lists::{always_deleted, is_ca_managed, is_proxy_managed};
use crate::name::is_valid_name;
use crate::{
    EnvGuard, Error, ErrorKind, MAX_VALUE_LEN, NoProxy, ProxyAuth, ProxyEnv, SshProxyTool,
};
use std::ffi::OsString;
use std::path::PathBuf;

/// Which variables of the input pass the inherit stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inherit {
    /// A small allowlist: [`crate::CORE_NAMES`] and every `LC_*` (the default).
    #[default]
    Core,
    /// Everything; the later stages still apply.
    All,
    /// Nothing; only `include`d names and the explicit `set`, proxy and CA
    /// variables appear.
    None,
}

/// Builds an [`EnvGuard`]. Setters take `&mut self`; [`build`](Self::build)
/// validates everything once.
#[derive(Clone, Debug, Default)]
pub struct EnvGuardBuilder {
    inherit: Inherit,
    set: Vec<(String, OsString)>,
    include: Vec<String>,
    proxy: Option<ProxyEnv>,
    proxy_auth: Option<ProxyAuth>,
    no_proxy: NoProxy,
    ssh: SshProxyTool,
    ca_bundle: Option<PathBuf>,
}

impl EnvGuardBuilder {
    /// Chooses the inherit set (default [`Inherit::Core`]).
    pub fn inherit(&mut self, inherit: Inherit) -> &mut Self {
        self.inherit = inherit;
        self
    }

    /// Sets `name` to `value`, replacing any input variable of that name.
    /// A later `set` of the same name wins.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<OsString>) -> &mut Self {
        self.set.push((name.into(), value.into()));
        self
    }

    /// Lets `name` through the inherit and secret stages when the input has
    /// it. The always-deleted and value checks still apply.
    pub fn include(&mut self, name: impl Into<String>) -> &mut Self {
        self.include.push(name.into());
        self
    }

    /// Writes the proxy variables for this proxy pair.
    pub fn proxy(&mut self, proxy: ProxyEnv) -> &mut Self {
        self.proxy = Some(proxy);
        self
    }

    /// The credentials the proxies require, carried in the proxy URLs (and
    /// in an ncat `GIT_SSH_COMMAND`). `build` refuses them with
    /// [`SshProxyTool::Netcat`], which cannot authenticate.
    pub fn proxy_auth(&mut self, auth: ProxyAuth) -> &mut Self {
        self.proxy_auth = Some(auth);
        self
    }

    /// Chooses what `NO_PROXY` says (default [`NoProxy::Empty`]).
    pub fn no_proxy(&mut self, no_proxy: NoProxy) -> &mut Self {
        self.no_proxy = no_proxy;
        self
    }

    /// Chooses the `ProxyCommand` program of `GIT_SSH_COMMAND` (default
    /// [`SshProxyTool::Netcat`]).
    pub fn ssh_proxy_tool(&mut self, tool: SshProxyTool) -> &mut Self {
        self.ssh = tool;
        self
    }

    /// Points every CA trust variable ([`crate::CA_NAMES`]) at this PEM
    /// bundle. It should hold the broker CA and any roots the run trusts.
    pub fn ca_bundle(&mut self, path: impl Into<PathBuf>) -> &mut Self {
        self.ca_bundle = Some(path.into());
        self
    }

    /// Validates the settings and compiles the guard.
    pub fn build(&self) -> Result<EnvGuard, Error> {
        if self.proxy_auth.is_some() && self.proxy.is_some() && self.ssh == SshProxyTool::Netcat {
            return Err(ErrorKind::SshToolCannotAuthenticate.into());
        }
        for (name, value) in &self.set {
            check_explicit_name(name)?;
            let bytes = value.as_encoded_bytes();
            if bytes.contains(&0) {
                return Err(invalid_value(name, "it contains a NUL byte"));
            }
            if bytes.len() > MAX_VALUE_LEN {
                return Err(invalid_value(name, "it is longer than 131072 bytes"));
            }
            if self.proxy.is_some() && is_proxy_managed(name) {
                return Err(conflict(name, "proxy"));
            }
            if self.ca_bundle.is_some() && is_ca_managed(name) {
                return Err(conflict(name, "ca"));
            }
        }
        for name in &self.include {
            check_explicit_name(name)?;
        }
        if let Some(path) = &self.ca_bundle {
            check_ca_path(path)?;
        }
        let mut set: Vec<(String, OsString)> = Vec::new();
        for (name, value) in &self.set {
            set.retain(|(n, _)| n != name);
            set.push((name.clone(), value.clone()));
        }
        Ok(EnvGuard {
            inherit: self.inherit,
            set,
            include: self.include.clone(),
            proxy: self.proxy,
            proxy_auth: self.proxy_auth.clone(),
            no_proxy: self.no_proxy,
            ssh: self.ssh,
            ca_bundle: self.ca_bundle.clone().map(PathBuf::into_os_string),
        })
    }
}

fn check_explicit_name(name: &str) -> Result<(), Error> {
    if !is_valid_name(name) {
        return Err(ErrorKind::InvalidName {
            name: name.to_owned(),
        }
        .into());
    }
    if let Some(rule) = always_deleted(name) {
        return Err(ErrorKind::AlwaysDeleted {
            name: name.to_owned(),
            rule,
        }
        .into());
    }
    Ok(())
}

fn invalid_value(name: &str, reason: &'static str) -> Error {
    ErrorKind::InvalidValue {
        name: name.to_owned(),
        reason,
    }
    .into()
}

fn conflict(name: &str, stage: &'static str) -> Error {
    ErrorKind::Conflict {
        name: name.to_owned(),
        stage,
    }
    .into()
}

fn check_ca_path(path: &std::path::Path) -> Result<(), Error> {
    let bytes = path.as_os_str().as_encoded_bytes();
    let reason = if bytes.is_empty() {
        Some("it is empty")
    } else if bytes.contains(&0) {
        Some("it contains a NUL byte")
    } else if bytes.len() > 4096 {
        Some("it is longer than 4096 bytes")
    } else if !path.is_absolute() {
        Some("it is relative")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ErrorKind::InvalidCaPath {
            path: path.to_string_lossy().into_owned(),
            reason,
        }
        .into()),
        None => Ok(()),
    }
}
