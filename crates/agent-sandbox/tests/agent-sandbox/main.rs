//! The facade's integration tests: real launches under the real sandbox
//! (`native`), commands driven from the host (`commands`: stdin, signals,
//! timeouts, extra environment) and the broker end to end (`broker`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod broker;
mod commands;
mod native;
