//! The facade's integration tests: real launches under the real sandbox
//! (`native`), commands driven from the host (`commands`: stdin, signals,
//! timeouts, extra environment), commands back to back and how each ended
//! (`back_to_back`), the broker end to end (`broker`) and an ACP-shaped
//! JSON-RPC session over stdio (`acp`), the command tests again as an unprivileged
//! user (`unprivileged`), and the Landlock mechanism's escape tests as root,
//! as root without namespaces or capabilities and as uid 65534
//! (`landlock`), a linked git worktree under both (`worktree`), and warm
//! sessions against a fresh sandbox per command (`warm`, which also runs
//! the native, command and Landlock tests again with a fresh sandbox per
//! command).
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
mod audit;
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
#[cfg(target_os = "linux")]
mod qemu;
#[cfg(target_os = "linux")]
mod tool_dirs;
#[cfg(target_os = "linux")]
mod traces;
#[cfg(unix)]
mod unprivileged;
#[cfg(target_os = "linux")]
mod warm;
#[cfg(target_os = "linux")]
mod workspace;
#[cfg(target_os = "linux")]
mod worktree;

/// Set to `per-command` to run the native tests with a fresh sandbox per
/// command (`warm::the_suite_passes_with_a_fresh_sandbox_per_command` runs
/// this binary again so); unset, sessions are warm (the default).
#[cfg(unix)]
const ISOLATION_ENV: &str = "AGENT_SANDBOX_TEST_ISOLATION";

/// The isolation the native tests run with ([`ISOLATION_ENV`]).
#[cfg(unix)]
fn isolation() -> agent_sandbox::CommandIsolation {
    match std::env::var(ISOLATION_ENV).as_deref() {
        Ok("per-command") => agent_sandbox::CommandIsolation::FreshSandboxPerCommand,
        _ => agent_sandbox::CommandIsolation::SessionSandbox,
    }
}

/// A manager builder from the ambient host with the tests' isolation (a
/// warm session needs a launcher too: its init is that program).
#[cfg(unix)]
fn builder() -> agent_sandbox::ManagerBuilder {
    let mut b = agent_sandbox::ManagerBuilder::from_ambient();
    b.command_isolation(isolation());
    b
}

/// The name-guard launcher this package builds.
#[cfg(unix)]
fn launcher() -> agent_sandbox::NameGuardLauncher {
    agent_sandbox::NameGuardLauncher::new(env!("CARGO_BIN_EXE_agent-sandbox-name-guard"))
}
