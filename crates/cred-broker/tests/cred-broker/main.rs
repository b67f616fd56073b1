//! cred-broker's one integration test binary: the behaviour tables under
//! `testdata/`, the broker over real loopback sockets (TLS, GraphQL, git
//! pushes on the wire), and real git through connect-proxy and the broker.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

#[cfg(feature = "git")]
mod git_e2e;
#[cfg(feature = "git")]
mod git_tables;
#[cfg(feature = "graphql")]
mod graphql;
#[cfg(feature = "git")]
mod push_wire;
mod secret_sources;
mod support;
mod testdata;
mod tls;
