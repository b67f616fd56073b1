//! Whole argv vectors for representative specs, from `testdata/argv.toml`,
//! on a described (fake) host.

use bwrap_spec::{
    BridgePlan, BwrapBuilder, ErrorKind, FilenameRules, MAX_NAME_GUARD_RULES, NameGuardLauncher,
};
use sandbox_core::{Access, FakeHost, NameGuardInvocation, Os, SandboxBindMount, SandboxSpec};
use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    intent: String,
    spec: String,
    #[serde(default)]
    drop_filename_globs: bool,
    #[serde(default)]
    bridges: bool,
    #[serde(default)]
    nested_repos: Vec<String>,
    /// Extra read denies, and paths read again inside them.
    #[serde(default)]
    read_deny: Vec<String>,
    #[serde(default)]
    read_reopen: Vec<String>,
    /// `"launcher"`: enforced by a name guard at /opt/ng; `"no-launcher"`:
    /// enforced by a name guard but none set; `"sockets-only"`: filename
    /// rules dropped, a launcher given.
    name_guard: Option<String>,
    expected: Option<Vec<String>>,
    /// The last arguments of the plan, when the whole argv is not given.
    expected_tail: Option<Vec<String>>,
    /// What runs for the command `cmd arg`.
    guarded_command: Option<Vec<String>>,
    error: Option<String>,
}

fn host() -> FakeHost {
    let mut h = FakeHost::new(Os::Linux);
    h.dir("/usr/bin")
        .dir("/usr/lib")
        .dir("/etc")
        .file("/etc/shadow");
    h.symlink("/bin", "usr/bin").symlink("/lib", "usr/lib");
    h.dir("/home/u/.ssh")
        .file("/home/u/.aws/credentials")
        .file("/home/u/.netrc");
    h.dir("/w/repo/.git/hooks")
        .file("/w/repo/.git/config")
        .dir("/w/repos/orig");
    h.dir("/w/data/pub")
        .file("/w/data/note.txt")
        .file("/w/data/key");
    h.dir("/home/u/proj");
    h.dir("/state");
    h.file("/w/certs/a.pem")
        .file("/w/certs/B.PEM")
        .file("/w/certs/readme.txt");
    h
}

#[test]
fn argv_table() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/argv.toml"))
        .unwrap();
    let table: Table = toml::from_str(&text).unwrap();
    for c in &table.case {
        let spec: SandboxSpec = serde_json::from_str(&c.spec).unwrap();
        let mut b = BwrapBuilder::new(&spec, "/home/u");
        b.nested_repos(c.nested_repos.clone())
            .read_deny(c.read_deny.clone())
            .read_reopen(c.read_reopen.clone());
        if c.drop_filename_globs {
            b.filename_rules(FilenameRules::DropFilenameGlobDenies);
        }
        match c.name_guard.as_deref() {
            Some("launcher") => {
                b.filename_rules(FilenameRules::EnforcedByNameGuard)
                    .name_guard_launcher(NameGuardLauncher::multi_call("/opt/ng", ["--guard"]));
            }
            Some("sockets-only") => {
                b.filename_rules(FilenameRules::DropFilenameGlobDenies)
                    .name_guard_launcher(NameGuardLauncher::multi_call("/opt/ng", ["--guard"]));
            }
            Some("no-launcher") => {
                b.filename_rules(FilenameRules::EnforcedByNameGuard);
            }
            Some(other) => panic!("{}: unknown name_guard {other}", c.intent),
            None => {}
        }
        if c.bridges {
            let mut plan = BridgePlan::new("/tmp/as-1").unwrap();
            plan.add("http", 3128).unwrap();
            b.bridges(plan);
        }
        match (b.build(&host()), &c.error) {
            (Ok(plan), None) => {
                let got: Vec<String> = plan
                    .args()
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                if let Some(want) = &c.guarded_command {
                    let cmd: Vec<String> = plan
                        .guarded_command(["cmd", "arg"], Some(7))
                        .iter()
                        .map(|a| a.to_string_lossy().into_owned())
                        .collect();
                    assert_eq!(&cmd, want, "{}", c.intent);
                    assert_eq!(plan.is_guarded(), want[0] != "cmd", "{}", c.intent);
                    if plan.is_guarded() {
                        // After the guest path and the marker, the launcher
                        // reads back exactly the plan's rules and command.
                        let line = NameGuardInvocation::parse(
                            plan.guarded_command(["cmd", "arg"], Some(7))
                                .into_iter()
                                .skip(2),
                        )
                        .unwrap();
                        assert_eq!(line.deny_globs, plan.name_guard_globs(), "{}", c.intent);
                        assert_eq!(line.report_fd, Some(7), "{}", c.intent);
                        assert_eq!(line.command, ["cmd", "arg"], "{}", c.intent);
                    }
                }
                if let Some(tail) = &c.expected_tail {
                    assert!(
                        got.ends_with(tail),
                        "{}: got tail {:?}",
                        c.intent,
                        &got[got.len().saturating_sub(tail.len())..]
                    );
                    continue;
                }
                if Some(&got) != c.expected.as_ref() {
                    panic!(
                        "{}: got\n{}",
                        c.intent,
                        got.iter()
                            .map(|a| format!("  {a:?},"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                }
            }
            (Err(e), Some(kind)) => {
                let ok = match kind.as_str() {
                    "filename-rules" => {
                        matches!(e.kind(), ErrorKind::FilenameRulesUnenforceable { .. })
                    }
                    "bad-path" => matches!(e.kind(), ErrorKind::BadPath { .. }),
                    "launcher-missing" => {
                        matches!(e.kind(), ErrorKind::NameGuardLauncherMissing)
                    }
                    "spec" => matches!(e.kind(), ErrorKind::Spec(_)),
                    _ => false,
                };
                assert!(ok, "{}: wrong error {e}", c.intent);
                if kind == "filename-rules" {
                    let msg = e.to_string();
                    assert!(
                        msg.contains("--no-filename-rules") && msg.contains("name-guard"),
                        "{msg}"
                    );
                }
            }
            (got, _) => panic!("{}: {got:?}", c.intent),
        }
    }
}

#[test]
fn creation_time_rules_stop_at_the_launcher_s_limit() {
    // Each missing protected path in a worktree is one creation-time rule.
    let build = |extra: usize| {
        let mut spec = SandboxSpec::new("s", "w");
        spec.bind_mounts
            .push(SandboxBindMount::new("/w/repo", Access::ReadWrite).unwrap());
        let fixed = BwrapBuilder::new(&spec, "/home/u")
            .filename_rules(FilenameRules::EnforcedByNameGuard)
            .name_guard_launcher(NameGuardLauncher::new("/opt/ng"))
            .build(&host())
            .unwrap()
            .name_guard_globs()
            .len();
        let room = MAX_NAME_GUARD_RULES - fixed;
        spec.protected_paths = (0..room + extra).map(|i| format!("/w/repo/p{i}")).collect();
        BwrapBuilder::new(&spec, "/home/u")
            .filename_rules(FilenameRules::EnforcedByNameGuard)
            .name_guard_launcher(NameGuardLauncher::new("/opt/ng"))
            .build(&host())
    };
    let plan = build(0).unwrap();
    assert_eq!(plan.name_guard_globs().len(), MAX_NAME_GUARD_RULES);
    assert_eq!(MAX_NAME_GUARD_RULES, NameGuardInvocation::MAX_DENY_GLOBS);
    // What the plan builds at the limit, the launcher still reads.
    let line = NameGuardInvocation::parse(plan.guarded_command(["true"], None).into_iter().skip(1))
        .unwrap();
    assert_eq!(line.deny_globs.len(), MAX_NAME_GUARD_RULES);
    let e = build(1).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::TooManyNameGuardRules { count, limit }
                if *count == MAX_NAME_GUARD_RULES + 1 && *limit == MAX_NAME_GUARD_RULES
        ),
        "{e}"
    );
}

#[test]
fn a_read_deny_glob_becomes_a_creation_rule_and_state_dirs_are_free_of_name_rules() {
    let mut spec = SandboxSpec::new("s", "w");
    spec.bind_mounts
        .push(SandboxBindMount::new("/w", Access::ReadWrite).unwrap());
    spec.runner_state_dirs.push("/state".into());
    let mut b = BwrapBuilder::new(&spec, "/home/u");
    b.filename_rules(FilenameRules::EnforcedByNameGuard)
        .name_guard_launcher(NameGuardLauncher::new("/opt/ng"))
        .read_deny(["/w/certs/*.pem"]);
    let plan = b.build(&host()).unwrap();
    let args: Vec<String> = plan
        .args()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // The match that exists is masked.
    assert!(
        args.windows(3)
            .any(|w| w == ["--ro-bind", "/dev/null", "/w/certs/a.pem"]),
        "{args:?}"
    );
    // A new match is the guard's to refuse.
    assert!(
        plan.name_guard_globs()
            .iter()
            .any(|g| g == "/w/certs/*.pem"),
        "{:?}",
        plan.name_guard_globs()
    );
    // The runner state directory is where the name rules do not hold.
    assert_eq!(plan.name_guard_state_dirs(), ["/state"]);
    let line = NameGuardInvocation::parse(plan.guarded_command(["cmd"], None).into_iter().skip(1))
        .unwrap();
    assert_eq!(line.state_dirs, ["/state"]);
    assert!(line.deny_globs.contains(&"*.key".to_string()));

    // The Landlock mechanism's plan says the same.
    let hp = b.host_plan(&host()).unwrap();
    assert!(
        hp.read_deny.contains(&"/w/certs/a.pem".to_string()),
        "{hp:?}"
    );
    assert!(hp.protect.contains(&"/w/certs/a.pem".to_string()), "{hp:?}");
    assert!(
        hp.name_rules.contains(&"/w/certs/*.pem".to_string()),
        "{hp:?}"
    );
    assert_eq!(hp.state_dirs, ["/state"]);

    // Under the explicit opt-out the read glob's creation rule is dropped
    // with the others, and said to be.
    let mut b = BwrapBuilder::new(&spec, "/home/u");
    b.filename_rules(FilenameRules::DropFilenameGlobDenies)
        .read_deny(["/w/certs/*.pem"]);
    let plan = b.build(&host()).unwrap();
    assert!(
        plan.dropped_filename_globs()
            .contains(&"/w/certs/*.pem".to_string())
    );
    assert!(plan.name_guard_state_dirs().is_empty());
}
