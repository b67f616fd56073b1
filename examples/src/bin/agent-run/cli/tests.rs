use super::*;
use clap::CommandFactory;
use clap::error::ErrorKind;

fn args(a: &[&str]) -> Vec<OsString> {
    a.iter().map(OsString::from).collect()
}

fn accepted(a: &[&str]) -> Options {
    match parse(args(a)) {
        Ok(o) => o,
        Err(e) => panic!("{a:?} was refused: {e}"),
    }
}

fn refusal(a: &[&str]) -> CliError {
    match parse(args(a)) {
        Ok(_) => panic!("{a:?} was accepted"),
        Err(e) => e,
    }
}

#[test]
fn the_command_line_is_well_formed() {
    Cli::command().debug_assert();
}

#[test]
fn every_flag_parses_to_its_value() {
    let o = accepted(&[
        "--allow",
        "a.test",
        "--allow=*.b.test:8443",
        "--deny",
        "x.b.test",
        "--no-baseline",
        "--read-deny",
        "/w/data",
        "--allow-read-within-denies=/w/data/pub",
        "--allow-cidr",
        "10.0.0.0/8",
        "--allow-cidr=fd00::/8",
        "--no-filename-rules",
        "--no-name-guard",
        "--network=off",
        "--mechanism",
        "landlock",
        "--mode",
        "review",
        "--mount",
        "/w",
        "--mount=/r:ro",
        "--protect",
        "/w/.git/hooks",
        "--runner-state-dir",
        "/s/agent",
        "--runner-state-dir=/s/other",
        "--workdir",
        "/w",
        "--timeout",
        "0.5",
        "--memory",
        "512M",
        "--pids",
        "64",
        "--cpus",
        "1.5",
        "--sandbox",
        "on",
        "--backend",
        "none",
        "--terminal",
        "--events",
        "json=run.jsonl",
        "--allow-unix-socket",
        "/run/a.sock",
        "--allow-root-equivalent-unix-socket=/run/docker.sock",
        "--broker",
        "api.example.com",
        "--broker-rules",
        "rules.toml",
        "--broker-credential-env",
        "REAL_KEY",
        "--broker-template",
        "header:x-api-key",
        "--broker-phantom-env",
        "ANTHROPIC_API_KEY",
        "--broker-phantom-env=OTHER_KEY",
        "--broker-port",
        "8443",
        "--broker-port=9443",
        "--broker-push-rule",
        "push.toml",
        "--upstream-ca",
        "ca.pem",
        "--",
        "cargo",
        "test",
        "--",
        "--nocapture",
    ]);
    assert_eq!(o.allow, ["a.test", "*.b.test:8443"]);
    assert_eq!(o.deny, ["x.b.test"]);
    assert!(o.no_baseline);
    assert_eq!(o.mechanism, Some(NativeMechanism::Landlock));
    assert_eq!(o.read_deny, ["/w/data"]);
    assert_eq!(o.allow_read_within_denies, ["/w/data/pub"]);
    assert_eq!(
        o.cidrs,
        [
            "10.0.0.0/8".parse::<Cidr>().unwrap(),
            "fd00::/8".parse().unwrap()
        ]
    );
    assert!(o.no_filename_rules && o.no_name_guard && o.terminal);
    assert!(!o.network);
    assert_eq!(o.mode, Mode::Review);
    assert_eq!(
        o.mounts,
        [
            ("/w".to_owned(), Access::ReadWrite),
            ("/r".to_owned(), Access::ReadOnly)
        ]
    );
    assert_eq!(o.protect, ["/w/.git/hooks"]);
    assert_eq!(o.runner_state_dirs, ["/s/agent", "/s/other"]);
    assert_eq!(o.workdir.as_deref(), Some("/w"));
    assert_eq!(o.timeout, Some(Duration::from_millis(500)));
    assert_eq!(
        o.limits,
        Limits {
            memory_bytes: Some(512 << 20),
            max_processes: Some(64),
            cpu_millis: Some(1500),
        }
    );
    assert_eq!(o.switch.as_deref(), Some("on"));
    assert_eq!(o.backend, Some(SandboxBackend::None));
    assert_eq!(o.events, Some(EventsTo::File("run.jsonl".into())));
    assert_eq!(
        o.unix_sockets,
        [
            ("/run/a.sock".to_owned(), false),
            ("/run/docker.sock".to_owned(), true)
        ]
    );
    assert_eq!(o.broker_hosts, ["api.example.com"]);
    assert_eq!(o.broker_rules, Some(PathBuf::from("rules.toml")));
    assert_eq!(o.broker_credential_env.as_deref(), Some("REAL_KEY"));
    assert_eq!(
        o.broker_template,
        HeaderTemplate::Header {
            name: "x-api-key".into()
        }
    );
    assert_eq!(o.broker_phantom_env, ["ANTHROPIC_API_KEY", "OTHER_KEY"]);
    assert_eq!(o.broker_ports, [8443, 9443]);
    assert_eq!(o.broker_push_rule.as_deref(), Some("push.toml"));
    assert_eq!(o.upstream_ca, [PathBuf::from("ca.pem")]);
    // Everything after the first `--` is the command's, a second `--` too.
    assert_eq!(o.command, args(&["cargo", "test", "--", "--nocapture"]));
}

#[test]
fn defaults_and_the_last_single_value_wins() {
    let o = accepted(&["--", "true"]);
    assert!(o.network && !o.no_filename_rules && !o.no_name_guard && !o.terminal);
    assert_eq!(o.mode, Mode::Chat);
    assert_eq!(o.broker_template, HeaderTemplate::Bearer);
    assert_eq!(o.limits, Limits::default());
    assert!(o.events.is_none() && o.backend.is_none() && o.timeout.is_none());
    assert!(o.mechanism.is_none());
    assert!(o.mounts.is_empty() && o.allow.is_empty() && o.broker_ports.is_empty());
    let o = accepted(&["--mode", "plan", "--mode", "review", "--", "true"]);
    assert_eq!(o.mode, Mode::Review);
    #[cfg(unix)]
    assert_eq!(
        accepted(&["--events", "json:3", "--", "true"]).events,
        Some(EventsTo::Descriptor(3))
    );
}

#[cfg(unix)]
#[test]
fn a_command_argument_that_is_not_utf8_is_passed_as_it_is() {
    use std::os::unix::ffi::OsStringExt;
    let odd = OsString::from_vec(vec![b'/', b't', 0xff]);
    let mut a = args(&["--"]);
    a.push("cat".into());
    a.push(odd.clone());
    let o = parse(a).unwrap();
    assert_eq!(o.command, [OsString::from("cat"), odd.clone()]);
    // A settings or rules path need not be UTF-8 either.
    let mut a = vec![OsString::from("--broker-rules"), odd.clone()];
    a.extend(args(&["--", "true"]));
    assert_eq!(parse(a).unwrap().broker_rules, Some(PathBuf::from(odd)));
}

/// (intent, arguments, a part of the message, clap's kind when it is
/// clap's).
type Refusal<'a> = (&'a str, &'a [&'a str], &'a str, Option<ErrorKind>);

#[test]
fn every_refusal_says_what_to_type_instead() {
    let cases: &[Refusal<'_>] = &[
        (
            "no command",
            &["--allow", "a.test"],
            "<CMD>",
            Some(ErrorKind::MissingRequiredArgument),
        ),
        (
            "a command without --",
            &["--allow", "a.test", "cargo", "test"],
            "unexpected argument 'cargo': the command goes after --, as in agent-run [OPTIONS] -- \
             cargo [ARG...]",
            None,
        ),
        (
            "a misspelt flag gets the flag meant",
            &["--alow", "a.test", "--", "true"],
            "a similar argument exists: '--allow'",
            Some(ErrorKind::UnknownArgument),
        ),
        (
            "a flag without its value",
            &["--events"],
            "a value is required for '--events",
            Some(ErrorKind::InvalidValue),
        ),
        (
            "events without a destination",
            &["--events", "json", "--", "true"],
            "--events takes json:FD (a descriptor of 3 or above this program was started with, \
             such as json:3 with 3>events.jsonl) or json=FILE, not \"json\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "events to a standard descriptor",
            &["--events=json:1", "--", "true"],
            "not \"json:1\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "an unknown header template",
            &["--broker-template", "basic", "--", "true"],
            "--broker-template takes bearer, token, git-basic or header:NAME (NAME a header name \
             such as x-api-key, not a framing or routing header), not \"basic\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a header name with spaces",
            &["--broker-template", "header:x api key", "--", "true"],
            "not \"header:x api key\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a phantom variable that is no variable name",
            &["--broker-phantom-env", "1KEY", "--", "true"],
            "--broker-phantom-env takes a variable name (letters, digits and _, not starting \
             with a digit) such as ANTHROPIC_API_KEY, not \"1KEY\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "port 0",
            &["--broker-port", "0", "--", "true"],
            "--broker-port takes a port number from 1 to 65535, not \"0\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a port by name",
            &["--broker-port", "https", "--", "true"],
            "not \"https\"",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "phantom variables without a brokered host",
            &["--broker-phantom-env", "KEY", "--", "true"],
            "--broker-phantom-env needs --broker HOST",
            None,
        ),
        (
            "broker ports without a brokered host",
            &["--broker-port", "8443", "--", "true"],
            "--broker-port needs --broker HOST",
            None,
        ),
        (
            "network neither on nor off",
            &["--network", "maybe", "--", "true"],
            "give on or off",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a mechanism this build does not have",
            &["--mechanism=seatbelt", "--", "true"],
            "give bubblewrap or landlock",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "an unknown mode",
            &["--mode", "yolo", "--", "true"],
            "give chat, review, plan or orchestrate",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a mount without a path",
            &["--mount", ":ro", "--", "true"],
            "give a path, with :ro for a read-only mount",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a timeout of 0",
            &["--timeout", "0", "--", "true"],
            "give a number of seconds above 0",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a timeout that is no number",
            &["--timeout", "soon", "--", "true"],
            "give a number of seconds above 0",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "memory with an unknown suffix",
            &["--memory", "12X", "--", "true"],
            "give bytes with an optional K, M or G suffix",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "memory past 64 bits",
            &["--memory", "99999999999999G", "--", "true"],
            "give bytes with an optional K, M or G suffix",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a process limit that is no whole number",
            &["--pids", "1.5", "--", "true"],
            "give a whole number of processes",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a negative process limit is a value, refused as one",
            &["--pids", "-1", "--", "true"],
            "give a whole number of processes",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a negative timeout",
            &["--timeout=-1", "--", "true"],
            "give a number of seconds above 0",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "no CPU at all",
            &["--cpus", "0", "--", "true"],
            "give a number of CPUs above 0",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "an unknown backend",
            &["--backend", "vm", "--", "true"],
            "give native, none or microvm",
            Some(ErrorKind::ValueValidation),
        ),
        (
            "a range past the address's bits",
            &["--allow-cidr", "10.0.0.0/33", "--", "true"],
            "give an address range such as 10.0.0.0/8",
            Some(ErrorKind::ValueValidation),
        ),
    ];
    for (intent, a, part, kind) in cases {
        let e = refusal(a);
        let text = e.to_string();
        assert!(text.contains(part), "{intent}: {text}");
        match (&e, kind) {
            (CliError::Clap(c), Some(k)) => assert_eq!(c.kind(), *k, "{intent}: {text}"),
            (CliError::Rule(_), None) => {}
            _ => panic!("{intent}: {e:?} against {kind:?}"),
        }
    }
}

#[test]
fn help_and_version_are_answers_not_errors() {
    for (a, kind) in [
        ("--help", ErrorKind::DisplayHelp),
        ("-h", ErrorKind::DisplayHelp),
        ("--version", ErrorKind::DisplayVersion),
        ("-V", ErrorKind::DisplayVersion),
    ] {
        match refusal(&[a]) {
            CliError::Clap(e) => {
                assert_eq!(e.kind(), kind, "{a}");
                assert_eq!(e.exit_code(), 0, "{a}");
            }
            other => panic!("{a}: {other:?}"),
        }
    }
    // Every flag is explained in --help.
    let help = Cli::command().render_long_help().to_string();
    for arg in Cli::command().get_arguments() {
        if let Some(long) = arg.get_long() {
            assert!(help.contains(&format!("--{long}")), "--{long} missing");
            assert!(arg.get_help().is_some(), "--{long} has no help");
        }
    }
    assert!(help.contains("agent-run --allow api.github.com"), "{help}");
}

#[test]
fn a_settings_file_gives_flags_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.toml");
    std::fs::write(
        &f,
        "allow = [\"a.test\"]\nnetwork = \"off\"\nmode = \"review\"\ntimeout = 30\n\
         no-filename-rules = true\nworkdir = \"-w\"\n",
    )
    .unwrap();
    let file = f.to_str().unwrap();
    let o = accepted(&[
        "--settings",
        file,
        "--allow",
        "b.test",
        "--network",
        "on",
        "--",
        "true",
        "--settings",
    ]);
    // Lists add up; a single value on the command line replaces the file's.
    assert_eq!(o.allow, ["a.test", "b.test"]);
    assert!(o.network);
    assert_eq!(o.mode, Mode::Review);
    assert_eq!(o.timeout, Some(Duration::from_secs(30)));
    assert!(o.no_filename_rules);
    // A value starting with a dash stays the value it is.
    assert_eq!(o.workdir.as_deref(), Some("-w"));
    // After `--` it is the command's.
    assert_eq!(o.command, args(&["true", "--settings"]));
    let twice = refusal(&["--settings", file, "--settings=x", "--", "true"]);
    assert_eq!(twice.to_string(), "--settings given twice");
    std::fs::write(&f, "networks = \"off\"\n").unwrap();
    let e = refusal(&[&format!("--settings={file}"), "--", "true"]).to_string();
    assert!(e.contains("unknown field `networks`"), "{e}");
    // A value the file gives is checked like the command line's.
    std::fs::write(&f, "mode = \"yolo\"\n").unwrap();
    let e = refusal(&["--settings", file, "--", "true"]).to_string();
    assert!(e.contains("give chat, review, plan or orchestrate"), "{e}");
    let e = refusal(&["--settings", "/no/such/file.toml", "--", "true"]).to_string();
    assert!(e.starts_with("--settings /no/such/file.toml: "), "{e}");
}
