//! The GraphQL classifier agrees with apollo-parser on every document that
//! apollo-parser parses cleanly (no errors, no limit reached), except where
//! it refuses on purpose (`fuzzing::is_deliberate_refusal`).
#![no_main]

use apollo_parser::cst::{self, CstNode};
use graphql_classifier::{Classifier, fuzzing::is_deliberate_refusal};
use libfuzzer_sys::fuzz_target;

const RECURSION_LIMIT: usize = 200;
const TOKEN_LIMIT: usize = 20_000;

type Ops = Vec<(&'static str, Option<String>)>;

/// apollo-parser's operations, or `None` when it does not parse cleanly.
/// The flag says whether a type-system definition was seen.
fn apollo(doc: &str) -> Option<(Ops, usize, bool)> {
    if line_end_in_quoted_string(doc) {
        return None;
    }
    let tree = apollo_parser::Parser::new(doc)
        .recursion_limit(RECURSION_LIMIT)
        .token_limit(TOKEN_LIMIT)
        .parse();
    if tree.errors().len() > 0
        || tree.recursion_limit().high >= RECURSION_LIMIT
        || tree.token_limit().high >= TOKEN_LIMIT
        || tree.document().syntax().text().to_string().len() != doc.len()
    {
        return None;
    }
    let (mut ops, mut fragments, mut type_system) = (Vec::new(), 0, false);
    for def in tree.document().definitions() {
        match def {
            cst::Definition::OperationDefinition(op) => {
                let kind = match op.operation_type() {
                    None => "query",
                    Some(t) if t.query_token().is_some() => "query",
                    Some(t) if t.mutation_token().is_some() => "mutation",
                    Some(_) => "subscription",
                };
                ops.push((kind, op.name().map(|n| n.text().to_string())));
            }
            cst::Definition::FragmentDefinition(_) => fragments += 1,
            _ => type_system = true,
        }
    }
    Some((ops, fragments, type_system))
}

/// Whether apollo-parser lexes a quoted (not block) string holding a line
/// end. The GraphQL grammar forbids one (a StringCharacter is no
/// LineTerminator) and the classifier refuses it as an unterminated string;
/// apollo-parser accepts it, so such documents say nothing about agreement.
fn line_end_in_quoted_string(doc: &str) -> bool {
    let (tokens, _) = apollo_parser::Lexer::new(doc).lex();
    tokens.iter().any(|t| {
        t.kind() == apollo_parser::TokenKind::StringValue
            && !t.data().starts_with("\"\"\"")
            && t.data().contains(['\n', '\r'])
    })
}

/// Operation selection with the crate's rules, written again.
fn select(
    ops: &Ops,
    fragments: usize,
    type_system: bool,
    name: Option<&str>,
) -> Result<(&'static str, Option<String>), &'static str> {
    if type_system {
        return Err("NonExecutableDefinition");
    }
    if ops.is_empty() {
        return Err(if fragments > 0 {
            "NoOperation"
        } else {
            "EmptyDocument"
        });
    }
    if ops.len() > 1 {
        if ops.iter().any(|(_, n)| n.is_none()) {
            return Err("AnonymousAmongOthers");
        }
        for (i, (_, a)) in ops.iter().enumerate() {
            if ops[i + 1..].iter().any(|(_, b)| b == a) {
                return Err("DuplicateOperationName");
            }
        }
    }
    match name.filter(|n| !n.is_empty()) {
        Some(w) => ops
            .iter()
            .find(|(_, n)| n.as_deref() == Some(w))
            .cloned()
            .ok_or("OperationNotFound"),
        None if ops.len() == 1 => Ok(ops[0].clone()),
        None => Err("OperationNameRequired"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = std::str::from_utf8(data) else {
        return;
    };
    let Some((ops, fragments, type_system)) = apollo(doc) else {
        return;
    };
    let classifier = Classifier::new();
    let mut names: Vec<Option<&str>> = vec![None, Some("")];
    names.extend(ops.iter().filter_map(|(_, n)| n.as_deref().map(Some)));
    for name in names {
        let want = select(&ops, fragments, type_system, name);
        let ours = classifier.classify_document(doc, name);
        match (&ours, &want) {
            (Ok(c), Ok((kind, n))) if c.kind.as_str() == *kind && c.operation_name == *n => {}
            (Err(e), Err(code)) if e.code() == *code => {}
            (Err(e), _) if is_deliberate_refusal(e) => {}
            _ => panic!("{doc:?} {name:?}: ours {ours:?}, apollo-parser {want:?}"),
        }
    }
});
