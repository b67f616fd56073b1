//! The facade's integration tests: real launches under the real sandbox
//! (`native`), commands driven from the host (`commands`: stdin, signals,
//! timeouts, extra environment) the broker end to end (`broker`) and an ACP-shaped JSON-RPC
//! session over stdio (`acp`), and the command tests again as an
//! unprivileged user (`unprivileged`).
//!
//! They run Unix programs (`/bin/sh`, `cat`, python3, bubblewrap, setpriv),
//! so they are built on Unix only; elsewhere this binary has no tests.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

#[cfg(unix)]
mod acp;
#[cfg(unix)]
mod broker;
#[cfg(unix)]
mod commands;
#[cfg(unix)]
mod native;
#[cfg(unix)]
mod unprivileged;
