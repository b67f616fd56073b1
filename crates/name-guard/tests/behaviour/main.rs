//! The name-guard test binary: properties of the pure parts (rules against
//! a reference matcher, denial reports read back as written), and the
//! launcher under real bubblewrap: denied names cannot be created by any
//! route, ordinary work (git, cargo, tar) runs unchanged, refusals are
//! reported; and the launcher on the host under Landlock (`--landlock`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

#[cfg(target_os = "linux")]
mod properties;
#[cfg(target_os = "linux")]
mod sockets;
#[cfg(target_os = "linux")]
mod support;
#[cfg(target_os = "linux")]
mod under_bwrap;
#[cfg(target_os = "linux")]
mod under_landlock;
#[cfg(target_os = "linux")]
mod workloads;
