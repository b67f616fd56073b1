//! The bwrap-spec test binary: whole argv vectors from `testdata/argv.toml`
//! on a described host, order properties of generated plans, and real
//! processes under the real bubblewrap sandbox trying to break out.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod argv;
// Escape attempts under the real bubblewrap: Linux only.
#[cfg(target_os = "linux")]
mod escape;
mod properties;
