//! The env-guard behaviour tables (`testdata/*.toml`) and properties.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod by_use;
// Environment values as raw bytes (Unix's `OsString`).
#[cfg(unix)]
mod props;
#[cfg(unix)]
mod tables;
