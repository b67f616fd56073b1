//! `name-guard-exec --deny GLOB... -- CMD ARGS`: run CMD with creation-time
//! filename rules (see the `name_guard` crate). Meant to run inside the
//! bubblewrap sandbox. Exits with CMD's status; 125 on a setup error.

use std::process::ExitCode;

fn main() -> ExitCode {
    let inv = match name_guard::Invocation::parse(std::env::args_os().skip(1)) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("name-guard-exec: {e}");
            return ExitCode::from(125);
        }
    };
    match name_guard::run(&inv) {
        Ok(out) => {
            if std::env::var_os("NAME_GUARD_STATS").is_some() {
                eprintln!(
                    "name-guard-exec: handled {} calls, denied {}",
                    out.stats.handled, out.stats.denied
                );
            }
            ExitCode::from(u8::try_from(out.exit_code & 0xff).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("name-guard-exec: {e}");
            ExitCode::from(125)
        }
    }
}
