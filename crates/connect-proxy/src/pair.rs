//! `ProxyService` (one HTTP and one SOCKS5 proxy for one session, serving
//! the listeners it is handed) and `ProxyPair` (the same on two loopback
//! listeners of its own).

use crate::client::ClientStream;
use crate::config::ProxyConfig;
use crate::egress::Egress;
use crate::error::{Error, ErrorKind};
use crate::events::{Decision, Events, Subscription};
use crate::session::Shared;
use crate::spare_buffers::SpareBuffers;
use crate::{http_proxy, socks_proxy};
use sandbox_core::SandboxViolation;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Semaphore, watch};
use tokio::task::{AbortHandle, JoinHandle, JoinSet};

/// Which of the two proxies a listener feeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProxyKind {
    /// The HTTP proxy (CONNECT and absolute-form plain HTTP).
    Http,
    /// The SOCKS5 proxy.
    Socks5,
}

/// The HTTP and SOCKS5 proxies of one session, with no listener of their
/// own: they serve the listeners handed to them, and nothing else can
/// reach them.
///
/// This is the shape to use when the sandbox reaches the proxies through
/// sockets only it can use: TCP listeners bound inside the sandbox's own
/// network namespace ([`ProxyService::serve_tcp`]), or Unix sockets in a
/// private directory whose peers are checked
/// ([`ProxyService::serve_unix`]). [`ProxyPair`] adds two loopback TCP
/// listeners, which every local process can connect to.
///
/// Dropping the service signals its tasks to stop;
/// [`ProxyService::shutdown`] also waits until every task has ended and
/// every socket is closed.
pub struct ProxyService {
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    stop: watch::Sender<bool>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// The span current when the service started: its tasks run in it.
    span: tracing::Span,
}

impl std::fmt::Debug for ProxyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyService")
            .field("limits", &self.shared.limits)
            .finish_non_exhaustive()
    }
}

impl ProxyService {
    /// Starts the pair's shared state; serves nothing until a listener is
    /// handed over. Must be called inside a tokio runtime.
    pub fn start(config: ProxyConfig) -> ProxyService {
        ProxyService::with_listeners(config, &[])
    }

    fn with_listeners(config: ProxyConfig, own: &[SocketAddr]) -> ProxyService {
        let mut egress = Egress::new(
            config.policy,
            config.ip_policy,
            config.resolver,
            config.limits.resolve_timeout,
            config.limits.connect_timeout,
        );
        for addr in own {
            egress.ip_policy_mut().add_listener(*addr);
        }
        let events = Events::new(config.limits.event_capacity);
        let permits = Arc::new(Semaphore::new(config.limits.max_connections));
        let shared = Arc::new(Shared {
            egress,
            intercept: config.intercept,
            credentials: config.credentials,
            limits: config.limits,
            head: config.head,
            events,
            spare: SpareBuffers::default(),
        });
        let (stop, _) = watch::channel(false);
        ProxyService {
            shared,
            permits,
            stop,
            tasks: std::sync::Mutex::new(Vec::new()),
            span: tracing::Span::current(),
        }
    }

    /// Serves `kind` on a TCP listener: one bound inside the sandbox's
    /// network namespace, or any other the caller controls. Whoever can
    /// connect to it can use the session's proxies.
    ///
    /// On Linux the listener gets `TCP_NODELAY`, which the sockets it
    /// accepts inherit; elsewhere each accepted socket gets it.
    ///
    /// The returned handle stops serving this listener alone (its
    /// connections end with it).
    pub fn serve_tcp(&self, kind: ProxyKind, listener: TcpListener) -> AbortHandle {
        let nodelay = Nodelay::for_listener(&listener);
        self.spawn(kind, Acceptor::Tcp(listener, nodelay))
    }

    /// Serves `kind` on a Unix socket. A client whose peer credentials
    /// (`SO_PEERCRED`) name another uid than `uid` is closed unanswered
    /// and reported as a `network-outbound` violation with target
    /// `unix-peer:uid=N`.
    #[cfg(unix)]
    pub fn serve_unix(
        &self,
        kind: ProxyKind,
        listener: tokio::net::UnixListener,
        uid: u32,
    ) -> AbortHandle {
        self.spawn(kind, Acceptor::Unix(listener, uid))
    }

    fn spawn(&self, kind: ProxyKind, acceptor: Acceptor) -> AbortHandle {
        let (shared, permits, stop) = (
            self.shared.clone(),
            self.permits.clone(),
            self.stop.subscribe(),
        );
        use tracing::Instrument;
        // The tasks run in the span the service was started in, so that a
        // host's subscriber sees their events with its fields.
        let span = self.span.clone();
        let task = match kind {
            ProxyKind::Http => tokio::spawn(
                accept_loop(acceptor, shared, permits, stop, http_proxy::serve).instrument(span),
            ),
            ProxyKind::Socks5 => tokio::spawn(
                accept_loop(acceptor, shared, permits, stop, socks_proxy::serve).instrument(span),
            ),
        };
        let handle = task.abort_handle();
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.push(task);
        }
        handle
    }

    /// Violations from now on: one `network-outbound` per refusal, target
    /// `host:port`.
    pub fn subscribe_violations(&self) -> Subscription<SandboxViolation> {
        Subscription::new(self.shared.events.violations.subscribe())
    }

    /// Every decision from now on (allowed, intercepted, refused), for logs.
    pub fn subscribe_decisions(&self) -> Subscription<Decision> {
        Subscription::new(self.shared.events.decisions.subscribe())
    }

    /// Stops accepting on every listener, ends every connection, and waits
    /// until all tasks are gone and all sockets closed. A listener handed
    /// over afterwards is closed at once.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let tasks = match self.tasks.lock() {
            Ok(mut t) => std::mem::take(&mut *t),
            Err(_) => Vec::new(),
        };
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyService {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// The HTTP and SOCKS5 proxies of one session, on 127.0.0.1.
///
/// Start one pair per session; two sessions never share a pair. Any local
/// process can connect to a loopback port: where the sandbox can be given
/// sockets only it reaches, use [`ProxyService`] instead. Dropping the pair
/// signals its tasks to stop; [`ProxyPair::shutdown`] also waits until
/// every task has ended and every socket is closed.
#[derive(Debug)]
pub struct ProxyPair {
    http_addr: SocketAddr,
    socks_addr: SocketAddr,
    service: ProxyService,
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
        let service = ProxyService::with_listeners(config, &[http_addr, socks_addr]);
        let _ = service.serve_tcp(ProxyKind::Http, http);
        let _ = service.serve_tcp(ProxyKind::Socks5, socks);
        Ok(ProxyPair {
            http_addr,
            socks_addr,
            service,
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

    /// The service behind the two listeners (to hand it more of them).
    pub fn service(&self) -> &ProxyService {
        &self.service
    }

    /// Violations from now on: one `network-outbound` per refusal, target
    /// `host:port`.
    pub fn subscribe_violations(&self) -> Subscription<SandboxViolation> {
        self.service.subscribe_violations()
    }

    /// Every decision from now on (allowed, intercepted, refused), for logs.
    pub fn subscribe_decisions(&self) -> Subscription<Decision> {
        self.service.subscribe_decisions()
    }

    /// Stops accepting, ends every connection, and waits until all tasks
    /// are gone and all sockets closed.
    pub async fn shutdown(self) {
        self.service.shutdown().await;
    }
}

/// A listener of either kind.
enum Acceptor {
    Tcp(TcpListener, Nodelay),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener, u32),
}

/// How an accepted TCP client gets Nagle's algorithm turned off (a
/// CONNECT reply and a SOCKS5 reply are small writes that must not wait).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Nodelay {
    /// Set on the listener, which Linux copies to each socket it accepts:
    /// one system call per listener instead of one per connection.
    #[cfg_attr(
        not(any(target_os = "linux", target_os = "android")),
        allow(dead_code, reason = "set on the listener on Linux only")
    )]
    Inherited,
    /// Set on each accepted socket.
    PerConnection,
}

impl Nodelay {
    /// Sets `TCP_NODELAY` on the listener where accepted sockets inherit
    /// it (Linux; the test `accepted_clients_have_nodelay` checks that they
    /// do), and falls back to setting it per connection elsewhere or when
    /// the listener refuses it.
    fn for_listener(listener: &TcpListener) -> Nodelay {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if rustix::net::sockopt::set_tcp_nodelay(listener, true).is_ok() {
            return Nodelay::Inherited;
        }
        let _ = listener;
        Nodelay::PerConnection
    }
}

/// What one accept gave.
enum Accepted {
    Client(ClientStream),
    /// A Unix peer of another uid, already reported.
    #[cfg_attr(not(unix), allow(dead_code, reason = "only Unix peers are refused"))]
    Refused,
}

impl Acceptor {
    #[cfg_attr(
        not(unix),
        allow(
            unused_variables,
            reason = "only the Unix acceptor reports refused peers"
        )
    )]
    async fn accept(&self, shared: &Shared) -> std::io::Result<Accepted> {
        match self {
            Acceptor::Tcp(l, nodelay) => {
                let (stream, _) = l.accept().await?;
                if *nodelay == Nodelay::PerConnection {
                    let _ = stream.set_nodelay(true);
                }
                Ok(Accepted::Client(ClientStream::Tcp(stream)))
            }
            #[cfg(unix)]
            Acceptor::Unix(l, uid) => accept_unix(l, *uid, shared).await,
        }
    }
}

/// Accepts a Unix client whose peer has `uid`; another is reported and
/// closed unanswered.
#[cfg(unix)]
async fn accept_unix(
    listener: &tokio::net::UnixListener,
    uid: u32,
    shared: &Shared,
) -> std::io::Result<Accepted> {
    use crate::egress::Denial;
    use crate::events::{Outcome, Protocol};
    let (stream, _) = listener.accept().await?;
    match stream.peer_cred() {
        Ok(c) if c.uid() == uid => Ok(Accepted::Client(ClientStream::Unix(stream))),
        other => {
            let peer = match other {
                Ok(c) => c.uid().to_string(),
                Err(_) => "unknown".to_owned(),
            };
            shared.events.report(
                Protocol::UnixSocket,
                format!("unix-peer:uid={peer}"),
                Outcome::Refused(Denial::Unauthenticated(format!(
                    "the peer's uid {peer} is not the session's uid {uid}"
                ))),
            );
            Ok(Accepted::Refused)
        }
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
    listener: Acceptor,
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
    serve: F,
) where
    F: Fn(ClientStream, Arc<Shared>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut conns = JoinSet::new();
    if *stop.borrow() {
        return;
    }
    // One wait for the stop signal over the whole loop, not a new one per
    // accepted connection.
    let stopped = stop.changed();
    tokio::pin!(stopped);
    loop {
        let accepted = tokio::select! {
            biased;
            _ = &mut stopped => break,
            accepted = listener.accept(&shared) => accepted,
        };
        // Finished connections are reaped here, all at once, rather than by
        // a `join_next` branch that would wake this loop once for each: a
        // connection's end then costs the loop no wake-up. Until the next
        // accept (or the shutdown) the set holds at most the connections
        // alive at the last one, which the connection cap bounds.
        while conns.try_join_next().is_some() {}
        match accepted {
            Ok(Accepted::Client(stream)) => match permits.clone().try_acquire_owned() {
                Ok(permit) => {
                    // On the heap once: the connection's future is most of
                    // a kilobyte (its egress and relay are boxed of their
                    // own), and a task moves its future with each change of
                    // stage (callgrind: 106,000 bytes copied per connection
                    // when it was held inline).
                    let task = Box::pin(serve(stream, shared.clone()));
                    conns.spawn(tracing::Instrument::in_current_span(async move {
                        task.await;
                        drop(permit);
                    }));
                }
                // Over the connection cap: close at once.
                Err(_) => drop(stream),
            },
            Ok(Accepted::Refused) => {}
            // Out of descriptors or a reset before accept: back off.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    drop(listener);
    conns.shutdown().await;
}
