//! The example binaries end to end on the real host. They run Unix
//! programs (`/bin/sh`, bubblewrap, setpriv, curl, git), so they are built on
//! Unix only; elsewhere this binary has no tests.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

#[cfg(unix)]
mod agent_run;
mod architecture;
#[cfg(unix)]
mod broker_proxy;
#[cfg(unix)]
mod broker_proxy_push;
#[cfg(unix)]
mod cli;
#[cfg(target_os = "linux")]
mod egress_netns;
#[cfg(unix)]
mod k8s_render;
#[cfg(unix)]
mod sandbox_probe;
#[cfg(unix)]
mod srt_settings;
#[cfg(unix)]
mod ssh_agent;
