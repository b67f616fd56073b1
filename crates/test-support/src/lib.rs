//! Dev-only helpers shared by the test binaries of the workspace.
//!
//! # Host requirements
//!
//! Tests that run real processes need host tools (bubblewrap, socat, git,
//! curl, the docker CLI, tmux, ...) or host settings (root, an open-file
//! limit). When one is missing, such a test **fails** with one line naming
//! what is missing and the command that installs it: a missing tool never
//! makes a test pass empty.
//!
//! A person may choose to skip those tests instead by setting
//! [`SKIP_ENV`] (`AGENT_SANDBOX_SKIP_MISSING=1`). A skipped test writes a
//! `SKIPPED` line straight to the process's standard error, past libtest's
//! output capture, so `cargo test` shows it. With `CI` set to `true` the
//! variable is ignored: CI never skips.
//!
//! ```
//! // A test that needs `sh`:
//! let Some(sh) = test_support::tool("sh", "apt-get install dash") else {
//!     return; // only when the person asked to skip
//! };
//! assert!(sh.is_absolute());
//! ```
//!
//! The helpers read the ambient process (its `PATH`, `CI`, the skip
//! variable, its limits): they are for tests only.
//!
//! # Behaviour tables, a TLS origin, a git server and command-line tables
//!
//! - `cases` (feature `cases`): `cases::load` reads the `[[case]]`
//!   entries of a TOML table under a crate's `testdata/`
//!   (`testdata_dir!`); `cases::variant` names an enum value's variant
//!   as the tables write it.
//! - `tls_origin` (feature `tls-origin`): a `tls_origin::TestPki` (a
//!   fresh CA and a leaf), an `tls_origin::Origin` on loopback that
//!   records every request and answers with a handler,
//!   `tls_origin::read_message` for either side of an HTTP/1.1
//!   exchange, and the client side (`tls_origin::client_config`,
//!   `tls_origin::connect`).
//! - `git_origin` (feature `git-origin`): a `git_origin::GitServer`
//!   running `git http-backend` as CGI behind such an origin, serving the
//!   repositories under a directory to clients that send one credential
//!   and recording the `Authorization` of every request, with the
//!   git-basic form of a token (`git_origin::basic`).
//! - `net` (feature `net`): `net::full_accept_queue`, a listener whose
//!   queue is full, so that a connect to it stays in flight.
//! - `cli_table` (feature `cli-table`): `cli_table::check` runs a table
//!   of command lines against a clap parser, each case parsed to a value
//!   or refused with a kind and message parts.
//!
//! # Crate features
//!
//! - `cases`: the table loader (serde, toml).
//! - `tls-origin`: the TLS origin (rustls with ring, tokio, rcgen).
//! - `git-origin`: the git server (`tls-origin`, and `git` on the host
//!   when it runs).
//! - `net`: the sockets (tokio).
//! - `cli-table`: the command-line table (clap).
//!
//! None is on by default, so a test binary that needs only the host
//! requirements builds none of it.

#[cfg(feature = "cases")]
pub mod cases;
#[cfg(feature = "cli-table")]
pub mod cli_table;
#[cfg(feature = "git-origin")]
pub mod git_origin;
#[cfg(feature = "net")]
pub mod net;
mod requirement;
#[cfg(feature = "tls-origin")]
pub mod tls_origin;

pub use requirement::{
    Decision, SKIP_ENV, decide, require, require_fd_limit, require_root, tool, tool_in,
};
