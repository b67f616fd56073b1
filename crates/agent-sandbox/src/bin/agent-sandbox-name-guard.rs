//! `agent-sandbox-name-guard [--report-fd N] --deny GLOB... -- CMD ARGS`:
//! the name-guard launcher (`name-guard-exec` of the `name_guard` crate)
//! built by this package too, so that its tests and its installs get it as a
//! binary of their own, for host programs that point
//! `ManagerBuilder::name_guard_launcher` at an installed file. The launcher
//! is `name_guard::launcher_main`; this file only calls it.

fn main() -> std::process::ExitCode {
    name_guard::launcher_main(std::env::args_os().skip(1))
}
