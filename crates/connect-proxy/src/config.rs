//! `ProxyConfig`: policy, address rules, resolver, hook, limits.

use crate::allowlist::AllowList;
use crate::credentials::ProxyCredentials;
use crate::error::{Error, ErrorKind};
use crate::intercept::Intercept;
use crate::ip_policy::IpPolicy;
use crate::policy::EgressPolicy;
use crate::resolver::{Resolver, SystemResolver};
use net_vocab::{DEFAULT_MAX_HEAD, DEFAULT_MAX_HEADERS, DEFAULT_MAX_LINE, HeadLimits};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Timeouts and caps, with their defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Time for a client to send its whole request head or SOCKS handshake
    /// (default 10 s). A slow client is cut when it runs out.
    pub header_timeout: Duration,
    /// A tunnel with no traffic either way for this long is closed
    /// (default 5 min).
    pub idle_timeout: Duration,
    /// Time to reach an upstream over all its vetted addresses (default 10 s).
    pub connect_timeout: Duration,
    /// Time for one name lookup (default 5 s).
    pub resolve_timeout: Duration,
    /// Largest request head, in bytes (default 16 KiB). One line of it may
    /// hold at most 8 KiB (or this, if smaller), and it may have at most
    /// [`crate::MAX_HEADERS`] fields.
    pub max_header_bytes: usize,
    /// Most client connections open at once across both proxies (default
    /// 4096); more are closed on accept. Each listener's accept queue is
    /// sized to this too (at least 128; the kernel caps it at
    /// `net.core.somaxconn`), so a burst of connects up to the cap waits to
    /// be accepted instead of overflowing the queue.
    pub max_connections: usize,
    /// Largest copy buffer per tunnel direction, in bytes (default 256 KiB).
    /// Each direction starts with 8 KiB (or this, if smaller) and grows to
    /// this size once a read fills its buffer, so short connections stay
    /// cheap and bulk transfers make fewer system calls.
    pub copy_buffer_bytes: usize,
    /// Events kept for a slow subscriber (default 1024).
    pub event_capacity: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            resolve_timeout: Duration::from_secs(5),
            max_header_bytes: DEFAULT_MAX_HEAD,
            max_connections: 4096,
            copy_buffer_bytes: 256 * 1024,
            event_capacity: 1024,
        }
    }
}

/// Everything a [`crate::ProxyPair`] needs. Build with
/// [`ProxyConfig::builder`].
#[derive(Clone)]
pub struct ProxyConfig {
    pub(crate) policy: Arc<dyn EgressPolicy>,
    pub(crate) ip_policy: IpPolicy,
    pub(crate) resolver: Arc<dyn Resolver>,
    pub(crate) intercept: Option<Arc<dyn Intercept>>,
    pub(crate) credentials: Option<ProxyCredentials>,
    pub(crate) limits: Limits,
    /// What the HTTP proxy's head reader enforces, from `limits`.
    pub(crate) head: HeadLimits,
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("ip_policy", &self.ip_policy)
            .field("intercept", &self.intercept.is_some())
            .field("credentials", &self.credentials)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ProxyConfig {
    /// A builder. Unless told otherwise: deny everything
    /// ([`AllowList::deny_all`]), the strict [`IpPolicy`], the host's
    /// resolver ([`SystemResolver::from_ambient`]), no interceptor, default
    /// [`Limits`].
    pub fn builder() -> ProxyConfigBuilder {
        ProxyConfigBuilder {
            policy: None,
            ip_policy: IpPolicy::new(),
            resolver: None,
            intercept: None,
            credentials: None,
            limits: Limits::default(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// Builder for [`ProxyConfig`].
pub struct ProxyConfigBuilder {
    policy: Option<Arc<dyn EgressPolicy>>,
    ip_policy: IpPolicy,
    resolver: Option<Arc<dyn Resolver>>,
    intercept: Option<Arc<dyn Intercept>>,
    credentials: Option<ProxyCredentials>,
    limits: Limits,
}

impl fmt::Debug for ProxyConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfigBuilder")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ProxyConfigBuilder {
    /// Uses an [`AllowList`] as the egress policy.
    pub fn allowlist(&mut self, list: AllowList) -> &mut Self {
        self.policy = Some(Arc::new(list));
        self
    }

    /// Uses any [`EgressPolicy`].
    pub fn policy(&mut self, policy: Arc<dyn EgressPolicy>) -> &mut Self {
        self.policy = Some(policy);
        self
    }

    /// The address rules (grant CIDRs with [`IpPolicy::allow_cidr`]).
    pub fn ip_policy(&mut self, policy: IpPolicy) -> &mut Self {
        self.ip_policy = policy;
        self
    }

    /// The resolver for allowed names.
    pub fn resolver(&mut self, resolver: Arc<dyn Resolver>) -> &mut Self {
        self.resolver = Some(resolver);
        self
    }

    /// The interception hook.
    pub fn intercept(&mut self, hook: Arc<dyn Intercept>) -> &mut Self {
        self.intercept = Some(hook);
        self
    }

    /// Every client must present these credentials (HTTP `Basic`
    /// `Proxy-Authorization`, SOCKS5 username/password): a client without
    /// them gets `407` or the SOCKS authentication failure, and a
    /// `network-outbound` violation. Set this whenever a listener is one
    /// other local processes can reach (a loopback port).
    pub fn require_credentials(&mut self, credentials: ProxyCredentials) -> &mut Self {
        self.credentials = Some(credentials);
        self
    }

    /// All limits at once.
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// See [`Limits::header_timeout`].
    pub fn header_timeout(&mut self, t: Duration) -> &mut Self {
        self.limits.header_timeout = t;
        self
    }

    /// See [`Limits::idle_timeout`].
    pub fn idle_timeout(&mut self, t: Duration) -> &mut Self {
        self.limits.idle_timeout = t;
        self
    }

    /// See [`Limits::connect_timeout`].
    pub fn connect_timeout(&mut self, t: Duration) -> &mut Self {
        self.limits.connect_timeout = t;
        self
    }

    /// See [`Limits::resolve_timeout`].
    pub fn resolve_timeout(&mut self, t: Duration) -> &mut Self {
        self.limits.resolve_timeout = t;
        self
    }

    /// See [`Limits::max_header_bytes`].
    pub fn max_header_bytes(&mut self, n: usize) -> &mut Self {
        self.limits.max_header_bytes = n;
        self
    }

    /// See [`Limits::max_connections`].
    pub fn max_connections(&mut self, n: usize) -> &mut Self {
        self.limits.max_connections = n;
        self
    }

    /// See [`Limits::copy_buffer_bytes`].
    pub fn copy_buffer_bytes(&mut self, n: usize) -> &mut Self {
        self.limits.copy_buffer_bytes = n;
        self
    }

    /// Checks the limits and builds the configuration.
    pub fn build(&self) -> Result<ProxyConfig, Error> {
        let l = &self.limits;
        let range = |name: &'static str, value: String, ok: bool, reason: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(Error::from(ErrorKind::InvalidConfig {
                    name,
                    value,
                    reason,
                }))
            }
        };
        let secs = |d: Duration| format!("{d:?}");
        let sane = |d: Duration| d > Duration::ZERO && d <= Duration::from_secs(86_400);
        let day = "between 1 ns and 24 h";
        range(
            "header_timeout",
            secs(l.header_timeout),
            sane(l.header_timeout),
            day,
        )?;
        range(
            "idle_timeout",
            secs(l.idle_timeout),
            sane(l.idle_timeout),
            day,
        )?;
        range(
            "connect_timeout",
            secs(l.connect_timeout),
            sane(l.connect_timeout),
            day,
        )?;
        range(
            "resolve_timeout",
            secs(l.resolve_timeout),
            sane(l.resolve_timeout),
            day,
        )?;
        range(
            "max_header_bytes",
            l.max_header_bytes.to_string(),
            (256..=1 << 20).contains(&l.max_header_bytes),
            "between 256 bytes and 1 MiB",
        )?;
        range(
            "max_connections",
            l.max_connections.to_string(),
            (1..=1 << 20).contains(&l.max_connections),
            "between 1 and 1048576",
        )?;
        range(
            "copy_buffer_bytes",
            l.copy_buffer_bytes.to_string(),
            (1024..=4 << 20).contains(&l.copy_buffer_bytes),
            "between 1 KiB and 4 MiB",
        )?;
        range(
            "event_capacity",
            l.event_capacity.to_string(),
            (1..=1 << 20).contains(&l.event_capacity),
            "between 1 and 1048576",
        )?;
        let head = HeadLimits::new(
            l.max_header_bytes,
            DEFAULT_MAX_LINE.min(l.max_header_bytes),
            DEFAULT_MAX_HEADERS,
        )
        .map_err(|_| {
            Error::from(ErrorKind::InvalidConfig {
                name: "max_header_bytes",
                value: l.max_header_bytes.to_string(),
                reason: "between 256 bytes and 1 MiB",
            })
        })?;
        Ok(ProxyConfig {
            policy: self
                .policy
                .clone()
                .unwrap_or_else(|| Arc::new(AllowList::deny_all())),
            ip_policy: self.ip_policy.clone(),
            resolver: self
                .resolver
                .clone()
                .unwrap_or_else(|| Arc::new(SystemResolver::from_ambient())),
            intercept: self.intercept.clone(),
            credentials: self.credentials.clone(),
            limits: *l,
            head,
        })
    }
}
