//! What a classification says.

use std::fmt;

/// The kind of a GraphQL operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OperationKind {
    /// A read (`query`, or the shorthand `{ ... }`).
    Query,
    /// A write (`mutation`).
    Mutation,
    /// A stream of events (`subscription`).
    Subscription,
}

impl OperationKind {
    /// The kind named by an operation keyword.
    pub fn from_keyword(word: &str) -> Option<Self> {
        match word {
            "query" => Some(Self::Query),
            "mutation" => Some(Self::Mutation),
            "subscription" => Some(Self::Subscription),
            _ => None,
        }
    }

    /// The keyword: `query`, `mutation` or `subscription`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Query => "query",
            Self::Mutation => "mutation",
            Self::Subscription => "subscription",
        }
    }
}

impl fmt::Display for OperationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One operation definition found in a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation<'a> {
    /// Its kind.
    pub kind: OperationKind,
    /// Its name; `None` for an anonymous operation.
    pub name: Option<&'a str>,
    /// Byte offset where its definition starts (its description, if any).
    pub offset: usize,
}

/// The verdict on a request: the operation that would run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// What the operation does.
    pub kind: OperationKind,
    /// Its name; `None` for an anonymous operation.
    pub operation_name: Option<String>,
}
