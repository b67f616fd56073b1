//! rustls's two crypto providers, ring and aws-lc-rs, side by side on the
//! work the credential broker does for a connection: an ECDSA P-256
//! signature (a leaf minted by the session CA), a P-256 key pair (the
//! session's leaf key), and a whole TLS 1.3 handshake in memory, new and
//! resumed. In the handshake both ends run on the provider measured, which
//! is what the broker pays for a new connection: it is the server of the
//! sandbox's connection and the client of the upstream one.
//!
//! `tls-providers [ROUNDS [ITERATIONS]]`: each round runs every case for
//! ITERATIONS operations, the providers alternating; the median of the
//! rounds is printed, in microseconds per operation, with the ratio
//! aws-lc-rs / ring.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};
use std::sync::Arc;
use std::time::Instant;

type Failure = Box<dyn std::error::Error>;

/// What a leaf certificate's signature covers: about the size of a leaf's
/// to-be-signed part.
const TBS: [u8; 320] = [0x5a; 320];

struct Pki {
    leaf: CertificateDer<'static>,
    key: Vec<u8>,
    roots: RootCertStore,
}

fn pki() -> Result<Pki, Failure> {
    let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key)?;
    let leaf_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let leaf = rcgen::CertificateParams::new(vec!["origin.test".to_string()])?
        .signed_by(&leaf_key, &issuer)?;
    let mut roots = RootCertStore::empty();
    roots.add(ca_cert.der().clone())?;
    Ok(Pki {
        leaf: leaf.der().clone(),
        key: leaf_key.serialize_der(),
        roots,
    })
}

/// One provider's configurations for both ends.
struct Ends {
    server: Arc<ServerConfig>,
    client: Arc<ClientConfig>,
}

fn ends(provider: &Arc<CryptoProvider>, pki: &Pki, resume: bool) -> Result<Ends, Failure> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.key.clone()));
    let mut server = ServerConfig::builder_with_provider(Arc::clone(provider))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![pki.leaf.clone()], key)?;
    let mut client = ClientConfig::builder_with_provider(Arc::clone(provider))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(pki.roots.clone())
        .with_no_client_auth();
    if resume {
        server.session_storage = rustls::server::ServerSessionMemoryCache::new(1024);
    } else {
        server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        server.send_tls13_tickets = 0;
        client.resumption = rustls::client::Resumption::disabled();
    }
    Ok(Ends {
        server: Arc::new(server),
        client: Arc::new(client),
    })
}

/// Moves what `from` has to send into `to`; whether anything moved.
fn pump(
    from: &mut impl std::ops::DerefMut<Target = rustls::ConnectionCommon<impl Sized>>,
    to: &mut impl std::ops::DerefMut<Target = rustls::ConnectionCommon<impl Sized>>,
    buf: &mut Vec<u8>,
) -> Result<bool, Failure> {
    buf.clear();
    while from.wants_write() {
        from.write_tls(buf)?;
    }
    if buf.is_empty() {
        return Ok(false);
    }
    let mut rest = &buf[..];
    while !rest.is_empty() {
        to.read_tls(&mut rest)?;
        to.process_new_packets()?;
    }
    Ok(true)
}

/// One whole handshake, tickets included; whether it was resumed.
fn handshake(e: &Ends, buf: &mut Vec<u8>) -> Result<bool, Failure> {
    let name = ServerName::try_from("origin.test")?;
    let mut client = ClientConnection::new(Arc::clone(&e.client), name)?;
    let mut server = ServerConnection::new(Arc::clone(&e.server))?;
    loop {
        let a = pump(&mut client, &mut server, buf)?;
        let b = pump(&mut server, &mut client, buf)?;
        if !a && !b {
            break;
        }
    }
    if client.is_handshaking() || server.is_handshaking() {
        return Err("the handshake did not complete".into());
    }
    Ok(client.handshake_kind() == Some(rustls::HandshakeKind::Resumed))
}

/// A case: what one operation does with one provider.
type Op<'a> = Box<dyn FnMut() -> Result<(), Failure> + 'a>;

/// Whole handshakes between the two ends of `e`.
fn full(e: &Ends) -> Op<'_> {
    let mut buf = Vec::with_capacity(16 * 1024);
    Box::new(move || handshake(e, &mut buf).map(|_| ()))
}

fn time_per_op(op: &mut Op<'_>, n: u32) -> Result<f64, Failure> {
    let start = Instant::now();
    for _ in 0..n {
        op()?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(n))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn arg(n: usize, default: u32) -> Result<u32, Failure> {
    match std::env::args().nth(n) {
        Some(s) => Ok(s.parse()?),
        None => Ok(default),
    }
}

fn main() -> Result<(), Failure> {
    let rounds = arg(1, 11)?.max(1);
    let iterations = arg(2, 200)?.max(1);
    let pki = pki()?;
    let ring_p = Arc::new(rustls::crypto::ring::default_provider());
    let aws_p = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    // aws-lc-rs offers the X25519 + ML-KEM-768 hybrid first; ring has no
    // ML-KEM. The classical X25519 alone is the like-for-like comparison.
    let mut aws_x25519 = rustls::crypto::aws_lc_rs::default_provider();
    aws_x25519.kx_groups = vec![rustls::crypto::aws_lc_rs::kx_group::X25519];
    let aws_x = Arc::new(aws_x25519);

    let ring_rng = ring::rand::SystemRandom::new();
    let aws_rng = aws_lc_rs::rand::SystemRandom::new();
    let ring_key = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &pki.key,
        &ring_rng,
    )
    .map_err(|e| format!("ring key: {e}"))?;
    let aws_key = aws_lc_rs::signature::EcdsaKeyPair::from_pkcs8(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &pki.key,
    )
    .map_err(|e| format!("aws-lc-rs key: {e}"))?;

    let ends_of = |p: &Arc<CryptoProvider>, resume| ends(p, &pki, resume);
    let (ring_new, aws_new, awsx_new) = (
        ends_of(&ring_p, false)?,
        ends_of(&aws_p, false)?,
        ends_of(&aws_x, false)?,
    );
    let (ring_res, aws_res, awsx_res) = (
        ends_of(&ring_p, true)?,
        ends_of(&aws_p, true)?,
        ends_of(&aws_x, true)?,
    );
    let mut buf = Vec::with_capacity(16 * 1024);
    // Prime the resumption stores, and check resumption happens.
    for e in [&ring_res, &aws_res, &awsx_res] {
        handshake(e, &mut buf)?;
        if !handshake(e, &mut buf)? {
            return Err("a second handshake was not resumed".into());
        }
    }
    let mut cases: Vec<(&str, Op<'_>, Op<'_>, Option<Op<'_>>)> = vec![
        (
            "ECDSA P-256 signature (a leaf minted)",
            Box::new(|| {
                ring_key
                    .sign(&ring_rng, &TBS)
                    .map(|_| ())
                    .map_err(|e| e.to_string().into())
            }),
            Box::new(|| {
                aws_key
                    .sign(&aws_rng, &TBS)
                    .map(|_| ())
                    .map_err(|e| e.to_string().into())
            }),
            None,
        ),
        (
            "P-256 key pair (the session's leaf key)",
            Box::new(|| {
                ring::signature::EcdsaKeyPair::generate_pkcs8(
                    &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                    &ring_rng,
                )
                .map(|_| ())
                .map_err(|e| e.to_string().into())
            }),
            Box::new(|| {
                aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
                    &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                    &aws_rng,
                )
                .map(|_| ())
                .map_err(|e| e.to_string().into())
            }),
            None,
        ),
        (
            "TLS 1.3 handshake, new session, both ends",
            full(&ring_new),
            full(&awsx_new),
            Some(full(&aws_new)),
        ),
        (
            "TLS 1.3 handshake, resumed, both ends",
            full(&ring_res),
            full(&awsx_res),
            Some(full(&aws_res)),
        ),
    ];

    println!(
        "rustls providers: {rounds} rounds of {iterations} operations, median us per operation"
    );
    println!(
        "{:<44} {:>9} {:>11} {:>8} {:>15}",
        "case", "ring", "aws-lc-rs", "ratio", "aws-lc-rs PQ"
    );
    for (name, ring_op, aws_op, pq_op) in &mut cases {
        // One untimed pass each, then the rounds, alternating.
        time_per_op(ring_op, 1)?;
        time_per_op(aws_op, 1)?;
        if let Some(op) = pq_op.as_mut() {
            time_per_op(op, 1)?;
        }
        let (mut r, mut a, mut q) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            r.push(time_per_op(ring_op, iterations)?);
            a.push(time_per_op(aws_op, iterations)?);
            if let Some(op) = pq_op.as_mut() {
                q.push(time_per_op(op, iterations)?);
            }
        }
        let (r, a) = (median(r), median(a));
        let pq = if q.is_empty() {
            "-".to_string()
        } else {
            format!("{:.1}", median(q))
        };
        println!(
            "{:<44} {:>9.1} {:>11.1} {:>7.2}x {:>15}",
            name,
            r,
            a,
            a / r,
            pq
        );
    }
    println!();
    println!(
        "aws-lc-rs: X25519 alone (like ring); aws-lc-rs PQ: its default groups, X25519MLKEM768 first"
    );
    Ok(())
}
