//! The example binaries end to end on the real host.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

mod agent_run;
mod broker_proxy;
mod sandbox_probe;
