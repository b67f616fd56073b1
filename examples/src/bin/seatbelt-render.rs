//! `seatbelt-render --home DIR --proxy-http PORT --proxy-socks PORT
//! [--temp-dir DIR]... [--terminal [--workdir DIR]] < spec.json`
//!
//! Reads a SandboxSpec as JSON (camelCase) on stdin and prints the macOS
//! Seatbelt profile for it as `{"profile": "...", "params": {...}}`: the
//! SBPL text for `sandbox-exec -p` and the `-DKEY=VALUE` parameters that
//! carry every host path. Symlinks are resolved on this machine (ambient
//! file system), so on macOS `/tmp/x` is also emitted as `/private/tmp/x`.
//! With `--terminal` the fixed terminal profile is printed instead (stdin
//! is not read).
//!
//! ```sh
//! echo '{"sessionId":"s","bindMounts":[{"hostPath":"/tmp/wt"}]}' \
//!   | cargo run -q -p agent-sandbox-examples --bin seatbelt-render -- \
//!     --home "$HOME" --proxy-http 8080 --proxy-socks 1080
//! ```

use sandbox_core::{AmbientHost, SandboxSpec};
use seatbelt_profile::{DispatchProfileBuilder, TerminalProfileBuilder};
use std::io::Read;
use std::process::ExitCode;

const USAGE: &str = "usage: seatbelt-render --home DIR --proxy-http PORT --proxy-socks PORT \
    [--temp-dir DIR]... < spec.json\n       seatbelt-render --terminal --home DIR [--workdir DIR] \
    [--temp-dir DIR]...";

/// Largest spec accepted on stdin.
const MAX_SPEC_BYTES: u64 = 1 << 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("seatbelt-render: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn port(flag: &str, value: &str) -> Result<u16, String> {
    value
        .parse()
        .map_err(|_| format!("{flag} {value:?}: expected a port number"))
}

fn run() -> Result<(), String> {
    let (mut home, mut http, mut socks, mut workdir) = (None, None, None, None);
    let (mut temp_dirs, mut terminal) = (Vec::new(), false);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--home" => home = Some(value()?),
            "--proxy-http" => http = Some(port(&flag, &value()?)?),
            "--proxy-socks" => socks = Some(port(&flag, &value()?)?),
            "--temp-dir" => temp_dirs.push(value()?),
            "--workdir" => workdir = Some(value()?),
            "--terminal" => terminal = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let home = home.ok_or("--home is required")?;
    let host = AmbientHost::from_ambient();
    let profile = if terminal {
        let mut b = TerminalProfileBuilder::new();
        b.home(home);
        if let Some(w) = workdir {
            b.workdir(w);
        }
        for t in temp_dirs {
            b.temp_dir(t);
        }
        b.build(&host)
    } else {
        let mut text = String::new();
        std::io::stdin()
            .take(MAX_SPEC_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| format!("reading stdin: {e}"))?;
        let spec: SandboxSpec =
            serde_json::from_str(&text).map_err(|e| format!("spec JSON: {e}"))?;
        let mut b = DispatchProfileBuilder::new(&spec);
        b.home(home)
            .http_proxy_port(http.ok_or("--proxy-http is required")?)
            .socks_proxy_port(socks.ok_or("--proxy-socks is required")?);
        for t in temp_dirs {
            b.temp_dir(t);
        }
        b.build(&host)
    }
    .map_err(|e| e.to_string())?;
    let rendered = profile.render().map_err(|e| e.to_string())?;
    let json = serde_json::to_string_pretty(&rendered.to_json()).map_err(|e| e.to_string())?;
    println!("{json}");
    Ok(())
}
