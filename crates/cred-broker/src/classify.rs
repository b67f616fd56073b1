//! Request classes and the classifiers that assign them.

use crate::error::{Error, ErrorKind, truncate};
use crate::head::RequestHead;
use std::borrow::Cow;
use std::fmt;

/// The name of a request class that rules can refer to, such as
/// `rest-read`: 1 to 64 bytes of lower-case ASCII letters, digits and `-`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestClass(Cow<'static, str>);

impl RequestClass {
    /// `rest-read`: a REST request with a safe method (`GET`, `HEAD`,
    /// `OPTIONS`).
    pub const REST_READ: RequestClass = RequestClass(Cow::Borrowed("rest-read"));
    /// `rest-write`: a REST request with `POST`, `PUT`, `PATCH` or `DELETE`.
    pub const REST_WRITE: RequestClass = RequestClass(Cow::Borrowed("rest-write"));

    /// Checks and wraps a class name.
    pub fn new(name: &str) -> Result<RequestClass, Error> {
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(ErrorKind::InvalidConfig {
                name: "request class",
                value: truncate(name),
                reason: "use 1 to 64 lower-case letters, digits and '-'",
            }
            .into());
        }
        Ok(RequestClass(Cow::Owned(name.to_owned())))
    }

    /// The class name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a classifier says about one request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Classification {
    /// The request belongs to this class.
    Class(RequestClass),
    /// This classifier does not handle the request; ask the next one.
    NotMine,
    /// This classifier handles the request but cannot classify it (for
    /// example a body it cannot read). The request is denied.
    Refused {
        /// Why, for the decision's message (never a secret).
        reason: String,
    },
}

/// What a classifier sees: the checked head and, when the caller has read
/// it, the decoded body.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ClassifyInput<'a> {
    /// The request head.
    pub head: &'a RequestHead,
    /// The decoded body, if it has been read.
    pub body: Option<&'a [u8]>,
}

impl<'a> ClassifyInput<'a> {
    /// An input with the head only.
    pub fn head(head: &'a RequestHead) -> ClassifyInput<'a> {
        ClassifyInput { head, body: None }
    }

    /// An input with head and body.
    pub fn with_body(head: &'a RequestHead, body: &'a [u8]) -> ClassifyInput<'a> {
        ClassifyInput {
            head,
            body: Some(body),
        }
    }
}

/// Turns a request into a class the rules can name. Classifiers are asked
/// in order; the first that does not answer [`Classification::NotMine`]
/// decides. A request no classifier takes is denied.
pub trait RequestClassifier: Send + Sync {
    /// A short name for messages (`rest`, `graphql`, ...).
    fn name(&self) -> &str;

    /// Classifies one request.
    fn classify(&self, input: &ClassifyInput<'_>) -> Classification;
}

/// The default classifier: `rest-read` for `GET`, `HEAD` and `OPTIONS`,
/// `rest-write` for `POST`, `PUT`, `PATCH` and `DELETE`. Every other method
/// and every request asking for a protocol upgrade is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct RestClassifier;

impl RequestClassifier for RestClassifier {
    fn name(&self) -> &str {
        "rest"
    }

    fn classify(&self, input: &ClassifyInput<'_>) -> Classification {
        let head = input.head;
        if head.header("upgrade").is_some() {
            return Classification::Refused {
                reason: "protocol upgrades are not brokered".to_owned(),
            };
        }
        match head.method() {
            "GET" | "HEAD" | "OPTIONS" => Classification::Class(RequestClass::REST_READ),
            "POST" | "PUT" | "PATCH" | "DELETE" => Classification::Class(RequestClass::REST_WRITE),
            other => Classification::Refused {
                reason: format!("method {:?} has no REST class", truncate(other)),
            },
        }
    }
}
