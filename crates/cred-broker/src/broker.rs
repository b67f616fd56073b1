//! The broker: everything one session needs to serve intercepted
//! connections (session CA, rules, credentials and their leases, upstream
//! trust, limits), compiled once by [`BrokerBuilder::build`].

use crate::ca::SessionCa;
use crate::classify::RequestClassifier;
use crate::credential::Credential;
use crate::engine::RuleEngine;
use crate::error::{Error, ErrorKind, LeaseErrorKind};
#[cfg(feature = "git")]
use crate::git::classifier::GitClassifier;
use crate::lease::Lease;
use crate::limits::Limits;
use crate::tls;
use crate::upstream_pool::UpstreamPool;
#[cfg(feature = "git")]
use push_rule::{GitLimits, PushRule, PushRuleSpec};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::sign::SigningKey;
use rustls::{ClientConfig, RootCertStore};
use sandbox_core::SandboxViolation;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// The `action` of a violation for a request the broker refused.
pub const BROKER_DENY: &str = "broker-deny";
/// Default time for the client's TLS handshake.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a client connection may wait between requests, and an
/// upstream between reads of a response.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default time to connect to the upstream and finish its TLS handshake.
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);
/// Default number of violations kept for slow subscribers.
pub const DEFAULT_VIOLATION_CAPACITY: usize = 1024;

/// Where the upstream's trust comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum UpstreamRoots {
    /// The platform's trust (the default), plus any extra roots: on macOS
    /// the Keychain and its trust settings, on Windows the system's
    /// certificate store, on Linux the system store (`SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` when set, else the distribution's bundle), through
    /// `rustls-platform-verifier`. A corporate root the host trusts works
    /// without flags. A Linux host with no roots at all and no extra root
    /// is refused at build.
    #[default]
    PlatformAndExtra,
    /// The public web roots bundled into this build (`webpki-roots`), plus
    /// any extra roots: the host's own trust is not consulted.
    BundledWebPkiAndExtra,
    /// Only the extra roots given to the builder.
    ExtraOnly,
}

/// A credential and the lease that lends it to this session.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub(crate) credential: Credential,
    pub(crate) lease: Lease,
}

/// The TLS half of the credential broker for one session.
///
/// [`Broker::serve`] takes one intercepted client connection (the bytes
/// after the proxy's `200` to `CONNECT`): it terminates TLS with a leaf of
/// the session CA for the `CONNECT` host, reads each request with the
/// strict [`crate::RequestParser`], checks `Host` against the `CONNECT`
/// target, asks the [`RuleEngine`], checks the lease, injects the real
/// credential with [`crate::upstream_head`], and forwards the re-framed
/// request over one verified upstream TLS connection. Refusals are
/// answered (403 keeps the connection, 400 and 502 close it) and reported
/// to [`Broker::subscribe_violations`].
pub struct Broker {
    pub(crate) ca: Arc<SessionCa>,
    pub(crate) engine: Arc<RuleEngine>,
    pub(crate) grants: Vec<Grant>,
    pub(crate) limits: Limits,
    pub(crate) provider: Arc<CryptoProvider>,
    pub(crate) leaf_key: Arc<dyn SigningKey>,
    /// TLS sessions shared by every client connection, so a client that
    /// resumes skips the full handshake.
    pub(crate) sessions: Arc<dyn rustls::server::StoresServerSessions>,
    pub(crate) client_config: Arc<ClientConfig>,
    pub(crate) handshake_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) upstream_timeout: Duration,
    pub(crate) violations: broadcast::Sender<SandboxViolation>,
    /// Each request forwarded upstream, for an audit trail.
    pub(crate) requests: broadcast::Sender<crate::BrokeredRequest>,
    /// Asked by each connection for refusal shapes and for bodies they
    /// read themselves (see [`RequestClassifier`]); built once.
    pub(crate) classifiers: Arc<[Arc<dyn RequestClassifier>]>,
    /// Verified upstream connections kept between client connections.
    pub(crate) upstream_pool: UpstreamPool,
    #[cfg(feature = "git")]
    pub(crate) push_rule: Option<PushRule>,
}

impl fmt::Debug for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grants: Vec<&str> = self.grants.iter().map(|g| g.credential.name()).collect();
        f.debug_struct("Broker")
            .field("ca", &self.ca)
            .field("rules", &self.engine.len())
            .field("grants", &grants)
            .field("limits", &self.limits)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("classifiers", &names(&self.classifiers))
            .finish_non_exhaustive()
    }
}

fn names(classifiers: &[Arc<dyn RequestClassifier>]) -> Vec<&str> {
    classifiers.iter().map(|c| c.name()).collect()
}

impl Broker {
    /// A builder for a broker with this session CA and rule engine.
    pub fn builder(ca: Arc<SessionCa>, engine: RuleEngine) -> BrokerBuilder {
        BrokerBuilder {
            ca,
            engine: Arc::new(engine),
            grants: Vec::new(),
            extra_roots: Vec::new(),
            roots: UpstreamRoots::default(),
            limits: Limits::default(),
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT,
            violation_capacity: DEFAULT_VIOLATION_CAPACITY,
            classifiers: Vec::new(),
            #[cfg(feature = "git")]
            push_rule: None,
            #[cfg(feature = "git")]
            git_limits: GitLimits::default(),
        }
    }

    /// The compiled push rule, if one is configured (without one every
    /// push is refused).
    #[cfg(feature = "git")]
    pub fn push_rule(&self) -> Option<&PushRule> {
        self.push_rule.as_ref()
    }

    /// The session CA (its PEM goes into the sandbox's trust variables).
    pub fn ca(&self) -> &Arc<SessionCa> {
        &self.ca
    }

    /// Violations from now on: one per refused request or connection,
    /// action [`BROKER_DENY`], target `host:port path` (or `host:port`
    /// when there is no request), the reason in `raw`; never a secret.
    pub fn subscribe_violations(&self) -> broadcast::Receiver<SandboxViolation> {
        self.violations.subscribe()
    }

    /// The requests forwarded upstream from now on, one each: target,
    /// method, path without its query, the rule that allowed it and
    /// whether the credential was added; never a secret. A subscriber too
    /// slow for the violation capacity misses the oldest.
    pub fn subscribe_requests(&self) -> broadcast::Receiver<crate::BrokeredRequest> {
        self.requests.subscribe()
    }

    /// Whether anything reads forwarded requests (a subscriber, or a
    /// `tracing` subscriber for target `cred_broker`): else none is made.
    pub(crate) fn wants_requests(&self) -> bool {
        self.requests.receiver_count() > 0
            || tracing::enabled!(target: "cred_broker", tracing::Level::INFO)
    }

    /// Tells the subscribers (and a `tracing` subscriber, target
    /// `cred_broker`) of one forwarded request.
    pub(crate) fn forwarded(&self, r: crate::BrokeredRequest) {
        tracing::info!(
            target: "cred_broker",
            destination = %r.target,
            method = %r.method,
            path = %r.path,
            rule = r.rule.as_deref(),
            status = r.status,
            "brokered request forwarded"
        );
        if self.requests.receiver_count() > 0 {
            let _ = self.requests.send(r);
        }
    }

    /// Reports one refusal.
    pub(crate) fn report(&self, target: String, reason: &Error) {
        let v = SandboxViolation::new(BROKER_DENY, target).with_raw(reason.to_string());
        // Nobody listening is fine.
        let _ = self.violations.send(v);
    }
}

/// Builds a [`Broker`]; [`BrokerBuilder::build`] checks it and loads the
/// TLS configuration.
pub struct BrokerBuilder {
    ca: Arc<SessionCa>,
    engine: Arc<RuleEngine>,
    grants: Vec<Grant>,
    extra_roots: Vec<Vec<u8>>,
    roots: UpstreamRoots,
    limits: Limits,
    handshake_timeout: Duration,
    idle_timeout: Duration,
    upstream_timeout: Duration,
    violation_capacity: usize,
    classifiers: Vec<Arc<dyn RequestClassifier>>,
    #[cfg(feature = "git")]
    push_rule: Option<PushRuleSource>,
    #[cfg(feature = "git")]
    git_limits: GitLimits,
}

/// A push rule as given to the builder.
#[cfg(feature = "git")]
#[derive(Debug, Clone)]
enum PushRuleSource {
    Spec(PushRuleSpec),
    Compiled(PushRule),
}

impl fmt::Debug for BrokerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grants: Vec<&str> = self.grants.iter().map(|g| g.credential.name()).collect();
        f.debug_struct("BrokerBuilder")
            .field("grants", &grants)
            .field("extra_roots", &self.extra_roots.len())
            .field("roots", &self.roots)
            .field("classifiers", &names(&self.classifiers))
            .finish_non_exhaustive()
    }
}

impl BrokerBuilder {
    /// One more classifier for the broker to ask, after those of its
    /// features (the git classifier with the push rule, the GraphQL
    /// classifier), how a request wants a refusal shaped
    /// ([`RequestClassifier::refusal`]) and whether it reads the body
    /// itself ([`RequestClassifier::streams_body`]). The rule engine's
    /// classifiers are its own ([`crate::RuleEngineBuilder::classifier`]).
    pub fn classifier(&mut self, classifier: Arc<dyn RequestClassifier>) -> &mut BrokerBuilder {
        self.classifiers.push(classifier);
        self
    }

    /// The push rule every `git-receive-pack` request must pass, compiled
    /// by [`BrokerBuilder::build`] for the session the granted leases are
    /// bound to (`{session}` is replaced by it; every grant must name the
    /// same session). Without a push rule every push is refused: each of
    /// its refs is answered `ng` with the reason (no push rule is
    /// configured) in git's report ([`push_rule::report_refused`]), so
    /// `git push` prints `[remote rejected]` for it as for a refusal by
    /// the rule, and nothing reaches the upstream.
    ///
    /// A push (`POST .../git-receive-pack`, as [`crate::GitClassifier`]
    /// recognises it, whichever classifiers the rule engine has) is
    /// handled apart from other requests: its head must pass the rule
    /// engine, its body is read with [`push_rule::PushBody`] (inflated
    /// when gzip-encoded, the pack spooled within [`GitLimits`]) and
    /// judged with [`PushRule::check_spooled`]. A refused push is answered
    /// `200 OK` with git's report ([`push_rule::report_status`]), so that
    /// `git push` prints `[remote rejected]` with the reason per ref, and
    /// nothing reaches the upstream; an allowed push is forwarded with
    /// the real credential, identity-encoded, with a `Content-Length`.
    #[cfg(feature = "git")]
    pub fn push_rule(&mut self, spec: PushRuleSpec) -> &mut BrokerBuilder {
        self.push_rule = Some(PushRuleSource::Spec(spec));
        self
    }

    /// An already compiled push rule (see [`BrokerBuilder::push_rule`]).
    #[cfg(feature = "git")]
    pub fn compiled_push_rule(&mut self, rule: PushRule) -> &mut BrokerBuilder {
        self.push_rule = Some(PushRuleSource::Compiled(rule));
        self
    }

    /// The bounds for reading pushes (see [`GitLimits`]).
    #[cfg(feature = "git")]
    pub fn git_limits(&mut self, limits: GitLimits) -> &mut BrokerBuilder {
        self.git_limits = limits;
        self
    }

    /// Lends `credential` through `lease` (checked to name it) to every
    /// host the credential may go to. For a target several credentials
    /// may go to, the first granted is used.
    pub fn grant(&mut self, credential: Credential, lease: Lease) -> &mut BrokerBuilder {
        self.grants.push(Grant { credential, lease });
        self
    }

    /// Trusts one more root certificate (DER) for upstream connections.
    pub fn extra_root_der(&mut self, der: &[u8]) -> &mut BrokerBuilder {
        self.extra_roots.push(der.to_vec());
        self
    }

    /// Trusts every certificate of a PEM bundle (`-----BEGIN
    /// CERTIFICATE-----` blocks; other blocks are skipped) for upstream
    /// connections. A bundle with no certificate, or one that does not
    /// parse, is an error.
    pub fn extra_roots_pem(&mut self, pem: &[u8]) -> Result<&mut BrokerBuilder, Error> {
        use rustls::pki_types::pem::PemObject;
        let bad = |value: String| {
            Error::from(ErrorKind::InvalidConfig {
                name: "extra roots",
                value,
                reason: "give PEM with at least one CERTIFICATE block",
            })
        };
        let mut found = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            found.push(cert.map_err(|e| bad(e.to_string()))?.to_vec());
        }
        if found.is_empty() {
            return Err(bad("no certificate".to_owned()));
        }
        self.extra_roots.extend(found);
        Ok(self)
    }

    /// Chooses where upstream trust comes from.
    pub fn upstream_roots(&mut self, roots: UpstreamRoots) -> &mut BrokerBuilder {
        self.roots = roots;
        self
    }

    /// The request parser's limits.
    pub fn limits(&mut self, limits: Limits) -> &mut BrokerBuilder {
        self.limits = limits;
        self
    }

    /// Time for the client's TLS handshake.
    pub fn handshake_timeout(&mut self, t: Duration) -> &mut BrokerBuilder {
        self.handshake_timeout = t;
        self
    }

    /// Time a connection may wait for the next request or response bytes.
    pub fn idle_timeout(&mut self, t: Duration) -> &mut BrokerBuilder {
        self.idle_timeout = t;
        self
    }

    /// Time to connect to the upstream and finish its TLS handshake.
    pub fn upstream_timeout(&mut self, t: Duration) -> &mut BrokerBuilder {
        self.upstream_timeout = t;
        self
    }

    /// How many violations are kept for slow subscribers (1 to 65 536).
    pub fn violation_capacity(&mut self, n: usize) -> &mut BrokerBuilder {
        self.violation_capacity = n;
        self
    }

    /// Checks the grants and roots and loads the TLS configuration.
    pub fn build(&self) -> Result<Broker, Error> {
        if !(1..=65_536).contains(&self.violation_capacity) {
            return Err(ErrorKind::InvalidConfig {
                name: "violation capacity",
                value: self.violation_capacity.to_string(),
                reason: "give 1 to 65536",
            }
            .into());
        }
        for t in [
            self.handshake_timeout,
            self.idle_timeout,
            self.upstream_timeout,
        ] {
            if t.is_zero() {
                return Err(ErrorKind::InvalidConfig {
                    name: "timeout",
                    value: "0s".to_owned(),
                    reason: "give a positive duration",
                }
                .into());
            }
        }
        for g in &self.grants {
            if g.lease.credential() != g.credential.name() {
                return Err(LeaseErrorKind::CredentialMismatch {
                    lease: g.lease.credential().to_owned(),
                    credential: g.credential.name().to_owned(),
                }
                .into());
            }
        }
        #[cfg(feature = "git")]
        let push_rule = match &self.push_rule {
            None => None,
            Some(PushRuleSource::Compiled(rule)) => Some(rule.clone()),
            Some(PushRuleSource::Spec(spec)) => {
                let mut sessions = self.grants.iter().map(|g| g.lease.session());
                let Some(session) = sessions.next() else {
                    return Err(ErrorKind::InvalidConfig {
                        name: "push rule",
                        value: "no grant".to_owned(),
                        reason: "grant a credential first: its lease names the session",
                    }
                    .into());
                };
                if sessions.any(|s| s != session) {
                    return Err(ErrorKind::InvalidConfig {
                        name: "push rule",
                        value: "several sessions".to_owned(),
                        reason: "every grant's lease must name the same session",
                    }
                    .into());
                }
                Some(PushRule::compile(spec, session)?)
            }
        };
        let mut roots = RootCertStore::empty();
        if self.roots == UpstreamRoots::BundledWebPkiAndExtra {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        for der in &self.extra_roots {
            roots.add(CertificateDer::from(der.clone())).map_err(|e| {
                Error::from(ErrorKind::InvalidConfig {
                    name: "extra root",
                    value: e.to_string(),
                    reason: "give a CA certificate in DER",
                })
            })?;
        }
        let provider = tls::provider();
        let trust = match self.roots {
            UpstreamRoots::PlatformAndExtra => tls::UpstreamTrust::Platform(
                self.extra_roots
                    .iter()
                    .map(|d| CertificateDer::from(d.clone()))
                    .collect(),
            ),
            _ if roots.is_empty() => {
                return Err(ErrorKind::InvalidConfig {
                    name: "upstream roots",
                    value: "none".to_owned(),
                    reason: "give at least one root certificate",
                }
                .into());
            }
            _ => tls::UpstreamTrust::Roots(roots),
        };
        let leaf_key = tls::signing_key(&provider, self.ca.leaf_key_pkcs8_der())?;
        let client_config = tls::client_config(&provider, trust)?;
        let (violations, _) = broadcast::channel(self.violation_capacity);
        let (requests, _) = broadcast::channel(self.violation_capacity);
        let mut classifiers: Vec<Arc<dyn RequestClassifier>> = Vec::new();
        #[cfg(feature = "git")]
        classifiers.push(Arc::new(match &push_rule {
            Some(rule) => GitClassifier::new(self.git_limits).with_push_rule(rule.clone()),
            None => GitClassifier::new(self.git_limits),
        }));
        #[cfg(feature = "graphql")]
        classifiers.push(Arc::new(crate::graphql_rule::GraphqlClassifier::new()));
        classifiers.extend(self.classifiers.iter().cloned());
        Ok(Broker {
            upstream_pool: UpstreamPool::default(),
            ca: Arc::clone(&self.ca),
            engine: Arc::clone(&self.engine),
            grants: self.grants.clone(),
            limits: self.limits,
            provider,
            leaf_key,
            sessions: Arc::new(crate::session_store::SessionStore::new(tls::SESSION_CACHE)),
            client_config,
            handshake_timeout: self.handshake_timeout,
            idle_timeout: self.idle_timeout,
            upstream_timeout: self.upstream_timeout,
            violations,
            requests,
            classifiers: classifiers.into(),
            #[cfg(feature = "git")]
            push_rule,
        })
    }
}
