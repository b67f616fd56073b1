//! Loads `testdata/mandatory.toml`: the mandatory write-deny set built on a
//! described host.

use docker_spec::{ContainerSpec, ErrorKind, ImageRef, Network};
use sandbox_core::{FakeHost, Os, SandboxSpec};
use serde::Deserialize;
use std::path::Path;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct HostRow {
    pub files: Vec<String>,
    pub dirs: Vec<String>,
    pub contents: Vec<(String, String)>,
    pub symlinks: Vec<(String, String)>,
}

impl HostRow {
    pub(crate) fn fake(&self) -> FakeHost {
        let mut h = FakeHost::new(Os::Linux);
        for f in &self.files {
            h.file(f);
        }
        for d in &self.dirs {
            h.dir(d);
        }
        for (p, text) in &self.contents {
            h.contents(p, text.clone());
        }
        for (link, target) in &self.symlinks {
            h.symlink(link, target);
        }
        h
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    intent: String,
    sandbox: String,
    #[serde(default)]
    home: Option<String>,
    #[serde(default)]
    nested_repos: Vec<String>,
    #[serde(default)]
    host: HostRow,
    #[serde(default)]
    argv: Option<Vec<String>>,
    #[serde(default)]
    mounts: Option<Vec<String>>,
    #[serde(default)]
    missing: Option<Vec<String>>,
    #[serde(default)]
    missing_includes: Vec<String>,
    #[serde(default)]
    missing_excludes: Vec<String>,
    #[serde(default)]
    symlinked: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct File {
    case: Vec<Case>,
}

#[test]
fn mandatory_table() {
    let path = format!("{}/testdata/mandatory.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let cases = toml::from_str::<File>(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .case;
    assert!(cases.len() >= 10);
    for case in cases {
        let intent = &case.intent;
        let sandbox: SandboxSpec = serde_json::from_str(&case.sandbox).unwrap();
        let host = case.host.fake();
        let home = case.home.as_deref().unwrap_or("/home/u");
        let spec = ContainerSpec::from_sandbox_on_host(
            &sandbox,
            ImageRef::new("alpine:3").unwrap(),
            Network::None,
            Path::new(home),
            &case.nested_repos,
            &host,
        )
        .and_then(|b| b.build())
        .unwrap_or_else(|e| panic!("{intent}: {e}"));
        let argv: Vec<String> = spec
            .run_argv()
            .unwrap()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        if let Some(want) = &case.argv {
            assert_eq!(&argv, want, "{intent}");
        }
        let mounts: Vec<&str> = argv
            .iter()
            .filter_map(|a| a.strip_prefix("--mount="))
            .collect();
        if let Some(want) = &case.mounts {
            assert_eq!(&mounts, want, "{intent}");
        }
        // Every read-only bind comes after the writable bind it sits in.
        for (i, m) in mounts.iter().enumerate() {
            if !m.ends_with(",readonly,bind-recursive=readonly,bind-propagation=rprivate") {
                continue;
            }
            let target = spec.mounts()[i].target();
            for (j, outer) in spec.mounts().iter().enumerate() {
                if outer.access() == sandbox_core::Access::ReadWrite
                    && Path::new(target).starts_with(outer.target())
                {
                    assert!(j < i, "{intent}: {target} before {}", outer.target());
                }
            }
        }
        let missing = spec.unprotected_missing_paths();
        if let Some(want) = &case.missing {
            assert_eq!(missing, want.as_slice(), "{intent}");
        }
        for m in &case.missing_includes {
            assert!(missing.contains(m), "{intent}: {m} not in {missing:#?}");
        }
        for m in &case.missing_excludes {
            assert!(!missing.contains(m), "{intent}: {m} in missing");
        }
        if let Some(want) = &case.symlinked {
            assert_eq!(
                spec.unprotected_symlinked_paths(),
                want.as_slice(),
                "{intent}"
            );
        }
        let all: Vec<&str> = spec.unprotected_paths().collect();
        assert_eq!(
            all.len(),
            missing.len() + spec.unprotected_symlinked_paths().len(),
            "{intent}"
        );
    }
}

#[test]
fn the_plain_constructor_reports_nothing_and_adds_nothing() {
    let sandbox: SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","mode":"chat","bindMounts":[{"hostPath":"/srv/wt"}]}"#,
    )
    .unwrap();
    let spec =
        ContainerSpec::from_sandbox(&sandbox, ImageRef::new("alpine:3").unwrap(), Network::None)
            .unwrap()
            .build()
            .unwrap();
    assert_eq!(spec.mounts().len(), 1);
    assert!(spec.unprotected_paths().next().is_none());
}

#[test]
fn home_and_nested_repos_must_be_absolute() {
    let sandbox: SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","mode":"chat","bindMounts":[{"hostPath":"/srv/wt"}]}"#,
    )
    .unwrap();
    let host = FakeHost::new(Os::Linux);
    let image = || ImageRef::new("alpine:3").unwrap();
    for (home, repos) in [
        ("home/u", vec![]),
        ("~", vec![]),
        ("/home/u", vec!["srv/wt/sub".to_owned()]),
        ("/home/u", vec!["/srv/wt/../etc".to_owned()]),
    ] {
        let err = ContainerSpec::from_sandbox_on_host(
            &sandbox,
            image(),
            Network::None,
            Path::new(home),
            &repos,
            &host,
        )
        .err()
        .unwrap_or_else(|| panic!("{home} {repos:?}: accepted"));
        assert!(
            matches!(err.kind(), ErrorKind::InvalidPath { .. }),
            "{home} {repos:?}: {err}"
        );
    }
}

#[test]
fn filename_globs_are_reported_unenforced_only_when_something_is_writable() {
    let image = || ImageRef::new("alpine:3").unwrap();
    let chat: SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","mode":"chat","bindMounts":[{"hostPath":"/srv/wt"}]}"#,
    )
    .unwrap();
    let spec = ContainerSpec::from_sandbox(&chat, image(), Network::None)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(spec.filename_globs_unenforced(), [".env", "*.key", "*.pem"]);
    let review: SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","mode":"review","bindMounts":[{"hostPath":"/srv/wt"}]}"#,
    )
    .unwrap();
    let spec = ContainerSpec::from_sandbox(&review, image(), Network::None)
        .unwrap()
        .build()
        .unwrap();
    assert!(spec.filename_globs_unenforced().is_empty());
}
