//! Properties of the dispatch profile over generated specs, asserted
//! through the evaluator: what the profile means, not how it looks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use sandbox_core::defaults::{mandatory_write_deny_paths, secret_read_deny_entries};
use sandbox_core::{FakeHost, Mode, Os, PathSet, SandboxBindMount, SandboxSpec};
use seatbelt_profile::{
    DNS_SOCKET, Decision, DispatchProfileBuilder, Evaluator, Operation, TERMINAL_SECRET_DIRS,
    Target, TerminalProfileBuilder, read_profile,
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

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
    fn fuzz_round_trip_holds(data in prop::collection::vec(any::<u8>(), 0..128)) {
        prop_assert_eq!(seatbelt_profile::fuzzing::render_read_back(&data), Ok(()));
    }
}
