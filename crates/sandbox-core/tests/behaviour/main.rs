//! The sandbox-core test binary: the behaviour tables under `testdata/`,
//! the JSON shape of the data model, the properties of path resolution and
//! of the name-guard command line, and a `SandboxPort` driven end to end.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod name_guard_invocation;
mod port;
mod properties;
mod spec_json;
mod srt;
mod testdata;
