//! The seatbelt-profile test binary: the behaviour tables under
//! `testdata/*.toml`, the golden profiles, and properties of the dispatch
//! profile over generated specs, asserted through the evaluator.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod properties;
mod testdata;
