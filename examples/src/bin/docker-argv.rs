//! `docker-argv --image REF [--network NAME] [--env NAME=VALUE]... [-- COMMAND...] < spec.json`
//!
//! Reads a SandboxSpec as JSON on stdin and prints the hardened
//! `docker run` argv, one element per line. With `--network NAME` a spec
//! whose network is enabled uses that internal network (pass the proxy
//! variables with `--env NAME=VALUE`); otherwise `--network=none`.
//!
//! The argv protects the mandatory write-deny set (`.git/hooks`,
//! `.git/config`, shell rc files, ...) inside writable binds: it reads this
//! host (the entries that exist, `$HOME`, and the git repositories nested
//! in the writable binds, at most 4 levels down) and binds each existing
//! entry read-only. Entries it cannot protect (missing, or reached through
//! a symlink) are listed on stderr.
//!
//! ```sh
//! echo '{"sessionId":"s","bindMounts":[{"hostPath":"/srv/a,b"}],"mode":"review"}' \
//!   | cargo run -q -p agent-sandbox-examples --bin docker-argv -- --image alpine:3 -- id
//! ```

use agent_sandbox_examples::{ArgError, checked};
use clap::Parser;
use docker_spec::{ContainerSpec, ImageRef, Network, NetworkName};
use sandbox_core::{Access, AmbientHost, HostView, SandboxSpec};
use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
Reads a SandboxSpec as JSON on stdin and prints the hardened `docker run` argv, one element \
per line. With --network NAME a spec whose network is enabled uses that internal network (pass \
the proxy variables with --env NAME=VALUE); otherwise the container gets --network=none.

The argv protects the mandatory write-deny set (.git/hooks, .git/config, shell rc files, ...) \
inside writable binds: it reads this host (the entries that exist, $HOME, and the git \
repositories nested in the writable binds, at most 4 levels down) and binds each existing entry \
read-only. Entries it cannot protect (missing, or reached through a symlink) are listed on \
stderr.";

const AFTER_HELP: &str = "\
Example: echo '{\"sessionId\":\"s\",\"bindMounts\":[{\"hostPath\":\"/srv/a\"}],\"mode\":\"review\"}' \
| docker-argv --image alpine:3 -- id";

#[derive(Debug, PartialEq, Parser)]
#[command(
    name = "docker-argv",
    version,
    args_override_self = true,
    about = "Prints the hardened `docker run` argv for a SandboxSpec read as JSON on stdin",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    /// The image to run, such as alpine:3 or ghcr.io/org/tool:1.2.
    #[arg(long, value_name = "REF", value_parser = checked(image))]
    image: ImageRef,
    /// The internal network (made with docker network create --internal) a spec whose network is
    /// enabled uses; without it the container gets --network=none.
    #[arg(long, value_name = "NAME", value_parser = checked(network))]
    network: Option<NetworkName>,
    /// A variable to set in the container, such as HTTPS_PROXY=http://10.0.0.2:3128 (repeat for
    /// more).
    #[arg(long, value_name = "NAME=VALUE", value_parser = checked(env_pair))]
    env: Vec<(String, String)>,
    /// The command the container runs, with its arguments, after --.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// An image reference docker-spec accepts.
fn image(value: &str) -> Result<ImageRef, ArgError> {
    ImageRef::new(value).map_err(|e| ArgError::Refused {
        flag: "--image",
        takes: "an image reference such as alpine:3 or ghcr.io/org/tool:1.2",
        reason: e.to_string(),
    })
}

/// A user-defined network name docker-spec accepts.
fn network(value: &str) -> Result<NetworkName, ArgError> {
    NetworkName::new(value).map_err(|e| ArgError::Refused {
        flag: "--network",
        takes: "the name of an internal network such as agent-net",
        reason: e.to_string(),
    })
}

/// `NAME=VALUE` with NAME a variable name (the value may hold `=`).
fn env_pair(value: &str) -> Result<(String, String), ArgError> {
    match value.split_once('=') {
        Some((name, v)) if env_guard::is_valid_name(name) => Ok((name.to_owned(), v.to_owned())),
        _ => Err(ArgError::bad_value(
            "--env",
            value,
            "NAME=VALUE with NAME letters, digits and _, not starting with a digit, \
             such as HTTPS_PROXY=http://10.0.0.2:3128",
        )),
    }
}

/// Largest spec accepted on stdin.
const MAX_SPEC_BYTES: u64 = 1 << 20;

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("docker-argv: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let network = match cli.network {
        Some(name) => Network::Internal(name),
        None => Network::None,
    };
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_SPEC_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("reading stdin: {e}"))?;
    let spec: SandboxSpec = serde_json::from_str(&text).map_err(|e| format!("spec JSON: {e}"))?;
    let host = AmbientHost::from_ambient();
    let home = host
        .var_os("HOME")
        .map(PathBuf::from)
        .ok_or("HOME is not set; the mandatory write-deny set is anchored there")?;
    let writable: Vec<String> = spec
        .mount_accesses()
        .filter(|(_, a)| *a == Access::ReadWrite)
        .map(|(m, _)| m.host_path.clone())
        .chain(spec.runner_state_dirs.iter().cloned())
        .collect();
    let nested = bwrap_spec::discover_git_repos_on_host(&writable);
    let spec =
        ContainerSpec::from_sandbox_on_host(&spec, cli.image, network, &home, &nested, &host)
            .map_err(|e| e.to_string())?
            .envs(cli.env)
            .command(cli.command)
            .build()
            .map_err(|e| e.to_string())?;
    for path in spec.unprotected_missing_paths() {
        eprintln!("docker-argv: unprotected (missing, the container can create it): {path}");
    }
    for path in spec.unprotected_symlinked_paths() {
        eprintln!("docker-argv: unprotected (reached through a symlink): {path}");
    }
    let globs = spec.filename_globs_unenforced();
    if !globs.is_empty() {
        eprintln!(
            "docker-argv: not enforced in a container (a bind cannot refuse new names): {}",
            globs.join(" ")
        );
    }
    let argv = spec.run_argv().map_err(|e| e.to_string())?;
    for arg in argv {
        println!("{}", arg.to_string_lossy());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("docker-argv").chain(argv.iter().copied()))
    }

    /// What `--image alpine:3` alone parses to.
    fn image_alone() -> Cli {
        Cli {
            image: ImageRef::new("alpine:3").unwrap(),
            network: None,
            env: vec![],
            command: vec![],
        }
    }

    use test_support::cli_table::Want::{self, Parsed, Refused};

    const ENV_TAKES: &str = "--env takes NAME=VALUE with NAME letters, digits and _, not \
        starting with a digit, such as HTTPS_PROXY=http://10.0.0.2:3128, not ";

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
                "--image alone: no network, no variables, the image's own command",
                &["--image", "alpine:3"],
                Parsed(|_| {}),
            ),
            ("--image=REF", &["--image=alpine:3"], Parsed(|_| {})),
            (
                "--network NAME",
                &["--image", "alpine:3", "--network", "agent-net"],
                Parsed(|c| c.network = Some(NetworkName::new("agent-net").unwrap())),
            ),
            (
                "--network=NAME",
                &["--network=agent-net", "--image", "alpine:3"],
                Parsed(|c| c.network = Some(NetworkName::new("agent-net").unwrap())),
            ),
            (
                "--env repeats in both forms; a value may hold = and may be empty",
                &[
                    "--image",
                    "alpine:3",
                    "--env",
                    "HTTPS_PROXY=http://10.0.0.2:3128",
                    "--env=OPTS=a=b",
                    "--env",
                    "EMPTY=",
                ],
                Parsed(|c| {
                    c.env = vec![
                        ("HTTPS_PROXY".into(), "http://10.0.0.2:3128".into()),
                        ("OPTS".into(), "a=b".into()),
                        ("EMPTY".into(), String::new()),
                    ]
                }),
            ),
            (
                "everything after -- is the command, flags included",
                &[
                    "--image", "alpine:3", "--", "sh", "-c", "id", "--image", "x",
                ],
                Parsed(|c| c.command = ["sh", "-c", "id", "--image", "x"].map(Into::into).into()),
            ),
            (
                "without --image",
                &["--network", "agent-net"],
                Refused(ErrorKind::MissingRequiredArgument, &["--image <REF>"]),
            ),
            (
                "--image refuses what docker could read as a flag",
                &["--image=-v"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--image takes an image reference such as alpine:3 or ghcr.io/org/tool:1.2: \
                       image reference \"-v\" is invalid: must start with a letter or digit",
                    ],
                ),
            ),
            (
                "--network refuses a built-in network",
                &["--image", "alpine:3", "--network", "host"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--network takes the name of an internal network such as agent-net: \
                       network \"host\"",
                        "built-in network",
                    ],
                ),
            ),
            (
                "--env without =",
                &["--image", "alpine:3", "--env", "HTTPS_PROXY"],
                Refused(ErrorKind::ValueValidation, &[ENV_TAKES, "\"HTTPS_PROXY\""]),
            ),
            (
                "--env with a name that is no variable name",
                &["--image", "alpine:3", "--env=MY-PROXY=x"],
                Refused(ErrorKind::ValueValidation, &[ENV_TAKES, "\"MY-PROXY=x\""]),
            ),
            (
                "a command without -- before it",
                &["--image", "alpine:3", "id"],
                Refused(ErrorKind::UnknownArgument, &["unexpected argument 'id'"]),
            ),
            (
                "a flag without its value",
                &["--image"],
                Refused(
                    ErrorKind::InvalidValue,
                    &["a value is required for '--image <REF>'"],
                ),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["--image", "alpine:3", "--netwrok", "agent-net"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--netwrok'",
                        "a similar argument exists: '--network'",
                    ],
                ),
            ),
            (
                "--help explains every flag and the write-deny set",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &[
                        "--env <NAME=VALUE>",
                        "[-- <COMMAND>...]",
                        "mandatory write-deny set",
                    ],
                ),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("docker-argv ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
        ];
        test_support::cli_table::check(cases, parse, image_alone, |p| p.to_owned());
    }

    #[cfg(unix)]
    #[test]
    fn a_command_argument_that_is_not_utf8_is_passed_on() {
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(vec![b'/', b't', 0xff]);
        let argv = ["docker-argv", "--image", "alpine:3", "--", "cat"]
            .map(OsString::from)
            .into_iter()
            .chain([odd.clone()]);
        let cli = Cli::try_parse_from(argv).unwrap();
        assert_eq!(cli.command, [OsString::from("cat"), odd]);
    }
}
