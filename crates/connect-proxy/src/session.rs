//! What a connection task shares with the pair, and the steps both proxies
//! take once they know the target: vet, maybe intercept, dial, report.

use crate::client::ClientStream;
use crate::config::Limits;
use crate::credentials::ProxyCredentials;
use crate::egress::{Denial, Egress};
use crate::events::{Events, Outcome, Protocol};
use crate::intercept::{Intercept, Intercepted};
use crate::spare_buffers::SpareBuffers;
use crate::tunnel::Copying;
use net_vocab::{HeadLimits, Target};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpStream;

pub(crate) struct Shared {
    pub(crate) egress: Egress,
    pub(crate) intercept: Option<Arc<dyn Intercept>>,
    pub(crate) credentials: Option<ProxyCredentials>,
    pub(crate) limits: Limits,
    pub(crate) head: HeadLimits,
    pub(crate) events: Events,
    pub(crate) spare: SpareBuffers,
}

/// Where an allowed connection goes.
pub(crate) enum Route {
    /// Dialed upstream.
    Upstream(TcpStream),
    /// Claimed by the interceptor, which needs these vetted addresses.
    Intercept(Arc<dyn Intercept>, Vec<SocketAddr>),
}

impl Shared {
    pub(crate) fn copying(&self) -> Copying<'_> {
        Copying {
            buffer: self.limits.copy_buffer_bytes,
            idle: self.limits.idle_timeout,
            spare: &self.spare,
        }
    }

    /// Vets and dials (or routes to the interceptor), reporting refusals and
    /// successful dials. Interception is reported by [`Shared::hand_over`].
    pub(crate) async fn open(&self, protocol: Protocol, target: &Target) -> Result<Route, Denial> {
        let addrs = match self.egress.vet(target).await {
            Ok(a) => a,
            Err(d) => return Err(self.refuse(protocol, target.to_string(), d)),
        };
        if let Some(hook) = &self.intercept
            && hook.claims(target)
        {
            return Ok(Route::Intercept(hook.clone(), addrs));
        }
        match self.egress.dial(&addrs).await {
            Ok((stream, peer)) => {
                self.events
                    .report(protocol, target, Outcome::Connected(peer));
                Ok(Route::Upstream(stream))
            }
            Err(d) => Err(self.refuse(protocol, target.to_string(), d)),
        }
    }

    /// Reports a refusal and gives the denial back.
    pub(crate) fn refuse(&self, protocol: Protocol, target: String, denial: Denial) -> Denial {
        self.events
            .report(protocol, target, Outcome::Refused(denial.clone()));
        denial
    }

    /// Hands a client to the interceptor, after the success reply was sent.
    pub(crate) async fn hand_over(
        &self,
        hook: Arc<dyn Intercept>,
        protocol: Protocol,
        target: Target,
        addrs: Vec<SocketAddr>,
        client: ClientStream,
        buffered: Vec<u8>,
    ) {
        self.events.report(protocol, &target, Outcome::Intercepted);
        let conn = Intercepted {
            protocol,
            target,
            addrs,
            client,
            buffered,
        };
        hook.take(conn).await;
    }
}

/// A printable, bounded rendering of a target that did not parse.
pub(crate) fn printable(raw: &[u8]) -> String {
    raw.iter()
        .take(255)
        .map(|&b| {
            if (0x21..0x7f).contains(&b) {
                b as char
            } else {
                '?'
            }
        })
        .collect()
}
