//! Name resolution, injected: the system resolver for real use, a static
//! counting one for tests.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A boxed, sendable future, as returned by the crate's object-safe traits.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a lookup produced no address.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// The name does not exist or has no address.
    NotFound,
    /// The lookup did not finish in time.
    Timeout,
    /// The resolver failed for another reason.
    Failed(String),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveError::NotFound => f.write_str("name not found"),
            ResolveError::Timeout => f.write_str("lookup timed out"),
            ResolveError::Failed(m) => write!(f, "lookup failed: {m}"),
        }
    }
}

/// Turns an allowed, canonical name into addresses. The proxy calls it only
/// for names its policy allowed, at most once per connection, and applies
/// its own resolve timeout around the call.
pub trait Resolver: Send + Sync + 'static {
    /// The addresses of `name` (never an IP literal).
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, ResolveError>>;
}

/// The host's resolver (`getaddrinfo` through tokio), with a timeout.
#[derive(Clone, Debug)]
pub struct SystemResolver {
    timeout: Duration,
}

impl SystemResolver {
    /// The default lookup time limit.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

    /// The host's resolver, reading the ambient system configuration.
    pub fn from_ambient() -> SystemResolver {
        SystemResolver {
            timeout: SystemResolver::DEFAULT_TIMEOUT,
        }
    }

    /// Sets the lookup time limit.
    pub fn with_timeout(mut self, timeout: Duration) -> SystemResolver {
        self.timeout = timeout;
        self
    }
}

impl Resolver for SystemResolver {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, ResolveError>> {
        Box::pin(async move {
            let lookup = tokio::net::lookup_host((name, 0));
            match tokio::time::timeout(self.timeout, lookup).await {
                Err(_) => Err(ResolveError::Timeout),
                // getaddrinfo failures carry no portable kind: a name that
                // cannot be resolved is "not found" to the client.
                Ok(Err(_)) => Err(ResolveError::NotFound),
                Ok(Ok(addrs)) => {
                    let mut out: Vec<IpAddr> = Vec::new();
                    for a in addrs {
                        if !out.contains(&a.ip()) {
                            out.push(a.ip());
                        }
                    }
                    if out.is_empty() {
                        Err(ResolveError::NotFound)
                    } else {
                        Ok(out)
                    }
                }
            }
        })
    }
}

/// A fixed table of names, counting every lookup: for tests and for hosts
/// that pin names. Unknown names are [`ResolveError::NotFound`]; names
/// marked with [`StaticResolver::stall`] never answer.
///
/// ```
/// use connect_proxy::{Resolver, StaticResolver};
/// let r = StaticResolver::new();
/// r.insert("origin.test", ["127.0.0.1".parse().unwrap()]);
/// assert_eq!(r.lookups(), 0);
/// ```
#[derive(Debug, Default)]
pub struct StaticResolver {
    table: Mutex<HashMap<String, Vec<IpAddr>>>,
    stalled: Mutex<Vec<String>>,
    count: AtomicUsize,
    names: Mutex<Vec<String>>,
}

impl StaticResolver {
    /// An empty table.
    pub fn new() -> StaticResolver {
        StaticResolver::default()
    }

    /// Maps a canonical name to addresses.
    pub fn insert(&self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) -> &Self {
        if let Ok(mut t) = self.table.lock() {
            t.insert(name.to_owned(), addrs.into_iter().collect());
        }
        self
    }

    /// Makes lookups of `name` hang, to exercise timeouts.
    pub fn stall(&self, name: &str) -> &Self {
        if let Ok(mut s) = self.stalled.lock() {
            s.push(name.to_owned());
        }
        self
    }

    /// How many lookups were made.
    pub fn lookups(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// The names looked up, in order.
    pub fn looked_up(&self) -> Vec<String> {
        self.names.lock().map(|n| n.clone()).unwrap_or_default()
    }
}

impl Resolver for StaticResolver {
    fn resolve<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, ResolveError>> {
        self.count.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut n) = self.names.lock() {
            n.push(name.to_owned());
        }
        let stalled = match self.stalled.lock() {
            Ok(s) => s.iter().any(|x| x == name),
            Err(_) => false,
        };
        let found: Option<Option<Vec<IpAddr>>> = match self.table.lock() {
            Ok(t) => Some(t.get(name).cloned()),
            Err(_) => None,
        };
        Box::pin(async move {
            if stalled {
                std::future::pending::<()>().await;
            }
            match found {
                Some(Some(addrs)) if !addrs.is_empty() => Ok(addrs),
                Some(_) => Err(ResolveError::NotFound),
                None => Err(ResolveError::Failed("resolver table poisoned".to_owned())),
            }
        })
    }
}
