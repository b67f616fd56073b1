//! Request classes and the classifiers that assign them.

use crate::answer::Answer;
use crate::error::{Error, ErrorKind, truncate};
use crate::head::RequestHead;
use crate::streamed::BodyReader;
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
///
/// A [`Broker`](crate::Broker) also asks its classifiers (those of its
/// enabled features, then [`BrokerBuilder::classifier`](crate::BrokerBuilder::classifier)'s)
/// how a request's protocol wants two things done, through the provided
/// methods: the shape of a refusal ([`RequestClassifier::refusal`]), and
/// a body read and judged by the classifier itself
/// ([`RequestClassifier::streams_body`],
/// [`RequestClassifier::start_body`]). The defaults leave both to the
/// broker.
pub trait RequestClassifier: Send + Sync {
    /// A short name for messages (`rest`, `graphql`, ...).
    fn name(&self) -> &str;

    /// Classifies one request.
    fn classify(&self, input: &ClassifyInput<'_>) -> Classification;

    /// The answer to a refusal of `head` with `status`, `message` saying
    /// why, when this classifier's clients read refusals in a shape of
    /// their own (GraphQL clients show `{"errors":[...]}`). `None` (the
    /// default) leaves the broker's plain-text answer.
    fn refusal(&self, head: &RequestHead, status: u16, message: &str) -> Option<Answer> {
        let _ = (head, status, message);
        None
    }

    /// `Some(bound)` when this classifier reads the body of `head` itself
    /// ([`RequestClassifier::start_body`]), bounded by `bound` decoded
    /// bytes instead of [`Limits::max_body`](crate::Limits::max_body);
    /// `None` (the default) when the parser buffers the body.
    fn streams_body(&self, head: &RequestHead) -> Option<u64> {
        let _ = head;
        None
    }

    /// Starts reading the body of `head`, for which
    /// [`RequestClassifier::streams_body`] said `Some`, once the head
    /// passed the broker's checks and the rules and before any body byte
    /// is read. An error refuses the request (answered, the connection
    /// closed, the body unread). The default refuses.
    fn start_body(&self, head: &RequestHead) -> Result<Box<dyn BodyReader>, Error> {
        let _ = head;
        Err(ErrorKind::InvalidConfig {
            name: "classifier",
            value: self.name().to_owned(),
            reason: "it reads no request bodies",
        }
        .into())
    }
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
