//! The name-guard command line: `parse(to_args(x)) == x` for generated
//! values (non-UTF-8 command arguments, rules that look like options), the
//! same refusal from `parse` as from `check` for values over a limit, and
//! the limits themselves.

use proptest::prelude::*;
use sandbox_core::{ErrorKind, InvocationProblem, NameGuardInvocation};
use std::ffi::OsString;

/// An argument from raw bytes: any bytes on Unix (not UTF-8 in general),
/// lossy elsewhere.
fn os(bytes: Vec<u8>) -> OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        OsString::from_vec(bytes)
    }
    #[cfg(not(unix))]
    {
        String::from_utf8_lossy(&bytes).into_owned().into()
    }
}

/// Words the parser gives meaning to, and their neighbours.
fn tricky() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("--".to_string()),
        Just("--deny".to_string()),
        Just("--report-fd".to_string()),
        Just("-".to_string()),
        Just(String::new()),
        "-[a-z=.*-]{0,6}",
        "--[a-z-]{1,8}",
    ]
}

fn glob() -> impl Strategy<Value = String> {
    prop_oneof![tricky(), "[^\u{0}]{0,12}", "[.*?a-z/]{1,8}"]
}

fn arg_without_nul() -> impl Strategy<Value = OsString> {
    prop_oneof![
        tricky().prop_map(OsString::from),
        prop::collection::vec(1u8..=255, 0..16).prop_map(os),
        // Bytes that are never UTF-8 on their own.
        prop::collection::vec(0x80u8..=0xff, 1..4).prop_map(os),
    ]
}

/// An absolute path without NUL (a granted socket).
fn socket_path() -> impl Strategy<Value = OsString> {
    arg_without_nul().prop_map(|a| {
        let mut p = OsString::from("/");
        p.push(a);
        p
    })
}

fn valid() -> impl Strategy<Value = NameGuardInvocation> {
    (
        (
            prop::option::of(3i32..NameGuardInvocation::REPORT_FD_LIMIT),
            prop::option::of(3i32..NameGuardInvocation::REPORT_FD_LIMIT),
            prop::option::of(3i32..NameGuardInvocation::REPORT_FD_LIMIT),
        )
            .prop_filter("distinct descriptors", |(r, u, n)| {
                (r.is_none() || r != u) && (n.is_none() || (n != r && n != u))
            }),
        prop::collection::vec(glob(), 0..8),
        (
            prop::collection::vec(socket_path(), 0..3),
            prop::collection::vec(socket_path(), 0..3),
            prop::sample::subsequence(sandbox_core::KEEPABLE_CAPABILITIES.to_vec(), 0..=7)
                .prop_shuffle(),
            prop::collection::vec("[A-Za-z0-9_.-]{1,20}", 0..3)
                .prop_filter("one name", |v| v.iter().all(|n| n != "." && n != "..")),
        ),
        prop::collection::vec(arg_without_nul(), 1..8),
        prop::option::of(host()),
    )
        .prop_map(
            |(
                (report_fd, updates_fd, notify_fd),
                deny_globs,
                (unix_sockets, state_dirs, keep, tools),
                command,
                host,
            )| {
                NameGuardInvocation {
                    report_fd,
                    updates_fd,
                    notify_fd,
                    deny_globs,
                    unix_sockets,
                    state_dirs,
                    tool_dirs: tools.into_iter().map(Into::into).collect(),
                    keep_capabilities: keep.into_iter().map(String::from).collect(),
                    host,
                    command,
                }
            },
        )
}

/// A host confinement: absolute paths (any bytes but NUL after the slash)
/// and ports from 1.
fn host() -> impl Strategy<Value = sandbox_core::HostConfinement> {
    let paths = || prop::collection::vec(socket_path(), 0..3);
    (
        paths(),
        paths(),
        paths(),
        paths(),
        prop::collection::vec(1u16.., 0..3),
    )
        .prop_map(|(writable, read_deny, read_again, protect, tcp_ports)| {
            sandbox_core::HostConfinement {
                writable,
                read_deny,
                read_again,
                protect,
                tcp_ports,
            }
        })
}

/// Values that may break a rule: any descriptor, NUL bytes, no command.
fn any_value() -> impl Strategy<Value = NameGuardInvocation> {
    (
        prop::option::of(prop_oneof![any::<i32>(), -2i32..8, 999_990i32..1_000_010]),
        prop::collection::vec(prop_oneof![glob(), "[a\u{0}]{1,3}"], 0..4),
        prop::collection::vec(
            prop_oneof![
                arg_without_nul(),
                prop::collection::vec(any::<u8>(), 0..6).prop_map(os)
            ],
            0..4,
        ),
    )
        .prop_map(|(report_fd, deny_globs, command)| NameGuardInvocation {
            report_fd,
            updates_fd: report_fd,
            notify_fd: report_fd,
            deny_globs,
            unix_sockets: vec!["relative.sock".into(), "/abs.sock".into()],
            state_dirs: Vec::new(),
            tool_dirs: Vec::new(),
            keep_capabilities: Vec::new(),
            host: None,
            command,
        })
}

proptest! {
    #[test]
    fn parse_reads_back_what_to_args_wrote(inv in valid()) {
        prop_assert!(inv.check().is_ok());
        prop_assert_eq!(NameGuardInvocation::parse(inv.to_args()).unwrap(), inv);
    }

    #[test]
    fn parse_refuses_what_check_refuses(inv in any_value()) {
        let parsed = NameGuardInvocation::parse(inv.to_args());
        match inv.check() {
            Ok(()) => prop_assert_eq!(parsed.unwrap(), inv),
            Err(e) => prop_assert_eq!(parsed.unwrap_err(), e),
        }
    }

    #[test]
    fn parse_never_panics(args in prop::collection::vec(
        prop_oneof![tricky().prop_map(OsString::from), arg_without_nul()], 0..12)) {
        let _ = NameGuardInvocation::parse(args);
    }
}

fn problem(r: Result<NameGuardInvocation, sandbox_core::Error>) -> InvocationProblem {
    match r.unwrap_err().into_kind() {
        ErrorKind::NameGuardInvocation(p) => p,
        other => panic!("another error: {other}"),
    }
}

fn deny_args(n: usize) -> Vec<OsString> {
    let mut args = Vec::new();
    for i in 0..n {
        args.push("--deny".into());
        args.push(format!("*.{i}").into());
    }
    args
}

#[test]
fn at_most_max_deny_globs() {
    let max = NameGuardInvocation::MAX_DENY_GLOBS;
    let mut args = deny_args(max);
    args.extend(["--".into(), "x".into()]);
    assert_eq!(
        NameGuardInvocation::parse(&args).unwrap().deny_globs.len(),
        max
    );
    let mut args = deny_args(max + 1);
    args.extend(["--".into(), "x".into()]);
    assert_eq!(
        problem(NameGuardInvocation::parse(args)),
        InvocationProblem::TooManyGlobs { limit: max }
    );
}

#[test]
fn at_most_max_command_args() {
    let max = NameGuardInvocation::MAX_COMMAND_ARGS;
    let args = std::iter::once("--").chain(std::iter::repeat_n("a", max));
    assert_eq!(NameGuardInvocation::parse(args).unwrap().command.len(), max);
    let args = std::iter::once("--").chain(std::iter::repeat_n("a", max + 1));
    assert_eq!(
        problem(NameGuardInvocation::parse(args)),
        InvocationProblem::TooManyCommandArgs { limit: max }
    );
}

#[test]
fn an_endless_argument_list_is_refused_not_collected() {
    let rules = std::iter::repeat(["--deny", "x"]).flatten();
    assert_eq!(
        problem(NameGuardInvocation::parse(rules)),
        InvocationProblem::TooManyGlobs {
            limit: NameGuardInvocation::MAX_DENY_GLOBS
        }
    );
    let command = std::iter::once("--").chain(std::iter::repeat("a"));
    assert_eq!(
        problem(NameGuardInvocation::parse(command)),
        InvocationProblem::TooManyCommandArgs {
            limit: NameGuardInvocation::MAX_COMMAND_ARGS
        }
    );
}

#[test]
fn at_most_max_arg_bytes_per_argument() {
    let max = NameGuardInvocation::MAX_ARG_BYTES;
    let long = "a".repeat(max);
    let inv = NameGuardInvocation::parse(["--deny", &long, "--", &long]).unwrap();
    assert_eq!(inv.deny_globs[0].len(), max);
    let longer = "a".repeat(max + 1);
    for args in [
        ["--deny", &longer, "--", "x"],
        ["--deny", "x", "--", &longer],
    ] {
        assert_eq!(
            problem(NameGuardInvocation::parse(args)),
            InvocationProblem::ArgumentTooLong {
                bytes: max + 1,
                limit: max
            }
        );
    }
}

#[cfg(unix)]
#[test]
fn a_rule_that_is_not_utf8_is_refused_a_command_that_is_not_is_kept() {
    let bad = os(vec![b'x', 0xff]);
    let args = vec!["--deny".into(), ".env".into(), "--deny".into(), bad.clone()];
    assert_eq!(
        problem(NameGuardInvocation::parse(args)),
        InvocationProblem::GlobNotUtf8 { index: 1 }
    );
    let inv = NameGuardInvocation::parse(vec!["--".into(), bad.clone()]).unwrap();
    assert_eq!(inv.command, [bad]);
}

#[test]
fn refusals_quote_at_most_64_characters() {
    let long = format!("--{}", "y".repeat(500));
    let e = NameGuardInvocation::parse([long.as_str(), "--", "x"]).unwrap_err();
    let ErrorKind::NameGuardInvocation(InvocationProblem::UnexpectedArgument { argument }) =
        e.kind()
    else {
        panic!("{e}");
    };
    assert_eq!(argument.chars().count(), 64);
    // The quote, and the usage line (about 360 characters).
    assert!(e.to_string().len() < 450, "{e}");
}
