//! `ProxyPair`: one HTTP and one SOCKS5 proxy for one session.

use crate::config::ProxyConfig;
use crate::egress::Egress;
use crate::error::{Error, ErrorKind};
use crate::events::{Decision, Events, Subscription};
use crate::session::Shared;
use crate::{http_proxy, socks_proxy};
use sandbox_core::SandboxViolation;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};

/// The HTTP and SOCKS5 proxies of one session, on 127.0.0.1.
///
/// Start one pair per session; two sessions never share a pair. Dropping
/// the pair signals its tasks to stop; [`ProxyPair::shutdown`] also waits
/// until every task has ended and every socket is closed.
#[derive(Debug)]
pub struct ProxyPair {
    http_addr: SocketAddr,
    socks_addr: SocketAddr,
    events: Events,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl ProxyPair {
    /// Binds 127.0.0.1 port 0 twice and starts serving. Must be called
    /// inside a tokio runtime.
    pub async fn start(config: ProxyConfig) -> Result<ProxyPair, Error> {
        let backlog = backlog(config.limits.max_connections);
        let http = bind("http", backlog)?;
        let socks = bind("socks", backlog)?;
        let http_addr = local(&http, "http")?;
        let socks_addr = local(&socks, "socks")?;
        let mut egress = Egress::new(
            config.policy,
            config.ip_policy,
            config.resolver,
            config.limits.resolve_timeout,
            config.limits.connect_timeout,
        );
        egress.ip_policy_mut().add_listener(http_addr);
        egress.ip_policy_mut().add_listener(socks_addr);
        let events = Events::new(config.limits.event_capacity);
        let shared = Arc::new(Shared {
            egress,
            intercept: config.intercept,
            limits: config.limits,
            events: events.clone(),
        });
        let permits = Arc::new(Semaphore::new(config.limits.max_connections));
        let (stop, watch_rx) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(accept_loop(
                http,
                shared.clone(),
                permits.clone(),
                watch_rx.clone(),
                http_proxy::serve,
            )),
            tokio::spawn(accept_loop(
                socks,
                shared,
                permits,
                watch_rx,
                socks_proxy::serve,
            )),
        ];
        Ok(ProxyPair {
            http_addr,
            socks_addr,
            events,
            stop,
            tasks,
        })
    }

    /// The HTTP proxy's address (for `HTTP_PROXY` / `HTTPS_PROXY`).
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// The SOCKS5 proxy's address (for `ALL_PROXY`).
    pub fn socks_addr(&self) -> SocketAddr {
        self.socks_addr
    }

    /// Violations from now on: one `network-outbound` per refusal, target
    /// `host:port`.
    pub fn subscribe_violations(&self) -> Subscription<SandboxViolation> {
        Subscription::new(self.events.violations.subscribe())
    }

    /// Every decision from now on (allowed, intercepted, refused), for logs.
    pub fn subscribe_decisions(&self) -> Subscription<Decision> {
        Subscription::new(self.events.decisions.subscribe())
    }

    /// Stops accepting, ends every connection, and waits until all tasks
    /// are gone and all sockets closed.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyPair {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// The smallest accept queue a listener gets (the standard library's
/// `TcpListener::bind` default).
const MIN_BACKLOG: u32 = 128;

/// The accept queue of each listener: room for every connection the cap
/// admits, so a burst of connects is queued rather than overflowing.
///
/// An overflowing queue does not refuse clients: the kernel answers with
/// SYN cookies and drops segments of handshakes it cannot queue, so the
/// client believes it is connected. If a later segment (a FIN right after
/// early data) is the one that arrives, its cookie no longer checks out and
/// the kernel resets a connection the client already wrote to. A queue of
/// `max_connections` never overflows below the cap; past the cap clients
/// are accepted and closed at once. The kernel still caps the queue at
/// `net.core.somaxconn`.
fn backlog(max_connections: usize) -> u32 {
    u32::try_from(max_connections)
        .unwrap_or(u32::MAX)
        .max(MIN_BACKLOG)
}

/// Binds 127.0.0.1 port 0 with an accept queue of `backlog`.
fn bind(which: &'static str, backlog: u32) -> Result<TcpListener, Error> {
    let error = |e: std::io::Error| {
        Error::from(ErrorKind::Bind {
            which,
            message: e.to_string(),
        })
    };
    let socket = TcpSocket::new_v4().map_err(error)?;
    // What `TcpListener::bind` sets on Unix.
    #[cfg(unix)]
    socket.set_reuseaddr(true).map_err(error)?;
    socket
        .bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .map_err(error)?;
    socket.listen(backlog).map_err(error)
}

fn local(listener: &TcpListener, which: &'static str) -> Result<SocketAddr, Error> {
    listener.local_addr().map_err(|e| {
        Error::from(ErrorKind::Bind {
            which,
            message: e.to_string(),
        })
    })
}

async fn accept_loop<F, Fut>(
    listener: TcpListener,
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
    serve: F,
) where
    F: Fn(TcpStream, Arc<Shared>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = stop.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match permits.clone().try_acquire_owned() {
                    Ok(permit) => {
                        let task = serve(stream, shared.clone());
                        conns.spawn(async move {
                            task.await;
                            drop(permit);
                        });
                    }
                    // Over the connection cap: close at once.
                    Err(_) => drop(stream),
                },
                // Out of descriptors or a reset before accept: back off.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
    drop(listener);
    conns.shutdown().await;
}
