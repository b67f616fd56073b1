//! The session CA: an ECDSA P-256 key made per session and held only in
//! memory, and leaf certificates minted on demand for the hosts the broker
//! intercepts.

use crate::error::{Error, ErrorKind, TlsErrorKind, truncate};
use crate::inject::wire_host;
use crate::leaf_cache::Lru;
use net_vocab::Host;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, SerialNumber,
};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use time::OffsetDateTime;
use zeroize::Zeroize;

/// Default life of the CA certificate.
pub const DEFAULT_CA_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Default life of a leaf certificate.
pub const DEFAULT_LEAF_LIFETIME: Duration = Duration::from_secs(3600);
/// Default number of leaves kept.
pub const DEFAULT_LEAF_CACHE: usize = 256;
/// How far back `notBefore` is set, for clocks that run a little behind.
pub const CLOCK_SKEW: Duration = Duration::from_secs(300);

/// A key pair whose PKCS#8 bytes are overwritten when dropped.
struct WipedKey(KeyPair);

impl Drop for WipedKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// A minted leaf certificate for one host. Its private key is the CA's one
/// leaf key ([`SessionCa::leaf_key_pkcs8_der`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Leaf {
    host: String,
    der: Vec<u8>,
    not_after: SystemTime,
}

impl Leaf {
    /// The host it was minted for (canonical).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The certificate, DER.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// When it stops being valid.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }
}

impl fmt::Debug for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leaf")
            .field("host", &self.host)
            .field("der_len", &self.der.len())
            .field("not_after", &self.not_after)
            .finish()
    }
}

/// A per-session certificate authority. Build with [`SessionCa::builder`].
///
/// The CA key and the one leaf key are generated in memory and their
/// PKCS#8 bytes are wiped when the CA is dropped (the signing library's
/// own expanded key copy is outside this crate's reach). The CA is
/// limited to signing end-entity certificates (path length 0). Leaves get
/// a DNS or IP subject alternative name, `serverAuth`, an authority key
/// identifier, a random serial and a short life; they are cached in a
/// bounded least-recently-used map and re-minted once past half their life.
///
/// ```
/// use cred_broker::SessionCa;
/// use std::time::SystemTime;
/// let ca = SessionCa::builder("session-1").build().unwrap();
/// assert!(ca.ca_cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// let now = SystemTime::now();
/// let leaf = ca.leaf("api.example.com", now).unwrap();
/// assert!(std::sync::Arc::ptr_eq(&leaf, &ca.leaf("API.example.com.", now).unwrap()));
/// ```
pub struct SessionCa {
    session: String,
    ca_params: CertificateParams,
    ca_key: WipedKey,
    ca_der: Vec<u8>,
    ca_pem: String,
    ca_not_after: SystemTime,
    leaf_key: WipedKey,
    leaf_lifetime: Duration,
    cache: Mutex<Lru<Leaf>>,
}

impl fmt::Debug for SessionCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCa")
            .field("session", &self.session)
            .field("ca_not_after", &self.ca_not_after)
            .field("leaf_lifetime", &self.leaf_lifetime)
            .field("cached_leaves", &self.cached_leaves())
            .finish_non_exhaustive()
    }
}

fn cert_error(e: rcgen::Error) -> Error {
    TlsErrorKind::Certificate {
        message: e.to_string(),
    }
    .into()
}

fn random_serial() -> Result<SerialNumber, Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        Error::from(TlsErrorKind::Certificate {
            message: format!("random serial: {e}"),
        })
    })?;
    // Positive and without a leading zero byte.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    Ok(SerialNumber::from_slice(&bytes))
}

fn key() -> Result<WipedKey, Error> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
        .map(WipedKey)
        .map_err(cert_error)
}

impl SessionCa {
    /// A builder for the CA of `session`.
    pub fn builder(session: &str) -> SessionCaBuilder {
        SessionCaBuilder {
            session: session.to_owned(),
            ca_lifetime: DEFAULT_CA_LIFETIME,
            leaf_lifetime: DEFAULT_LEAF_LIFETIME,
            cache: DEFAULT_LEAF_CACHE,
            now: None,
        }
    }

    /// The CA certificate, PEM, for the sandbox's trust store.
    pub fn ca_cert_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate, DER.
    pub fn ca_cert_der(&self) -> &[u8] {
        &self.ca_der
    }

    /// The private key of every leaf, PKCS#8 DER (for the TLS server side).
    pub fn leaf_key_pkcs8_der(&self) -> &[u8] {
        self.leaf_key.0.serialized_der()
    }

    /// How many leaves are cached.
    pub fn cached_leaves(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.len())
    }

    /// The leaf for `host` (a DNS name or an IP address in the wire
    /// grammar of [`Host::parse_wire`], optionally with a port, any case,
    /// IPv6 in brackets or not), from the cache while it has more than
    /// half its life left at `now`, minted otherwise.
    pub fn leaf(&self, host: &str, now: SystemTime) -> Result<Arc<Leaf>, Error> {
        let Some(parsed) = wire_host(host) else {
            return Err(TlsErrorKind::InvalidLeafHost {
                host: truncate(host),
            }
            .into());
        };
        self.leaf_for(&parsed, now)
    }

    /// [`SessionCa::leaf`] for a canonical host.
    pub(crate) fn leaf_for(&self, host: &Host, now: SystemTime) -> Result<Arc<Leaf>, Error> {
        let (key, san) = leaf_name(host)?;
        if let Some(leaf) = self.lock()?.get(&key) {
            let left = leaf.not_after.duration_since(now).unwrap_or_default();
            if left > self.leaf_lifetime / 2 {
                return Ok(leaf);
            }
        }
        let leaf = Arc::new(self.mint(&key, san, now)?);
        self.lock()?.insert(&key, Arc::clone(&leaf));
        Ok(leaf)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Lru<Leaf>>, Error> {
        self.cache.lock().map_err(|_| {
            Error::from(TlsErrorKind::Certificate {
                message: "the leaf cache lock was poisoned".to_owned(),
            })
        })
    }

    fn mint(&self, host: &str, san: SanType, now: SystemTime) -> Result<Leaf, Error> {
        if now >= self.ca_not_after {
            return Err(TlsErrorKind::Certificate {
                message: "the session CA has expired; make a new one".to_owned(),
            }
            .into());
        }
        let not_after = (now + self.leaf_lifetime).min(self.ca_not_after);
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, truncate_cn(host));
        params.distinguished_name = dn;
        params.subject_alt_names = vec![san];
        params.not_before = OffsetDateTime::from(now - CLOCK_SKEW);
        params.not_after = OffsetDateTime::from(not_after);
        params.serial_number = Some(random_serial()?);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key.0);
        let cert = params
            .signed_by(&self.leaf_key.0, &issuer)
            .map_err(cert_error)?;
        Ok(Leaf {
            host: host.to_owned(),
            der: cert.der().to_vec(),
            not_after,
        })
    }
}

fn truncate_cn(s: &str) -> String {
    s.chars().take(64).collect()
}

/// The cache key and SAN for a host: an IP address SAN for an address,
/// a DNS name SAN for a name (already in the wire grammar).
fn leaf_name(host: &Host) -> Result<(String, SanType), Error> {
    match host {
        Host::Ip(ip) => Ok((ip.to_string(), SanType::IpAddress(*ip))),
        Host::Name(name) => {
            let san = name.clone().try_into().map_err(|_| {
                Error::from(TlsErrorKind::InvalidLeafHost {
                    host: truncate(name),
                })
            })?;
            Ok((name.clone(), SanType::DnsName(san)))
        }
    }
}

/// Builds a [`SessionCa`]; [`SessionCaBuilder::build`] generates the keys.
#[derive(Debug, Clone)]
pub struct SessionCaBuilder {
    session: String,
    ca_lifetime: Duration,
    leaf_lifetime: Duration,
    cache: usize,
    now: Option<SystemTime>,
}

impl SessionCaBuilder {
    /// The CA certificate's life (1 minute to 30 days; default one day).
    pub fn ca_lifetime(&mut self, life: Duration) -> &mut SessionCaBuilder {
        self.ca_lifetime = life;
        self
    }

    /// A leaf's life (1 minute to 7 days, at most the CA's; default one
    /// hour).
    pub fn leaf_lifetime(&mut self, life: Duration) -> &mut SessionCaBuilder {
        self.leaf_lifetime = life;
        self
    }

    /// How many leaves are kept (1 to 65 536; default 256).
    pub fn cache_capacity(&mut self, leaves: usize) -> &mut SessionCaBuilder {
        self.cache = leaves;
        self
    }

    /// The time the CA's life starts from (default: the system clock when
    /// built).
    pub fn now(&mut self, now: SystemTime) -> &mut SessionCaBuilder {
        self.now = Some(now);
        self
    }

    /// Checks the settings and generates the CA and leaf keys.
    pub fn build(&self) -> Result<SessionCa, Error> {
        let bad = |name, value: String, reason| {
            Err(Error::from(ErrorKind::InvalidConfig {
                name,
                value,
                reason,
            }))
        };
        const MINUTE: Duration = Duration::from_secs(60);
        if self.session.is_empty()
            || self.session.len() > 128
            || self.session.chars().any(char::is_control)
        {
            return bad(
                "session id",
                truncate(&self.session),
                "give 1 to 128 bytes without control characters",
            );
        }
        if self.ca_lifetime < MINUTE || self.ca_lifetime > 30 * 24 * 60 * MINUTE {
            return bad(
                "ca_lifetime",
                format!("{:?}", self.ca_lifetime),
                "give 1 minute to 30 days",
            );
        }
        if self.leaf_lifetime < MINUTE
            || self.leaf_lifetime > 7 * 24 * 60 * MINUTE
            || self.leaf_lifetime > self.ca_lifetime
        {
            return bad(
                "leaf_lifetime",
                format!("{:?}", self.leaf_lifetime),
                "give 1 minute to 7 days, and no more than the CA's life",
            );
        }
        if !(1..=65_536).contains(&self.cache) {
            return bad(
                "cache_capacity",
                self.cache.to_string(),
                "give 1 to 65536 leaves",
            );
        }
        let now = self.now.unwrap_or_else(SystemTime::now);
        let ca_not_after = now + self.ca_lifetime;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "agent-sandbox");
        dn.push(
            DnType::CommonName,
            truncate_cn(&format!("agent-sandbox session CA {}", self.session)),
        );
        params.distinguished_name = dn;
        params.not_before = OffsetDateTime::from(now - CLOCK_SKEW);
        params.not_after = OffsetDateTime::from(ca_not_after);
        params.serial_number = Some(random_serial()?);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = key()?;
        let cert = params.self_signed(&ca_key.0).map_err(cert_error)?;
        Ok(SessionCa {
            session: self.session.clone(),
            ca_der: cert.der().to_vec(),
            ca_pem: cert.pem(),
            ca_params: params,
            ca_key,
            ca_not_after,
            leaf_key: key()?,
            leaf_lifetime: self.leaf_lifetime,
            cache: Mutex::new(Lru::new(self.cache)),
        })
    }
}
