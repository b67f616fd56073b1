//! `name-guard-exec [--report-fd N] --deny GLOB... -- CMD ARGS`: run CMD
//! with creation-time filename rules (see the `name_guard` crate). Meant to
//! run inside the bubblewrap sandbox. Exits with CMD's status; 125 on a
//! setup error.
//!
//! The launcher is `name_guard::launcher_main`: the `agent-sandbox` package
//! builds the same call as its `agent-sandbox-name-guard` binary, for host
//! programs that point `ManagerBuilder::name_guard_launcher` at an installed
//! file.

fn main() -> std::process::ExitCode {
    name_guard::launcher_main(std::env::args_os().skip(1))
}
