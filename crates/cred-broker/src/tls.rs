//! TLS configuration of both sides: the server side speaks to the sandbox
//! with a leaf of the session CA, the client side verifies the upstream.

use crate::error::{Error, ErrorKind};
use net_vocab::Host;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::{CertifiedKey, SigningKey};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::fmt;
use std::sync::Arc;

/// The only application protocol spoken on either side.
pub(crate) const HTTP11: &[u8] = b"http/1.1";

fn config_error(name: &'static str, e: impl fmt::Display) -> Error {
    ErrorKind::InvalidConfig {
        name,
        value: e.to_string(),
        reason: "the TLS library refused it",
    }
    .into()
}

/// The provider shared by both sides: ring, or aws-lc-rs with the
/// `aws-lc-rs` feature, with its own cipher suites in its own order but
/// for one: TLS 1.3's AES-128-GCM with SHA-256 comes first.
///
/// The default order starts with AES-256-GCM with SHA-384, whose key
/// schedule runs SHA-512's compression function (no instructions of its
/// own on common CPUs, where SHA-256 has them): under a new connection per
/// request it was 13% of the broker's CPU time. AES-128-GCM is TLS 1.3's
/// mandatory suite; every suite offered before is still offered.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    #[cfg(feature = "aws-lc-rs")]
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    #[cfg(not(feature = "aws-lc-rs"))]
    let mut provider = rustls::crypto::ring::default_provider();
    prefer_aes128_sha256(&mut provider);
    Arc::new(provider)
}

/// Moves TLS 1.3's AES-128-GCM-SHA256 to the front, the rest in order.
fn prefer_aes128_sha256(provider: &mut CryptoProvider) {
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
}

/// Loads the session CA's leaf key once.
pub(crate) fn signing_key(
    provider: &CryptoProvider,
    pkcs8: &[u8],
) -> Result<Arc<dyn SigningKey>, Error> {
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pkcs8.to_vec()));
    provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| config_error("leaf key", e))
}

/// Serves one certified key whatever the client asks (the server name was
/// checked before the handshake continues).
#[derive(Debug)]
struct OneKey(Arc<CertifiedKey>);

impl ResolvesServerCert for OneKey {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }
}

/// TLS sessions kept for resumption across client connections.
pub(crate) const SESSION_CACHE: usize = 4096;

/// The server configuration for one client connection: the leaf for the
/// connection target, ALPN `http/1.1` only, sessions from the broker's
/// shared store.
pub(crate) fn server_config(
    provider: &Arc<CryptoProvider>,
    leaf_der: &[u8],
    key: &Arc<dyn SigningKey>,
    sessions: &Arc<dyn rustls::server::StoresServerSessions>,
) -> Result<Arc<ServerConfig>, Error> {
    let certified = CertifiedKey::new(
        vec![CertificateDer::from(leaf_der.to_vec())],
        Arc::clone(key),
    );
    let mut config = ServerConfig::builder_with_provider(Arc::clone(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error("tls versions", e))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(OneKey(Arc::new(certified))));
    config.alpn_protocols = vec![HTTP11.to_vec()];
    config.session_storage = Arc::clone(sessions);
    // The provider's order (see `provider`), not the client's, which for
    // most clients starts with AES-256-GCM-SHA384.
    config.ignore_client_order = true;
    Ok(Arc::new(config))
}

/// What verifies an upstream's certificate.
pub(crate) enum UpstreamTrust {
    /// The platform's verifier, with these extra roots.
    Platform(Vec<rustls::pki_types::CertificateDer<'static>>),
    /// Exactly these roots.
    Roots(RootCertStore),
}

/// The upstream client configuration: the given trust, ALPN `http/1.1`.
pub(crate) fn client_config(
    provider: &Arc<CryptoProvider>,
    trust: UpstreamTrust,
) -> Result<Arc<ClientConfig>, Error> {
    let builder = ClientConfig::builder_with_provider(Arc::clone(provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error("tls versions", e))?;
    let mut config = match trust {
        UpstreamTrust::Roots(roots) => builder.with_root_certificates(roots),
        UpstreamTrust::Platform(extra) => {
            let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(
                extra,
                Arc::clone(provider),
            )
            .map_err(|e| {
                Error::from(ErrorKind::InvalidConfig {
                    name: "upstream roots",
                    value: e.to_string(),
                    reason: "the platform's trust store gave no usable root; install the system's CA bundle, set SSL_CERT_FILE, or give extra roots",
                })
            })?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
        }
    }
    .with_no_client_auth();
    config.alpn_protocols = vec![HTTP11.to_vec()];
    Ok(Arc::new(config))
}

/// The name the upstream must prove: the connection target's host.
pub(crate) fn server_name(host: &Host) -> Result<ServerName<'static>, Error> {
    match host {
        Host::Ip(ip) => Ok(ServerName::IpAddress((*ip).into())),
        Host::Name(name) => {
            ServerName::try_from(name.clone()).map_err(|e| config_error("upstream server name", e))
        }
    }
}
