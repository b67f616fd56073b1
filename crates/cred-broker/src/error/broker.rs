//! Refusals and failures of the broker past the parser: the session CA
//! and the TLS connections, leases and credentials, and the rules.

/// The session CA and the TLS connections on either side: a leaf that
/// cannot be minted, a client whose handshake fails or names another
/// host, an upstream that cannot be reached or does not prove its
/// identity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsErrorKind {
    /// A host a leaf certificate cannot be minted for.
    #[error("cannot mint a certificate for {host:?}: give a DNS name or an IP address")]
    InvalidLeafHost {
        /// The host (truncated).
        host: String,
    },
    /// Certificate generation failed.
    #[error("certificate generation failed: {message}")]
    Certificate {
        /// The generator's message.
        message: String,
    },
    /// The TLS server name the client sent disagrees with the connection
    /// target.
    #[error("TLS server name {sni:?} disagrees with the connection target {target:?}")]
    SniMismatch {
        /// The server name (truncated).
        sni: String,
        /// The connection target.
        target: String,
    },
    /// The client side of a brokered connection failed (TLS handshake or
    /// I/O).
    #[error("client connection failed: {message}")]
    Client {
        /// What failed.
        message: String,
    },
    /// The upstream could not be reached, did not prove its identity, or
    /// answered unreadably.
    #[error("upstream {target} failed: {message}")]
    Upstream {
        /// The connection target.
        target: String,
        /// What failed.
        message: String,
    },
}

/// Leases and credentials: a revoked or expired lease, a credential that
/// may not go to the target, none granted for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseErrorKind {
    /// The lease was revoked.
    #[error("the lease of session {session:?} was revoked")]
    Revoked {
        /// The session the lease was bound to.
        session: String,
    },
    /// The lease is past its expiry.
    #[error("the lease of session {session:?} has expired")]
    LeaseExpired {
        /// The session the lease was bound to.
        session: String,
    },
    /// The lease was granted for a different credential.
    #[error("the lease is for credential {lease:?}, not {credential:?}")]
    CredentialMismatch {
        /// The credential named by the lease.
        lease: String,
        /// The credential offered.
        credential: String,
    },
    /// The credential may not be sent to this host.
    #[error("credential {credential:?} may not be sent to {host:?}")]
    HostNotAllowed {
        /// The credential's name.
        credential: String,
        /// The host.
        host: String,
    },
    /// No credential is granted for the connection's target.
    #[error("no credential is granted for {host:?}")]
    NoCredential {
        /// The target host.
        host: String,
    },
}

/// The rules and the broker's checks of a request against them: rule
/// files and host patterns that do not compile, a request the rule
/// engine or the push rule refuses, a `Host` that names another target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RulesErrorKind {
    /// A rule file that does not deserialize.
    #[error("rule file does not load: {message}")]
    RuleSyntax {
        /// The deserializer's message.
        message: String,
    },
    /// A rule with a value that cannot be compiled.
    #[error("rule {rule:?}: {field} {value:?} is refused: {reason}")]
    InvalidRule {
        /// The rule's name.
        rule: String,
        /// Which field.
        field: &'static str,
        /// The value (truncated).
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// A host pattern that cannot be compiled (net-vocab's
    /// [`net_vocab::HostPattern::parse`] refuses it, or it names a port).
    #[error("host pattern {pattern:?} is refused: {reason}")]
    InvalidHostPattern {
        /// The pattern (truncated).
        pattern: String,
        /// Why.
        reason: String,
    },
    /// The rule engine denied the request.
    #[error("request {method} {path:?} {decision}")]
    RuleDenied {
        /// The method (truncated).
        method: String,
        /// The path (truncated).
        path: String,
        /// The decision, as text (`denied by rule "name"`, ...).
        decision: String,
    },
    /// The request's `Host` disagrees with the connection's target.
    #[error("Host {host:?} disagrees with the connection target {target:?}")]
    TargetMismatch {
        /// The `Host` header value (truncated).
        host: String,
        /// The connection target.
        target: String,
    },
    /// A `git-receive-pack` request reached a broker without a push rule
    /// (answered in git's report format, every ref refused with this).
    #[error("git pushes are refused: no push rule is configured")]
    NoPushRule,
    /// The push rule refused a push (answered in git's report format).
    #[error("push refused by the push rule [{rule}]: {refs}")]
    PushRefused {
        /// The rule's ref patterns as compiled for the session, joined by
        /// `, ` (truncated).
        rule: String,
        /// Each refused ref and why (truncated).
        refs: String,
    },
}
