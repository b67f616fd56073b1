//! Per-session egress proxies for confined agents: one HTTP proxy (CONNECT
//! and absolute-form plain HTTP) and one SOCKS5 proxy on 127.0.0.1, both
//! deciding with the session's allowlist (R-EGRESS).
//!
//! A connection goes through four steps, in this order:
//!
//! 1. the target host is brought to one canonical form ([`Host`],
//!    [`Target`], from the `net-vocab` crate): lower case, one trailing dot
//!    removed, IDNA A-labels (UTS #46 for allowlist entries; clients must
//!    send A-labels), and every numeric spelling the C library accepts read
//!    as an IP literal;
//! 2. the [`EgressPolicy`] decides on the name. [`AllowList`] is the usual
//!    one: compiled once from the baseline sets, the [`GITHUB`] set and the
//!    spec's entries (each a [`HostPattern`]), indexed by label, with the
//!    fixed [`DENYLIST`] checked first. A denied name is never resolved;
//! 3. an allowed name is resolved once through the injected [`Resolver`]
//!    (with a timeout), and every address is vetted by the [`IpPolicy`]:
//!    loopback, private, link-local, CGNAT, reserved and documentation
//!    ranges (and their IPv4-mapped, NAT64, 6to4 and Teredo forms) are
//!    refused unless a block was granted with [`IpPolicy::allow_cidr`]; the
//!    proxy's own listeners and denylisted addresses are refused always;
//! 4. the proxy dials a vetted address (never re-resolving), or hands the
//!    client to the [`Intercept`] hook when it claims the target, and relays
//!    bytes with half-close passed both ways.
//!
//! Each refusal is answered properly (HTTP 403 with a `Proxy-Status`
//! header, SOCKS5 reply `02`) and published as a
//! [`sandbox_core::SandboxViolation`] (`network-outbound`, `host:port`).
//!
//! # Who can reach the proxies
//!
//! [`ProxyPair`] listens on two loopback ports: any local process, of any
//! user, can connect to them. [`ProxyService`] is the same pair with no
//! listener of its own: it serves only what it is handed, TCP listeners
//! bound inside the sandbox's own network namespace
//! ([`ProxyService::serve_tcp`]) and Unix sockets whose peers must have the
//! session's uid ([`ProxyService::serve_unix`], checked with
//! `SO_PEERCRED`; another uid is closed unanswered and reported as a
//! `network-outbound` violation on `unix-peer:uid=N`). Use it wherever the
//! sandbox can be given such sockets, so that no other process can use the
//! session's egress (or its broker, which is reached only through it).
//!
//! # Answers
//!
//! | outcome | HTTP proxy | SOCKS5 |
//! | --- | --- | --- |
//! | tunnel open | `200` (only after the upstream connect worked) | `00` |
//! | name denied by policy | `403`, `Proxy-Status: ...; error=http_request_denied` | `02` |
//! | address refused | `403`, `error=destination_ip_prohibited` | `02` |
//! | malformed target | `400`, `error=http_request_error` | `02` (no lookup) |
//! | name not found | `502`, `error=dns_error` | `04` |
//! | lookup timeout | `504`, `error=dns_timeout` | `04` |
//! | connect timeout | `504`, `error=connection_timeout` | `04` |
//! | connection refused | `502`, `error=connection_refused` | `05` |
//! | other command / address type / auth | | `07` / `08` / `05 FF` |
//! | credentials required, missing or wrong | `407` with `Proxy-Authenticate: Basic` | `05 FF` (no username/password offered) or `01 01` |
//!
//! Without [`ProxyConfigBuilder::require_credentials`] the HTTP proxy never
//! answers `407` and SOCKS5 accepts only "no authentication". With it, every
//! client on every listener must present the session's [`ProxyCredentials`]
//! (HTTP `Basic`, SOCKS5 username/password, RFC 1929), compared in constant
//! time; a refusal is a `network-outbound` violation (target the requested
//! `host:port`, or `socks5-auth` before a SOCKS request). Plain HTTP is forwarded one request
//! per client connection: the request line becomes origin-form, `Proxy-*`
//! and hop-by-hop headers are dropped, `Connection: close` is sent upstream,
//! and a `Host` header that disagrees with the URI is refused.
//!
//! # Example
//!
//! ```
//! use connect_proxy::{AllowList, Baseline, IpPolicy, ProxyConfig, ProxyPair, StaticResolver};
//! use std::sync::Arc;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), connect_proxy::Error> {
//! let list = AllowList::builder()
//!     .baseline(Baseline::Exclude)
//!     .allow("*.example.com:443")
//!     .build()?;
//! let pair = ProxyPair::start(
//!     ProxyConfig::builder()
//!         .allowlist(list)
//!         .ip_policy(IpPolicy::new())
//!         .resolver(Arc::new(StaticResolver::new()))
//!         .build()?,
//! )
//! .await?;
//! let mut violations = pair.subscribe_violations();
//!
//! // A client asks for a host outside the list: 403, and one violation.
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! let mut client = tokio::net::TcpStream::connect(pair.http_addr()).await.unwrap();
//! client.write_all(b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n").await.unwrap();
//! let mut answer = String::new();
//! client.read_to_string(&mut answer).await.unwrap();
//! assert!(answer.starts_with("HTTP/1.1 403"));
//! assert_eq!(violations.recv().await.unwrap().target, "evil.test:443");
//!
//! pair.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Input safety
//!
//! - Host names, ports and allowlist entries are parsed by `net-vocab`
//!   (its "Input safety" section has every rule): at most [`MAX_HOST_LEN`]
//!   (253) bytes canonical, [`MAX_LABEL_LEN`] (63) per label; only
//!   configuration entries go through UTS #46, the wire must send A-labels;
//!   entries at most [`MAX_ENTRY_LEN`] (512) bytes, exactly one whole-label
//!   `*` at most, never over a top-level domain or an IP literal, IPv6
//!   literals in brackets.
//! - HTTP request head: read by `net-vocab`'s [`net_vocab::HeadReader`],
//!   at most [`Limits::max_header_bytes`] (default 16 KiB), 8 KiB per line
//!   and [`MAX_HEADERS`] (100) fields, received within
//!   [`Limits::header_timeout`] (default 10 s), each byte checked as it
//!   arrives (431 when too large, 400 otherwise). Refused: bare CR or LF,
//!   line folding, a second `Host` or one that is not a host, a second
//!   `Content-Length` (even an equal one), any `Transfer-Encoding` but one
//!   `chunked`, both together, and either on `CONNECT`.
//! - SOCKS5 handshake: at most 1024 bytes buffered, within the same header
//!   timeout; domains are checked against the host grammar before any use.
//! - Connections: at most [`Limits::max_connections`] (default 4096) at once
//!   across both proxies; tunnels idle for [`Limits::idle_timeout`]
//!   (default 5 min) are closed; lookups bounded by
//!   [`Limits::resolve_timeout`] (5 s) and dials by
//!   [`Limits::connect_timeout`] (10 s); each tunnel direction buffers at
//!   most [`Limits::copy_buffer_bytes`] (256 KiB, starting at 8 KiB).
//! - Event channels hold [`Limits::event_capacity`] (1024) events per slow
//!   subscriber; older ones are skipped and counted.
//! - No parser here panics on input; each has a fuzz target.
//!
//! # Crate features
//!
//! This crate has no optional features. It needs a tokio runtime with the
//! `net`, `time`, `io-util` and `sync` drivers.

mod allowlist;
mod baseline;
mod client;
mod config;
mod credentials;
mod dial;
mod egress;
mod error;
mod events;
mod http_proxy;
mod index;
mod intercept;
mod ip_policy;
mod pair;
mod policy;
mod resolver;
mod session;
mod socks_proxy;
mod socks_wire;
mod spare_buffers;
mod tunnel;

/// Entry points for the fuzz targets; not a stable API.
#[doc(hidden)]
pub mod fuzzing;

pub use allowlist::{AllowList, AllowListBuilder, Baseline, Network};
pub use baseline::{
    BASELINE_GIT_HOSTING, BASELINE_LLM_PROVIDERS, BASELINE_PACKAGE_REGISTRIES, DENYLIST, GITHUB,
};
pub use client::ClientStream;
pub use config::{Limits, ProxyConfig, ProxyConfigBuilder};
pub use credentials::{ProxyCredentials, SESSION_PROXY_USER};
pub use egress::{Denial, Egress};
pub use error::{Error, ErrorKind};
pub use events::{Decision, Outcome, Protocol, Subscription};
pub use intercept::{Intercept, Intercepted};
pub use ip_policy::{AddrClass, Cidr, IpPolicy, classify};
pub use pair::{ProxyKind, ProxyPair, ProxyService};
pub use policy::{DenyReason, EgressPolicy, Verdict};
pub use resolver::{BoxFuture, ResolveError, Resolver, StaticResolver, SystemResolver};
// The host vocabulary this crate's API speaks, from `net-vocab`.
pub use net_vocab::{
    DEFAULT_MAX_HEADERS as MAX_HEADERS, Host, HostPattern, HostProblem, MAX_ENTRY_LEN,
    MAX_HOST_LEN, MAX_LABEL_LEN, Target,
};
