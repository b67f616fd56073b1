//! The facade's integration tests: real launches under the real sandbox
//! (`native`), commands driven from the host (`commands`: stdin, signals,
//! timeouts, extra environment), commands back to back and how each ended
//! (`back_to_back`), the broker end to end (`broker`) and an ACP-shaped
//! JSON-RPC session over stdio (`acp`), the command tests again as an unprivileged
//! user (`unprivileged`), and the Landlock mechanism's escape tests as root,
//! as root without namespaces or capabilities and as uid 65534
//! (`landlock`), and a linked git worktree under both (`worktree`).
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
mod back_to_back;
#[cfg(unix)]
mod broker;
#[cfg(unix)]
mod commands;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod microvm;
#[cfg(unix)]
mod native;
#[cfg(unix)]
mod unprivileged;
#[cfg(target_os = "linux")]
mod worktree;
