//! The data-driven tests: every behaviour table under `testdata/*.toml`,
//! the fuzz regressions, the differential test against apollo-parser and
//! cynic-parser over `testdata/corpus/` and generated documents, and the
//! proptest properties.

mod differential;
mod oracle;
mod properties;

use graphql_classifier::{Classification, Classifier, Error};
use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    intent: String,
    document: Option<String>,
    operation_name: Option<String>,
    body: Option<String>,
    get: Option<String>,
    kind: Option<String>,
    name: Option<String>,
    error: Option<String>,
    offset: Option<usize>,
}

fn run(c: &Classifier, case: &Case) -> Result<Classification, Error> {
    match (&case.document, &case.body, &case.get) {
        (Some(d), None, None) => c.classify_document(d, case.operation_name.as_deref()),
        (None, Some(b), None) => c.classify_json(b.as_bytes()),
        (None, None, Some(g)) => c.classify_get(g),
        _ => panic!(
            "case {:?}: give exactly one of document, body, get",
            case.intent
        ),
    }
}

fn check(file: &str, case: &Case) -> Result<(), String> {
    let c = Classifier::new();
    let got = run(&c, case);
    match (&case.kind, &case.error, got) {
        (Some(kind), None, Ok(cl)) => {
            if cl.kind.as_str() != kind || cl.operation_name != case.name {
                return Err(format!("got {cl:?}"));
            }
        }
        (None, Some(code), Err(e)) => {
            if e.code() != code {
                return Err(format!("got error {} ({e})", e.code()));
            }
            if case.offset.is_some() && e.offset() != case.offset {
                return Err(format!("got offset {:?} ({e})", e.offset()));
            }
            // Display names the offset and quotes the bytes found there.
            let shown = e.to_string();
            if let Some(o) = e.offset() {
                if !shown.contains(&format!("byte {o}")) {
                    return Err(format!("Display does not name byte {o}: {shown}"));
                }
                if let Some(doc) = &case.document {
                    let b = doc.as_bytes();
                    let near = String::from_utf8_lossy(&b[o.min(b.len())..(o + 24).min(b.len())]);
                    if !shown.contains(&format!("here: {near:?}")) {
                        return Err(format!("Display does not quote {near:?}: {shown}"));
                    }
                }
            }
            if shown.is_empty() {
                return Err("empty Display".to_owned());
            }
        }
        (Some(_), None, Err(e)) => return Err(format!("refused: {e}")),
        (None, Some(_), Ok(cl)) => return Err(format!("accepted: {cl:?}")),
        _ => return Err(format!("{file}: give exactly one of kind, error")),
    }
    Ok(())
}

#[test]
fn testdata_tables() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "tables missing in {dir}");
    let mut failures = Vec::new();
    let mut count = 0;
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let table: Table = toml::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in &table.case {
            count += 1;
            if let Err(why) = check(&name, case) {
                failures.push(format!("{name}: {:?}: {why}", case.intent));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn fuzz_regressions_replay() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/fuzz-regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "bin") {
            graphql_classifier::fuzzing::exercise(&std::fs::read(&path).unwrap());
            n += 1;
        }
    }
    assert!(n > 0, "no regressions found in {dir}");
}
