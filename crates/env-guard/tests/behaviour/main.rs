//! The env-guard behaviour tables (`testdata/*.toml`) and properties.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod by_use;
mod props;
mod tables;
