//! `graphql-classify < body.json`: reads a GraphQL request body (JSON) on
//! standard input and prints `query`, `mutation` or `subscription`, or
//! `refused: REASON`.
//!
//! Exit status: 0 when classified, 2 when refused (including a body that
//! cannot be read or is over the size limit).

use std::io::Read;
use std::process::ExitCode;

use graphql_classifier::{Classifier, DEFAULT_MAX_REQUEST_BYTES};

fn main() -> ExitCode {
    let mut body = Vec::new();
    // One byte over the limit is enough for the classifier to refuse it.
    let limit = DEFAULT_MAX_REQUEST_BYTES as u64 + 1;
    if let Err(e) = std::io::stdin().lock().take(limit).read_to_end(&mut body) {
        println!("refused: cannot read standard input: {e}");
        return ExitCode::from(2);
    }
    match Classifier::new().classify_json(&body) {
        Ok(c) => {
            println!("{}", c.kind);
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("refused: {e}");
            ExitCode::from(2)
        }
    }
}
