//! The push rule's one test binary: the behaviour tables under
//! `testdata/` (pkt-lines and command lists with their verdicts, push
//! rules), git's report format, and push rules judged on packs and push
//! bodies made by real `git`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod packs;
mod support;
mod tables;
