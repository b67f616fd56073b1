//! The facade's integration tests: real launches under the real sandbox
//! (`native`), commands driven from the host (`commands`: stdin, signals,
//! timeouts, extra environment) the broker end to end (`broker`) and an ACP-shaped JSON-RPC
//! session over stdio (`acp`), and the command tests again as an
//! unprivileged user (`unprivileged`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod acp;
mod broker;
mod commands;
mod native;
mod unprivileged;
