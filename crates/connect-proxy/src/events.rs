//! What the proxies report: violations for the host program, and one
//! decision record per connection for logs.

use crate::egress::Denial;
use sandbox_core::SandboxViolation;
use std::fmt;
use std::net::SocketAddr;
use tokio::sync::broadcast;

/// Which proxy handled a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// HTTP `CONNECT`.
    HttpConnect,
    /// Absolute-form plain HTTP.
    HttpForward,
    /// SOCKS5 `CONNECT`.
    Socks5,
    /// A Unix-socket client, refused before any protocol.
    UnixSocket,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::HttpConnect => "http-connect",
            Protocol::HttpForward => "http-forward",
            Protocol::Socks5 => "socks5",
            Protocol::UnixSocket => "unix-socket",
        })
    }
}

/// How a connection attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Tunnel opened to this vetted address.
    Connected(SocketAddr),
    /// Handed to the [`crate::Intercept`] hook.
    Intercepted,
    /// Refused or failed.
    Refused(Denial),
}

/// One decision, for logs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// The proxy that decided.
    pub protocol: Protocol,
    /// The target as `host:port` (canonical when it parsed).
    pub target: String,
    /// What happened.
    pub outcome: Outcome,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Outcome::Connected(a) => write!(f, "{} {} allowed via {a}", self.protocol, self.target),
            Outcome::Intercepted => write!(f, "{} {} intercepted", self.protocol, self.target),
            Outcome::Refused(d) => write!(f, "{} {} refused: {d}", self.protocol, self.target),
        }
    }
}

/// A subscription to one of the pair's event streams. Slow subscribers
/// skip what they missed (the count is kept) rather than slow the proxy.
#[derive(Debug)]
pub struct Subscription<T> {
    rx: broadcast::Receiver<T>,
    missed: u64,
}

impl<T: Clone> Subscription<T> {
    pub(crate) fn new(rx: broadcast::Receiver<T>) -> Subscription<T> {
        Subscription { rx, missed: 0 }
    }

    /// The next event; `None` once the pair has shut down and everything
    /// was read.
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            match self.rx.recv().await {
                Ok(v) => return Some(v),
                Err(broadcast::error::RecvError::Lagged(n)) => self.missed += n,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Option<T> {
        loop {
            match self.rx.try_recv() {
                Ok(v) => return Some(v),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.missed += n,
                Err(_) => return None,
            }
        }
    }

    /// How many events this subscriber missed by falling behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

/// The decision as a `tracing` event (target `connect_proxy`): info for
/// an allowed or intercepted connection, warn for a refusal or a failed
/// upstream. It runs in the span the service was started in.
fn trace(protocol: Protocol, destination: &str, outcome: &Outcome) {
    match outcome {
        Outcome::Connected(via) => tracing::info!(
            target: "connect_proxy",
            %protocol,
            destination,
            %via,
            "connection allowed"
        ),
        Outcome::Intercepted => tracing::info!(
            target: "connect_proxy",
            %protocol,
            destination,
            "connection handed to the broker"
        ),
        Outcome::Refused(d) if d.is_upstream_failure() => tracing::warn!(
            target: "connect_proxy",
            %protocol,
            destination,
            reason = %d,
            "allowed, but the upstream failed"
        ),
        Outcome::Refused(d) => tracing::warn!(
            target: "connect_proxy",
            %protocol,
            destination,
            reason = %d,
            "connection refused"
        ),
    }
}

/// The senders both proxies share.
#[derive(Clone, Debug)]
pub(crate) struct Events {
    pub(crate) violations: broadcast::Sender<SandboxViolation>,
    pub(crate) decisions: broadcast::Sender<Decision>,
}

impl Events {
    pub(crate) fn new(capacity: usize) -> Events {
        Events {
            violations: broadcast::channel(capacity).0,
            decisions: broadcast::channel(capacity).0,
        }
    }

    /// Records a decision, and a `network-outbound` event when it is a
    /// policy refusal or an allowed target the network failed (its `raw`
    /// then says `allowed, but the upstream failed: ...`).
    ///
    /// `target` is written out only when something reads it (an event,
    /// or a decision subscriber): a connection nobody watches formats
    /// nothing.
    pub(crate) fn report(&self, protocol: Protocol, target: impl ToString, outcome: Outcome) {
        let event = matches!(
            &outcome,
            Outcome::Refused(d) if d.is_violation() || d.is_upstream_failure()
        );
        let watched = self.decisions.receiver_count() > 0;
        let traced = tracing::enabled!(target: "connect_proxy", tracing::Level::INFO);
        if !event && !watched && !traced {
            return;
        }
        let target = target.to_string();
        if traced {
            trace(protocol, &target, &outcome);
        }
        if let Outcome::Refused(d) = &outcome
            && event
        {
            let raw = if d.is_violation() {
                format!("{protocol} {target}: {d}")
            } else {
                format!("{protocol} {target}: allowed, but the upstream failed: {d}")
            };
            let v = SandboxViolation::new(SandboxViolation::NETWORK_OUTBOUND, target.clone())
                .with_raw(raw);
            // No subscriber is not an error.
            let _ = self.violations.send(v);
        }
        if watched {
            let _ = self.decisions.send(Decision {
                protocol,
                target,
                outcome,
            });
        }
    }
}
