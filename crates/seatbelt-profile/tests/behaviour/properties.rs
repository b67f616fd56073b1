//! Properties of the dispatch profile over generated specs, asserted
//! through the evaluator: what the profile means, not how it looks.

use proptest::prelude::*;
use sandbox_core::defaults::{mandatory_write_deny_paths, secret_read_deny_entries};
use sandbox_core::{FakeHost, Mode, Os, PathSet, SandboxBindMount, SandboxSpec};
use seatbelt_profile::{
    DNS_SOCKET, Decision, DispatchProfileBuilder, Evaluator, MAX_LOG_LINE, Operation,
    RenderedProfile, TERMINAL_SECRET_DIRS, Target, TerminalProfileBuilder, parse_violation_line,
    read_profile,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// A described macOS host: `/tmp` and `/var` are symlinks into `/private`.
fn mac_host() -> FakeHost {
    let mut host = FakeHost::new(Os::MacOs);
    host.symlink("/tmp", "/private/tmp")
        .symlink("/var", "/private/var")
        .file("/private/tmp")
        .file("/private/var/folders/zz")
        .file("/private/var/home")
        .executable("/usr/bin/sudo");
    host
}

/// One path component: plain, or full of characters that would break SBPL
/// or a regex if they were ever spliced (no `*`/`?`: those make globs).
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z][a-z0-9_-]{0,7}",
        1 => "[a-z][a-z\"()\\\\\n.+|^${}\\[\\] ';#]{1,8}",
    ]
    .prop_filter("not . or ..", |s| s != "." && s != "..")
}

#[derive(Debug, Clone)]
struct Case {
    spec: SandboxSpec,
    home: String,
    temp_dir: String,
    http: u16,
    socks: u16,
    other_port: u16,
}

fn case() -> impl Strategy<Value = Case> {
    let mode = prop_oneof![
        Just(Mode::Chat),
        Just(Mode::Review),
        Just(Mode::Plan),
        Just(Mode::Orchestrate)
    ];
    let home = prop_oneof![
        "[a-z]{1,8}".prop_map(|n| format!("/Users/{n}")),
        "[a-z]{1,8}".prop_map(|n| format!("/var/home/{n}")),
    ];
    let mount = (
        prop_oneof![Just("/work/w-"), Just("/tmp/w-")],
        segment(),
        any::<bool>(),
    )
        .prop_map(|(base, seg, ro)| SandboxBindMount {
            host_path: format!("{base}{seg}"),
            guest_path: format!("{base}{seg}"),
            read_only: ro,
        });
    let protected = (prop_oneof![Just("/repos/"), Just("/tmp/p-")], segment())
        .prop_map(|(base, seg)| format!("{base}{seg}"));
    let runner = segment().prop_map(|s| format!("/var/folders/zz/r-{s}"));
    (
        mode,
        home,
        prop::collection::vec(mount, 0..3),
        prop::collection::vec(protected, 0..3),
        prop::collection::vec(runner, 0..2),
        segment(),
        1024u16..30000,
        30000u16..60000,
        60000u16..65535,
        any::<bool>(),
    )
        .prop_map(
            |(mode, home, mounts, protected, runners, tmp, http, socks, other, net)| {
                let mut spec = SandboxSpec::new("s", "w");
                spec.mode = mode;
                spec.bind_mounts = mounts;
                spec.protected_paths = protected;
                spec.runner_state_dirs = runners;
                spec.network_enabled = net;
                Case {
                    spec,
                    home,
                    temp_dir: format!("/tmp/agent-{tmp}"),
                    http,
                    socks,
                    other_port: other,
                }
            },
        )
}

/// Both spellings of `path` on the host.
fn spellings(path: &str, home: &str, host: &FakeHost) -> Vec<String> {
    PathSet::resolve([path], Path::new(home), host)
        .unwrap()
        .spellings()
}

fn ancestors(p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = Path::new(p).parent();
    while let Some(a) = cur {
        if a == Path::new("/") {
            break;
        }
        out.push(a.to_string_lossy().into_owned());
        cur = a.parent();
    }
    out
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let host = mac_host();
    let mut b = DispatchProfileBuilder::new(&c.spec);
    b.home(c.home.clone())
        .http_proxy_port(c.http)
        .socks_proxy_port(c.socks)
        .temp_dir(c.temp_dir.clone());
    let profile = b.build(&host).unwrap();
    let rendered = profile.render().unwrap();

    // Read back: the same rules come out.
    let back = read_profile(rendered.text(), &rendered.params_map()).unwrap();
    prop_assert!(back.rules().eq(profile.rules()), "read-back rules differ");
    // Tagged denials: the same rules read back, each deny rule carrying
    // the tag once, and the tag read back as the profile's.
    let mut tagged = profile.clone();
    tagged.tag_denials("agent-sandbox-t1").unwrap();
    let tr = tagged.render().unwrap();
    let tback = read_profile(tr.text(), &tr.params_map()).unwrap();
    prop_assert!(tback.rules().eq(profile.rules()), "tagged rules differ");
    prop_assert_eq!(tback.denial_tag(), Some("agent-sandbox-t1"));
    let denies = profile
        .rules()
        .filter(|r| r.action == seatbelt_profile::Action::Deny)
        .count();
    prop_assert_eq!(
        tr.text()
            .matches("(with message \"agent-sandbox-t1\")")
            .count(),
        denies
    );
    for p in &c.spec.protected_paths {
        prop_assert!(
            !rendered.text().contains(p.as_str()),
            "protected path spliced"
        );
    }

    let ev = Evaluator::from_sbpl(rendered.text(), &rendered.params_map()).unwrap();
    let path = |op, p: &str| ev.decide(op, Target::Path(p));

    // Every secret, both spellings, is unreadable (globs: a concrete match).
    for entry in secret_read_deny_entries() {
        let concrete = entry.replace('*', ".toml");
        for s in spellings(&concrete, &c.home, &host) {
            prop_assert_eq!(
                path(Operation::FileReadData, &s),
                Decision::Deny,
                "read {}",
                s
            );
            let below = format!("{s}/x");
            prop_assert_eq!(path(Operation::FileReadData, &below), Decision::Deny);
        }
    }

    // Every protected path, mandatory deny and secret is unwritable,
    // undeletable and cannot be renamed away, nor can any of its ancestors.
    let mut writable_given: Vec<String> = c
        .spec
        .bind_mounts
        .iter()
        .map(|m| m.host_path.clone())
        .collect();
    writable_given.extend(c.spec.runner_state_dirs.iter().cloned());
    writable_given.push(c.temp_dir.clone());
    let mut denied = mandatory_write_deny_paths(
        Path::new(&c.home),
        writable_given.iter().map(String::as_str),
    );
    denied.extend(c.spec.protected_paths.iter().cloned());
    denied.extend(secret_read_deny_entries().map(|e| e.replace('*', ".toml")));
    for d in &denied {
        for s in spellings(d, &c.home, &host) {
            let below = format!("{s}/f");
            for op in [
                Operation::FileWriteData,
                Operation::FileWriteCreate,
                Operation::FileWriteUnlink,
            ] {
                prop_assert_eq!(path(op, &s), Decision::Deny, "{:?} {}", op, s);
                prop_assert_eq!(path(op, &below), Decision::Deny, "{:?} {}", op, below);
            }
            for a in ancestors(&s) {
                prop_assert_eq!(
                    path(Operation::FileWriteUnlink, &a),
                    Decision::Deny,
                    "rename away ancestor {} of {}",
                    a,
                    s
                );
                prop_assert_eq!(path(Operation::FileWriteCreate, &a), Decision::Deny);
            }
        }
    }

    // Writable roots: writable in chat (unless read-only), read-only in
    // review, plan and orchestrate. Runner state and temp dirs always.
    for m in &c.spec.bind_mounts {
        let want = if c.spec.mode == Mode::Chat && !m.read_only {
            Decision::Allow
        } else {
            Decision::Deny
        };
        for s in spellings(&m.host_path, &c.home, &host) {
            let file = format!("{s}/src/main.rs");
            prop_assert_eq!(
                path(Operation::FileWriteData, &file),
                want,
                "mount {}",
                file
            );
            prop_assert_eq!(path(Operation::FileReadData, &file), Decision::Allow);
            for name in [
                ".env",
                "server.key",
                "deep/er/ca.pem",
                "pkg/.git/hooks/post-merge",
            ] {
                let f = format!("{s}/{name}");
                prop_assert_eq!(
                    path(Operation::FileWriteCreate, &f),
                    Decision::Deny,
                    "{}",
                    f
                );
            }
            // A nested repository's .git cannot be moved aside and back.
            let nested = format!("{s}/vendor/lib/.git");
            prop_assert_eq!(path(Operation::FileWriteUnlink, &nested), Decision::Deny);
            prop_assert_eq!(path(Operation::FileWriteCreate, &nested), Decision::Deny);
        }
    }
    for dir in c.spec.runner_state_dirs.iter().chain([&c.temp_dir]) {
        for s in spellings(dir, &c.home, &host) {
            let file = format!("{s}/state/run.json");
            prop_assert_eq!(
                path(Operation::FileWriteData, &file),
                Decision::Allow,
                "{}",
                file
            );
            prop_assert_eq!(
                path(Operation::ProcessExec, &file),
                Decision::Deny,
                "{}",
                file
            );
        }
    }

    // Network: the proxy ports on loopback and DNS; nothing else.
    let net = |ip: IpAddr, port| ev.decide(Operation::NetworkOutbound, Target::Ip(ip, port));
    for ip in [
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ] {
        prop_assert_eq!(net(ip, c.http), Decision::Allow);
        prop_assert_eq!(net(ip, c.socks), Decision::Allow);
        prop_assert_eq!(net(ip, c.other_port), Decision::Deny);
    }
    prop_assert_eq!(
        net(IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34)), c.http),
        Decision::Deny
    );
    let sock = |p| ev.decide(Operation::NetworkOutbound, Target::UnixSocket(p));
    prop_assert_eq!(sock(DNS_SOCKET), Decision::Allow);
    prop_assert_eq!(sock("/var/run/docker.sock"), Decision::Deny);
    prop_assert_eq!(sock("/private/tmp/.X11-unix/X0"), Decision::Deny);
    Ok(())
}

/// The filter kind (`literal` or `subpath`) the rule whose parameters are
/// named `PREFIX_NNN` gives `value`, or `None` if the value is not there.
fn kind_of<'a>(r: &'a RenderedProfile, prefix: &str, value: &str) -> Option<&'a str> {
    let key = r.params().iter().find_map(|(k, v)| {
        let n = k.strip_prefix(prefix)?.strip_prefix('_')?;
        (v == value && n.bytes().all(|b| b.is_ascii_digit())).then_some(k)
    })?;
    ["literal", "subpath"]
        .into_iter()
        .find(|kind| r.text().contains(&format!("({kind} (param \"{key}\"))")))
}

#[derive(Debug, Clone)]
struct FileCase {
    home: String,
    protected: String,
    protected_is_file: bool,
    home_writable: bool,
}

fn file_case() -> impl Strategy<Value = FileCase> {
    (
        prop_oneof![
            "[a-z]{1,8}".prop_map(|n| format!("/Users/{n}")),
            "[a-z]{1,8}".prop_map(|n| format!("/var/home/{n}")),
        ],
        prop_oneof![Just("/repos/"), Just("/tmp/p-")],
        segment(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(home, base, seg, protected_is_file, home_writable)| FileCase {
                home,
                protected: format!("{base}{seg}"),
                protected_is_file,
                home_writable,
            },
        )
}

/// Where the described host keeps `p`: `/tmp` and `/var` lead into `/private`.
fn real(p: &str) -> String {
    if p.starts_with("/tmp/") || p.starts_with("/var/") {
        format!("/private{p}")
    } else {
        p.to_owned()
    }
}

/// Secrets and mandatory denies that exist as regular files are `literal`,
/// those that exist as directories and those that do not exist are
/// `subpath`, both spellings; and every one of them is still unreadable
/// (secrets), unwritable, undeletable and not renamable through an
/// ancestor, while a sibling file with a longer name is untouched.
fn check_file_kinds(c: &FileCase) -> Result<(), TestCaseError> {
    let home = &c.home;
    let rh = real(home);
    let mut host = mac_host();
    host.file(format!("{rh}/.netrc"))
        .file(format!("{rh}/.npmrc"))
        .file(format!("{rh}/.docker/config.json"))
        .file(format!("{rh}/.bashrc"))
        .file(format!("{rh}/.gitconfig"))
        .file(format!("{rh}/.ssh/id_rsa"))
        .dir(format!("{rh}/.aws"))
        .file(format!("{rh}/.netrc2"))
        .file(format!("{rh}/.bashrc2"));
    let rp = real(&c.protected);
    if c.protected_is_file {
        host.file(rp.clone());
    } else {
        host.file(format!("{rp}/README.md"));
    }
    let mut spec = SandboxSpec::new("s", "w");
    spec.protected_paths.push(c.protected.clone());
    if c.home_writable {
        spec.bind_mounts.push(SandboxBindMount {
            host_path: home.clone(),
            guest_path: home.clone(),
            read_only: false,
        });
    }
    let mut b = DispatchProfileBuilder::new(&spec);
    b.home(home.clone())
        .http_proxy_port(8080)
        .socks_proxy_port(1080);
    let profile = b.build(&host).unwrap();
    let r = profile.render().unwrap();
    let back = read_profile(r.text(), &r.params_map()).unwrap();
    prop_assert!(back.rules().eq(profile.rules()), "read-back rules differ");
    let ev = Evaluator::from_sbpl(r.text(), &r.params_map()).unwrap();
    let path = |op, p: &str| ev.decide(op, Target::Path(p));

    let files = ["~/.netrc", "~/.npmrc", "~/.docker/config.json"];
    let dirs = ["~/.ssh", "~/.aws"];
    let missing = ["~/.pgpass", "~/.kube"];
    let mandatory_files = ["~/.bashrc", "~/.gitconfig"];
    let mandatory_missing = ["~/.zshrc", "~/.claude"];
    let kinds = [
        (&files[..], "literal"),
        (&dirs[..], "subpath"),
        (&missing[..], "subpath"),
    ];
    for (entries, want) in kinds {
        for e in entries {
            let sp = spellings(e, home, &host);
            prop_assert_eq!(sp.len(), if home.starts_with("/var/") { 2 } else { 1 });
            for s in sp {
                prop_assert_eq!(kind_of(&r, "DENY_FILE_READ", &s), Some(want), "read {}", s);
                prop_assert_eq!(
                    kind_of(&r, "DENY_FILE_WRITE", &s),
                    Some(want),
                    "write {}",
                    s
                );
                prop_assert_eq!(path(Operation::FileReadData, &s), Decision::Deny, "{}", s);
                prop_assert_eq!(
                    path(Operation::FileReadMetadata, &s),
                    Decision::Deny,
                    "{}",
                    s
                );
                if want == "subpath" {
                    let child = format!("{s}/id_rsa");
                    prop_assert_eq!(
                        path(Operation::FileReadData, &child),
                        Decision::Deny,
                        "{}",
                        child
                    );
                    let deep = format!("{s}/new/deeper/key");
                    prop_assert_eq!(
                        path(Operation::FileReadData, &deep),
                        Decision::Deny,
                        "{}",
                        deep
                    );
                    prop_assert_eq!(
                        path(Operation::FileWriteCreate, &deep),
                        Decision::Deny,
                        "{}",
                        deep
                    );
                }
            }
        }
    }
    for (entries, want) in [
        (&mandatory_files[..], "literal"),
        (&mandatory_missing[..], "subpath"),
    ] {
        for e in entries {
            for s in spellings(e, home, &host) {
                prop_assert_eq!(
                    kind_of(&r, "DENY_FILE_WRITE", &s),
                    Some(want),
                    "write {}",
                    s
                );
            }
        }
    }
    let protected_kind = if c.protected_is_file {
        "literal"
    } else {
        "subpath"
    };
    for s in spellings(&c.protected, home, &host) {
        prop_assert_eq!(
            kind_of(&r, "DENY_FILE_WRITE", &s),
            Some(protected_kind),
            "{}",
            s
        );
    }

    // Whatever the kind: unwritable, undeletable, not renamable through an
    // ancestor, and the ancestor rule stays `literal`.
    let all: Vec<&str> = files
        .iter()
        .chain(&dirs)
        .chain(&missing)
        .chain(&mandatory_files)
        .chain(&mandatory_missing)
        .copied()
        .chain([c.protected.as_str()])
        .collect();
    for e in all {
        for s in spellings(e, home, &host) {
            for op in [
                Operation::FileWriteData,
                Operation::FileWriteCreate,
                Operation::FileWriteUnlink,
            ] {
                prop_assert_eq!(path(op, &s), Decision::Deny, "{:?} {}", op, s);
            }
            for a in ancestors(&s) {
                prop_assert_eq!(
                    path(Operation::FileWriteUnlink, &a),
                    Decision::Deny,
                    "{}",
                    a
                );
                prop_assert_eq!(
                    path(Operation::FileWriteCreate, &a),
                    Decision::Deny,
                    "{}",
                    a
                );
                prop_assert_eq!(
                    kind_of(&r, "DENY_FILE_WRITE_UNLINK", &a),
                    Some("literal"),
                    "{}",
                    a
                );
            }
        }
    }

    // A `literal` for a file does not reach a sibling with a longer name.
    for s in spellings("~/.netrc2", home, &host) {
        prop_assert_eq!(path(Operation::FileReadData, &s), Decision::Allow, "{}", s);
    }
    if c.home_writable {
        for s in spellings("~/.bashrc2", home, &host) {
            prop_assert_eq!(path(Operation::FileWriteData, &s), Decision::Allow, "{}", s);
        }
    }
    Ok(())
}

/// A process name as the log prints it: no `) deny` inside (which would
/// be read as the end of the process column) and not empty.
fn process_name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9 ._()-]{0,24}".prop_filter("no ) deny inside", |s| !s.contains(") deny"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn deny_filter_kinds_follow_the_host(c in file_case()) {
        check_file_kinds(&c)?;
    }

    #[test]
    fn dispatch_profiles_mean_what_the_spec_says(c in case()) {
        check(&c)?;
    }

    #[test]
    fn terminal_profiles_keep_the_secret_dirs(
        home in prop_oneof![
            "[a-z]{1,8}".prop_map(|n| format!("/Users/{n}")),
            "[a-z]{1,8}".prop_map(|n| format!("/var/home/{n}")),
        ],
        work in segment(),
    ) {
        let host = mac_host();
        let workdir = format!("/tmp/w-{work}");
        let mut b = TerminalProfileBuilder::new();
        b.home(home.clone()).workdir(workdir.clone());
        let r = b.build(&host).unwrap().render().unwrap();
        let ev = Evaluator::from_sbpl(r.text(), &r.params_map()).unwrap();
        let path = |op, p: &str| ev.decide(op, Target::Path(p));
        for dir in TERMINAL_SECRET_DIRS {
            for s in spellings(dir, &home, &host) {
                let key = format!("{s}/key");
                prop_assert_eq!(path(Operation::FileReadData, &key), Decision::Deny, "{}", key);
                prop_assert_eq!(path(Operation::FileWriteData, &key), Decision::Deny, "{}", key);
                prop_assert_eq!(path(Operation::FileWriteUnlink, &s), Decision::Deny, "{}", s);
                for a in ancestors(&s) {
                    prop_assert_eq!(path(Operation::FileWriteUnlink, &a), Decision::Deny, "{}", a);
                }
            }
        }
        for dir in [&home, &workdir] {
            for s in spellings(dir, &home, &host) {
                let f = format!("{s}/notes/today.md");
                prop_assert_eq!(path(Operation::FileWriteData, &f), Decision::Allow, "{}", f);
            }
        }
        let anywhere = std::net::SocketAddr::from(([93, 184, 216, 34], 443));
        prop_assert_eq!(
            ev.decide(Operation::NetworkOutbound, Target::Ip(anywhere.ip(), anywhere.port())),
            Decision::Allow
        );
    }

    #[test]
    fn nul_in_any_path_is_a_typed_error(seg in segment(), field in 0usize..3) {
        let bad = format!("/work/{seg}\0x");
        let mut spec = SandboxSpec::new("s", "w");
        match field {
            0 => spec.protected_paths.push(bad),
            1 => spec.runner_state_dirs.push(bad),
            _ => spec.exec_grant_roots.push(bad),
        }
        let mut b = DispatchProfileBuilder::new(&spec);
        b.home("/Users/a").http_proxy_port(1).socks_proxy_port(2);
        prop_assert!(b.build(&mac_host()).is_err());
    }

    #[test]
    fn untrusted_sbpl_and_log_lines_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
        seatbelt_profile::fuzzing::untrusted_text(&data);
    }

    #[test]
    fn violation_lines_never_panic(
        parts in prop::collection::vec(
            prop_oneof![
                Just("Sandbox: ".to_owned()),
                Just(") deny".to_owned()),
                Just(") deny(".to_owned()),
                Just(") allow(".to_owned()),
                Just(" ".to_owned()),
                Just("(".to_owned()),
                Just(")".to_owned()),
                "[0-9]{0,12}",
                "[a-z*-]{0,12}",
                any::<String>(),
            ],
            0..16,
        ),
        long in any::<bool>(),
    ) {
        let mut line = parts.concat();
        if long {
            line.push_str(&"x".repeat(MAX_LOG_LINE));
        }
        if let Some(v) = parse_violation_line(&line) {
            prop_assert!(line.len() <= MAX_LOG_LINE);
            prop_assert!(!v.action.is_empty());
            prop_assert!(v.action.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'*'));
            prop_assert_eq!(v.raw.as_deref(), Some(line.trim_end_matches(['\r', '\n'])));
            prop_assert!(line.contains(") deny"));
        }
    }

    #[test]
    fn log_stream_lines_never_panic_and_tagged_denials_read_back(
        noise in prop::collection::vec(any::<u8>(), 0..256),
        action in "[a-z][a-z0-9-]{0,24}",
        target in "/[A-Za-z0-9 ._()\"\\\\-]{0,40}[A-Za-z0-9]",
        extra in any::<String>(),
        tag in "[A-Za-z0-9_-]{1,20}",
    ) {
        let _ = seatbelt_profile::parse_log_stream_line(&noise, &tag);
        let entry = serde_json::json!({
            "timestamp": "2026-12-01 10:00:00.000000+0000",
            "eventMessage": format!("Sandbox: sh(7) deny(1) {action} {target} {tag}"),
            "extra": extra,
        });
        let line = serde_json::to_vec(&entry).unwrap();
        let v = seatbelt_profile::parse_log_stream_line(&line, &tag);
        prop_assert!(v.is_some(), "{:?}", String::from_utf8_lossy(&line));
        let v = v.unwrap();
        prop_assert_eq!(v.action.as_str(), action.as_str());
        prop_assert_eq!(v.target.as_str(), target.as_str());
        // Another session's tag is not ours.
        let other = format!("{tag}x");
        prop_assert!(seatbelt_profile::parse_log_stream_line(&line, &other).is_none());
    }

    #[test]
    fn well_formed_violation_lines_round_trip(
        columns in prop_oneof![
            Just(String::new()),
            Just("2026-11-30 10:00:00.123 E  kernel[0:1a2b] (Sandbox) ".to_owned()),
        ],
        name in process_name(),
        pid in "[0-9]{1,10}",
        count in prop::option::of("[0-9]{1,10}"),
        action in "[a-z][a-z0-9-]{0,24}\\*?",
        target in prop_oneof![
            Just(String::new()),
            "/[A-Za-z0-9 ._()-]{0,40}[A-Za-z0-9]",
            "[a-z0-9.]{1,20}:[0-9]{1,5}",
        ],
        newline in prop_oneof![Just(""), Just("\n"), Just("\r\n")],
    ) {
        let deny = match &count {
            Some(n) => format!("deny({n})"),
            None => "deny".to_owned(),
        };
        let tail = if target.is_empty() { String::new() } else { format!(" {target}") };
        let line = format!("{columns}Sandbox: {name}({pid}) {deny} {action}{tail}{newline}");
        let v = parse_violation_line(&line);
        prop_assert!(v.is_some(), "{:?}", line);
        let v = v.unwrap();
        prop_assert_eq!(&v.action, &action);
        prop_assert_eq!(&v.target, &target);
        prop_assert_eq!(v.raw.as_deref(), Some(line.trim_end_matches(['\r', '\n'])));
        // The same line as an allow is not a violation.
        let allow = line.replacen(") deny", ") allow", 1);
        prop_assert_eq!(parse_violation_line(&allow), None, "{:?}", allow);
        // Cut anywhere inside `deny(N) ACTION`, it is not a violation.
        let head = format!("{columns}Sandbox: {name}({pid}) ");
        for cut in head.len()..head.len() + deny.len() + 1 {
            prop_assert_eq!(parse_violation_line(&line[..cut]), None, "{:?}", &line[..cut]);
        }
    }

    #[test]
    fn fuzz_round_trip_holds(data in prop::collection::vec(any::<u8>(), 0..128)) {
        prop_assert_eq!(seatbelt_profile::fuzzing::render_read_back(&data), Ok(()));
    }
}

/// A home holding every character a path may and a regex must escape:
/// the secrets under it are denied exactly as under a plain twin home.
#[test]
fn a_home_with_brackets_and_metacharacters_denies_what_a_plain_home_does() {
    let host = mac_host();
    let decide = |home: &str, rel: &str| {
        let spec = SandboxSpec::new("s", "w");
        let mut b = DispatchProfileBuilder::new(&spec);
        b.home(home).http_proxy_port(8080).socks_proxy_port(1080);
        let r = b.build(&host).unwrap().render().unwrap();
        let ev = Evaluator::from_sbpl(r.text(), &r.params_map()).unwrap();
        let p = format!("{home}/{rel}");
        (
            ev.decide(Operation::FileReadData, Target::Path(&p)),
            ev.decide(Operation::FileWriteData, Target::Path(&p)),
        )
    };
    let odd = "/Users/o'brien (x) [y] {z} a|b^c$d.e+f ü";
    let plain = "/Users/plain";
    for rel in [
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".aws/credentials",
        ".ssh/id_rsa",
        "project/notes.txt",
    ] {
        assert_eq!(decide(odd, rel), decide(plain, rel), "{rel} under {odd:?}");
    }
    let (read, _) = decide(odd, ".cargo/credentials.toml");
    assert_eq!(
        read,
        Decision::Deny,
        "the glob secret is denied under the odd home"
    );
}

/// The decisions of a dispatch profile for `home` on paths below it.
fn home_decisions(home: &str) -> Vec<(Decision, Decision)> {
    let host = FakeHost::new(Os::MacOs);
    let spec = SandboxSpec::new("s", "w");
    let mut b = DispatchProfileBuilder::new(&spec);
    b.home(home).http_proxy_port(8080).socks_proxy_port(1080);
    let profile = b.build(&host).unwrap();
    let r = profile.render().unwrap();
    let back = read_profile(r.text(), &r.params_map()).unwrap();
    assert!(
        back.rules().eq(profile.rules()),
        "read-back rules differ for {home:?}"
    );
    let ev = Evaluator::from_sbpl(r.text(), &r.params_map()).unwrap();
    [
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".ssh/id_rsa",
        ".netrc",
        ".bashrc",
        "project/notes.txt",
    ]
    .iter()
    .map(|rel| {
        let p = format!("{home}/{rel}");
        (
            ev.decide(Operation::FileReadData, Target::Path(&p)),
            ev.decide(Operation::FileWriteData, Target::Path(&p)),
        )
    })
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    /// Any bytes a home directory may hold (quotes, brackets, braces,
    /// backslashes, the regex metacharacters, `*` and `?`, non-ASCII,
    /// spaces) mean for the secrets below it what a plain home means.
    #[test]
    fn a_home_of_any_characters_denies_what_a_plain_twin_does(
        name in "[a-z][a-z0-9 \"'()\\[\\]{}\\\\|^$.+*?#;ü€]{0,12}"
            .prop_filter("a component", |s| s != "." && s != ".." && !s.ends_with(' ')),
    ) {
        static PLAIN: std::sync::OnceLock<Vec<(Decision, Decision)>> = std::sync::OnceLock::new();
        let plain = PLAIN.get_or_init(|| home_decisions("/Users/plain"));
        let odd = format!("/Users/{name}");
        prop_assert_eq!(&home_decisions(&odd), plain, "home {:?}", odd);
    }
}

/// The profile depends on the spec, not on the host that renders it: macOS's
/// firmlinks apply on a Linux host too.
#[test]
fn one_spec_renders_the_same_profile_on_a_linux_and_a_macos_host() {
    let mut spec = SandboxSpec::new("s", "w");
    for (path, read_only) in [
        ("/tmp/wt", false),
        ("/var/folders/zz/state", false),
        ("/etc/agent", true),
    ] {
        spec.bind_mounts.push(SandboxBindMount {
            host_path: path.into(),
            guest_path: path.into(),
            read_only,
        });
    }
    spec.protected_paths.push("/tmp/wt/secret".into());
    let render = |host: &FakeHost| {
        let mut b = DispatchProfileBuilder::new(&spec);
        b.home("/tmp/home")
            .http_proxy_port(8080)
            .socks_proxy_port(1080)
            .temp_dir("/var/folders/zz/T");
        b.build(host).unwrap().render().unwrap()
    };
    let linux = FakeHost::new(Os::Linux);
    let mut mac = FakeHost::new(Os::MacOs);
    mac.symlink("/tmp", "/private/tmp")
        .symlink("/var", "/private/var")
        .symlink("/etc", "/private/etc");
    let (on_linux, on_mac) = (render(&linux), render(&mac));
    assert_eq!(on_linux.text(), on_mac.text());
    assert_eq!(on_linux.params_map(), on_mac.params_map());
    let ev = Evaluator::from_sbpl(on_linux.text(), &on_linux.params_map()).unwrap();
    let decide = |op, p: &str| ev.decide(op, Target::Path(p));
    // The kernel's spellings, rendered on Linux.
    assert_eq!(
        decide(Operation::FileReadData, "/private/tmp/home/.ssh/id_rsa"),
        Decision::Deny
    );
    assert_eq!(
        decide(Operation::FileWriteData, "/private/var/folders/zz/state/x"),
        Decision::Allow
    );
    assert_eq!(
        decide(Operation::FileWriteUnlink, "/private/tmp/wt/secret"),
        Decision::Deny
    );
}

#[test]
fn a_denial_tag_reads_back_only_when_every_deny_rule_has_the_same_one() {
    let ok = "(version 1)\n(deny default (with message \"t1\"))\n(allow file-read*)\n\
              (deny file-read* (literal \"/s\") (with message \"t1\"))\n";
    let p = read_profile(ok, &Default::default()).unwrap();
    assert_eq!(p.denial_tag(), Some("t1"));
    let again = p.render().unwrap();
    assert_eq!(read_profile(again.text(), &again.params_map()).unwrap(), p);
    let refused = [
        (
            "two tags",
            "(version 1)\n(deny default (with message \"t1\"))\n(deny file-read* (with message \"t2\"))\n",
        ),
        (
            "one deny rule untagged",
            "(version 1)\n(deny default (with message \"t1\"))\n(deny file-read* (literal \"/s\"))\n",
        ),
        (
            "a tag on an allow rule",
            "(version 1)\n(allow file-read* (with message \"t1\"))\n",
        ),
        (
            "another modifier",
            "(version 1)\n(deny default (with send-signal SIGKILL))\n",
        ),
        (
            "a filter after the modifier",
            "(version 1)\n(deny file-read* (with message \"t1\") (literal \"/s\"))\n",
        ),
        (
            "a tag that could not be set",
            "(version 1)\n(deny default (with message \"a b\"))\n",
        ),
    ];
    for (intent, text) in refused {
        assert!(read_profile(text, &Default::default()).is_err(), "{intent}");
    }
}
