//! Shared by the broker's socket tests: connect-proxy's interception hook
//! handing one host to a broker, as the facade does.

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
            let _ = conn.client.set_nodelay(true);
            let host = conn.target.host.to_string();
            let port = conn.target.port;
            let (read, write) = tokio::io::split(conn.client);
            let client = tokio::io::join(std::io::Cursor::new(conn.buffered).chain(read), write);
            let _ = broker.serve(client, &host, port, upstream).await;
        })
    }
}
