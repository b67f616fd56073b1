//! Our verdict against apollo-parser's and cynic-parser's on a corpus of
//! published and own documents, plus generated ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use graphql_classifier::Classifier;
use serde::Deserialize;

use super::oracle::{self, Verdict};

#[derive(Deserialize)]
struct Divergences {
    divergence: Vec<Divergence>,
}

/// A document the reference parsers accept and we refuse on purpose.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Divergence {
    file: String,
    error: String,
    reason: String,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/corpus")
}

fn corpus() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for sub in ["apollo-parser", "cynic-parser", "own"] {
        let dir = corpus_dir().join(sub);
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "graphql"))
            .collect();
        paths.sort();
        for p in paths {
            let name = format!("{sub}/{}", p.file_name().unwrap().to_string_lossy());
            out.push((name, std::fs::read_to_string(&p).unwrap()));
        }
    }
    out
}

/// The operation names to try on `doc`: none, empty, each name the oracle
/// sees, and one that matches nothing.
fn names_for(doc: &str) -> Vec<Option<String>> {
    let mut names = vec![
        None,
        Some(String::new()),
        Some("NoSuchOperation".to_owned()),
    ];
    names.extend(oracle::apollo_names(doc).into_iter().map(Some));
    names
}

/// What the two oracles agree on, or why they cannot be compared.
pub(crate) enum Expected {
    /// At least one oracle parsed cleanly and none disagreed.
    Verdict(Verdict),
    /// Neither parses the document cleanly.
    Invalid,
    /// The oracles disagree with each other.
    Disagree(Verdict, Verdict),
}

pub(crate) fn expected(doc: &str, name: Option<&str>) -> Expected {
    match (oracle::apollo(doc, name), oracle::cynic(doc, name)) {
        (None, None) => Expected::Invalid,
        (Some(a), None) => Expected::Verdict(a),
        (None, Some(c)) => Expected::Verdict(c),
        (Some(a), Some(c)) if a == c => Expected::Verdict(a),
        (Some(a), Some(c)) => Expected::Disagree(a, c),
    }
}

#[test]
fn corpus_agrees_with_apollo_and_cynic() {
    let listed: Divergences =
        toml::from_str(&std::fs::read_to_string(corpus_dir().join("divergences.toml")).unwrap())
            .unwrap();
    let mut allowed: BTreeMap<&str, &str> = BTreeMap::new();
    for d in &listed.divergence {
        assert!(!d.reason.trim().is_empty(), "{}: give a reason", d.file);
        allowed.insert(&d.file, &d.error);
    }
    let c = Classifier::new();
    let mut failures = Vec::new();
    let mut seen_divergent = Vec::new();
    let (mut compared, mut documents) = (0, 0);
    for (file, doc) in corpus() {
        let mut counted = false;
        for name in names_for(&doc) {
            let ours = Verdict::of(c.classify_document(&doc, name.as_deref()));
            match expected(&doc, name.as_deref()) {
                Expected::Invalid => {}
                Expected::Disagree(a, b) => {
                    failures.push(format!("{file} {name:?}: oracles disagree: {a:?} vs {b:?}"))
                }
                Expected::Verdict(want) => {
                    compared += 1;
                    counted = true;
                    if ours == want {
                        continue;
                    }
                    match (&ours, allowed.get(file.as_str())) {
                        (Verdict::Refused(code), Some(listed)) if code == listed => {
                            seen_divergent.push(file.clone());
                        }
                        _ => failures
                            .push(format!("{file} {name:?}: ours {ours:?}, theirs {want:?}")),
                    }
                }
            }
        }
        documents += usize::from(counted);
    }
    for d in &listed.divergence {
        if !seen_divergent.contains(&d.file) {
            failures.push(format!(
                "{}: listed as divergent but agrees (or is not parsed)",
                d.file
            ));
        }
    }
    assert!(
        documents >= 70,
        "only {documents} corpus documents were comparable"
    );
    assert!(
        failures.is_empty(),
        "{} disagreements over {compared} verdicts:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A small deterministic generator (xorshift) of executable documents that
/// mix the constructs where readers could go astray.
pub(crate) struct Gen(u64);

impl Gen {
    pub(crate) fn new(seed: u64) -> Self {
        Gen(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn ignored(&mut self) -> String {
        self.pick(&[
            " ",
            "  ",
            ",",
            "\n",
            "\t",
            " # } mutation M { x } {\n",
            "\r\n",
            " , ",
        ])
        .to_owned()
    }

    fn name(&mut self) -> String {
        self.pick(&[
            "a",
            "query",
            "mutation",
            "subscription",
            "fragment",
            "on",
            "type",
            "_x1",
            "A",
            "B",
            "C",
        ])
        .to_owned()
    }

    fn value(&mut self, depth: u32) -> String {
        match if depth > 3 {
            self.below(5)
        } else {
            self.below(8)
        } {
            0 => self
                .pick(&["1", "-0", "3.5", "2e-3", "true", "null", "ENUM"])
                .to_owned(),
            1 => self
                .pick(&[
                    r#""s""#,
                    r#""} {""#,
                    r#""\" \\ \u00e9""#,
                    r#""""#,
                    r#""mutation { x }""#,
                ])
                .to_owned(),
            2 => self
                .pick(&[r#""""a "b" "" \""" c""""#, "\"\"\"\n  block } {\n\"\"\""])
                .to_owned(),
            3 => "$v".to_owned(),
            4 => format!("{}", self.below(1000)),
            5 => {
                let n = self.below(3);
                let items: Vec<String> = (0..n).map(|_| self.value(depth + 1)).collect();
                format!("[{}]", items.join(", "))
            }
            _ => {
                let n = self.below(3);
                let items: Vec<String> = (0..n)
                    .map(|i| format!("k{i}: {}", self.value(depth + 1)))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    fn selection_set(&mut self, depth: u32) -> String {
        let n = 1 + self.below(3);
        let mut out = String::from("{");
        for _ in 0..n {
            out.push_str(&self.ignored());
            match if depth > 3 { 0 } else { self.below(5) } {
                0 => out.push_str(&self.name()),
                1 => {
                    let (name, value) = (self.name(), self.value(0));
                    out.push_str(&format!("{name}(arg: {value}) @dir(if: true)"));
                }
                2 => {
                    let (name, sub) = (self.name(), self.selection_set(depth + 1));
                    out.push_str(&format!("alias: {name} {sub}"));
                }
                3 => {
                    let sub = self.selection_set(depth + 1);
                    out.push_str(&format!("... on T {sub}"));
                }
                _ => out.push_str("...F"),
            }
        }
        out.push_str(&self.ignored());
        out.push('}');
        out
    }

    /// One document and the operation names it may be asked for.
    pub(crate) fn document(&mut self) -> String {
        let n = 1 + self.below(4);
        let mut doc = self.ignored();
        for _ in 0..n {
            match self.below(7) {
                0 => doc.push_str(&self.selection_set(0)),
                1 => {
                    let sub = self.selection_set(0);
                    doc.push_str(&format!("fragment F on T {sub}"));
                }
                2 => {
                    let sub = self.selection_set(0);
                    doc.push_str(&format!("type Z {{ a: Int }} query Q {sub}"));
                }
                _ => {
                    let kind = self.pick(&["query", "mutation", "subscription"]);
                    let name = if self.below(4) == 0 {
                        String::new()
                    } else {
                        format!(" {}", self.name())
                    };
                    let vars = if self.below(2) == 0 {
                        let v = self.value(0);
                        format!("($v: [Int!]! = {v})")
                    } else {
                        String::new()
                    };
                    let sub = self.selection_set(0);
                    doc.push_str(&format!("{kind}{name}{vars} @d {sub}"));
                }
            }
            doc.push_str(&self.ignored());
        }
        doc
    }
}

#[test]
fn generated_documents_agree_with_apollo_and_cynic() {
    let c = Classifier::new();
    let mut g = Gen::new(0x5eed_cafe);
    let mut failures = Vec::new();
    let mut compared = 0;
    for _ in 0..1500 {
        let doc = g.document();
        for name in names_for(&doc) {
            let ours = Verdict::of(c.classify_document(&doc, name.as_deref()));
            match expected(&doc, name.as_deref()) {
                Expected::Invalid => {}
                Expected::Disagree(a, b) => failures.push(format!(
                    "{doc:?} {name:?}: oracles disagree: {a:?} vs {b:?}"
                )),
                Expected::Verdict(want) => {
                    compared += 1;
                    if ours != want {
                        failures.push(format!("{doc:?} {name:?}: ours {ours:?}, theirs {want:?}"));
                    }
                }
            }
        }
    }
    assert!(compared >= 3000, "only {compared} comparable verdicts");
    failures.truncate(20);
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
}
