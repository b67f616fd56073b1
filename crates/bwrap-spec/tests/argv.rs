//! Whole argv vectors for representative specs, from `testdata/argv.toml`,
//! on a described (fake) host.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

use bwrap_spec::{BridgePlan, BwrapBuilder, ErrorKind, FilenameRules, NameGuardLauncher};
use sandbox_core::{FakeHost, Os, SandboxSpec};
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
    /// `"launcher"`: enforced by a name guard at /opt/ng; `"no-launcher"`:
    /// enforced by a name guard but none set.
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
    h.dir("/state");
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
        b.nested_repos(c.nested_repos.clone());
        if c.drop_filename_globs {
            b.filename_rules(FilenameRules::DropFilenameGlobDenies);
        }
        match c.name_guard.as_deref() {
            Some("launcher") => {
                b.filename_rules(FilenameRules::EnforcedByNameGuard)
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
