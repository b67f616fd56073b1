//! Shared by the broker's socket tests: a test PKI for local HTTPS origins,
//! and connect-proxy's interception hook handing one host to a broker, as the
//! facade does.

use connect_proxy::{BoxFuture, Intercept, Intercepted};
use cred_broker::Broker;
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// Hands connections for `host` to `broker`, with the bytes the proxy
/// already read put back in front and the address it vetted.
pub(crate) struct BrokerHook {
    pub(crate) broker: Arc<Broker>,
    pub(crate) host: &'static str,
}

impl Intercept for BrokerHook {
    fn claims(&self, target: &connect_proxy::Target) -> bool {
        target.host.as_name() == Some(self.host)
    }

    fn take(&self, conn: Intercepted) -> BoxFuture<'static, ()> {
        let broker = self.broker.clone();
        Box::pin(async move {
            let Some(&upstream) = conn.addrs.first() else {
                return;
            };
            conn.client.set_nodelay();
            let host = conn.target.host.to_string();
            let port = conn.target.port;
            let (read, write) = tokio::io::split(conn.client);
            let client = tokio::io::join(std::io::Cursor::new(conn.buffered).chain(read), write);
            let _ = broker.serve(client, &host, port, upstream).await;
        })
    }
}

/// A test CA and a leaf it signed (DER), with the leaf's PKCS#8 key.
pub(crate) struct TestPki {
    pub(crate) ca_der: Vec<u8>,
    pub(crate) leaf_der: Vec<u8>,
    pub(crate) leaf_key: Vec<u8>,
}

impl TestPki {
    /// A TLS acceptor serving the leaf (ring provider, default versions).
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(self.leaf_der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.clone())),
        )
        .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }
}

/// A fresh CA and a leaf for `names` (DNS names or IP addresses).
pub(crate) fn test_pki(names: &[&str]) -> TestPki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "test origin CA");
    let ca = params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::from_params(&params, &ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let leaf = CertificateParams::new(names)
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    TestPki {
        ca_der: ca.der().to_vec(),
        leaf_der: leaf.der().to_vec(),
        leaf_key: leaf_key.serialize_der(),
    }
}
