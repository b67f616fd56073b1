//! `agent-sandbox-name-guard --deny GLOB... -- CMD ARGS`: the name-guard
//! launcher as a binary of this package, for host programs that point
//! `ManagerBuilder::name_guard_launcher` at an installed file (see the
//! `name_guard` crate for what it does).

fn main() -> std::process::ExitCode {
    name_guard::launcher_main(std::env::args_os().skip(1))
}
