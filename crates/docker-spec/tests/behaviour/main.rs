//! The docker-spec behaviour tables (`testdata/*.toml`), the CSV
//! round-trip property, and the docker CLI against a fake engine.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod csv;
// The docker client against a fake engine on a Unix socket.
#[cfg(unix)]
mod fake_engine;
mod mandatory;
mod props;
mod tables;
