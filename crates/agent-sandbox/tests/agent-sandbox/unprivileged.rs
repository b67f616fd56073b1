//! The command tests (`commands`, `acp`), bubblewrap's overlay workspaces
//! (made in a user namespace of the manager's own), the gVisor tests (`microvm`,
//! with `runsc --rootless`) and the QEMU escape test (bubblewrap jails in
//! user namespaces, no `/dev/kvm`) and a QEMU workspace once more as an
//! unprivileged user: this test binary runs itself again under `setpriv` as
//! uid 65534 (for the microvm tests with supplementary groups, as a login
//! user has), with only those tests selected, and requires every one of
//! them to pass.
//! (The limit tests then meet a cgroup tree they cannot write and check
//! that their limits are refused, never silently dropped.)

use std::process::Command;

/// Set in the re-run, so that it does not start another.
const RERUN: &str = "AGENT_SANDBOX_TEST_UNPRIVILEGED_RERUN";

/// How many tests a test binary's output says passed (0 when it did not
/// pass).
pub(super) fn tests_passed(stdout: &str) -> usize {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0)
}

#[test]
fn the_command_tests_pass_as_an_unprivileged_user() {
    if std::env::var_os(RERUN).is_some() {
        return;
    }
    if !super::native::native_available()
        || !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    let me = std::env::current_exe().unwrap();
    let out = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&me)
        .args([
            "commands::",
            "acp::",
            "warm::a_repository_made",
            "workspace::under_bubblewrap",
            "workspace::a_forks",
            "--test-threads=2",
        ])
        .env(RERUN, "1")
        .env("TMPDIR", "/tmp")
        .env("HOME", "/tmp")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "as uid 65534:\n{stdout}\n{stderr}");
    let passed = tests_passed(&stdout);
    // Every test of the two modules, the repository test and the two
    // overlay workspace tests ran (none filtered away by a rename).
    assert!(
        passed >= 17,
        "only {passed} tests ran as uid 65534:\n{stdout}"
    );
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}

#[test]
fn the_microvm_and_qemu_tests_pass_as_an_unprivileged_user() {
    if std::env::var_os(RERUN).is_some() {
        return;
    }
    if !test_support::require(
        sandbox_core::probe_ambient().microvm.available,
        "gVisor's runsc for the microvm backend",
        "apt-get install runsc",
    ) || !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    let me = std::env::current_exe().unwrap();
    let out = Command::new("/usr/bin/setpriv")
        // With supplementary groups, as a login user has them (the QEMU
        // runtime's file server cannot drop them there).
        .args(["--reuid=65534", "--regid=65534", "--groups=100,44", "--"])
        .arg(&me)
        .args([
            "microvm::",
            "workspace::in_a_qemu_guest",
            "qemu::the_escape_tests_hold_in_a_qemu_guest",
            "--test-threads=2",
        ])
        .env(RERUN, "1")
        .env("TMPDIR", "/tmp")
        .env("HOME", "/tmp")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "as uid 65534:\n{stdout}\n{stderr}");
    let passed = tests_passed(&stdout);
    assert!(
        passed >= 8,
        "only {passed} tests ran as uid 65534:\n{stdout}"
    );
}
