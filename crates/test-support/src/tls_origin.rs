//! A local HTTPS origin for tests: a test CA and a leaf it signed, a TLS
//! server on loopback that records every request it receives and answers
//! each with a handler, and the client side to reach it (or anything else
//! that presents a certificate from a known root).
//!
//! ```
//! use test_support::tls_origin::{Origin, Reply, TestPki, client_config, connect, read_message};
//! use tokio::io::AsyncWriteExt;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let pki = TestPki::new(&["origin.test"]);
//! let origin = Origin::start(&pki, |m| async move {
//!     Reply::new(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}", m.path().len(), m.path()))
//! })
//! .await;
//! let config = client_config(&[&pki.ca_der]);
//! let mut tls = connect(origin.addr(), "origin.test", config).await.unwrap();
//! tls.write_all(b"GET /hello HTTP/1.1\r\nHost: origin.test\r\n\r\n").await.unwrap();
//! let mut buf = Vec::new();
//! let answer = read_message(&mut tls, &mut buf).await.unwrap();
//! assert_eq!(answer.body, b"/hello");
//! assert_eq!(origin.seen()[0].request_line(), "GET /hello HTTP/1.1");
//! # });
//! ```

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector, client};

/// The ring crypto provider, as the broker uses it.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A fresh test CA and a leaf it signed for some names (DNS names or IP
/// addresses: a name that parses as an address gets an IP subject
/// alternative name), all DER (the CA in PEM too), with the leaf's PKCS#8
/// key.
#[derive(Debug, Clone)]
pub struct TestPki {
    /// The CA certificate: trust it to reach the origin.
    pub ca_der: Vec<u8>,
    /// The CA certificate, PEM (for a program that reads a CA file).
    pub ca_pem: String,
    /// The leaf certificate.
    pub leaf_der: Vec<u8>,
    /// The leaf's private key (PKCS#8).
    pub leaf_key: Vec<u8>,
}

impl TestPki {
    /// A new CA ("test origin CA") and a leaf for `names`.
    ///
    /// # Panics
    ///
    /// When a name cannot go into a certificate.
    #[allow(
        clippy::unwrap_used,
        reason = "test support: a certificate that cannot be made fails the test"
    )]
    pub fn new(names: &[&str]) -> TestPki {
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
            ca_pem: ca.pem(),
            leaf_der: leaf.der().to_vec(),
            leaf_key: leaf_key.serialize_der(),
        }
    }

    /// A TLS acceptor serving the leaf (ring provider, default versions,
    /// no ALPN).
    ///
    /// # Panics
    ///
    /// When rustls refuses the leaf.
    #[allow(
        clippy::unwrap_used,
        reason = "test support: a refused leaf fails the test"
    )]
    pub fn acceptor(&self) -> TlsAcceptor {
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(self.leaf_der.clone())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.clone())),
            )
            .unwrap();
        TlsAcceptor::from(Arc::new(config))
    }
}

/// A client configuration trusting only `roots` (DER), without ALPN.
///
/// # Panics
///
/// When a root is not a certificate.
#[allow(
    clippy::unwrap_used,
    reason = "test support: a bad root fails the test"
)]
pub fn client_config(roots: &[&[u8]]) -> rustls::ClientConfig {
    let mut store = rustls::RootCertStore::empty();
    for der in roots {
        store.add(CertificateDer::from(der.to_vec())).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(store)
        .with_no_client_auth()
}

/// Connects to `addr` over TCP (`TCP_NODELAY` set) and TLS, with `sni`
/// as the server name.
pub async fn connect(
    addr: SocketAddr,
    sni: &str,
    config: rustls::ClientConfig,
) -> std::io::Result<client::TlsStream<TcpStream>> {
    let name = ServerName::try_from(sni.to_owned())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// One HTTP message (a request or a response) as read off a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The head, with its final empty line.
    pub head: String,
    /// The body as it came (a chunked body with its framing).
    pub body: Vec<u8>,
}

impl Message {
    /// The first line (request line or status line).
    pub fn request_line(&self) -> &str {
        self.head.split("\r\n").next().unwrap_or_default()
    }

    /// The request target (the second word of the first line).
    pub fn path(&self) -> &str {
        self.request_line().split(' ').nth(1).unwrap_or_default()
    }

    /// The values of every field named `name` (any case), trimmed.
    pub fn headers(&self, name: &str) -> Vec<&str> {
        self.head
            .split("\r\n")
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
            .collect()
    }

    /// The value of the first field named `name` (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers(name).into_iter().next()
    }

    /// Head and body as text (the body decoded lossily).
    pub fn text(&self) -> String {
        format!("{}{}", self.head, String::from_utf8_lossy(&self.body))
    }
}

/// Reads one HTTP message from `s`, keeping bytes of the next one in
/// `buf`: the head, then a body by `Content-Length`, a chunked body up to
/// its last chunk (framing kept), or, for a response with neither, up to
/// the end of the stream. `None` when the stream ends (or fails) before a
/// whole head; a body cut short by the end of the stream is returned as
/// far as it came.
pub async fn read_message<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> Option<Message> {
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if read_more(s, buf).await.ok()? == 0 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    buf.drain(..end);
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = lower.contains("transfer-encoding: chunked");
    let to_end = length.is_none() && !chunked && lower.starts_with("http/");
    loop {
        let done = if let Some(n) = length {
            buf.len() >= n
        } else if chunked {
            buf.windows(5).any(|w| w == b"0\r\n\r\n")
        } else {
            !to_end
        };
        if done {
            break;
        }
        if read_more(s, buf).await.unwrap_or_default() == 0 {
            break;
        }
    }
    let take = length.unwrap_or(buf.len()).min(buf.len());
    let body: Vec<u8> = buf.drain(..take).collect();
    Some(Message { head, body })
}

/// Appends what one read gives to `buf`, read straight into its spare
/// room (no buffer zeroed or copied per read).
async fn read_more<S: AsyncRead + Unpin>(s: &mut S, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.reserve(16 * 1024);
    s.read_buf(buf).await
}

/// What the origin sends for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    bytes: Vec<u8>,
    close: bool,
}

impl Reply {
    /// Sends these bytes (a whole response) and reads the next request.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply {
            bytes: bytes.into(),
            close: false,
        }
    }

    /// Sends these bytes, then closes the connection.
    pub fn then_close(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply {
            bytes: bytes.into(),
            close: true,
        }
    }
}

type Handler = Arc<dyn Fn(Message) -> Pin<Box<dyn Future<Output = Reply> + Send>> + Send + Sync>;

/// A local HTTPS origin on `127.0.0.1`, serving the leaf of a
/// [`TestPki`], keep-alive, answering each request with its handler and
/// (unless started with [`Origin::start_unrecorded`]) recording it.
#[derive(Debug, Clone)]
pub struct Origin {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Message>>>,
    accepted: Arc<AtomicUsize>,
}

impl Origin {
    /// Starts an origin that records every request and answers it with
    /// `handler`.
    pub async fn start<F, Fut>(pki: &TestPki, handler: F) -> Origin
    where
        F: Fn(Message) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        Origin::spawn(pki, handler, true).await
    }

    /// Starts an origin that answers with `handler` and records nothing
    /// (for benches, where the record would only grow).
    pub async fn start_unrecorded<F, Fut>(pki: &TestPki, handler: F) -> Origin
    where
        F: Fn(Message) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        Origin::spawn(pki, handler, false).await
    }

    #[allow(
        clippy::unwrap_used,
        reason = "test support: an origin that cannot listen fails the test"
    )]
    async fn spawn<F, Fut>(pki: &TestPki, handler: F, record: bool) -> Origin
    where
        F: Fn(Message) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |m| Box::pin(handler(m)));
        let acceptor = pki.acceptor();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::Relaxed);
                let _ = tcp.set_nodelay(true);
                let (acceptor, log, handler) = (acceptor.clone(), log.clone(), handler.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = Vec::new();
                    while let Some(m) = read_message(&mut tls, &mut buf).await {
                        if record {
                            log.lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .push(m.clone());
                        }
                        let reply = handler(m).await;
                        if tls.write_all(&reply.bytes).await.is_err() || tls.flush().await.is_err()
                        {
                            return;
                        }
                        if reply.close {
                            break;
                        }
                    }
                    let _ = tls.shutdown().await;
                });
            }
        });
        Origin {
            addr,
            seen,
            accepted,
        }
    }

    /// How many TCP connections it has accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn seen(&self) -> Vec<Message> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
