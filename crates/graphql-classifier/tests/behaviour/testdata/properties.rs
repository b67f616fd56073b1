//! Properties: no input panics; offsets lie inside the input; a model of
//! operation selection predicts every verdict on generated documents.

use graphql_classifier::{Classifier, OperationKind};
use proptest::prelude::*;

use super::oracle::Verdict;

fn kind() -> impl Strategy<Value = OperationKind> {
    prop_oneof![
        Just(OperationKind::Query),
        Just(OperationKind::Mutation),
        Just(OperationKind::Subscription)
    ]
}

fn name() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        4 => prop::sample::select(vec!["A", "B", "query", "mutation", "on", "fragment", "x_1"])
            .prop_map(|s| Some(s.to_owned())),
    ]
}

/// Ignored tokens, some of them holding text that looks like definitions.
fn gap() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        " ",
        "\n",
        ",",
        "\t",
        "\r\n",
        " # mutation M { b } }\n",
        "# \u{e9}\"\"\" {\r\n",
    ])
    .prop_map(str::to_owned)
}

/// A selection set body holding brackets inside strings and comments.
fn body() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "{ a }",
        "{ a(s: \"} mutation M { b } {\") }",
        "{ a(s: \"\"\" } \\\"\"\" { \"\"\") { b } }",
        "{ a # }\n b }",
        "{ a(x: [[1], {k: [2]}]) ... on T { c } ...F }",
    ])
    .prop_map(str::to_owned)
}

/// The model: the crate's selection rules over the generated list.
fn model(ops: &[(OperationKind, Option<String>)], name: Option<&str>) -> Verdict {
    if ops.len() > 1 {
        if ops.iter().any(|(_, n)| n.is_none()) {
            return Verdict::Refused("AnonymousAmongOthers");
        }
        let mut names: Vec<_> = ops.iter().map(|(_, n)| n.clone()).collect();
        names.sort();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Verdict::Refused("DuplicateOperationName");
        }
    }
    let chosen = match name.filter(|n| !n.is_empty()) {
        Some(w) => ops.iter().find(|(_, n)| n.as_deref() == Some(w)),
        None if ops.len() == 1 => ops.first(),
        None => return Verdict::Refused("OperationNameRequired"),
    };
    match chosen {
        Some((k, n)) => Verdict::Runs(k.as_str(), n.clone()),
        None => Verdict::Refused("OperationNotFound"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics_and_offsets_are_inside(text in ".{0,200}", bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let c = Classifier::new();
        for r in [c.classify_document(&text, None), c.classify_get(&text), c.classify_json(text.as_bytes()), c.classify_json(&bytes)] {
            if let Err(e) = r {
                if let Some(offset) = e.offset() {
                    prop_assert!(offset <= text.len().max(bytes.len()), "{e}");
                }
                prop_assert!(!e.to_string().is_empty());
            }
        }
    }

    #[test]
    fn grammar_shaped_noise_never_panics(parts in prop::collection::vec(prop::sample::select(vec![
        "query", "mutation", "fragment", "on", "{", "}", "(", ")", "[", "]", "$", ":", "@", "...",
        "\"", "\"\"\"", "\\", "#", "\n", "\r", " ", "1", "-", ".", "e", "\\u", "D800", "\u{feff}",
    ]), 0..60)) {
        let doc: String = parts.concat();
        let _ = Classifier::new().classify_document(&doc, None);
        let _ = Classifier::new().classify_document(&doc, Some("A"));
    }

    #[test]
    fn selection_follows_the_model(
        ops in prop::collection::vec((kind(), name(), body(), gap()), 1..5),
        lead in gap(),
        asked in prop::option::of(prop::sample::select(vec!["", "A", "B", "query", "on", "nope"])),
        with_fragment in any::<bool>(),
    ) {
        let mut doc = lead;
        for (k, n, b, g) in &ops {
            doc.push_str(k.as_str());
            if let Some(n) = n {
                doc.push(' ');
                doc.push_str(n);
            }
            doc.push_str(b);
            doc.push_str(g);
        }
        if with_fragment {
            doc.push_str("fragment F on T { z }");
        }
        let list: Vec<_> = ops.iter().map(|(k, n, _, _)| (*k, n.clone())).collect();
        let ours = Verdict::of(Classifier::new().classify_document(&doc, asked));
        prop_assert_eq!(ours, model(&list, asked), "{:?}", doc);
    }

    #[test]
    fn a_trailing_comment_changes_nothing(
        ops in prop::collection::vec((kind(), name(), body(), gap()), 1..4),
        comment in "[^\r\n\u{0}-\u{1f}\u{7f}-\u{9f}\u{2028}\u{2029}]{0,40}",
    ) {
        let mut doc = String::new();
        for (k, n, b, g) in &ops {
            doc.push_str(k.as_str());
            if let Some(n) = n {
                doc.push(' ');
                doc.push_str(n);
            }
            doc.push_str(b);
            doc.push_str(g);
        }
        let c = Classifier::new();
        let plain = Verdict::of(c.classify_document(&doc, None));
        let commented = Verdict::of(c.classify_document(&format!("{doc}\n#{comment}"), None));
        prop_assert_eq!(plain, commented);
    }
}
