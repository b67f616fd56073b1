//! The interception hook: a broker can take chosen hosts after the policy
//! allowed them.

use crate::client::ClientStream;
use crate::events::Protocol;
use crate::resolver::BoxFuture;
use net_vocab::Target;
use std::net::SocketAddr;

/// A client connection handed to an interceptor.
///
/// The proxy has already answered the client with success (`200` for
/// CONNECT, reply `00` for SOCKS5), so the next bytes on `client` are the
/// tunnelled protocol (typically a TLS ClientHello), starting with
/// `buffered`.
#[derive(Debug)]
#[non_exhaustive]
pub struct Intercepted {
    /// Which proxy accepted the connection.
    pub protocol: Protocol,
    /// The canonical target the client asked for.
    pub target: Target,
    /// The vetted addresses the interceptor may dial (never re-resolve).
    pub addrs: Vec<SocketAddr>,
    /// The client stream.
    pub client: ClientStream,
    /// Bytes the client sent after its request, already read by the proxy.
    pub buffered: Vec<u8>,
}

/// Takes over chosen targets after the policy allowed them and their
/// addresses were vetted (DESIGN.md: the broker implements this through the
/// facade; this crate does not know the broker).
///
/// The future returned by [`Intercept::take`] runs inside the proxy's
/// connection task, so [`crate::ProxyPair::shutdown`] stops it too.
pub trait Intercept: Send + Sync + 'static {
    /// True when this target is handled by the interceptor.
    fn claims(&self, target: &Target) -> bool;

    /// Serves one claimed connection.
    fn take(&self, conn: Intercepted) -> BoxFuture<'static, ()>;
}
