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
//! # Behaviour tables
//!
//! [`load_cases`] reads the `[[case]]` entries of a crate's
//! `testdata/*.toml` table into the test's own case type;
//! [`replay_fuzz_regressions`] runs the inputs committed under
//! `testdata/fuzz-regressions/` through their fuzz entry points.

mod cases;
mod requirement;

pub use cases::{FuzzEntry, load_cases, replay_fuzz_regressions};
pub use requirement::{
    Decision, SKIP_ENV, decide, require, require_fd_limit, require_root, tool, tool_in,
};
