//! Whole argv vectors for representative specs, from `testdata/argv.toml`,
//! on a described (fake) host.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bwrap_spec::{BridgePlan, BwrapBuilder, ErrorKind, FilenameRules};
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
    expected: Option<Vec<String>>,
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
        if c.bridges {
            let mut plan = BridgePlan::new("/tmp/as-1").unwrap();
            plan.add("http", 3128, "127.0.0.1:4000".parse().unwrap())
                .unwrap();
            b.bridges(plan);
        }
        match (b.build(&host()), &c.error) {
            (Ok(plan), None) => {
                let got: Vec<String> = plan
                    .args()
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
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
