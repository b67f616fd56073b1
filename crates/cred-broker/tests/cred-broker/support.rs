//! Shared by the broker's socket tests: the behaviour tables' loader,
//! connect-proxy's interception hook handing one host to a broker, as the
//! facade does, and a proxy pair with that hook for one host on loopback.

use connect_proxy::{
    AllowList, Baseline, BoxFuture, Cidr, Intercept, Intercepted, IpPolicy, ProxyConfig, ProxyPair,
    StaticResolver,
};
use cred_broker::{Broker, Request, RequestParser, Status};
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The cases of a table under `testdata/`.
pub(crate) fn load<T: DeserializeOwned>(name: &str) -> Vec<T> {
    test_support::cases::load(test_support::testdata_dir!(), name)
}

pub(crate) use test_support::cases::variant;

/// The name of an error's kind as the tables write it: the variant within
/// its group (`BareLf`, not `Http`), and for the head reader's and the
/// trailer grammar's refusals net-vocab's (`ObsFold`, not `Head`).
pub(crate) fn error_variant(e: &cred_broker::Error) -> String {
    use cred_broker::{ErrorKind, HttpErrorKind};
    match e.kind() {
        ErrorKind::Http(HttpErrorKind::Head(e) | HttpErrorKind::Trailer(e)) => variant(e.kind()),
        ErrorKind::Http(k) => variant(k),
        ErrorKind::Tls(k) => variant(k),
        ErrorKind::Lease(k) => variant(k),
        ErrorKind::Rules(k) => variant(k),
        #[cfg(feature = "git")]
        ErrorKind::Push(k) => variant(k),
        other => variant(other),
    }
}

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
            let (read, write) = tokio::io::split(conn.client);
            let client = tokio::io::join(std::io::Cursor::new(conn.buffered).chain(read), write);
            let _ = broker.serve(client, &conn.target, upstream).await;
        })
    }
}

/// An HTTP and SOCKS proxy pair on loopback that allows only `host`
/// (resolved to 127.0.0.1) and hands its connections to `broker`.
pub(crate) async fn proxy_pair(broker: Arc<Broker>, host: &'static str) -> ProxyPair {
    let resolver = Arc::new(StaticResolver::new());
    resolver.insert(host, ["127.0.0.1".parse().unwrap()]);
    let mut ip = IpPolicy::new();
    ip.allow_cidr("127.0.0.1/32".parse::<Cidr>().unwrap());
    ProxyPair::start(
        ProxyConfig::builder()
            .allowlist(
                AllowList::builder()
                    .baseline(Baseline::Exclude)
                    .allow(host)
                    .build()
                    .unwrap(),
            )
            .ip_policy(ip)
            .resolver(resolver)
            .intercept(Arc::new(BrokerHook { broker, host }))
            .build()
            .unwrap(),
    )
    .await
    .unwrap()
}

/// One complete request with this method, target, extra fields and body
/// (`Host: git.example.com`, a `Content-Length`).
#[cfg_attr(
    not(any(feature = "git", feature = "graphql")),
    expect(dead_code, reason = "only the git and GraphQL tables build requests")
)]
pub(crate) fn request(method: &str, target: &str, extra: &str, body: &[u8]) -> Request {
    let mut wire = format!(
        "{method} {target} HTTP/1.1\r\nHost: git.example.com\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    wire.extend_from_slice(body);
    let mut parser = RequestParser::new(cred_broker::Limits::default());
    match parser.feed(&wire) {
        Ok(Status::Complete { request, .. }) => *request,
        other => panic!("{target}: {other:?}"),
    }
}

/// Reads one HTTP message (either side of an exchange): head, body.
pub(crate) async fn read_message<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut Vec<u8>,
) -> Option<(String, Vec<u8>)> {
    test_support::tls_origin::read_message(s, buf)
        .await
        .map(|m| (m.head, m.body))
}
