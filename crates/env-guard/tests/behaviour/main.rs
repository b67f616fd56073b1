//! The env-guard behaviour tables (`testdata/*.toml`) and properties.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod by_use;
mod props;
mod tables;
