//! Deep nesting gives a typed error, never a crash, even on a 64 KiB stack.

use graphql_classifier::{Classifier, ErrorKind};

const STACK: usize = 64 * 1024;
const N: usize = 1_000_000;

/// Runs `f` on a thread with a 64 KiB stack.
fn small_stack<F: FnOnce() + Send + 'static>(f: F) {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

/// A classifier whose size and token limits let a million brackets reach the
/// depth check.
fn roomy(depth: usize) -> Classifier {
    Classifier::builder()
        .max_document_bytes(16 << 20)
        .max_request_bytes(16 << 20)
        .max_tokens(4 * N)
        .max_depth(depth)
        .build()
        .unwrap()
}

#[test]
fn a_million_braces_is_too_deep() {
    small_stack(|| {
        let doc = "{".repeat(N);
        let e = roomy(64).classify_document(&doc, None).unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::TooDeep {
                offset: 64,
                limit: 64
            }
        );
        // With the default limits the size limit or the depth limit stops it.
        assert!(Classifier::new().classify_document(&doc, None).is_err());
    });
}

#[test]
fn a_million_list_literals_is_too_deep() {
    small_stack(|| {
        let doc = format!("query Q {{ a(x: {}1{}) }}", "[".repeat(N), "]".repeat(N));
        let e = roomy(64).classify_document(&doc, None).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::TooDeep { limit: 64, .. }),
            "{e}"
        );
    });
}

#[test]
fn a_million_brackets_within_a_raised_limit_still_never_recurse() {
    small_stack(|| {
        let doc = format!("query Q {{ a(x: {}1{}) }}", "[".repeat(N), "]".repeat(N));
        let c = roomy(2 * N).classify_document(&doc, None).unwrap();
        assert_eq!(c.operation_name.as_deref(), Some("Q"));
        let open = "{".repeat(N);
        let e = roomy(2 * N).classify_document(&open, None).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::UnclosedBracket { offset: 0, .. }),
            "{e}"
        );
    });
}

#[test]
fn a_million_nested_json_arrays_is_too_deep() {
    small_stack(|| {
        let body = format!(
            r#"{{"query": "{{ a }}", "variables": {{"v": {}{}}}}}"#,
            "[".repeat(N),
            "]".repeat(N)
        );
        let e = roomy(64).classify_json(body.as_bytes()).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::JsonTooDeep { limit: 32, .. }),
            "{e}"
        );
        let batch = "[".repeat(N);
        assert!(roomy(64).classify_json(batch.as_bytes()).is_err());
    });
}

#[test]
fn a_million_brackets_inside_a_json_query_is_too_deep() {
    small_stack(|| {
        let body = format!(r#"{{"query": "{}"}}"#, "{".repeat(N));
        let e = roomy(64).classify_json(body.as_bytes()).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::TooDeep { .. }), "{e}");
    });
}

#[test]
fn json_nesting_at_the_limit_parses_on_a_small_stack() {
    small_stack(|| {
        let body = format!(
            r#"{{"query": "{{ a }}", "variables": {{"v": {}1{}}}}}"#,
            "[".repeat(30),
            "]".repeat(30)
        );
        Classifier::new().classify_json(body.as_bytes()).unwrap();
    });
}
