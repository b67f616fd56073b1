//! `env-scrub [--inherit core|all|none] [--proxy-http HOST:PORT --proxy-socks HOST:PORT] [--ca FILE]`
//!
//! Reads `NAME=VALUE` records separated by NUL on stdin (as `env -0`
//! prints them), runs them through an env-guard pipeline, writes the kept
//! records NUL-separated on stdout and one `dropped NAME RULE` line per
//! dropped variable on stderr. Values are never printed on stderr.
//!
//! ```sh
//! env -0 | cargo run -q -p agent-sandbox-examples --bin env-scrub -- --inherit all | tr '\0' '\n'
//! ```

use env_guard::{EnvGuard, Inherit, MAX_INPUT_BYTES, ProxyEnv, parse_records, write_records};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;

const USAGE: &str = "usage: env-scrub [--inherit core|all|none] \
    [--proxy-http HOST:PORT --proxy-socks HOST:PORT] [--ca FILE] < records";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("env-scrub: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut builder = EnvGuard::builder();
    let (mut http, mut socks) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--inherit" => {
                builder.inherit(match value()?.as_str() {
                    "core" => Inherit::Core,
                    "all" => Inherit::All,
                    "none" => Inherit::None,
                    other => return Err(format!("--inherit {other:?}: use core, all or none")),
                });
            }
            "--proxy-http" => http = Some(addr(&value()?)?),
            "--proxy-socks" => socks = Some(addr(&value()?)?),
            "--ca" => {
                builder.ca_bundle(value()?);
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    match (http, socks) {
        (Some(http), Some(socks)) => {
            builder.proxy(ProxyEnv { http, socks });
        }
        (None, None) => {}
        _ => return Err("--proxy-http and --proxy-socks go together".to_owned()),
    }
    let guard = builder.build().map_err(|e| e.to_string())?;

    let mut input = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut input)
        .map_err(|e| format!("reading stdin: {e}"))?;
    let records = parse_records(&input).map_err(|e| e.to_string())?;
    let out = guard.apply(records);

    let mut stderr = std::io::stderr().lock();
    for d in &out.dropped {
        let mut line = b"dropped ".to_vec();
        line.extend_from_slice(d.name.as_encoded_bytes());
        line.extend_from_slice(format!(" {}\n", d.rule).as_bytes());
        stderr
            .write_all(&line)
            .map_err(|e| format!("writing stderr: {e}"))?;
    }
    std::io::stdout()
        .lock()
        .write_all(&write_records(&out.vars))
        .map_err(|e| format!("writing stdout: {e}"))
}

fn addr(s: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is not HOST:PORT with a numeric IP address"))
}
