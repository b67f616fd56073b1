//! Every rule where the two parsers that came before this crate differed
//! (`testdata/pattern_differences.toml`, `testdata/head_differences.toml`),
//! with the way it was resolved.

use crate::load;
use crate::tables::{HeadCase, PatternCase, check_head, check_pattern};
use serde::Deserialize;

/// What each former parser did, and why a row is not resolved to the
/// stricter of the two.
#[derive(Deserialize)]
struct Before {
    proxy_was: String,
    broker_was: String,
    stricter: bool,
    why: Option<String>,
}

fn check_before(b: &Before, intent: &str) {
    assert_ne!(b.proxy_was, b.broker_was, "{intent}: not a difference");
    for was in [&b.proxy_was, &b.broker_was] {
        assert!(
            was.starts_with("accept") || was.starts_with("refuse"),
            "{intent}: say accept or refuse first: {was}"
        );
    }
    assert!(
        b.stricter || b.why.as_ref().is_some_and(|w| !w.is_empty()),
        "{intent}: a row not resolved to the stricter rule says why"
    );
}

#[derive(Deserialize)]
struct PatternRow {
    #[serde(flatten)]
    before: Before,
    #[serde(flatten)]
    case: PatternCase,
}

#[test]
fn host_pattern_differences_are_resolved() {
    for row in load::<PatternRow>("pattern_differences.toml") {
        check_before(&row.before, &row.case.intent);
        check_pattern(&row.case);
    }
}

#[derive(Deserialize)]
struct HeadRow {
    #[serde(flatten)]
    before: Before,
    #[serde(flatten)]
    case: HeadCase,
}

#[test]
fn head_differences_are_resolved() {
    for row in load::<HeadRow>("head_differences.toml") {
        check_before(&row.before, &row.case.intent);
        let refuses = row.case.error.is_some();
        let someone_refused = [&row.before.proxy_was, &row.before.broker_was]
            .iter()
            .any(|w| w.starts_with("refuse"));
        assert!(
            refuses || !someone_refused || !row.before.stricter,
            "{}: marked stricter but reads what one parser refused",
            row.case.intent
        );
        check_head(&row.case);
    }
}
