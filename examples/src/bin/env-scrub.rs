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

use agent_sandbox_examples::{ArgError, checked, checked_os, socket_addr};
use clap::Parser;
use env_guard::{EnvGuard, Inherit, MAX_INPUT_BYTES, ProxyEnv, parse_records, write_records};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
Reads NAME=VALUE records separated by NUL on stdin (as `env -0` prints them), runs them through \
an env-guard pipeline, writes the kept records NUL-separated on stdout and one \
`dropped NAME RULE` line per dropped variable on stderr. Values are never printed on stderr.

Whatever --inherit lets through, names that are not plain variable names, loader variables, \
shell, interpreter and tool hooks and secrets are dropped, each with the rule that dropped it.";

const AFTER_HELP: &str = "Example: env -0 | env-scrub --inherit all | tr '\\0' '\\n'";

#[derive(Debug, PartialEq, Parser)]
#[command(
    name = "env-scrub",
    version,
    args_override_self = true,
    about = "Filters `env -0` records from stdin through an env-guard pipeline",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    /// Which input variables pass the first stage: core (a short list such as PATH, HOME, LANG and
    /// TERM, and every LC_*), all, or none.
    #[arg(long, value_name = "core|all|none", default_value = "core", value_parser = checked(inherit))]
    inherit: Inherit,
    /// The HTTP proxy as IP:PORT, written into HTTP_PROXY, HTTPS_PROXY and their lower-case forms
    /// (with --proxy-socks).
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "proxy_socks",
        value_parser = checked(|v| socket_addr("--proxy-http", v))
    )]
    proxy_http: Option<SocketAddr>,
    /// The SOCKS5 proxy as IP:PORT, written into ALL_PROXY and the GIT_SSH_COMMAND that routes ssh
    /// through it (with --proxy-http).
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "proxy_http",
        value_parser = checked(|v| socket_addr("--proxy-socks", v))
    )]
    proxy_socks: Option<SocketAddr>,
    /// The absolute path of a PEM bundle every CA trust variable (SSL_CERT_FILE, CURL_CA_BUNDLE,
    /// ...) is pointed at.
    #[arg(long, value_name = "FILE", value_parser = checked_os(ca_path))]
    ca: Option<PathBuf>,
}

/// `core`, `all` or `none`.
fn inherit(value: &str) -> Result<Inherit, ArgError> {
    match value {
        "core" => Ok(Inherit::Core),
        "all" => Ok(Inherit::All),
        "none" => Ok(Inherit::None),
        _ => Err(ArgError::bad_value("--inherit", value, "core, all or none")),
    }
}

/// A CA bundle path the guard accepts (absolute, no NUL, not too long).
fn ca_path(path: &OsStr) -> Result<PathBuf, ArgError> {
    let path = PathBuf::from(path);
    // The guard's own check decides.
    match EnvGuard::builder().ca_bundle(&path).build() {
        Ok(_) => Ok(path),
        Err(e) => Err(ArgError::Refused {
            flag: "--ca",
            takes: "the absolute path of a PEM bundle",
            reason: e.to_string(),
        }),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("env-scrub: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let mut builder = EnvGuard::builder();
    builder.inherit(cli.inherit);
    // Clap lets neither proxy flag through without the other.
    if let (Some(http), Some(socks)) = (cli.proxy_http, cli.proxy_socks) {
        builder.proxy(ProxyEnv { http, socks });
    }
    if let Some(ca) = cli.ca {
        builder.ca_bundle(ca);
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("env-scrub").chain(argv.iter().copied()))
    }

    /// What no flags at all parse to.
    fn defaults() -> Cli {
        Cli {
            inherit: Inherit::Core,
            proxy_http: None,
            proxy_socks: None,
            ca: None,
        }
    }

    use test_support::cli_table::Want::{self, Parsed, Refused};

    const ADDR_TAKES: &str =
        "takes HOST:PORT with a numeric IP address, such as 127.0.0.1:8080 or [::1]:8080";

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
                "no flags: the core set, no proxy, no CA",
                &[],
                Parsed(|_| {}),
            ),
            (
                "--inherit all",
                &["--inherit", "all"],
                Parsed(|c| c.inherit = Inherit::All),
            ),
            (
                "--inherit=none",
                &["--inherit=none"],
                Parsed(|c| c.inherit = Inherit::None),
            ),
            (
                "--inherit given twice: the last one counts",
                &["--inherit", "none", "--inherit", "core"],
                Parsed(|c| c.inherit = Inherit::Core),
            ),
            (
                "the two proxy flags together, each form",
                &["--proxy-http", "127.0.0.1:8080", "--proxy-socks=[::1]:1080"],
                Parsed(|c| {
                    c.proxy_http = Some("127.0.0.1:8080".parse().unwrap());
                    c.proxy_socks = Some("[::1]:1080".parse().unwrap());
                }),
            ),
            (
                "--ca FILE",
                &["--ca", "/etc/ssl/session.pem"],
                Parsed(|c| c.ca = Some("/etc/ssl/session.pem".into())),
            ),
            (
                "--ca=FILE",
                &["--ca=/etc/ssl/session.pem"],
                Parsed(|c| c.ca = Some("/etc/ssl/session.pem".into())),
            ),
            (
                "--inherit takes the three names in lower case",
                &["--inherit", "All"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--inherit takes core, all or none, not \"All\""],
                ),
            ),
            (
                "--proxy-http alone names the flag it needs",
                &["--proxy-http", "127.0.0.1:8080"],
                Refused(
                    ErrorKind::MissingRequiredArgument,
                    &["--proxy-socks <HOST:PORT>"],
                ),
            ),
            (
                "--proxy-socks alone names the flag it needs",
                &["--proxy-socks=127.0.0.1:1080"],
                Refused(
                    ErrorKind::MissingRequiredArgument,
                    &["--proxy-http <HOST:PORT>"],
                ),
            ),
            (
                "--proxy-http takes a numeric address, not a name",
                &[
                    "--proxy-http",
                    "localhost:8080",
                    "--proxy-socks",
                    "127.0.0.1:1080",
                ],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--proxy-http ", ADDR_TAKES, "not \"localhost:8080\""],
                ),
            ),
            (
                "--proxy-socks needs the port",
                &[
                    "--proxy-http",
                    "127.0.0.1:8080",
                    "--proxy-socks",
                    "127.0.0.1",
                ],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--proxy-socks ", ADDR_TAKES, "not \"127.0.0.1\""],
                ),
            ),
            (
                "--ca takes an absolute path",
                &["--ca", "ca.pem"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--ca takes the absolute path of a PEM bundle: CA bundle path \"ca.pem\" \
                       cannot be used: it is relative",
                    ],
                ),
            ),
            (
                "a flag without its value",
                &["--ca"],
                Refused(
                    ErrorKind::InvalidValue,
                    &["a value is required for '--ca <FILE>'"],
                ),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["--inherrit", "all"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--inherrit'",
                        "a similar argument exists: '--inherit'",
                    ],
                ),
            ),
            (
                "records come on stdin, not as arguments",
                &["HOME=/root"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &["unexpected argument 'HOME=/root'"],
                ),
            ),
            (
                "--help explains every flag and what is printed",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &[
                        "--inherit <core|all|none>",
                        "[default: core]",
                        "--proxy-socks <HOST:PORT>",
                        "Values are never printed on stderr",
                    ],
                ),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("env-scrub ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
        ];
        test_support::cli_table::check(cases, parse, defaults, |p| p.to_owned());
    }

    #[cfg(unix)]
    #[test]
    fn a_ca_path_that_is_not_utf8_is_an_argument() {
        use std::ffi::OsString;
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(vec![b'/', b't', 0xff]);
        let cli =
            Cli::try_parse_from([OsString::from("env-scrub"), "--ca".into(), odd.clone()]).unwrap();
        assert_eq!(cli.ca, Some(PathBuf::from(odd)));
    }
}
