//! `name-guard-exec [--report-fd N] --deny GLOB... -- CMD ARGS`: run CMD
//! with creation-time filename rules (see the `name_guard` crate). Meant to
//! run inside the bubblewrap sandbox. Exits with CMD's status; 125 on a
//! setup error.

fn main() -> std::process::ExitCode {
    name_guard::launcher_main(std::env::args_os().skip(1))
}
