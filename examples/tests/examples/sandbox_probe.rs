//! `sandbox-probe` on the real host: the three start-up lines, exit 0 each.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sandbox-probe");

fn bwrap() -> Option<std::path::PathBuf> {
    test_support::tool("bwrap", "apt-get install bubblewrap")
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "exit status {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn real_host_line() {
    let out = run(Command::new(BIN).env_remove("CC_SERVER_SANDBOX"));
    let first = out.lines().next().unwrap();
    let tools = [
        bwrap(),
        test_support::tool("socat", "apt-get install socat"),
    ];
    if tools.iter().all(Option::is_some) {
        // The note says whether the kernel can run the name guard.
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let suffix = match sandbox_core::kernel_version(&release) {
            Some(v)
                if v >= sandbox_core::NAME_GUARD_MIN_KERNEL
                    && cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) =>
            {
                "; filename rules at creation by name-guard (seccomp)"
            }
            _ => "; filename rules not enforceable (",
        };
        assert!(
            first.starts_with(&format!(
                "agent sandbox ON: bubblewrap: namespace isolation, no kernel boundary{suffix}"
            )),
            "{first}"
        );
        assert!(out.contains("dispatch backend: native"), "{out}");
    }
}

#[test]
fn host_without_socat_runs_bubblewrap() {
    let Some(bwrap) = bwrap() else { return };
    let dir = std::env::temp_dir().join(format!("probe-nosocat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("bwrap");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&bwrap, &link).unwrap();
    let out = run(Command::new(BIN)
        .env_remove("CC_SERVER_SANDBOX")
        .env("PATH", &dir));
    std::fs::remove_dir_all(&dir).unwrap();
    let first = out.lines().next().unwrap();
    // socat is only the bridges' fallback: bubblewrap runs without it.
    assert!(
        first.starts_with("agent sandbox ON: bubblewrap: namespace isolation"),
        "{first}"
    );
    assert!(!out.contains("socat"), "{out}");
    assert!(out.contains("dispatch backend: native"), "{out}");
}

/// Whether this kernel runs the Landlock mechanism (then a host without
/// bubblewrap gets it).
fn landlock_runs() -> bool {
    use sandbox_core::HostView;
    let host = sandbox_core::AmbientHost::from_ambient_untimed();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    sandbox_core::kernel_runs_name_guard(&release) && host.try_landlock().is_ok()
}

#[test]
fn bwrap_in_working_directory_never_counts() {
    let Some(bwrap) = bwrap() else { return };
    let dir = std::env::temp_dir().join(format!("probe-cwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, target) in [
        ("bwrap", bwrap.as_path()),
        ("socat", Path::new("/bin/true")),
    ] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, &link).unwrap();
    }
    // Empty and relative PATH entries both mean "the working directory".
    let out = run(Command::new(BIN)
        .env_remove("CC_SERVER_SANDBOX")
        .env("PATH", ":.:bin")
        .current_dir(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    if landlock_runs() {
        assert!(out.starts_with("agent sandbox ON: landlock: "), "{out}");
    } else {
        assert!(
            out.starts_with("no OS-native agent sandbox on this host"),
            "{out}"
        );
    }
    assert!(out.contains("sudo apt-get install bubblewrap"), "{out}");
    assert!(!out.contains("install bubblewrap socat"), "{out}");
}

#[test]
fn switch_off_prints_disabled_line() {
    for args in [&["--sandbox", "off"][..], &["--sandbox=OFF"][..]] {
        let out = run(Command::new(BIN).env_remove("CC_SERVER_SANDBOX").args(args));
        assert_eq!(
            out.lines().next().unwrap(),
            "agent sandbox DISABLED by --sandbox off"
        );
        assert!(out.contains("dispatch backend: none"), "{out}");
    }
    let out = run(Command::new(BIN).env("CC_SERVER_SANDBOX", "Off"));
    assert_eq!(
        out.lines().next().unwrap(),
        "agent sandbox DISABLED by --sandbox off"
    );
}

#[test]
fn bad_switch_is_a_clear_error() {
    let out = Command::new(BIN)
        .env_remove("CC_SERVER_SANDBOX")
        .args(["--sandbox", "maybe"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"on\"") && err.contains("\"off\""), "{err}");
}

/// Where bubblewrap is installed but cannot make namespaces (here: root of
/// a user namespace with `user.max_user_namespaces = 0` and no
/// capabilities, as in an unprivileged container), the probe's trial launch
/// fails: the Landlock mechanism is offered where the kernel has it, else
/// no native sandbox; the line gives bubblewrap's own error. Never
/// "bubblewrap" on such a host.
#[test]
fn a_host_where_bubblewrap_cannot_make_namespaces_is_not_offered_bubblewrap() {
    if bwrap().is_none()
        || test_support::tool("unshare", "apt-get install util-linux").is_none()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    let script = format!(
        "echo 0 > /proc/sys/user/max_user_namespaces && exec setpriv --bounding-set=-all --inh-caps=-all -- {BIN}"
    );
    let out = Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c", &script])
        .env_remove("CC_SERVER_SANDBOX")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let first = lines.next().unwrap_or_default();
    let landlock = {
        use sandbox_core::HostView;
        sandbox_core::AmbientHost::from_ambient_untimed()
            .try_landlock()
            .is_ok()
    };
    if landlock {
        assert!(
            first.starts_with("agent sandbox ON: landlock: "),
            "{stdout}"
        );
        assert!(
            first.contains("; bubblewrap cannot make its namespaces here (bwrap: "),
            "{stdout}"
        );
        assert_eq!(
            lines.next(),
            Some(
                "dispatch backend: native (landlock: Landlock and seccomp on the host, no namespaces, no kernel boundary)"
            ),
            "{stdout}"
        );
    } else {
        assert!(
            first.starts_with(
                "no OS-native agent sandbox on this host: bwrap is installed but cannot make its namespaces on this host (bwrap: "
            ),
            "{stdout}"
        );
        assert_eq!(
            lines.next(),
            Some("dispatch backend: none (none: not sandboxed, runs on the host)"),
            "{stdout}"
        );
    }
    assert!(!first.contains("ON: bubblewrap"), "{stdout}");
}
