//! What one run brings: its command, limits, state and proxy secret.

use crate::names;
use crate::{Error, ErrorKind};
use sandbox_core::Limits;

/// Whether the agent-sandbox `Sandbox` runs or is suspended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperatingMode {
    /// `operatingMode: Running` (the default).
    #[default]
    Running,
    /// `operatingMode: Suspended`, for a session in the `suspended` state.
    Suspended,
}

/// A credential lent to the run through the broker. Rendering one is
/// refused for now ([`ErrorKind::CredentialLending`]).
#[derive(Clone, PartialEq, Eq)]
pub struct LentCredential {
    hosts: Vec<String>,
}

impl LentCredential {
    /// A credential for `hosts`.
    pub fn new<I, S>(hosts: I) -> LentCredential
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        LentCredential {
            hosts: hosts.into_iter().map(Into::into).collect(),
        }
    }

    /// The brokered hosts.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }
}

impl std::fmt::Debug for LentCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentCredential")
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// One run: the agent command, its limits and environment, the session's
/// proxy secret, and the `Sandbox`'s operating mode.
#[derive(Clone, PartialEq, Eq)]
pub struct Workload {
    pub(crate) command: Vec<String>,
    pub(crate) limits: Limits,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) proxy_secret: String,
    pub(crate) operating_mode: OperatingMode,
    pub(crate) credential: Option<LentCredential>,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("command", &self.command)
            .field("limits", &self.limits)
            .field("env", &self.env)
            .field("proxy_secret", &"<redacted>")
            .field("operating_mode", &self.operating_mode)
            .field("credential", &self.credential)
            .finish()
    }
}

impl Workload {
    /// A run of `command` whose proxies require `proxy_secret` (1 to 255
    /// bytes of `[A-Za-z0-9._~-]`, fresh per session; it goes into the
    /// session's `Secret`).
    pub fn new<I, S>(command: I, proxy_secret: impl Into<String>) -> Workload
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Workload {
            command: command.into_iter().map(Into::into).collect(),
            limits: Limits::default(),
            env: Vec::new(),
            proxy_secret: proxy_secret.into(),
            operating_mode: OperatingMode::Running,
            credential: None,
        }
    }

    /// The command's limits: memory and CPU become the container's
    /// resources; a process limit needs the node's (see
    /// [`ClusterProfileBuilder::node_pids_limit`](crate::ClusterProfileBuilder::node_pids_limit)).
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// Adds a plain variable to the agent container (a sanitised
    /// environment; the proxy variables are the renderer's).
    pub fn env(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The `Sandbox`'s operating mode (default running).
    pub fn operating_mode(&mut self, mode: OperatingMode) -> &mut Self {
        self.operating_mode = mode;
        self
    }

    /// Lends a credential through the broker (refused when rendering, for
    /// now).
    pub fn credential(&mut self, credential: LentCredential) -> &mut Self {
        self.credential = Some(credential);
        self
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.command.is_empty() {
            return Err(ErrorKind::InvalidCommand {
                reason: "give at least the program",
            }
            .into());
        }
        if self.command.len() > 4096 {
            return Err(ErrorKind::InvalidCommand {
                reason: "more than 4096 arguments",
            }
            .into());
        }
        for a in &self.command {
            names::plain_value("command argument", a)?;
        }
        let secret_ok = (1..=255).contains(&self.proxy_secret.len())
            && self
                .proxy_secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if !secret_ok {
            return Err(ErrorKind::InvalidValue {
                what: "proxy secret",
                value: "<redacted>".into(),
                reason: "use 1 to 255 bytes of [A-Za-z0-9._~-]",
            }
            .into());
        }
        for (i, (name, value)) in self.env.iter().enumerate() {
            names::env_name(name)?;
            names::plain_value("environment value", value)?;
            if crate::wire::RESERVED_ENV
                .iter()
                .any(|r| r.eq_ignore_ascii_case(name))
                || self.env[..i].iter().any(|(n, _)| n == name)
            {
                return Err(ErrorKind::InvalidValue {
                    what: "environment variable",
                    value: name.clone(),
                    reason: "is given twice or is one the renderer writes (the proxy variables, \
                             HOME, the proxy secret)",
                }
                .into());
            }
        }
        if let Some(m) = self.limits.memory_bytes
            && !(6 << 20..=1 << 40).contains(&m)
        {
            return Err(ErrorKind::InvalidLimit {
                limit: "memory",
                value: m,
                reason: "must be 6 MiB to 1 TiB",
            }
            .into());
        }
        if let Some(c) = self.limits.cpu_millis
            && !(1..=1_024_000).contains(&c)
        {
            return Err(ErrorKind::InvalidLimit {
                limit: "cpu",
                value: u64::from(c),
                reason: "must be 1 to 1024000 thousandths of a CPU",
            }
            .into());
        }
        if self.credential.is_some() {
            return Err(ErrorKind::CredentialLending.into());
        }
        Ok(())
    }
}
