//! The GraphQL classifier never panics: documents, JSON bodies and GET
//! query strings built from arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    graphql_classifier::fuzzing::exercise(data);
});
