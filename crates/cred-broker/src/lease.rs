//! Leases: a credential lent to one session, with the phantom token the
//! sandbox holds in its place, until revoked or expired.

use crate::credential::Credential;
use crate::error::{Error, ErrorKind, LeaseErrorKind, truncate};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

/// Random bytes in a phantom token.
pub const PHANTOM_BYTES: usize = 20;

/// The stand-in token the sandbox may hold (in `GH_TOKEN` and the like).
/// It is not a secret: it is worthless outside the broker, which removes
/// it from every request. Random, `phantom_` followed by 40 hex digits.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PhantomToken(String);

impl PhantomToken {
    fn random() -> Result<PhantomToken, Error> {
        let mut bytes = [0u8; PHANTOM_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| {
            Error::from(ErrorKind::InvalidConfig {
                name: "phantom token",
                value: e.to_string(),
                reason: "the operating system's random source failed",
            })
        })?;
        let mut s = String::with_capacity(8 + 2 * PHANTOM_BYTES);
        s.push_str("phantom_");
        for b in bytes {
            s.push_str(&format!("{b:02x}"));
        }
        Ok(PhantomToken(s))
    }

    /// The token text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PhantomToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PhantomToken({:?})", self.0)
    }
}

impl fmt::Display for PhantomToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether a lease can still be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseState {
    /// Requests on the lease may be brokered.
    Active,
    /// [`Lease::revoke`] was called.
    Revoked,
    /// Past its expiry time.
    Expired,
}

#[derive(Debug)]
struct Inner {
    session: String,
    credential: String,
    phantom: PhantomToken,
    expires: Option<SystemTime>,
    revoked: AtomicBool,
}

/// A credential lent to one session. Clones share one state, so a
/// [`Lease::revoke`] reaches every connection holding a clone.
///
/// ```
/// use cred_broker::{Credential, Lease, LeaseState, Secret};
/// use std::time::SystemTime;
/// let cred = Credential::builder("gh")
///     .secret(Secret::new(b"real".to_vec()).unwrap())
///     .host("api.example.com")
///     .build()
///     .unwrap();
/// let lease = Lease::builder("session-1", &cred).build().unwrap();
/// assert!(lease.phantom().as_str().starts_with("phantom_"));
/// let held = lease.clone();
/// lease.revoke();
/// assert_eq!(held.state(SystemTime::now()), LeaseState::Revoked);
/// ```
#[derive(Clone)]
pub struct Lease {
    inner: Arc<Inner>,
}

impl Lease {
    /// A builder for a lease of `credential` to `session`.
    pub fn builder(session: &str, credential: &Credential) -> LeaseBuilder {
        LeaseBuilder {
            session: session.to_owned(),
            credential: credential.name.clone(),
            expires: None,
        }
    }

    /// The session the lease is bound to.
    pub fn session(&self) -> &str {
        &self.inner.session
    }

    /// The name of the credential lent.
    pub fn credential(&self) -> &str {
        &self.inner.credential
    }

    /// The phantom token for the sandbox.
    pub fn phantom(&self) -> &PhantomToken {
        &self.inner.phantom
    }

    /// Revokes the lease for every holder; it cannot be undone.
    pub fn revoke(&self) {
        self.inner.revoked.store(true, Ordering::SeqCst);
    }

    /// The state at time `now`.
    pub fn state(&self, now: SystemTime) -> LeaseState {
        if self.inner.revoked.load(Ordering::SeqCst) {
            LeaseState::Revoked
        } else if self.inner.expires.is_some_and(|t| now >= t) {
            LeaseState::Expired
        } else {
            LeaseState::Active
        }
    }

    /// `Ok` while active; the refusal otherwise.
    pub fn check(&self, now: SystemTime) -> Result<(), Error> {
        let session = truncate(&self.inner.session);
        match self.state(now) {
            LeaseState::Active => Ok(()),
            LeaseState::Revoked => Err(LeaseErrorKind::Revoked { session }.into()),
            LeaseState::Expired => Err(LeaseErrorKind::LeaseExpired { session }.into()),
        }
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("session", &self.inner.session)
            .field("credential", &self.inner.credential)
            .field("phantom", &self.inner.phantom)
            .field("expires", &self.inner.expires)
            .field("revoked", &self.inner.revoked.load(Ordering::SeqCst))
            .finish()
    }
}

/// Builds a [`Lease`]; [`LeaseBuilder::build`] draws the phantom token.
#[derive(Debug, Clone)]
pub struct LeaseBuilder {
    session: String,
    credential: String,
    expires: Option<SystemTime>,
}

impl LeaseBuilder {
    /// Sets a time after which the lease is refused.
    pub fn expires_at(&mut self, at: SystemTime) -> &mut LeaseBuilder {
        self.expires = Some(at);
        self
    }

    /// Checks the session id and draws a random phantom token.
    pub fn build(&self) -> Result<Lease, Error> {
        if self.session.is_empty()
            || self.session.len() > 256
            || self.session.chars().any(char::is_control)
        {
            return Err(ErrorKind::InvalidConfig {
                name: "session id",
                value: truncate(&self.session),
                reason: "give 1 to 256 bytes without control characters",
            }
            .into());
        }
        Ok(Lease {
            inner: Arc::new(Inner {
                session: self.session.clone(),
                credential: self.credential.clone(),
                phantom: PhantomToken::random()?,
                expires: self.expires,
                revoked: AtomicBool::new(false),
            }),
        })
    }
}
