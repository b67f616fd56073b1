//! The graphql-classifier test binary: the data-driven tests (tables, fuzz
//! regressions, the differential test against two parsers, properties),
//! every configurable limit, and deep nesting on a small stack.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod deep;
mod limits;
mod testdata;
