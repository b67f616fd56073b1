//! Brokered hosts (R-BROKER): the session's proxies hand chosen hosts to the
//! credential broker, which terminates TLS with the session CA, applies the
//! rules and injects the real credential; the sandbox holds only a phantom
//! token and trusts the session CA through env-guard's trust variables.
//!
//! Only the session reaches its broker: the broker is reached only through
//! the session's proxies, which on Linux serve sockets no other process can
//! use and elsewhere require the session's proxy credentials. The phantom
//! token is therefore not demanded as a second factor: the path a request
//! came by is the proof, and git's first request of a fetch or push is sent
//! without any credential (it asks its credential helper only after a 401),
//! so demanding the phantom token would turn every such first request into
//! a 401 round trip, and tools that never send a token would fail. Whatever
//! credential the request carries is removed before the real one is
//! injected.

use crate::Error;
use crate::error::ErrorKind;
use connect_proxy::{BoxFuture, Host, Intercept, Intercepted, Target};
use cred_broker::{Broker, Credential, Lease, PushRuleSpec, RuleEngine, SessionCa, UpstreamRoots};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// Where the host's public roots are read from to build the sandbox's CA
/// bundle (the session CA is appended).
pub const SYSTEM_CA_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
];

/// What every session of a manager brokers: the hosts, the rules, the real
/// credential, the variables that receive the phantom token, and the
/// upstream trust.
#[derive(Clone)]
pub struct BrokerSettings {
    hosts: Vec<Host>,
    ports: Vec<u16>,
    engine: RuleEngine,
    credential: Credential,
    phantom_env: Vec<String>,
    extra_roots_der: Vec<Vec<u8>>,
    roots: UpstreamRoots,
    push_rule: Option<PushRuleSpec>,
}

impl std::fmt::Debug for BrokerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerSettings")
            .field("hosts", &self.hosts)
            .field("credential", &self.credential.name())
            .field("phantom_env", &self.phantom_env)
            .finish_non_exhaustive()
    }
}

impl BrokerSettings {
    /// Settings with these rules and this credential; add hosts with
    /// [`BrokerSettings::host`]. The phantom token goes into `GH_TOKEN` and
    /// `GITHUB_TOKEN` unless [`BrokerSettings::phantom_env`] says otherwise.
    pub fn new(engine: RuleEngine, credential: Credential) -> BrokerSettings {
        BrokerSettings {
            hosts: Vec::new(),
            ports: vec![DEFAULT_BROKER_PORT],
            engine,
            credential,
            phantom_env: vec!["GH_TOKEN".into(), "GITHUB_TOKEN".into()],
            extra_roots_der: Vec::new(),
            roots: UpstreamRoots::default(),
            push_rule: None,
        }
    }

    /// Brokers `host` (exact, canonical as [`Host::parse_config`] makes
    /// it: any case, a trailing dot, Unicode as its A-label, an address in
    /// any spelling; connections to it on the brokered ports, 443 unless
    /// [`BrokerSettings::broker_port`] adds others, go through the broker).
    /// It is added to the session's allowlist. A host that does not parse
    /// is an error.
    pub fn host(&mut self, host: &str) -> Result<&mut BrokerSettings, Error> {
        let h = Host::parse_config(host).map_err(|reason| ErrorKind::InvalidBrokerHost {
            host: host.chars().take(256).collect(),
            reason,
        })?;
        if !self.hosts.contains(&h) {
            self.hosts.push(h);
        }
        Ok(self)
    }

    /// Also brokers connections to the brokered hosts on `port` (the
    /// credential is otherwise only for their HTTPS service on 443; another
    /// port of the same name is tunnelled without it).
    pub fn broker_port(&mut self, port: u16) -> &mut BrokerSettings {
        if !self.ports.contains(&port) {
            self.ports.push(port);
        }
        self
    }

    /// Replaces the variables that receive the phantom token.
    pub fn phantom_env<I, S>(&mut self, names: I) -> &mut BrokerSettings
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.phantom_env = names.into_iter().map(Into::into).collect();
        self
    }

    /// Trusts an extra upstream root (DER).
    pub fn extra_root_der(&mut self, der: Vec<u8>) -> &mut BrokerSettings {
        self.extra_roots_der.push(der);
        self
    }

    /// Chooses the upstream trust (default: the platform's trust plus extra
    /// roots, [`UpstreamRoots::PlatformAndExtra`]).
    pub fn upstream_roots(&mut self, roots: UpstreamRoots) -> &mut BrokerSettings {
        self.roots = roots;
        self
    }

    /// What git pushes through the broker may do (R-PUSH-1); `{session}` in
    /// a ref pattern becomes the session id. Without a push rule every push
    /// is refused.
    pub fn push_rule(&mut self, spec: PushRuleSpec) -> &mut BrokerSettings {
        self.push_rule = Some(spec);
        self
    }

    /// The brokered hosts.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }
}

/// One session's broker: its CA, lease and the bundle file inside.
pub(crate) struct SessionBroker {
    pub(crate) broker: Arc<Broker>,
    pub(crate) lease: Lease,
    pub(crate) phantom_env: Vec<String>,
    pub(crate) hosts: Vec<Host>,
    pub(crate) ports: Vec<u16>,
}

impl SessionBroker {
    /// Makes the session CA, the lease and the broker, and writes the CA
    /// bundle (host roots + session CA) to `bundle`, read-only.
    pub(crate) fn start(
        settings: &BrokerSettings,
        session_id: &str,
        bundle: &Path,
    ) -> Result<SessionBroker, Error> {
        let ca = SessionCa::builder(session_id).build()?;
        let lease = Lease::builder(session_id, &settings.credential).build()?;
        let mut b = Broker::builder(Arc::new(ca), settings.engine.clone());
        b.grant(settings.credential.clone(), lease.clone())
            .upstream_roots(settings.roots);
        for der in &settings.extra_roots_der {
            b.extra_root_der(der);
        }
        if let Some(spec) = &settings.push_rule {
            b.push_rule(spec.clone());
        }
        let broker = b.build()?;
        let mut pem = String::new();
        for path in SYSTEM_CA_BUNDLES {
            if let Ok(text) = std::fs::read_to_string(path) {
                pem.push_str(&text);
                if !pem.ends_with('\n') {
                    pem.push('\n');
                }
                break;
            }
        }
        pem.push_str(broker.ca().ca_cert_pem());
        write_read_only(bundle, pem.as_bytes())?;
        Ok(SessionBroker {
            broker: Arc::new(broker),
            lease,
            phantom_env: settings.phantom_env.clone(),
            hosts: settings.hosts.clone(),
            ports: settings.ports.clone(),
        })
    }

    /// The proxy hook that hands the brokered hosts to the broker.
    pub(crate) fn intercept(&self) -> Arc<dyn Intercept> {
        Arc::new(BrokerIntercept {
            broker: self.broker.clone(),
            hosts: self.hosts.iter().map(ToString::to_string).collect(),
            ports: self.ports.clone(),
        })
    }
}

/// A brokered host as an allowlist entry (an IPv6 address in brackets, as
/// an entry writes it).
pub(crate) fn allow_entry(host: &Host) -> String {
    match host {
        Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        h => h.to_string(),
    }
}

/// Writes `bytes` to a new file at `path` (never over an existing one),
/// mode 0444 on Unix. On Windows there is no POSIX mode: the file (the CA
/// bundle, certificates only) is created in the session's private
/// directory with the access that directory gives its new files.
fn write_read_only(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o444);
    let mut f = options
        .open(path)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    f.write_all(bytes)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// The connect-proxy hook that hands connections for `hosts` (exact,
/// canonical lower-case names) to `broker`, with the address the proxy
/// already vetted. Use it to put a broker behind any proxy pair.
/// Only connections on [`DEFAULT_BROKER_PORT`] are claimed; see
/// [`broker_intercept_on_ports`] for others.
pub fn broker_intercept(broker: Arc<Broker>, hosts: Vec<String>) -> Arc<dyn Intercept> {
    broker_intercept_on_ports(broker, hosts, vec![DEFAULT_BROKER_PORT])
}

/// [`broker_intercept`] for connections to `hosts` on any of `ports` (the
/// credential then also goes to those services of the same names).
pub fn broker_intercept_on_ports(
    broker: Arc<Broker>,
    hosts: Vec<String>,
    ports: Vec<u16>,
) -> Arc<dyn Intercept> {
    Arc::new(BrokerIntercept {
        broker,
        hosts,
        ports,
    })
}

/// The port whose connections to a brokered host go through the broker.
pub const DEFAULT_BROKER_PORT: u16 = 443;

struct BrokerIntercept {
    broker: Arc<Broker>,
    hosts: Vec<String>,
    ports: Vec<u16>,
}

impl Intercept for BrokerIntercept {
    fn claims(&self, target: &Target) -> bool {
        // The credential is for the host's HTTPS service, not for whatever
        // else listens on another port of the same name.
        if !self.ports.contains(&target.port) {
            return false;
        }
        let host = target.host.to_string();
        self.hosts.contains(&host)
    }

    fn take(&self, conn: Intercepted) -> BoxFuture<'static, ()> {
        let broker = self.broker.clone();
        Box::pin(async move {
            let Some(upstream) = conn.addrs.first().copied() else {
                return;
            };
            conn.client.set_nodelay();
            let (read, write) = tokio::io::split(conn.client);
            let read = std::io::Cursor::new(conn.buffered).chain(read);
            let stream = tokio::io::join(read, write);
            // Refusals are answered and reported by the broker itself.
            let _ = broker.serve(stream, &conn.target, upstream).await;
        })
    }
}

#[cfg_attr(
    not(target_os = "linux"),
    allow(dead_code, reason = "used by the bubblewrap backend (Linux)")
)]
/// The path of the CA bundle inside the sandbox.
pub(crate) fn guest_bundle_path() -> PathBuf {
    PathBuf::from(format!("{}/ca.pem", bwrap_spec::BRIDGE_GUEST_DIR))
}

/// Loads a rule file from the host's file system (JSON when the name ends in
/// `.json`, TOML otherwise) and compiles it with the git smart-HTTP and
/// GraphQL classifiers in front of the REST default.
pub fn rule_engine_from_file(path: &Path) -> Result<RuleEngine, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let file = if path.extension().is_some_and(|e| e == "json") {
        cred_broker::RuleFile::from_json(&text)?
    } else {
        cred_broker::RuleFile::from_toml(&text)?
    };
    Ok(RuleEngine::builder()
        .rules(file)
        .classifier(Arc::new(cred_broker::GitClassifier::new(
            cred_broker::GitLimits::default(),
        )))
        .classifier(Arc::new(cred_broker::GraphqlClassifier::new()))
        .build()?)
}

/// The header template named `bearer`, `token` or `git-basic`.
pub fn header_template_from_name(name: &str) -> Option<cred_broker::HeaderTemplate> {
    match name {
        "bearer" => Some(cred_broker::HeaderTemplate::Bearer),
        "token" => Some(cred_broker::HeaderTemplate::Token),
        "git-basic" => Some(cred_broker::HeaderTemplate::git_basic()),
        _ => None,
    }
}

/// Every certificate of a PEM file on the host's file system, as DER (for
/// extra upstream roots).
pub fn pem_certificates_from_file(path: &Path) -> Result<Vec<Vec<u8>>, Error> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let bad = |e: rustls_pki_types::pem::Error| {
        Error::io(
            format!("reading certificates from {}", path.display()),
            std::io::Error::other(e.to_string()),
        )
    };
    CertificateDer::pem_file_iter(path)
        .map_err(bad)?
        .map(|c| c.map(|c| c.to_vec()).map_err(bad))
        .collect()
}

/// A credential named `name` with `value`, allowed to go to `hosts`.
pub fn credential_for_hosts(
    name: &str,
    value: String,
    template: cred_broker::HeaderTemplate,
    hosts: &[String],
) -> Result<Credential, Error> {
    let mut cred = Credential::builder(name);
    cred.secret(cred_broker::Secret::from_string(value)?)
        .template(template);
    for h in hosts {
        cred.host(h);
    }
    Ok(cred.build()?)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;
    use connect_proxy::Host;

    fn target(host: &str, port: u16) -> Target {
        Target::new(Host::parse_wire(host).unwrap(), port)
    }

    #[test]
    fn brokered_hosts_are_canonical_and_a_bad_one_is_refused() {
        let engine = RuleEngine::builder().build().unwrap();
        let credential = Credential::builder("c")
            .secret(cred_broker::Secret::from_string("s3cret".into()).unwrap())
            .host("api.example.com")
            .build()
            .unwrap();
        let mut s = BrokerSettings::new(engine, credential);
        s.host("API.Example.COM.")
            .unwrap()
            .host("api.example.com")
            .unwrap()
            .host("[FD00:0::1]")
            .unwrap();
        let want = [
            Host::parse_wire("api.example.com").unwrap(),
            Host::parse_wire("fd00::1").unwrap(),
        ];
        assert_eq!(s.hosts(), want);
        let entries: Vec<String> = s.hosts().iter().map(allow_entry).collect();
        assert_eq!(entries, ["api.example.com", "[fd00::1]"]);
        connect_proxy::AllowList::builder()
            .allow_all(entries)
            .build()
            .unwrap();
        for bad in [
            "a..example.com",
            "-a.example.com",
            "api.example.com:443",
            "",
        ] {
            let e = s.host(bad).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::InvalidBrokerHost { .. }),
                "{bad}: {e}"
            );
        }
        assert_eq!(s.hosts().len(), 2);
    }

    #[test]
    fn only_the_brokered_ports_of_a_brokered_host_are_claimed() {
        let engine = RuleEngine::builder()
            .rules(cred_broker::RuleFile::from_toml("").unwrap())
            .build()
            .unwrap();
        let ca = SessionCa::builder("s").build().unwrap();
        let broker = Arc::new(Broker::builder(Arc::new(ca), engine).build().unwrap());
        let default = broker_intercept(broker.clone(), vec!["api.example.com".into()]);
        assert!(default.claims(&target("api.example.com", 443)));
        assert!(!default.claims(&target("api.example.com", 8443)));
        assert!(!default.claims(&target("other.example.com", 443)));
        let more = BrokerIntercept {
            broker,
            hosts: vec!["api.example.com".into()],
            ports: vec![443, 8443],
        };
        assert!(more.claims(&target("api.example.com", 8443)));
        assert!(!more.claims(&target("api.example.com", 22)));
        // An IPv6 host is claimed as the proxy names it.
        let v6 = BrokerIntercept {
            broker: more.broker.clone(),
            hosts: vec![Host::parse_config("[fd00::1]").unwrap().to_string()],
            ports: vec![443],
        };
        assert!(v6.claims(&target("[fd00:0::1]", 443)));
    }
}
