//! Helpers shared by the sandbox tests: bubblewrap, the attack program and a
//! writable directory to run scripts in, with or without the guard.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub(crate) const GUARD: &str = env!("CARGO_BIN_EXE_name-guard-exec");
pub(crate) const DENY: [&str; 3] = [".env", "*.key", "*.pem"];
pub(crate) const DENIED_NAMES: [&str; 3] = ["x.pem", ".env", "id.key"];

/// bubblewrap; without it the test fails with the install line (or is
/// skipped visibly when the person asked for that).
pub(crate) fn bwrap() -> Option<PathBuf> {
    test_support::tool("bwrap", "apt-get install bubblewrap")
}

/// The attack program, compiled once per test binary.
pub(crate) fn attack() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("name-guard-attack-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let out = dir.join("attack");
        let src = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/behaviour/support/attack.c"
        );
        let st = Command::new("cc")
            .args(["-O1", "-Wall", "-pthread", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .unwrap();
        assert!(st.success(), "cc failed");
        out
    })
}

pub(crate) struct Sandbox {
    pub(crate) bwrap: PathBuf,
    pub(crate) dir: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Option<Self> {
        let bwrap = bwrap()?;
        Some(Sandbox {
            bwrap,
            dir: tempfile::tempdir().unwrap(),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Run `sh -c script` in the writable directory, under bubblewrap and,
    /// when `guarded`, under the guard.
    pub(crate) fn sh_with(&self, guarded: bool, script: &str) -> Output {
        self.sh_rules(guarded, &DENY, script)
    }

    pub(crate) fn sh_rules(&self, guarded: bool, deny: &[&str], script: &str) -> Output {
        let guard = guarded.then_some(deny);
        let c = self.command(guard, &[], script);
        self.output(c, script)
    }

    /// The bubblewrap command running `sh -c script` in the writable
    /// directory; under the guard with these rules (and `guard_args` before
    /// them) when `deny` is `Some`. The caller may add environment
    /// variables or descriptors before running it.
    pub(crate) fn command(
        &self,
        deny: Option<&[&str]>,
        guard_args: &[&str],
        script: &str,
    ) -> Command {
        let d = self.path();
        let attack = attack();
        let mut c = Command::new(&self.bwrap);
        c.env("NAME_GUARD_STATS", "1");
        c.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .arg("--bind")
            .arg(d)
            .arg(d)
            .arg("--ro-bind")
            .arg(GUARD)
            .arg(GUARD)
            .args(["--unshare-pid", "--die-with-parent", "--new-session"])
            .arg("--chdir")
            .arg(d)
            .args(["--setenv", "HOME"])
            .arg(d)
            .arg("--setenv")
            .arg("ATTACK")
            .arg(attack)
            .arg("--");
        if let Some(deny) = deny {
            c.arg(GUARD).args(guard_args);
            for g in deny {
                c.args(["--deny", g]);
            }
            c.arg("--");
        }
        c.args(["sh", "-c", script]);
        c
    }

    /// Run `c`, print what it did, return its output.
    pub(crate) fn output(&self, mut c: Command, script: &str) -> Output {
        let started = std::time::Instant::now();
        let out = c.output().unwrap();
        eprintln!(
            "--- script:\n{script}\n--- status {:?} after {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
            out.status,
            started.elapsed(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    pub(crate) fn sh(&self, script: &str) -> Output {
        self.sh_with(true, script)
    }

    /// Every entry in the tree whose name a rule denies.
    pub(crate) fn denied_entries(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![self.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                let lower = name.to_ascii_lowercase();
                if lower == ".env" || lower.ends_with(".key") || lower.ends_with(".pem") {
                    found.push(e.path());
                }
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                }
            }
        }
        found
    }
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Lines `label: result` for each (label, attack arguments).
pub(crate) fn script_of(cases: &[(String, String)]) -> String {
    let mut s = String::from("umask 022\n");
    for (label, args) in cases {
        s.push_str(&format!("printf '%s: ' '{label}'; \"$ATTACK\" {args}\n"));
    }
    s
}

pub(crate) fn results(out: &Output) -> Vec<(String, String)> {
    stdout(out)
        .lines()
        .filter_map(|l| l.split_once(": "))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The supervisor's counters from the launcher's `NAME_GUARD_STATS` line:
/// (handled, denied).
pub(crate) fn guard_stats(out: &Output) -> (u64, u64) {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("name-guard-exec: handled "))
        .unwrap_or_else(|| panic!("no stats line in {err}"));
    let mut words = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty());
    let handled = words.next().unwrap().parse().unwrap();
    let denied = words.next().unwrap().parse().unwrap();
    (handled, denied)
}
