//! The GraphQL classifier: queries are reads, mutations and subscriptions
//! are writes, anything ambiguous is refused.

use crate::answer::Answer;
use crate::classify::{Classification, ClassifyInput, RequestClass, RequestClassifier};
use crate::head::RequestHead;
use crate::path_glob::normal_path;
use graphql_classifier::{Classifier, OperationKind};

/// `graphql-query`: a GraphQL query (a read).
pub const GRAPHQL_QUERY: &str = "graphql-query";
/// `graphql-mutation`: a GraphQL mutation (a write).
pub const GRAPHQL_MUTATION: &str = "graphql-mutation";
/// `graphql-subscription`: a GraphQL subscription (treated as a write).
pub const GRAPHQL_SUBSCRIPTION: &str = "graphql-subscription";

/// Classifies `POST /graphql` and `POST /api/graphql` (GitHub
/// Enterprise) by their JSON body, and `GET` on the same paths by the
/// query string (a GET is never a write): [`GRAPHQL_QUERY`],
/// [`GRAPHQL_MUTATION`] or [`GRAPHQL_SUBSCRIPTION`]. A body the
/// classifier refuses (duplicate operation names, an anonymous operation
/// beside others, anything it cannot read), a body that was not read, a
/// `Content-Encoding`, or any other method on those paths is refused, so
/// the request is denied. Other paths are not its business.
///
/// In a [`Broker`](crate::Broker), every 403 on those paths is answered
/// with `Content-Type: application/json` and a [`graphql_error_body`]
/// ([`RequestClassifier::refusal`]), which GraphQL clients show.
#[derive(Debug, Clone, Default)]
pub struct GraphqlClassifier {
    inner: Classifier,
}

impl GraphqlClassifier {
    /// A classifier with graphql-classifier's default limits.
    pub fn new() -> GraphqlClassifier {
        GraphqlClassifier::default()
    }

    /// A classifier with a configured graphql-classifier.
    pub fn with(inner: Classifier) -> GraphqlClassifier {
        GraphqlClassifier { inner }
    }
}

/// Whether `path` is a GraphQL endpoint (`/graphql`, `/api/graphql`),
/// matched in the rules' normal form, ignoring case and a final `/`, so
/// that no spelling of the endpoint escapes the classifier.
fn is_graphql_path(path: &str) -> bool {
    let norm = normal_path(path)
        .unwrap_or_else(|_| path.to_owned())
        .to_ascii_lowercase();
    let path = norm.trim_end_matches('/');
    path == "/graphql" || path == "/api/graphql"
}

fn refused(reason: impl Into<String>) -> Classification {
    Classification::Refused {
        reason: reason.into(),
    }
}

impl RequestClassifier for GraphqlClassifier {
    fn name(&self) -> &str {
        "graphql"
    }

    fn classify(&self, input: &ClassifyInput<'_>) -> Classification {
        let head = input.head;
        if !is_graphql_path(head.path()) {
            return Classification::NotMine;
        }
        if head.header("content-encoding").is_some() {
            return refused("a GraphQL body must not be encoded");
        }
        let result = match head.method() {
            "POST" => match input.body {
                Some(body) => self.inner.classify_json(body),
                None => return refused("the GraphQL body was not read"),
            },
            "GET" => self.inner.classify_get(head.query().unwrap_or("")),
            other => return refused(format!("method {other:?} is not a GraphQL request")),
        };
        let name = match result {
            Ok(c) => match c.kind {
                OperationKind::Query => GRAPHQL_QUERY,
                OperationKind::Mutation => GRAPHQL_MUTATION,
                OperationKind::Subscription => GRAPHQL_SUBSCRIPTION,
                _ => return refused("an unknown operation kind"),
            },
            Err(e) => return refused(e.to_string()),
        };
        match RequestClass::new(name) {
            Ok(class) => Classification::Class(class),
            Err(e) => refused(e.to_string()),
        }
    }

    fn refusal(&self, head: &RequestHead, status: u16, message: &str) -> Option<Answer> {
        (status == 403 && is_graphql_path(head.path()))
            .then(|| Answer::new(403, "application/json", graphql_error_body(message)))
    }
}

/// A GraphQL-shaped error body for a refused request:
/// `{"errors":[{"message":"..."}]}`.
pub fn graphql_error_body(message: &str) -> String {
    serde_json::json!({ "errors": [ { "message": message } ] }).to_string()
}
