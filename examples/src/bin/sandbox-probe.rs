//! `sandbox-probe [--sandbox on|off]`: probes this host once and prints the
//! start-up line a host program would log, then the backend a dispatch gets.
//!
//! The switch comes from `--sandbox`, else from `CC_SERVER_SANDBOX`, else on.

use agent_sandbox_examples::checked;
use clap::Parser;
use sandbox_core::{BackendRequest, SANDBOX_SWITCH_ENV, SandboxSwitch, Surface, select_backend};
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
Probes this host once and prints the start-up line a host program would log, then the backend \
a dispatch gets. The start-up line is one of:

  agent sandbox ON: <note>
      when the host offers a native sandbox;
  no OS-native agent sandbox on this host: <hint>
      where the hint names only the missing packages;
  agent sandbox DISABLED by --sandbox off
      when the switch is off.";

const AFTER_HELP: &str = "\
The switch comes from --sandbox, else from the CC_SERVER_SANDBOX environment variable (on or \
off, any case), else it is on.";

#[derive(Debug, PartialEq, Parser)]
#[command(
    name = "sandbox-probe",
    version,
    args_override_self = true,
    about = "Probes this host and prints the sandbox start-up line and the dispatch backend",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    /// Whether runs are sandboxed when the host offers a backend: on, or off to opt out (any case;
    /// wins over CC_SERVER_SANDBOX).
    #[arg(long, value_name = "on|off", value_parser = checked(switch))]
    sandbox: Option<SandboxSwitch>,
}

/// `on` or `off`, in any case; the refusal names the flag.
fn switch(value: &str) -> Result<SandboxSwitch, String> {
    SandboxSwitch::parse(value).map_err(|e| format!("--sandbox: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env_value = std::env::var_os(SANDBOX_SWITCH_ENV);
    let switch = match SandboxSwitch::from_sources(
        cli.sandbox.map(SandboxSwitch::as_str),
        env_value.as_deref(),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sandbox-probe: {SANDBOX_SWITCH_ENV}: {e}");
            return ExitCode::from(2);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    #[cfg(unix)]
    use std::ffi::OsString;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("sandbox-probe").chain(argv.iter().copied()))
    }

    enum Want {
        /// It parses to this switch.
        Parsed(Option<SandboxSwitch>),
        /// It is refused with this kind, the message holding each part.
        Refused(ErrorKind, &'static [&'static str]),
    }
    use Want::{Parsed, Refused};

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
        let cases: &[(&str, &[&str], Want)] = &[
            (
                "no flag: the variable or the default decides",
                &[],
                Parsed(None),
            ),
            (
                "--sandbox off",
                &["--sandbox", "off"],
                Parsed(Some(SandboxSwitch::Off)),
            ),
            (
                "--sandbox=OFF in any case",
                &["--sandbox=OFF"],
                Parsed(Some(SandboxSwitch::Off)),
            ),
            (
                "--sandbox on",
                &["--sandbox", "On"],
                Parsed(Some(SandboxSwitch::On)),
            ),
            (
                "given twice: the last one counts",
                &["--sandbox", "on", "--sandbox=off"],
                Parsed(Some(SandboxSwitch::Off)),
            ),
            (
                "--sandbox takes on or off only",
                &["--sandbox", "maybe"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "error: --sandbox: invalid sandbox switch \"maybe\": accepted values are \"on\" and \"off\"",
                    ],
                ),
            ),
            (
                "--sandbox without its value",
                &["--sandbox"],
                Refused(
                    ErrorKind::InvalidValue,
                    &["a value is required for '--sandbox <on|off>'"],
                ),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["--sandbx", "off"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--sandbx'",
                        "a similar argument exists: '--sandbox'",
                    ],
                ),
            ),
            (
                "a word that is no flag",
                &["off"],
                Refused(ErrorKind::UnknownArgument, &["unexpected argument 'off'"]),
            ),
            (
                "--help explains the switch and the lines",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &[
                        "--sandbox <on|off>",
                        "agent sandbox DISABLED by --sandbox off",
                        "CC_SERVER_SANDBOX",
                    ],
                ),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("sandbox-probe ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
        ];
        for (intent, argv, want) in cases {
            match (parse(argv), want) {
                (Ok(got), Parsed(switch)) => assert_eq!(got.sandbox, *switch, "{intent}"),
                (Err(e), Refused(kind, parts)) => {
                    let text = e.to_string();
                    assert_eq!(e.kind(), *kind, "{intent}: {text}");
                    for part in *parts {
                        assert!(text.contains(part), "{intent}: {part:?} in {text}");
                    }
                }
                (Ok(got), Refused(..)) => panic!("{intent}: accepted as {got:?}"),
                (Err(e), Parsed(_)) => panic!("{intent}: refused: {e}"),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_refused_not_a_panic() {
        use std::os::unix::ffi::OsStringExt;
        let argv = [
            OsString::from("sandbox-probe"),
            "--sandbox".into(),
            OsString::from_vec(vec![b'o', b'n', 0xff]),
        ];
        let e = Cli::try_parse_from(argv).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidUtf8, "{e}");
        assert!(e.to_string().contains("--sandbox takes UTF-8 text"), "{e}");
    }
}
