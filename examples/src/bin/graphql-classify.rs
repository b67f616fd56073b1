//! `graphql-classify < body.json`: reads a GraphQL request body (JSON) on
//! standard input and prints `query`, `mutation` or `subscription`, or
//! `refused: REASON`.
//!
//! Exit status: 0 when classified, 2 when refused (including a body that
//! cannot be read or is over the size limit).

use std::io::Read;
use std::process::ExitCode;

use clap::Parser;
use graphql_classifier::{Classifier, DEFAULT_MAX_REQUEST_BYTES};

const LONG_ABOUT: &str = "\
Reads a GraphQL request body (JSON) on standard input and prints query, mutation or \
subscription, or `refused: REASON`. It fails closed: a body the classifier cannot read with \
certainty, that cannot be read, or that is over the size limit is refused.";

const AFTER_HELP: &str = "\
Exit status: 0 when classified, 2 when refused or on a usage error.

Example: echo '{\"query\":\"mutation { a }\"}' | graphql-classify";

#[derive(Debug, Parser)]
#[command(
    name = "graphql-classify",
    version,
    about = "Classifies a GraphQL request body read on stdin as query, mutation or subscription",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {}

fn main() -> ExitCode {
    let Cli {} = Cli::parse();
    let mut body = Vec::new();
    // One byte over the limit is enough for the classifier to refuse it.
    let limit = DEFAULT_MAX_REQUEST_BYTES as u64 + 1;
    if let Err(e) = std::io::stdin().lock().take(limit).read_to_end(&mut body) {
        println!("refused: cannot read standard input: {e}");
        return ExitCode::from(2);
    }
    match Classifier::new().classify_json(&body) {
        Ok(c) => {
            println!("{}", c.kind);
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("refused: {e}");
            ExitCode::from(2)
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

    enum Want {
        /// It parses.
        Parsed,
        /// It is refused with this kind, the message holding each part.
        Refused(ErrorKind, &'static [&'static str]),
    }
    use Want::{Parsed, Refused};

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn it_takes_no_arguments_but_help_and_version() {
        let cases: &[(&str, &[&str], Want)] = &[
            ("nothing: the body comes on stdin", &[], Parsed),
            (
                "--help says what is printed and the exit status",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &["refused: REASON", "Exit status: 0 when classified"],
                ),
            ),
            (
                "-h is the short help",
                &["-h"],
                Refused(ErrorKind::DisplayHelp, &["Usage: graphql-classify"]),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("graphql-classify ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
            (
                "a body file is not an argument",
                &["body.json"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &["unexpected argument 'body.json'"],
                ),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["--versio"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--versio'",
                        "a similar argument exists: '--version'",
                    ],
                ),
            ),
        ];
        for (intent, argv, want) in cases {
            let got = Cli::try_parse_from(
                std::iter::once("graphql-classify").chain(argv.iter().copied()),
            );
            match (got, want) {
                (Ok(_), Parsed) => {}
                (Err(e), Refused(kind, parts)) => {
                    let text = e.to_string();
                    assert_eq!(e.kind(), *kind, "{intent}: {text}");
                    for part in *parts {
                        assert!(text.contains(part), "{intent}: {part:?} in {text}");
                    }
                }
                (Ok(got), Refused(..)) => panic!("{intent}: accepted as {got:?}"),
                (Err(e), Parsed) => panic!("{intent}: refused: {e}"),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_argument_that_is_not_utf8_is_refused_not_a_panic() {
        use std::os::unix::ffi::OsStringExt;
        let argv = [
            OsString::from("graphql-classify"),
            OsString::from_vec(vec![b'/', b't', 0xff]),
        ];
        let e = Cli::try_parse_from(argv).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownArgument, "{e}");
    }
}
