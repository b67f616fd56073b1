//! A dispatch session's egress, the same for every backend: its private
//! directory, the broker (when hosts are brokered) and the proxies, which
//! have no listener of their own. Each backend then gives the proxies the
//! listeners the sandbox reaches them on (bridge sockets and in-namespace
//! listeners for bubblewrap, loopback ports with credentials for Seatbelt).

use crate::Error;
use crate::broker::SessionBroker;
use crate::env::{EnvExtras, sanitized_env_with};
use crate::session_dir::SessionDir;
use crate::settings::{EgressSettings, LogSink, Settings};
use crate::violations::Violations;
use connect_proxy::{
    AllowList, Network, ProxyConfig, ProxyCredentials, ProxyPair, ProxyService, Resolver,
    SystemResolver,
};
use sandbox_core::SandboxSpec;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One session's egress. Dropping it revokes the broker lease (a launch
/// that fails after this point leaves nothing usable) and stops the
/// proxies; [`Egress::shutdown`] waits for them.
pub(crate) struct Egress {
    pub(crate) broker: Option<SessionBroker>,
    proxies: Proxies,
    dir: SessionDir,
}

/// How the sandbox reaches the proxies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Listen {
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "used by the bubblewrap backend (Linux)")
    )]
    /// No listener yet: the backend hands the service its own (Unix
    /// sockets, listeners inside the sandbox's network namespace).
    Unbound,
    /// Two ports on the host's 127.0.0.1, which every local process can
    /// connect to (so the caller requires credentials).
    Loopback,
}

enum Proxies {
    Unbound(ProxyService),
    Loopback(ProxyPair),
}

impl Egress {
    /// Creates the session's 0700 directory in `temp_dir`, the broker with
    /// its CA bundle there, and the proxies for the spec's allowlist (the
    /// manager's entries and the brokered hosts added, denies first).
    /// `credentials`, when given, are required of every proxy client.
    pub(crate) async fn start(
        settings: &EgressSettings,
        spec: &SandboxSpec,
        temp_dir: &Path,
        listen: Listen,
        credentials: Option<&ProxyCredentials>,
    ) -> Result<Egress, Error> {
        let dir = SessionDir::create_in(temp_dir)?;
        let broker = match &settings.broker {
            Some(b) => Some(SessionBroker::start(
                b,
                &spec.session_id,
                &dir.path().join("ca.pem"),
            )?),
            None => None,
        };
        let mut list = AllowList::builder();
        list.network(Network::from_enabled(spec.network_enabled))
            .baseline(settings.baseline)
            .allow_all(spec.egress_allowlist.iter().cloned())
            .allow_all(settings.extra_allow.iter().cloned());
        if let Some(b) = &broker {
            list.allow_all(b.hosts.iter().map(crate::broker::allow_entry));
        }
        for d in &settings.deny {
            list.deny(d.clone());
        }
        let resolver: Arc<dyn Resolver> = match &settings.resolver {
            Some(r) => r.clone(),
            None => Arc::new(SystemResolver::from_ambient()),
        };
        let mut config = ProxyConfig::builder();
        config
            .allowlist(list.build()?)
            .ip_policy(settings.ip_policy.clone())
            .resolver(resolver);
        if let Some(b) = &broker {
            config.intercept(b.intercept());
        }
        if let Some(c) = credentials {
            config.require_credentials(c.clone());
        }
        let config = config.build()?;
        // The proxies' tasks run in this span: a host's subscriber sees
        // their decisions (and the broker's) with the session's id.
        let span = tracing::info_span!("agent_sandbox.egress", session_id = %spec.session_id);
        let proxies = match listen {
            Listen::Unbound => Proxies::Unbound(span.in_scope(|| ProxyService::start(config))),
            Listen::Loopback => Proxies::Loopback(
                tracing::Instrument::instrument(ProxyPair::start(config), span).await?,
            ),
        };
        if let Some((sink, backend)) = &settings.audit {
            let service = match &proxies {
                Proxies::Unbound(s) => s,
                Proxies::Loopback(p) => p.service(),
            };
            crate::audit::record_allowed_connections(
                crate::audit::SessionAudit::new(sink.clone(), &spec.session_id, backend),
                service.subscribe_decisions(),
            );
            if let Some(b) = &broker {
                crate::audit::record_brokered_requests(
                    crate::audit::SessionAudit::new(sink.clone(), &spec.session_id, backend),
                    b.broker.subscribe_requests(),
                );
            }
        }
        Ok(Egress {
            broker,
            proxies,
            dir,
        })
    }

    /// The proxies, to hand them listeners.
    pub(crate) fn service(&self) -> &ProxyService {
        match &self.proxies {
            Proxies::Unbound(s) => s,
            Proxies::Loopback(p) => p.service(),
        }
    }

    /// [`Egress::start`] on host loopback ports, for a sandbox that shares
    /// the host's loopback (Seatbelt, Landlock): fresh session credentials
    /// that every client must present, and the HTTP and SOCKS5 addresses.
    pub(crate) async fn start_on_loopback(
        settings: &EgressSettings,
        spec: &SandboxSpec,
        temp_dir: &Path,
    ) -> Result<(Egress, ProxyCredentials, SocketAddr, SocketAddr), Error> {
        let credentials = ProxyCredentials::generate_from_os_rng()?;
        let egress = Egress::start(
            settings,
            spec,
            temp_dir,
            Listen::Loopback,
            Some(&credentials),
        )
        .await?;
        let Some((http, socks)) = egress.loopback_addrs() else {
            egress.shutdown().await;
            return Err(Error::io(
                "starting the proxies",
                std::io::Error::other("no loopback listeners"),
            ));
        };
        Ok((egress, credentials, http, socks))
    }

    /// The HTTP and SOCKS5 proxies' loopback addresses ([`Listen::Loopback`]).
    pub(crate) fn loopback_addrs(&self) -> Option<(SocketAddr, SocketAddr)> {
        match &self.proxies {
            Proxies::Unbound(_) => None,
            Proxies::Loopback(p) => Some((p.http_addr(), p.socks_addr())),
        }
    }

    /// The session's private directory on the host.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA bundle's host path (written when hosts are brokered).
    pub(crate) fn host_ca_bundle(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The violation sources of one command: these proxies, the broker, and
    /// the name guard's reports when given.
    pub(crate) fn violations(&self, guard: Option<crate::seam::ReportReader>) -> Violations {
        Violations {
            proxy: Some(self.service().subscribe_violations()),
            broker: self
                .broker
                .as_ref()
                .map(|b| b.broker.subscribe_violations()),
            guard,
            system_log: None,
            guard_pipe: crate::violations::GuardPipe::EndsWithCommand,
        }
    }

    /// The session's environment: the base environment through env-guard
    /// with the proxy variables for `proxies` (the addresses the sandbox
    /// reaches them at) and, when hosts are brokered, the CA bundle at
    /// `ca_bundle` and the phantom token. Drops are logged.
    pub(crate) fn env(
        &self,
        settings: &Settings,
        spec: &SandboxSpec,
        ca_bundle: PathBuf,
        proxies: (SocketAddr, SocketAddr),
        credentials: Option<&ProxyCredentials>,
    ) -> Result<Vec<(OsString, OsString)>, Error> {
        let mut extras = EnvExtras::default();
        if let Some(c) = credentials {
            extras.proxy_auth = env_guard::ProxyAuth::new(c.user(), c.reveal_secret());
            if extras.proxy_auth.is_none() {
                return Err(Error::io(
                    "proxy credentials",
                    std::io::Error::other("not usable in a proxy URL"),
                ));
            }
            (settings.log)(&format!(
                "session {}: the proxies listen on loopback and require the session's \
                 credentials; GIT_SSH_COMMAND is not set (OpenBSD nc cannot authenticate to SOCKS5)",
                spec.session_id
            ));
        }
        if let Some(b) = &self.broker {
            extras.ca_bundle = Some(ca_bundle);
            for name in &b.phantom_env {
                extras
                    .set
                    .push((name.clone(), b.lease.phantom().as_str().to_string()));
            }
        }
        let sanitized = sanitized_env_with(
            &settings.base_env,
            settings.home.as_os_str(),
            Some(proxies),
            &extras,
        )?;
        log_env_drops(&settings.log, &spec.session_id, &sanitized);
        Ok(sanitized.vars)
    }

    /// Revokes the lease (from now on every request on it is refused, on
    /// open keep-alive connections too) and stops the proxies and every
    /// listener they serve. The directory goes when `self` is dropped.
    pub(crate) async fn shutdown(&self) {
        if let Some(b) = &self.broker {
            b.lease.revoke();
        }
        self.service().shutdown().await;
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        if let Some(b) = &self.broker {
            b.lease.revoke();
        }
    }
}

/// A session environment without proxies (the `none` backend, terminals).
pub(crate) fn plain_env(settings: &Settings) -> Result<Vec<(OsString, OsString)>, Error> {
    Ok(crate::env::sanitized_env(&settings.base_env, settings.home.as_os_str(), None)?.vars)
}

/// Logs what the environment policy removed: variables outside the inherited
/// set by count, every other drop (secrets, loader and injection variables,
/// ...) by name and rule. Values are never logged.
fn log_env_drops(log: &LogSink, session_id: &str, sanitized: &env_guard::Sanitized) {
    let mut not_inherited = 0usize;
    let mut named: Vec<String> = Vec::new();
    for d in &sanitized.dropped {
        match d.rule {
            env_guard::Rule::NotInherited
            | env_guard::Rule::ReplacedBySet
            | env_guard::Rule::ReplacedByProxy => not_inherited += 1,
            _ => named.push(format!("{}({})", d.name.to_string_lossy(), d.rule)),
        }
    }
    if named.is_empty() && not_inherited == 0 {
        return;
    }
    let named = if named.is_empty() {
        String::new()
    } else {
        format!("; removed {}", named.join(" "))
    };
    log(&format!(
        "session {session_id}: environment: {} variables passed, {not_inherited} not inherited{named}",
        sanitized.vars.len()
    ));
}
