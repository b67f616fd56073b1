//! What a test does when a host requirement is missing: fail, or skip when
//! a person asked for it.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable a person sets to `1` to skip tests whose host tools are
/// missing instead of failing them. Ignored when `CI=true`.
pub const SKIP_ENV: &str = "AGENT_SANDBOX_SKIP_MISSING";

/// What happens to a test whose requirement is not met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The test fails with the install line (the default, and always in CI).
    Fail,
    /// The test is skipped, visibly.
    Skip,
}

/// The decision from the values of [`SKIP_ENV`] and `CI`: skip only when
/// the skip variable is `1` and `CI` is not `true`.
pub fn decide(skip: Option<&OsStr>, ci: Option<&OsStr>) -> Decision {
    let in_ci = ci.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    if !in_ci && skip.is_some_and(|v| v == "1") {
        Decision::Skip
    } else {
        Decision::Fail
    }
}

/// Checks one requirement. Returns `true` when it is met. When it is not,
/// panics with `missing: WHAT; install: FIX`, or, when the person set
/// [`SKIP_ENV`], writes a visible `SKIPPED` line and returns `false`.
#[track_caller]
#[allow(
    clippy::panic,
    reason = "failing the calling test is this function's job"
)]
pub fn require(met: bool, what: &str, fix: &str) -> bool {
    if met {
        return true;
    }
    let skip = std::env::var_os(SKIP_ENV);
    let ci = std::env::var_os("CI");
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    match decide(skip.as_deref(), ci.as_deref()) {
        Decision::Fail => panic!(
            "missing: {what}; install: {fix} (or set {SKIP_ENV}=1 outside CI to skip such tests)"
        ),
        Decision::Skip => {
            // Written to the descriptor itself: libtest captures only the
            // print macros, so this line shows in `cargo test`'s output.
            let line = format!("SKIPPED {test}: missing {what} (install: {fix})\n");
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            false
        }
    }
}

/// Finds `name` on the ambient `PATH`; when it is missing, [`require`]
/// decides (the test fails naming `install`, or is skipped).
#[track_caller]
pub fn tool(name: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|p| tool_in(name, &p));
    if require(found.is_some(), name, install) {
        found
    } else {
        None
    }
}

/// The first executable file called `name` in the directories of `path`
/// (absolute entries only: an empty or relative entry would name the
/// working directory).
pub fn tool_in(name: &str, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

/// Requires the test process to run as root (the tests that switch to an
/// unprivileged user with `setpriv`).
#[track_caller]
pub fn require_root() -> bool {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        });
    require(
        uid.as_deref() == Some("0"),
        "root (the test switches to an unprivileged user)",
        "run the tests as root, as CI does",
    )
}

/// The soft open-file limit of this process.
fn soft_fd_limit() -> Option<u64> {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_owned))
        })
        .and_then(|v| {
            if v == "unlimited" {
                Some(u64::MAX)
            } else {
                v.parse().ok()
            }
        })
}

/// Requires the soft open-file limit of this process to be at least `n`.
/// A lower soft limit is first raised to `n` with util-linux's `prlimit`
/// (allowed up to the hard limit without privileges).
#[track_caller]
pub fn require_fd_limit(n: u64) -> bool {
    let mut soft = soft_fd_limit();
    if soft.is_some_and(|s| s < n) {
        let _ = std::process::Command::new("prlimit")
            .arg("--pid")
            .arg(std::process::id().to_string())
            .arg(format!("--nofile={n}:"))
            .stderr(std::process::Stdio::null())
            .status();
        soft = soft_fd_limit();
    }
    require(
        soft.is_some_and(|s| s >= n),
        &format!("an open-file limit of {n} (it is {soft:?})"),
        &format!("raise the hard limit (ulimit -Hn {n}) before cargo test, as .ci/run does"),
    )
}

/// Whether `p` exists as an executable file (on Unix, with an execute bit).
#[cfg(unix)]
fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `p` exists as a file: Windows has no execute bit, so any file
/// found counts.
#[cfg(not(unix))]
fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_skip_variable_outside_ci_skips() {
        let one = Some(OsStr::new("1"));
        assert_eq!(decide(None, None), Decision::Fail);
        assert_eq!(decide(one, None), Decision::Skip);
        assert_eq!(decide(Some(OsStr::new("yes")), None), Decision::Fail);
        assert_eq!(decide(one, Some(OsStr::new("true"))), Decision::Fail);
        assert_eq!(decide(one, Some(OsStr::new("TRUE"))), Decision::Fail);
        assert_eq!(decide(one, Some(OsStr::new("false"))), Decision::Skip);
    }

    #[test]
    fn tools_are_found_in_absolute_entries_only() {
        assert!(tool_in("sh", OsStr::new("/usr/bin:/bin")).is_some());
        assert!(tool_in("sh", OsStr::new(".:relative")).is_none());
        assert!(tool_in("no-such-tool-here", OsStr::new("/usr/bin:/bin")).is_none());
    }

    #[test]
    #[should_panic(expected = "missing: frobnicator; install: apt-get install frob")]
    fn a_missing_requirement_fails_with_the_install_line() {
        // Not skipped unless the person running the tests asked for it; CI
        // never does, so this holds there.
        if decide(
            std::env::var_os(SKIP_ENV).as_deref(),
            std::env::var_os("CI").as_deref(),
        ) == Decision::Skip
        {
            panic!("missing: frobnicator; install: apt-get install frob (skip mode)");
        }
        require(false, "frobnicator", "apt-get install frob");
    }
}
