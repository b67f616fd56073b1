//! Says what a GraphQL request would do on the server: run a query, a
//! mutation or a subscription, failing closed on anything ambiguous.
//!
//! A broker that lets a read-only session send GraphQL queries must refuse
//! writes. This crate reads the request the way the strictest plausible
//! server would and refuses every document that two readers could
//! understand differently (SPEC R-GRAPHQL-1):
//!
//! - a strict lexer of its own: no byte order mark; no C0 control
//!   character (tab and line ends aside) and no lone carriage return
//!   anywhere; no non-ASCII outside strings and comments; no C1 control
//!   or Unicode line separator in a comment; no bad escapes (a lone `\uD800`); no numbers
//!   glued to names (`123abc`); no piles of quotes where block strings are
//!   read differently (four quotes in a row, `\"""` followed by a quote);
//! - a flat scanner of top-level definitions that reads only operation
//!   kinds and names and skips bracketed parts by counting brackets on an
//!   explicit, bounded stack: nothing recurses, so no input can exhaust
//!   the stack;
//! - operation selection as the spec's GetOperation, stricter where servers
//!   differ: duplicate operation names, an anonymous operation next to
//!   others, an `operationName` that matches nothing, type-system
//!   definitions and fragment-only documents are refused;
//! - a request layer for JSON bodies ([`Classifier::classify_json`]) and
//!   GET query strings ([`Classifier::classify_get`], never a write path).
//!
//! Every refusal is an [`Error`] whose [`ErrorKind`] carries the byte
//! offset, and whose `Display` quotes the bytes found there.
//!
//! What is read, and what is not: the whole document is lexed strictly
//! and its top level is parsed exactly (definition keywords, operation
//! names, variable and directive headers, fragment headers). Inside
//! brackets only the tokens and the bracket structure are checked, not
//! the grammar, and nothing is validated against a schema. A document
//! whose inside is malformed may therefore be classified rather than
//! refused; the server refuses to run it, and since the token stream and
//! the brackets are read exactly, no reader can see a different top level.
//!
//! # Example
//!
//! ```
//! use graphql_classifier::{Classifier, ErrorKind, OperationKind};
//!
//! let classifier = Classifier::new();
//!
//! let body = br#"{"query": "query Viewer { viewer { login } }", "variables": {}}"#;
//! let c = classifier.classify_json(body).unwrap();
//! assert_eq!(c.kind, OperationKind::Query);
//! assert_eq!(c.operation_name.as_deref(), Some("Viewer"));
//!
//! // Keywords are names: this is a query named `mutation`.
//! let c = classifier.classify_document("query mutation { mutation }", None).unwrap();
//! assert_eq!(c.kind, OperationKind::Query);
//!
//! // The server runs the last of several operations sharing a name.
//! let e = classifier
//!     .classify_document("query A { a } mutation A { b }", Some("A"))
//!     .unwrap_err();
//! assert!(matches!(e.kind(), ErrorKind::DuplicateOperationName { offset: 14, .. }));
//!
//! // A lone CR ends a comment for some readers and not for others.
//! let e = classifier
//!     .classify_document("query Q { a } #x\rmutation M { b }", None)
//!     .unwrap_err();
//! assert_eq!(e.offset(), Some(16));
//! ```
//!
//! # Input safety
//!
//! Every limit is set on [`ClassifierBuilder`]; the defaults are safe:
//!
//! - documents of at most [`DEFAULT_MAX_DOCUMENT_BYTES`] bytes
//!   ([`ErrorKind::DocumentTooLarge`]);
//! - request bodies and GET query strings of at most
//!   [`DEFAULT_MAX_REQUEST_BYTES`] bytes ([`ErrorKind::RequestTooLarge`]);
//! - at most [`DEFAULT_MAX_TOKENS`] tokens ([`ErrorKind::TooManyTokens`]);
//! - brackets nested at most [`DEFAULT_MAX_DEPTH`] deep, counted on a heap
//!   stack ([`ErrorKind::TooDeep`]);
//! - JSON nested at most [`DEFAULT_MAX_JSON_DEPTH`] deep (capped at 100),
//!   checked by a flat pre-scan before the JSON reader runs
//!   ([`ErrorKind::JsonTooDeep`]);
//! - names and keys echoed in errors are cut to 64 characters, quoted
//!   input to 24 bytes.
//!
//! Nothing in this crate recurses on input (the JSON reader does, within
//! the depth the pre-scan allows; the deep-nesting tests run on a 64 KiB
//! stack), nothing panics, and the work is linear in the input apart from
//! sorting operation names to find duplicates.
//!
//! # Crate features
//!
//! This crate has no optional features.

mod classifier;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod get;
mod group;
mod lexer;
mod operation;
mod request;
mod scan;
mod select;

pub use classifier::{
    Classifier, ClassifierBuilder, DEFAULT_MAX_DEPTH, DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_JSON_DEPTH, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TOKENS,
};
pub use error::{Error, ErrorKind};
pub use operation::{Classification, Operation, OperationKind};
