//! A table of command lines run against a clap parser (feature
//! `cli-table`): what the example binaries' tests share, each binary's
//! table its own.

use clap::error::ErrorKind;
use std::fmt::Debug;

/// What one command line must give.
pub enum Want<T> {
    /// It parses to the table's base value changed by this.
    Parsed(fn(&mut T)),
    /// It is refused with this kind, the message holding each part.
    Refused(ErrorKind, &'static [&'static str]),
}

/// Checks every `(intent, argv, want)` case: `parse` reads the arguments
/// (without the program name), `base` is what no flags give, and `part`
/// turns an expected part of a message into the text to look for.
///
/// # Panics
///
/// On the first case that does not hold, naming its intent (it is a test).
#[allow(
    clippy::panic,
    reason = "a case that does not hold must fail the test that runs the table"
)]
pub fn check<T: PartialEq + Debug>(
    cases: &[(&str, &[&str], Want<T>)],
    parse: impl Fn(&[&str]) -> Result<T, clap::Error>,
    base: impl Fn() -> T,
    part: impl Fn(&str) -> String,
) {
    for (intent, argv, want) in cases {
        match (parse(argv), want) {
            (Ok(got), Want::Parsed(edit)) => {
                let mut expected = base();
                edit(&mut expected);
                assert_eq!(got, expected, "{intent}");
            }
            (Err(e), Want::Refused(kind, parts)) => {
                let text = e.to_string();
                assert_eq!(e.kind(), *kind, "{intent}: {text}");
                for p in *parts {
                    let p = part(p);
                    assert!(text.contains(&p), "{intent}: {p:?} in {text}");
                }
            }
            (Ok(got), Want::Refused(..)) => panic!("{intent}: accepted as {got:?}"),
            (Err(e), Want::Parsed(_)) => panic!("{intent}: refused: {e}"),
        }
    }
}
