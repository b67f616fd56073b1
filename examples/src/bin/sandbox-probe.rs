//! `sandbox-probe [--sandbox on|off]`: probes this host once and prints the
//! start-up line a host program would log, then the backend a dispatch gets.
//!
//! The switch comes from `--sandbox`, else from `CC_SERVER_SANDBOX`, else on.

use sandbox_core::{BackendRequest, SANDBOX_SWITCH_ENV, SandboxSwitch, Surface, select_backend};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut flag: Option<String> = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sandbox" => match args.next() {
                Some(v) => flag = Some(v),
                None => return usage("--sandbox needs a value (on or off)"),
            },
            s if s.starts_with("--sandbox=") => flag = Some(s["--sandbox=".len()..].to_string()),
            "-h" | "--help" => {
                println!("usage: sandbox-probe [--sandbox on|off]");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    let env_value = std::env::var_os(SANDBOX_SWITCH_ENV);
    let switch = match SandboxSwitch::from_sources(flag.as_deref(), env_value.as_deref()) {
        Ok(s) => s,
        Err(e) => return usage(&e.to_string()),
    };
    let report = sandbox_core::probe_ambient();
    println!("{}", report.startup_line(switch));
    match select_backend(
        BackendRequest::Unspecified,
        switch,
        Surface::Dispatch,
        report,
    ) {
        Ok(sel) => {
            println!("dispatch backend: {} ({})", sel.backend, sel.label);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sandbox-probe: {e}");
            ExitCode::from(1)
        }
    }
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("sandbox-probe: {msg}\nusage: sandbox-probe [--sandbox on|off]");
    ExitCode::from(2)
}
