//! The credential broker: a strict HTTP/1.1 request parser, a fail-closed
//! rule engine, credentials lent to a session through leases, and the TLS
//! connection loop that puts them between the sandbox and the upstream.
//!
//! The sandbox never holds a real credential. For chosen hosts the
//! session's proxy hands the client stream to the broker, which reads each
//! request with [`RequestParser`], asks a [`RuleEngine`], and builds the
//! upstream head with [`upstream_head`]: the agent's own credentials
//! (a [`PhantomToken`] or anything else) removed, exactly one real
//! credential header added, the body re-framed with a length of our own.
//!
//! - **Parser.** [`RequestParser`] reads requests from a byte stream in
//!   whatever slices they arrive, one at a time (pipelined bytes stay for
//!   the next call), the head with `net-vocab`'s strict
//!   [`net_vocab::HeadReader`] (the one the egress proxies use), and
//!   refuses every framing that two readers could disagree on (RFC 9112):
//!   bare LF or CR, obsolete line folding, whitespace before a colon, bad
//!   header names or values, a missing,
//!   repeated or malformed `Host`, `Content-Length` with
//!   `Transfer-Encoding`, repeated or non-digit lengths, any
//!   `Transfer-Encoding` but one `chunked` (and any in HTTP/1.0), chunk
//!   sizes with signs, prefixes, underscores or spaces, bad chunk
//!   terminators, framing or credential fields in trailers, a body on
//!   `CONNECT`. Each refusal is an [`Error`] whose [`Error::response`] is
//!   400-and-close (the head reader's are [`HttpErrorKind::Head`], holding
//!   `net-vocab`'s error; a head over the limits is 400 here too, not 431).
//!   [`ChunkedDecoder`] is the streaming chunked decoder on
//!   its own. [`Request::reframe`] writes a request with the client's
//!   framing and hop-by-hop fields replaced by a `Content-Length` of ours.
//! - **Rules.** A [`RuleFile`] (TOML or JSON) of [`RuleSpec`]s, compiled
//!   once by [`RuleEngine::builder`]: host patterns (`net-vocab`'s
//!   [`HostPattern`], R-EGRESS-2's wildcards, without a port),
//!   methods, path globs ([`PathGlob`]) and request classes. Classes come
//!   from [`RequestClassifier`]s asked in order, with [`RestClassifier`]
//!   (`rest-read` / `rest-write` by method) last. An explicit deny beats
//!   any allow; no match is deny; an unclassifiable request or an
//!   ambiguous path (dot segments, encoded `/`, `//`, `;`, `\`,
//!   encoded control bytes, a trailing encoded space) is deny.
//!   Every [`Decision`] says which rule made it.
//! - **Credentials.** A [`Secret`] given by the host program (never shown
//!   by `Debug` or `Display`, wiped on drop), in a [`Credential`] with the
//!   hosts it may go to and a [`HeaderTemplate`] (`Bearer`, `token`, git's
//!   Basic `x-access-token`). A [`Lease`] lends it to one session with a
//!   random [`PhantomToken`]; [`Lease::revoke`] reaches every clone, so
//!   open keep-alive connections are refused (403) from then on.
//! - **Session CA.** [`SessionCa`] makes an ECDSA P-256 CA per session,
//!   keys in memory only, and mints short-lived leaf certificates (DNS or
//!   IP subject alternative name, authority key identifier, one leaf key
//!   per CA) for intercepted hosts, kept in a bounded least-recently-used
//!   cache.
//! - **TLS.** A [`Broker`] (built once per session by [`Broker::builder`]
//!   from the session CA, the rule engine, [`BrokerBuilder::grant`]s of a
//!   credential and its lease, and upstream roots) serves each intercepted
//!   connection with [`Broker::serve`]: TLS in with rustls (ring, or
//!   aws-lc-rs with its feature; the provider's cipher suites, with TLS
//!   1.3's AES-128-GCM-SHA256 first on both sides and chosen by the
//!   broker's order, since SHA-384's key schedule has no CPU instructions
//!   of its own; sessions resumed from a store shared by the session's
//!   connections), ALPN `http/1.1` only, the session CA's
//!   leaf for the `CONNECT` host, an SNI for any other host refused; then
//!   request by request: `Host` must name the `CONNECT` target, the rules
//!   must allow, the lease must be active;
//!   the re-framed request with the real credential goes over one upstream
//!   TLS connection per client connection, dialed at the address the proxy
//!   vetted and verified for the `CONNECT` host (by default the platform's
//!   trust plus extra roots, [`UpstreamRoots::PlatformAndExtra`]; or the
//!   bundled web roots, [`UpstreamRoots::BundledWebPkiAndExtra`]; or only
//!   the extra roots, [`UpstreamRoots::ExtraOnly`]); a failed verification
//!   is 502, never a bypass. Responses stream back by their own framing
//!   (length, chunked or close-delimited), never buffered whole. Refusals
//!   are 403 on the same connection (a denied rule, a `Host` mismatch, a
//!   revoked or expired lease) or 400 and close (malformed framing), and
//!   each is a [`sandbox_core::SandboxViolation`] (action [`BROKER_DENY`],
//!   target `host:port path`) on [`Broker::subscribe_violations`]. Each
//!   request forwarded is a [`BrokeredRequest`] (target, method, path
//!   without its query, the rule that allowed it, the response's status;
//!   never a secret) on [`Broker::subscribe_requests`], for an audit trail.
//!
//!   The proxy crate's `Intercept` hook is adapted by the host program:
//!   `claims` picks the brokered hosts, `take` calls [`Broker::serve`]
//!   with the handed-over stream (the proxy's already-read bytes chained
//!   in front with [`tokio::io::AsyncReadExt::chain`] and
//!   [`tokio::io::join`]), the proxy's [`Target`] (the same `net-vocab`
//!   type, taken as it is) and its first vetted address. The facade's
//!   `broker_intercept` is that adapter; `tests/cred-broker/support.rs`
//!   holds a one-host one for this crate's own tests.
//!
//! # Example
//!
//! ```
//! use cred_broker::*;
//! use std::time::SystemTime;
//!
//! let rules = RuleFile::from_toml(r#"
//!     [[rule]]
//!     name = "read-only"
//!     decision = "allow"
//!     hosts = ["api.example.com"]
//!     classes = ["rest-read"]
//! "#).unwrap();
//! let engine = RuleEngine::builder().rules(rules).build().unwrap();
//!
//! let cred = Credential::builder("code-host")
//!     .secret(Secret::new(b"real-token".to_vec()).unwrap())
//!     .host("api.example.com")
//!     .template(HeaderTemplate::Bearer)
//!     .build()
//!     .unwrap();
//! let lease = Lease::builder("session-1", &cred).build().unwrap();
//!
//! // The agent sends its phantom token.
//! let wire = format!(
//!     "GET /user HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer {}\r\n\r\n",
//!     lease.phantom(),
//! );
//! let mut parser = RequestParser::new(Limits::default());
//! let Ok(Status::Complete { request, .. }) = parser.feed(wire.as_bytes()) else {
//!     unreachable!("a complete request")
//! };
//! let target = Target::parse_authority("api.example.com:443").unwrap();
//! let decision = engine.decide_head(request.head(), "api.example.com");
//! assert_eq!((decision.verdict(), decision.rule()), (Verdict::Allow, Some("read-only")));
//!
//! let head = upstream_head(&request, &target, &lease, &cred, SystemTime::now()).unwrap();
//! assert_eq!(
//!     head.as_bytes(),
//!     b"GET /user HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: Bearer real-token\r\n\r\n",
//! );
//!
//! // A write is denied by default; after revoke nothing is injected.
//! let mut parser = RequestParser::new(Limits::default());
//! let Ok(Status::Complete { request: post, .. }) =
//!     parser.feed(b"POST /user HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 0\r\n\r\n")
//! else {
//!     unreachable!("a complete request")
//! };
//! assert_eq!(engine.decide_head(post.head(), "api.example.com").verdict(), Verdict::Deny);
//! lease.revoke();
//! let refused = upstream_head(&request, &target, &lease, &cred, SystemTime::now()).unwrap_err();
//! assert_eq!(refused.response().status(), Some(403));
//! ```
//!
//! # Input safety
//!
//! - Request heads are read by `net-vocab`'s [`net_vocab::HeadReader`]
//!   (see its "Input safety") within [`Limits::head`]: at most
//!   [`Limits::max_head`] bytes (default [`DEFAULT_MAX_HEAD`], 64 KiB, the
//!   broker's own), each line (request line, field line,
//!   chunk-size line, trailer line) to [`Limits::max_line`] (default
//!   [`DEFAULT_MAX_LINE`], 8 KiB), header lines and, separately, trailer
//!   lines to [`Limits::max_headers`] (default [`DEFAULT_MAX_HEADERS`],
//!   100), decoded bodies to [`Limits::max_body`] (default
//!   [`DEFAULT_MAX_BODY`], 8 MiB; a larger `Content-Length` is refused
//!   before any body byte is read). The parser never buffers more than one
//!   byte past the head limit.
//! - `Content-Length` is at most 19 digits and must fit in 64 bits; chunk
//!   sizes are at most [`MAX_CHUNK_SIZE_DIGITS`] hex digits; chunk
//!   extensions must be `;name` or `;name=value` tokens without spaces.
//! - An empty line before the request line, an empty `Host`, and a
//!   `Content-Length` list of equal values are refused, although RFC 9112
//!   lets servers accept them.
//! - Rule files are at most [`MAX_RULE_FILE_LEN`] bytes with at most
//!   [`MAX_RULES`] rules of at most [`MAX_RULE_ENTRIES`] entries per list;
//!   host patterns at most [`MAX_HOST_PATTERN_LEN`] bytes (then checked
//!   by [`HostPattern::parse`]; a pattern with a port is refused), path
//!   globs at most [`MAX_GLOB_LEN`] bytes. Globs run as a set of positions, in time
//!   linear in path length times glob length, never by backtracking. Path
//!   matching ignores ASCII case and decodes percent-encoded unreserved
//!   bytes first, so a deny rule cannot be passed by spelling a path
//!   differently.
//! - Secrets are 1 to [`MAX_SECRET_LEN`] bytes of visible ASCII. Error
//!   messages echo offending values truncated to 256 characters, and never
//!   a secret.
//! - The session CA lives 1 minute to 30 days (default one day), a leaf 1
//!   minute to 7 days and never past the CA (default one hour, renewed
//!   past half its life); at most 1 to 65 536 leaves are cached (default
//!   [`DEFAULT_LEAF_CACHE`]). Leaves are minted only for hosts in the
//!   wire grammar of [`Host::parse_wire`] (names of letters, digits, `-`,
//!   `_`, no wildcard; a numeric spelling is the IPv4 address it stands
//!   for) and IPv6 addresses.
//! - Upstream response heads are limited to 64 KiB and response chunk
//!   lines to 8 KiB; a response over a bad framing ends the connection
//!   (502 when nothing of it was sent yet). The client's TLS handshake
//!   has [`DEFAULT_HANDSHAKE_TIMEOUT`], each wait for request or response
//!   bytes [`DEFAULT_IDLE_TIMEOUT`], the upstream connect and handshake
//!   [`DEFAULT_UPSTREAM_TIMEOUT`]; all are settable on [`BrokerBuilder`].
//! - Git pushes (feature `git`) are read within `push-rule`'s bounds
//!   ([`GitLimits`]: ref updates, the command section, the inflated body,
//!   the spool, the pack and its walk; see that crate's "Input safety"),
//!   not within [`Limits::max_body`].
//! - Nothing here panics on input; the fuzz targets under `fuzz/`
//!   (`broker_request_head`, `broker_chunked`, `broker_rules`,
//!   `broker_response`) check it, and `push-rule`'s for the git readers.
//!
//! # What is not here yet
//!
//! Protocol upgrades are refused ([`RestClassifier`] does not classify
//! them and re-framing drops `Upgrade`). Trailer fields are checked and
//! then dropped, not forwarded. Interim `100 Continue` responses are
//! relayed; a `101` ends the connection. An upstream that closes its
//! keep-alive connection between requests is not redialed: the next
//! request on that client connection gets 502 and the client reconnects.
//! (A verified upstream connection outlives its client: the next client
//! of the same broker for the same target and address reuses it within
//! 2 s, if it is still open and silent, so a client that opens a new
//! connection per request costs one TLS handshake per request, not two.)
//! Requests to a brokered host that no granted credential may go to are
//! refused (403), not forwarded bare.
//!
//! # Git pushes and GraphQL
//!
//! The connection knows no protocol above HTTP by name. It asks the
//! broker's classifiers ([`RequestClassifier`], built once with the
//! broker: those of its features, then [`BrokerBuilder::classifier`]'s)
//! two things: whether a request's body is theirs to read and judge
//! ([`RequestClassifier::streams_body`], [`RequestClassifier::start_body`],
//! [`BodyReader`], [`HeldBody`]), and how a refusal is shaped
//! ([`RequestClassifier::refusal`], an [`Answer`]).
//!
//! [`GitClassifier`] (feature `git`) classifies git's smart HTTP: ref
//! discovery and `git-upload-pack` as `git-fetch`, `git-receive-pack` as
//! `git-push`, any other request on a git path refused. In a [`Broker`],
//! a push (`POST .../git-receive-pack`) is handled apart, whatever
//! classifiers the rule engine was built with: its head must agree with
//! the target and pass the rule engine (classes come from the head
//! alone), else it is answered 403 and the connection closed before any
//! body byte is read. The body is then streamed into a
//! [`push_rule::PushBody`] (bounded by [`GitLimits`], not by
//! [`Limits::max_body`]) and judged by [`PushRule::check_spooled`], the
//! push rule of [`BrokerBuilder::push_rule`]; without one every ref of
//! every push is refused ([`push_rule::report_refused`], the reason "no
//! push rule is configured"). A refused push is answered `200 OK`,
//! `Content-Type: application/x-git-receive-pack-result`, with
//! [`push_rule::report_status`] (so `git push` prints `! [remote
//! rejected] <ref> (<reason>)`), reported as a violation (naming the
//! rule's patterns and each refused ref with its reason), and nothing of
//! it reaches the upstream; an allowed push is forwarded after the lease
//! check, with the real credential, identity-encoded (no
//! `Content-Encoding`) and with a `Content-Length` of its own. A
//! malformed push body is 400 and close. What the push rule proves, and
//! what it does not, is set out in the `push-rule` crate (re-exported as
//! [`push_rule`]).
//!
//! With the `graphql` feature, [`GraphqlClassifier`] classifies
//! `/graphql` and `/api/graphql` requests. GraphQL refusals are HTTP 403
//! with `Content-Type: application/json` and a [`graphql_error_body`]
//! (`{"errors":[{"message":"cred-broker: ..."}]}`): a status that no
//! client mistakes for success, and a body that GraphQL clients show.
//! Every 403 on a GraphQL endpoint has this shape (a denied mutation, an
//! ambiguous document, a revoked lease).
//!
//! Add [`GitClassifier`] and [`GraphqlClassifier`] to the rule engine with
//! [`RuleEngineBuilder::classifier`] so rules can name their classes
//! (`git-fetch`, `git-push`, `graphql-query`, ...).
//!
//! # Crate features
//!
//! - `git` (default): [`GitClassifier`] and pushes judged by a push rule,
//!   backed by `push-rule` (re-exported as [`push_rule`]). Without it the
//!   broker does not single out pushes: a `POST .../git-receive-pack` is
//!   an ordinary request to the rules.
//! - `graphql` (default): [`GraphqlClassifier`], backed by
//!   `graphql-classifier`.
//! - `aws-lc-rs`: TLS on both sides through rustls's aws-lc-rs provider
//!   instead of ring. Measured side by side
//!   (`benches/compare/tls-providers.sh`, `benches/compare/broker.sh` with
//!   `BENCH_FEATURES=cred-broker/aws-lc-rs`), it makes resumed handshakes
//!   faster and new connections per request somewhat more; it also builds
//!   aws-lc's C and assembly for the target, which ring's smaller build
//!   does not, so it is not the default. The session CA signs its leaves
//!   with ring either way.

mod answer;
mod broker;
mod brokered;
mod ca;
mod chunked;
mod classify;
mod connection;
mod credential;
mod engine;
mod error;
#[doc(hidden)]
pub mod fuzzing;
#[cfg(feature = "git")]
mod git;
#[cfg(feature = "graphql")]
mod graphql_rule;
mod head;
mod inject;
mod leaf_cache;
mod lease;
mod limits;
mod parser;
mod path_glob;
mod reframe;
mod response;
mod rules;
mod secret;
mod secret_source;
mod session_store;
mod streamed;
mod tls;
mod upstream_pool;

// The broker and its settings.
pub use broker::{
    BROKER_DENY, Broker, BrokerBuilder, DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_UPSTREAM_TIMEOUT, DEFAULT_VIOLATION_CAPACITY, UpstreamRoots,
};
pub use brokered::BrokeredRequest;
// TLS and the session CA.
pub use ca::{
    CLOCK_SKEW, DEFAULT_CA_LIFETIME, DEFAULT_LEAF_CACHE, DEFAULT_LEAF_LIFETIME, Leaf, SessionCa,
    SessionCaBuilder,
};
// The HTTP parser and the upstream form of a request.
pub use chunked::{ChunkedDecoder, MAX_CHUNK_SIZE_DIGITS};
pub use head::{RequestHead, TargetForm};
pub use inject::{UpstreamHead, upstream_head};
pub use limits::{DEFAULT_MAX_BODY, DEFAULT_MAX_HEAD, Limits, LimitsBuilder};
// The network vocabulary this crate's API speaks, from `net-vocab`.
pub use net_vocab::{
    BodyFraming, DEFAULT_MAX_HEADERS, DEFAULT_MAX_LINE, HeadLimits, HeaderField, Host, HostPattern,
    Target, Version,
};
pub use parser::{Request, RequestParser, Status};
// Rules and classifiers.
pub use answer::Answer;
pub use classify::{
    Classification, ClassifyInput, RequestClass, RequestClassifier, RestClassifier,
};
pub use engine::{Decision, DecisionReason, RestFallback, RuleEngine, RuleEngineBuilder};
#[cfg(feature = "git")]
pub use git::classifier::{GIT_FETCH, GIT_PUSH, GitClassifier, GitRequest, decoded_body};
#[cfg(feature = "graphql")]
pub use graphql_rule::{
    GRAPHQL_MUTATION, GRAPHQL_QUERY, GRAPHQL_SUBSCRIPTION, GraphqlClassifier, graphql_error_body,
};
pub use path_glob::{MAX_GLOB_LEN, PathGlob, PathProblem};
#[cfg(feature = "git")]
pub use push_rule::{self, GitLimits, PushRule, PushRuleSpec};
pub use rules::{
    MAX_HOST_PATTERN_LEN, MAX_RULE_ENTRIES, MAX_RULE_FILE_LEN, MAX_RULES, RuleFile, RuleSpec,
    Verdict,
};
pub use streamed::{BodyReader, HeldBody, Judgement};
// Credentials, leases and secrets.
pub use credential::{Credential, CredentialBuilder, HeaderTemplate};
pub use lease::{Lease, LeaseBuilder, LeaseState, PHANTOM_BYTES, PhantomToken};
pub use secret::{MAX_SECRET_LEN, Secret};
#[cfg(target_os = "macos")]
pub use secret_source::KeychainSecret;
pub use secret_source::{AmbientEnvSecret, SecretSource};
// Errors.
pub use error::{
    Error, ErrorKind, HttpErrorKind, LeaseErrorKind, Response, RulesErrorKind, TlsErrorKind,
};

#[cfg(test)]
mod proptests;
