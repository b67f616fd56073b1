//! connect-proxy's integration tests: the behaviour tables under
//! `testdata/`, both proxies over real loopback sockets, and how the HTTP
//! proxy answers the request heads its reader refuses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod heads;
mod sockets;
mod support;
mod testdata;
