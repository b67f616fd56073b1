//! Two independent parsers as oracles: apollo-parser (with its limits and
//! its error list honoured) and cynic-parser. Each parse is turned into the
//! list of operations, and operation selection is applied with the same
//! rules as the crate, written again here.

use apollo_parser::cst::{self, CstNode};

/// What a reader says a request would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// An operation would run: its kind keyword and name.
    Runs(&'static str, Option<String>),
    /// Refused, with the crate's error code for the reason.
    Refused(&'static str),
}

impl Verdict {
    pub(crate) fn of(
        r: Result<graphql_classifier::Classification, graphql_classifier::Error>,
    ) -> Self {
        match r {
            Ok(c) => Verdict::Runs(c.kind.as_str(), c.operation_name),
            Err(e) => Verdict::Refused(e.code()),
        }
    }
}

/// Recursion and token limits given to apollo-parser.
pub(crate) const APOLLO_RECURSION_LIMIT: usize = 500;
pub(crate) const APOLLO_TOKEN_LIMIT: usize = 1_000_000;

struct Outline {
    operations: Vec<(&'static str, Option<String>)>,
    fragments: usize,
    non_executable: bool,
}

fn select(o: Outline, operation_name: Option<&str>) -> Verdict {
    if o.non_executable {
        return Verdict::Refused("NonExecutableDefinition");
    }
    let ops = o.operations;
    if ops.is_empty() {
        return Verdict::Refused(if o.fragments > 0 {
            "NoOperation"
        } else {
            "EmptyDocument"
        });
    }
    if ops.len() > 1 {
        if ops.iter().any(|(_, n)| n.is_none()) {
            return Verdict::Refused("AnonymousAmongOthers");
        }
        for (i, (_, a)) in ops.iter().enumerate() {
            if ops[i + 1..].iter().any(|(_, b)| b == a) {
                return Verdict::Refused("DuplicateOperationName");
            }
        }
    }
    match operation_name.filter(|n| !n.is_empty()) {
        Some(wanted) => match ops.into_iter().find(|(_, n)| n.as_deref() == Some(wanted)) {
            Some((k, n)) => Verdict::Runs(k, n),
            None => Verdict::Refused("OperationNotFound"),
        },
        None if ops.len() == 1 => {
            let (k, n) = ops.into_iter().next().unwrap();
            Verdict::Runs(k, n)
        }
        None => Verdict::Refused("OperationNameRequired"),
    }
}

fn apollo_outline(doc: &str) -> Option<Outline> {
    let tree = apollo_parser::Parser::new(doc)
        .recursion_limit(APOLLO_RECURSION_LIMIT)
        .token_limit(APOLLO_TOKEN_LIMIT)
        .parse();
    if tree.errors().len() > 0
        || tree.recursion_limit().high >= APOLLO_RECURSION_LIMIT
        || tree.token_limit().high >= APOLLO_TOKEN_LIMIT
    {
        return None;
    }
    let mut o = Outline {
        operations: Vec::new(),
        fragments: 0,
        non_executable: false,
    };
    for def in tree.document().definitions() {
        match def {
            cst::Definition::OperationDefinition(op) => {
                let kind = match op.operation_type() {
                    None => "query",
                    Some(t) if t.query_token().is_some() => "query",
                    Some(t) if t.mutation_token().is_some() => "mutation",
                    Some(t) if t.subscription_token().is_some() => "subscription",
                    Some(_) => return None,
                };
                let name = op.name().map(|n| n.text().to_string());
                o.operations.push((kind, name));
            }
            cst::Definition::FragmentDefinition(_) => o.fragments += 1,
            _ => o.non_executable = true,
        }
    }
    // A clean parse covers the whole input.
    if tree.document().syntax().text().to_string().len() != doc.len() {
        return None;
    }
    Some(o)
}

/// apollo-parser's verdict, or `None` when it reports any error or reaches
/// a limit.
pub(crate) fn apollo(doc: &str, operation_name: Option<&str>) -> Option<Verdict> {
    apollo_outline(doc).map(|o| select(o, operation_name))
}

/// The operation names apollo-parser sees, in order.
pub(crate) fn apollo_names(doc: &str) -> Vec<String> {
    apollo_outline(doc)
        .map(|o| o.operations.into_iter().filter_map(|(_, n)| n).collect())
        .unwrap_or_default()
}

/// cynic-parser's verdict, or `None` when it fails (its executable parser
/// refuses type-system definitions) or panics (0.9.1 overflows on some
/// piles of quotes in debug builds).
pub(crate) fn cynic(doc: &str, operation_name: Option<&str>) -> Option<Verdict> {
    quiet_cynic_panics();
    std::panic::catch_unwind(|| cynic_verdict(doc, operation_name))
        .ok()
        .flatten()
}

/// Keeps cynic-parser's caught panics out of the test log; every other
/// panic is reported as usual.
fn quiet_cynic_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let from_cynic = info
                .location()
                .is_some_and(|l| l.file().contains("cynic-parser"));
            if !from_cynic {
                default(info);
            }
        }));
    });
}

fn cynic_verdict(doc: &str, operation_name: Option<&str>) -> Option<Verdict> {
    let parsed = cynic_parser::parse_executable_document(doc).ok()?;
    let operations = parsed
        .operations()
        .map(|op| {
            let kind = match op.operation_type() {
                cynic_parser::common::OperationType::Query => "query",
                cynic_parser::common::OperationType::Mutation => "mutation",
                cynic_parser::common::OperationType::Subscription => "subscription",
            };
            (kind, op.name().map(str::to_owned))
        })
        .collect();
    let o = Outline {
        operations,
        fragments: parsed.fragments().count(),
        non_executable: false,
    };
    Some(select(o, operation_name))
}
