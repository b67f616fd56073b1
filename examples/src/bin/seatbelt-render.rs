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

use agent_sandbox_examples::{checked, checked_os, port, utf8_path};
use clap::Parser;
use sandbox_core::{AmbientHost, SandboxSpec};
use seatbelt_profile::{DispatchProfileBuilder, TerminalProfileBuilder};
use std::io::Read;
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
Reads a SandboxSpec as JSON (camelCase) on stdin and prints the macOS Seatbelt profile for it as \
{\"profile\": \"...\", \"params\": {...}}: the SBPL text for `sandbox-exec -p` and the -DKEY=VALUE \
parameters that carry every host path. Symlinks are resolved on this machine, so on macOS /tmp/x \
is also emitted as /private/tmp/x.

With --terminal the fixed terminal profile is printed instead ($HOME and --workdir writable, the \
network open, the secret directories unreadable), and stdin is not read.

Paths are carried in the profile as text, so each path given must be UTF-8.";

const AFTER_HELP: &str = "\
Example: echo '{\"sessionId\":\"s\",\"bindMounts\":[{\"hostPath\":\"/tmp/wt\"}]}' \
| seatbelt-render --home \"$HOME\" --proxy-http 8080 --proxy-socks 1080";

#[derive(Debug, PartialEq, Parser)]
#[command(
    name = "seatbelt-render",
    version,
    args_override_self = true,
    about = "Prints the macOS Seatbelt profile for a SandboxSpec read as JSON on stdin",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    /// The run's home directory, which anchors ~ and the home deny sets.
    #[arg(
        long,
        value_name = "DIR",
        value_parser = checked_os(|p| utf8_path("--home", p))
    )]
    home: String,
    /// The port of the session's HTTP proxy on 127.0.0.1 (required unless --terminal).
    #[arg(
        long,
        value_name = "PORT",
        required_unless_present = "terminal",
        value_parser = checked(|v| port("--proxy-http", v))
    )]
    proxy_http: Option<u16>,
    /// The port of the session's SOCKS5 proxy on 127.0.0.1 (required unless --terminal).
    #[arg(
        long,
        value_name = "PORT",
        required_unless_present = "terminal",
        value_parser = checked(|v| port("--proxy-socks", v))
    )]
    proxy_socks: Option<u16>,
    /// A session temp directory the command may write in every mode (repeat for more).
    #[arg(
        long = "temp-dir",
        value_name = "DIR",
        value_parser = checked_os(|p| utf8_path("--temp-dir", p))
    )]
    temp_dirs: Vec<String>,
    /// Print the fixed terminal profile instead, without reading a spec on stdin.
    #[arg(long)]
    terminal: bool,
    /// The terminal session's working directory, writable (used with --terminal; ignored
    /// otherwise).
    #[arg(
        long,
        value_name = "DIR",
        value_parser = checked_os(|p| utf8_path("--workdir", p))
    )]
    workdir: Option<String>,
}

/// Largest spec accepted on stdin.
const MAX_SPEC_BYTES: u64 = 1 << 20;

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("seatbelt-render: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let Cli {
        home,
        proxy_http: http,
        proxy_socks: socks,
        temp_dirs,
        terminal,
        workdir,
    } = cli;
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    #[cfg(unix)]
    use std::ffi::OsString;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("seatbelt-render").chain(argv.iter().copied()))
    }

    const DISPATCH: [&str; 6] = [
        "--home",
        "/Users/dev",
        "--proxy-http",
        "8080",
        "--proxy-socks",
        "1080",
    ];

    /// What `DISPATCH` parses to.
    fn dispatch() -> Cli {
        Cli {
            home: "/Users/dev".into(),
            proxy_http: Some(8080),
            proxy_socks: Some(1080),
            temp_dirs: vec![],
            terminal: false,
            workdir: None,
        }
    }

    use test_support::cli_table::Want::{self, Parsed, Refused};

    #[test]
    fn the_command_is_well_formed_and_every_flag_says_what_it_does() {
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        for arg in cmd.get_arguments() {
            assert!(arg.get_help().is_some(), "{} has no help", arg.get_id());
        }
    }

    #[test]
    fn every_flag_in_each_form_and_every_refusal() {
        let cases: &[(&str, &[&str], Want<Cli>)] = &[
            (
                "the dispatch profile's three flags",
                &DISPATCH,
                Parsed(|_| {}),
            ),
            (
                "each in the --name=value form",
                &[
                    "--home=/Users/dev",
                    "--proxy-http=8080",
                    "--proxy-socks=1080",
                ],
                Parsed(|_| {}),
            ),
            (
                "--temp-dir repeats in both forms, in order",
                &[
                    "--temp-dir",
                    "/tmp/a",
                    "--home",
                    "/Users/dev",
                    "--proxy-http",
                    "8080",
                    "--proxy-socks",
                    "1080",
                    "--temp-dir=/tmp/b",
                ],
                Parsed(|c| c.temp_dirs = vec!["/tmp/a".into(), "/tmp/b".into()]),
            ),
            (
                "--terminal needs no proxy ports",
                &["--terminal", "--home", "/Users/dev"],
                Parsed(|c| {
                    c.terminal = true;
                    c.proxy_http = None;
                    c.proxy_socks = None;
                }),
            ),
            (
                "--terminal with --workdir DIR",
                &[
                    "--terminal",
                    "--home",
                    "/Users/dev",
                    "--workdir",
                    "/Users/dev/src",
                ],
                Parsed(|c| {
                    c.terminal = true;
                    c.proxy_http = None;
                    c.proxy_socks = None;
                    c.workdir = Some("/Users/dev/src".into());
                }),
            ),
            (
                "--workdir=DIR",
                &["--terminal", "--home=/Users/dev", "--workdir=/w"],
                Parsed(|c| {
                    c.terminal = true;
                    c.proxy_http = None;
                    c.proxy_socks = None;
                    c.workdir = Some("/w".into());
                }),
            ),
            (
                "nothing given: --home and both ports are named",
                &[],
                Refused(
                    ErrorKind::MissingRequiredArgument,
                    &[
                        "--home <DIR>",
                        "--proxy-http <PORT>",
                        "--proxy-socks <PORT>",
                        "Usage: seatbelt-render",
                    ],
                ),
            ),
            (
                "--terminal without --home",
                &["--terminal"],
                Refused(ErrorKind::MissingRequiredArgument, &["--home <DIR>"]),
            ),
            (
                "a dispatch profile without --proxy-socks",
                &["--home", "/Users/dev", "--proxy-http", "8080"],
                Refused(
                    ErrorKind::MissingRequiredArgument,
                    &["--proxy-socks <PORT>"],
                ),
            ),
            (
                "a dispatch profile without --proxy-http",
                &["--home", "/Users/dev", "--proxy-socks=1080"],
                Refused(ErrorKind::MissingRequiredArgument, &["--proxy-http <PORT>"]),
            ),
            (
                "--proxy-http 0 is no port",
                &["--home", "/h", "--proxy-http", "0", "--proxy-socks", "1080"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--proxy-http takes a port number from 1 to 65535, not \"0\""],
                ),
            ),
            (
                "--proxy-socks takes a number",
                &[
                    "--home",
                    "/h",
                    "--proxy-http",
                    "8080",
                    "--proxy-socks=socks",
                ],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--proxy-socks takes a port number from 1 to 65535, not \"socks\""],
                ),
            ),
            (
                "a flag without its value",
                &["--home"],
                Refused(
                    ErrorKind::InvalidValue,
                    &["a value is required for '--home <DIR>'"],
                ),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["--terminal", "--home", "/h", "--temp-directory", "/tmp"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--temp-directory'",
                        "a similar argument exists: '--temp-dir'",
                    ],
                ),
            ),
            (
                "the spec comes on stdin, not as an argument",
                &["--terminal", "--home", "/h", "spec.json"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &["unexpected argument 'spec.json'"],
                ),
            ),
            (
                "--help explains every flag and the terminal profile",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &[
                        "--temp-dir <DIR>",
                        "(required unless --terminal)",
                        "With --terminal the fixed terminal profile is printed instead",
                    ],
                ),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("seatbelt-render ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
        ];
        test_support::cli_table::check(cases, parse, dispatch, |p| p.to_owned());
    }

    /// The profile carries its paths as text: a path that is not UTF-8
    /// is an argument refused with the flag named, never a panic.
    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_is_refused_by_name() {
        use std::os::unix::ffi::OsStringExt;
        let odd = || OsString::from_vec(vec![b'/', b't', 0xff]);
        for flag in ["--home", "--temp-dir", "--workdir"] {
            let mut argv: Vec<OsString> = ["seatbelt-render", "--terminal", "--home", "/h"]
                .map(OsString::from)
                .into();
            argv.extend([flag.into(), odd()]);
            let e = Cli::try_parse_from(argv).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ValueValidation, "{flag}: {e}");
            assert!(
                e.to_string()
                    .contains(&format!("{flag} takes a UTF-8 path, not \"/t\u{fffd}\"")),
                "{flag}: {e}"
            );
        }
    }
}
