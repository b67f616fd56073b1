//! The crate's one error type, its kinds grouped by the part of the
//! broker that refuses.

mod broker;
mod http;

pub use broker::{LeaseErrorKind, RulesErrorKind, TlsErrorKind};
pub use http::HttpErrorKind;
use std::fmt;

/// An error from `cred-broker`: a request refused by the parser, a request
/// refused at injection time, or configuration (limits, rules, credentials)
/// that cannot be used. [`Error::kind`] says which, with the offending value
/// or byte offset; [`Error::response`] says how a broker answers it.
///
/// Offsets in head errors count from the first byte of the request; offsets
/// in chunked-body errors count from the first byte of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

/// How a broker answers a refused request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Response {
    /// `400 Bad Request`, then close the connection: the framing cannot be
    /// trusted, so nothing after this request can be read safely.
    BadRequestAndClose,
    /// `403 Forbidden`; the framing was sound, so the connection may stay
    /// open for the next request.
    Forbidden,
    /// Not a request error: a configuration value was refused when it was
    /// loaded. Fix the configuration.
    NotARequest,
    /// `502 Bad Gateway`, then close the connection: the upstream could not
    /// be reached, did not prove its identity, or answered unreadably.
    BadGatewayAndClose,
}

impl Response {
    /// The HTTP status code to send, if this is a request error.
    pub fn status(self) -> Option<u16> {
        match self {
            Response::BadRequestAndClose => Some(400),
            Response::Forbidden => Some(403),
            Response::NotARequest => None,
            Response::BadGatewayAndClose => Some(502),
        }
    }
}

/// What went wrong, by the part of the broker that refused, with the
/// offending value. Each group's `Display` is the message itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request parser refused the request (400 and close).
    #[error(transparent)]
    Http(HttpErrorKind),
    /// The session CA or a TLS connection.
    #[error(transparent)]
    Tls(TlsErrorKind),
    /// A lease or a credential refused the request (403).
    #[error(transparent)]
    Lease(LeaseErrorKind),
    /// A rule file that does not compile, or a request the rules refuse.
    #[error(transparent)]
    Rules(RulesErrorKind),
    /// A push body the push rule's readers refuse (400 and close), or a
    /// push rule that does not compile.
    #[cfg(feature = "git")]
    #[error(transparent)]
    Push(push_rule::ErrorKind),
    /// A credential's secret could not be read from its source.
    #[error("the secret from {from} could not be read: {reason}")]
    SecretUnavailable {
        /// Where it was to come from (never the value).
        from: String,
        /// Why not.
        reason: String,
    },
    /// A configuration value out of its accepted range.
    #[error("configuration value {name} = {value} is refused: {reason}")]
    InvalidConfig {
        /// The setting's name.
        name: &'static str,
        /// The value given (never a secret).
        value: String,
        /// The accepted range or form.
        reason: &'static str,
    },
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// How a broker answers this error.
    pub fn response(&self) -> Response {
        match &self.kind {
            ErrorKind::Http(_) => Response::BadRequestAndClose,
            ErrorKind::Tls(k) => match k {
                TlsErrorKind::SniMismatch { .. } => Response::Forbidden,
                TlsErrorKind::Upstream { .. } => Response::BadGatewayAndClose,
                TlsErrorKind::InvalidLeafHost { .. } | TlsErrorKind::Certificate { .. } => {
                    Response::NotARequest
                }
                TlsErrorKind::Client { .. } => Response::BadRequestAndClose,
            },
            ErrorKind::Lease(_) => Response::Forbidden,
            ErrorKind::Rules(k) => match k {
                RulesErrorKind::RuleSyntax { .. }
                | RulesErrorKind::InvalidRule { .. }
                | RulesErrorKind::InvalidHostPattern { .. } => Response::NotARequest,
                RulesErrorKind::RuleDenied { .. }
                | RulesErrorKind::TargetMismatch { .. }
                | RulesErrorKind::NoPushRule
                | RulesErrorKind::PushRefused { .. } => Response::Forbidden,
            },
            #[cfg(feature = "git")]
            ErrorKind::Push(k) if k.is_config() => Response::NotARequest,
            #[cfg(feature = "git")]
            ErrorKind::Push(_) => Response::BadRequestAndClose,
            ErrorKind::InvalidConfig { .. } | ErrorKind::SecretUnavailable { .. } => {
                Response::NotARequest
            }
        }
    }
}

/// Truncates a value for an error message.
pub(crate) fn truncate(s: &str) -> String {
    s.chars().take(256).collect()
}

/// Truncates raw bytes for an error message.
pub(crate) fn truncate_bytes(b: &[u8]) -> String {
    truncate(&String::from_utf8_lossy(&b[..b.len().min(256)]))
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

macro_rules! from_group {
    ($($group:ident => $variant:ident),* $(,)?) => {$(
        impl From<$group> for ErrorKind {
            fn from(kind: $group) -> ErrorKind {
                ErrorKind::$variant(kind)
            }
        }

        impl From<$group> for Error {
            fn from(kind: $group) -> Error {
                Error { kind: ErrorKind::$variant(kind) }
            }
        }
    )*};
}

from_group! {
    HttpErrorKind => Http,
    TlsErrorKind => Tls,
    LeaseErrorKind => Lease,
    RulesErrorKind => Rules,
}

#[cfg(feature = "git")]
impl From<push_rule::Error> for Error {
    fn from(e: push_rule::Error) -> Error {
        Error {
            kind: ErrorKind::Push(e.into_kind()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for Error {}
