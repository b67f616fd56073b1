//! Every configurable limit refuses with its own typed error.

use graphql_classifier::{Classifier, ErrorKind};

#[test]
fn a_zero_limit_is_refused_by_the_builder() {
    let e = Classifier::builder().max_tokens(0).build().unwrap_err();
    assert_eq!(e.kind(), &ErrorKind::InvalidLimit { name: "max_tokens" });
    assert!(Classifier::builder().max_depth(0).build().is_err());
    assert!(Classifier::builder().max_document_bytes(0).build().is_err());
    assert!(Classifier::builder().max_request_bytes(0).build().is_err());
    assert!(Classifier::builder().max_json_depth(0).build().is_err());
}

#[test]
fn the_token_limit_counts_tokens_at_the_top_and_inside_brackets() {
    let c = Classifier::builder().max_tokens(5).build().unwrap();
    // query Q { a } is five tokens.
    assert!(c.classify_document("query Q { a }", None).is_ok());
    // The sixth token is the closing brace.
    let e = c.classify_document("query Q { a b }", None).unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::TooManyTokens {
            offset: 14,
            limit: 5
        }
    );
    let e = c
        .classify_document("query Q { a } query", None)
        .unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::TooManyTokens {
            offset: 14,
            limit: 5
        }
    );
}

#[test]
fn the_depth_limit_counts_every_bracket_kind() {
    let c = Classifier::builder().max_depth(2).build().unwrap();
    assert!(c.classify_document("query Q { a(x: 1) }", None).is_ok());
    let e = c
        .classify_document("query Q { a(x: [1]) }", None)
        .unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::TooDeep {
            offset: 15,
            limit: 2
        }
    );
    let e = c
        .classify_document("query Q($v: [Int] = [[1]]) { a }", None)
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TooDeep { offset: 21, .. }),
        "{e}"
    );
}

#[test]
fn size_limits_apply_to_documents_bodies_and_query_strings() {
    let c = Classifier::builder()
        .max_document_bytes(10)
        .max_request_bytes(40)
        .build()
        .unwrap();
    let e = c.classify_document("query Q { a }", None).unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::DocumentTooLarge {
            size: 13,
            limit: 10
        }
    );
    let e = c
        .classify_json(br#"{"query": "query Q { a }"}"#)
        .unwrap_err();
    assert_eq!(
        e.kind(),
        &ErrorKind::DocumentTooLarge {
            size: 13,
            limit: 10
        }
    );
    let body = format!(
        r#"{{"query": "{{a}}", "variables": {{"x": "{}"}}}}"#,
        "y".repeat(40)
    );
    let e = c.classify_json(body.as_bytes()).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::RequestTooLarge { limit: 40, .. }),
        "{e}"
    );
    let e = c
        .classify_get(&format!("query={}", "a".repeat(40)))
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::RequestTooLarge { limit: 40, .. }),
        "{e}"
    );
}

#[test]
fn the_json_depth_limit_is_capped_below_the_json_reader_limit() {
    let c = Classifier::builder().max_json_depth(1_000).build().unwrap();
    let body = format!(
        r#"{{"query": "{{a}}", "variables": {{"v": {}1{}}}}}"#,
        "[".repeat(150),
        "]".repeat(150)
    );
    let e = c.classify_json(body.as_bytes()).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::JsonTooDeep { limit: 100, .. }),
        "{e}"
    );
}
