//! Order properties of generated plans: once a path is denied, no later
//! mount can make it writable or visible again.

use bwrap_spec::{BwrapBuilder, FilenameRules};
use proptest::prelude::*;
use sandbox_core::{Access, FakeHost, Mode, Os, SandboxBindMount, SandboxSpec};
use std::path::Path;

const DIRS: &[&str] = &[
    "/w",
    "/w/a",
    "/w/a/b",
    "/w/c",
    "/home/u",
    "/home/u/proj",
    "/srv/repos",
    "/srv/repos/orig",
];

fn host() -> FakeHost {
    let mut h = FakeHost::new(Os::Linux);
    h.dir("/usr").dir("/etc");
    for d in DIRS {
        h.dir(*d);
    }
    h.dir("/home/u/.ssh")
        .file("/home/u/.netrc")
        .dir("/w/a/.git/hooks")
        .file("/w/a/.git/config");
    h
}

/// (op, dest) for every mount-like op of the argv, in order.
fn ops(args: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--bind" | "--ro-bind" | "--bind-try" | "--symlink" => {
                out.push((a.to_string(), args[i + 2].clone()));
                i += 3;
            }
            "--tmpfs" | "--remount-ro" | "--proc" | "--dev" | "--dir" | "--chdir"
            | "--cap-drop" => {
                out.push((a.to_string(), args[i + 1].clone()));
                i += 2;
            }
            _ => i += 1,
        }
    }
    out
}

fn covers(dest: &str, p: &str) -> bool {
    Path::new(p).starts_with(dest)
}

fn spec_strategy() -> impl Strategy<Value = SandboxSpec> {
    (
        prop::collection::vec((prop::sample::select(DIRS), any::<bool>()), 1..4),
        prop::collection::vec(prop::sample::select(DIRS), 0..3),
        prop::sample::select(&Mode::ALL[..]),
    )
        .prop_map(|(mounts, protected, mode)| {
            let mut spec = SandboxSpec::new("p", "w");
            spec.mode = mode;
            for (m, ro) in mounts {
                if !spec.bind_mounts.iter().any(|b| b.host_path == m) {
                    let access = if ro {
                        Access::ReadOnly
                    } else {
                        Access::ReadWrite
                    };
                    spec.bind_mounts
                        .push(SandboxBindMount::new(m, access).unwrap());
                }
            }
            spec.protected_paths = protected.into_iter().map(String::from).collect();
            spec
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn denials_are_never_undone(spec in spec_strategy()) {
        let plan = BwrapBuilder::new(&spec, "/home/u")
            .nested_repos(["/w/a"])
            .filename_rules(FilenameRules::DropFilenameGlobDenies)
            .build(&host())
            .unwrap();
        let args: Vec<String> = plan.args().iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let ops = ops(&args);

        // Protected paths that are visible are re-bound read-only, and no
        // later writable bind covers them.
        for p in &spec.protected_paths {
            if !spec.bind_mounts.iter().any(|m| covers(&m.host_path, p)) {
                continue;
            }
            let at = ops.iter().rposition(|(op, d)| op == "--ro-bind" && covers(d, p));
            prop_assert!(at.is_some(), "{p} not re-bound read-only: {args:?}");
            let at = at.unwrap();
            for (op, d) in &ops[at + 1..] {
                prop_assert!(!(op == "--bind" && covers(d, p)), "{op} {d} after deny of {p}");
            }
        }
        // Secret masks come after every bind that could uncover them.
        for secret in ["/home/u/.ssh", "/home/u/.netrc"] {
            if !spec.bind_mounts.iter().any(|m| covers(&m.host_path, secret)) {
                continue;
            }
            let at = ops.iter().rposition(|(op, d)| d == secret && (op == "--tmpfs" || op == "--ro-bind"));
            prop_assert!(at.is_some(), "{secret} not masked: {args:?}");
            let at = at.unwrap();
            for (op, d) in &ops[at + 1..] {
                let harmless = op == "--remount-ro" || op == "--chdir" || (op == "--ro-bind" && !covers(d, secret));
                prop_assert!(harmless || !covers(d, secret), "{op} {d} after the mask of {secret}");
            }
        }
        // Outside chat mode no spec mount is writable.
        if spec.mode != Mode::Chat {
            prop_assert!(!ops.iter().any(|(op, _)| op == "--bind"), "writable bind in {}: {args:?}", spec.mode);
        }
        // Hooks of a repository under a writable root are read-only.
        if spec.mode == Mode::Chat && spec.bind_mounts.iter().any(|m| !m.read_only && covers(&m.host_path, "/w/a")) {
            prop_assert!(ops.iter().any(|(op, d)| op == "--ro-bind" && covers(d, "/w/a/.git/hooks")) , "{args:?}");
        }
    }
}
