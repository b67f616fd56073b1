//! Warm native sessions (the default, `CommandIsolation::SessionSandbox`):
//! one sandbox per session, each command started inside by the session's
//! init. What a command leaves running stays for the next command, is
//! still held by the session's rules (filename rules, the proxies as the
//! only way out), is not ended by another command's limit, and is gone
//! after destroy; under bubblewrap and under Landlock. And the native,
//! command and Landlock tests once more with a fresh sandbox per command,
//! so that both paths pass the same suite.

use super::native::{Tree, run};
use agent_sandbox::{CommandIsolation, FilenameRules, SandboxManager};
use sandbox_core::{Limits, SandboxCommand, SandboxEvent};
use std::process::Command;

/// A marker only this test's processes carry: a `sleep` duration.
fn marker(tag: u32) -> String {
    format!("{}.{}", 5000 + tag, std::process::id())
}

/// The pids whose command line holds `marker`.
fn carrying(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).split('\0').any(|a| a == marker))
        })
        .collect()
}

/// Waits up to 5 s for `marker` to be carried (`want`) or gone (`!want`).
async fn carried_within(marker: &str, want: bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let now = !carrying(marker).is_empty();
        if now == want || std::time::Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

fn kill_carrying(marker: &str) {
    for pid in carrying(marker) {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
}

#[derive(Clone, Copy, Debug)]
enum Mechanism {
    Bubblewrap,
    Landlock,
}

/// A warm manager of `mechanism` for `tree` (filename rules enforced by the
/// name guard), or `None` where the mechanism cannot run (the helpers
/// fail with the install line then).
fn warm_manager(tree: &Tree, mechanism: Mechanism) -> Option<SandboxManager> {
    manager_isolated(tree, mechanism, CommandIsolation::SessionSandbox)
}

/// [`warm_manager`] with the commands' isolation given.
fn manager_isolated(
    tree: &Tree,
    mechanism: Mechanism,
    isolation: CommandIsolation,
) -> Option<SandboxManager> {
    match mechanism {
        Mechanism::Bubblewrap => {
            if !super::native::native_available() {
                return None;
            }
            let mut b = crate::builder();
            b.home(tree.p("home"))
                .temp_dir(tree.p("sockets"))
                .command_isolation(isolation)
                .name_guard_launcher(crate::launcher())
                .filename_rules(FilenameRules::EnforcedByNameGuard)
                .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
            Some(b.build().unwrap())
        }
        Mechanism::Landlock => {
            use sandbox_core::HostView;
            let host = sandbox_core::AmbientHost::from_ambient_untimed();
            if !test_support::require(
                host.try_landlock().is_ok(),
                "Landlock ABI 6 or later",
                "run the tests on Linux 6.12 or later with Landlock among the active LSMs",
            ) {
                return None;
            }
            let mut b = crate::builder();
            b.home(tree.p("home"))
                .temp_dir(tree.p("sockets"))
                .native_mechanism(agent_sandbox::NativeMechanism::Landlock)
                .name_guard_launcher(crate::launcher())
                .command_isolation(isolation)
                .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
            Some(b.build().unwrap())
        }
    }
}

async fn left_running_stays_and_ends_at_destroy(mechanism: Mechanism, tag: u32) {
    let t = Tree::new(&format!("warm-stay-{tag}"));
    let Some(m) = warm_manager(&t, mechanism) else {
        return;
    };
    let mut h = m.launch(t.spec(&format!("warm-stay-{tag}"))).await.unwrap();
    assert_eq!(
        h.details["isolation"].as_str().unwrap_or_default(),
        "session sandbox: one sandbox for the session, each command started inside by its init",
        "{mechanism:?}"
    );
    let (quiet, loud, daemon) = (
        marker(tag * 10 + 1),
        marker(tag * 10 + 2),
        marker(tag * 10 + 3),
    );
    // A background job with its output elsewhere, one that keeps the
    // command's stdout open, and a daemon in a session of its own: the
    // command still ends at once.
    let started = std::time::Instant::now();
    let r = run(
        &m,
        &h,
        &format!(
            "sleep {quiet} >/dev/null 2>&1 & sleep {loud} & \
             (setsid sleep {daemon} >/dev/null 2>&1 &); echo STARTED"
        ),
    )
    .await;
    assert_eq!(r.exit, Some(0), "{mechanism:?}: {}", r.stderr);
    assert_eq!(r.stdout, "STARTED\n", "{mechanism:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{mechanism:?}: the command waited for what it left running: {:?}",
        started.elapsed()
    );
    // The next command sees them (as in a shell).
    for mk in [&quiet, &loud, &daemon] {
        assert!(
            carried_within(mk, true).await,
            "{mechanism:?}: {mk} is gone"
        );
    }
    let r = run(&m, &h, "ps -eo args 2>/dev/null || ls /proc").await;
    if matches!(mechanism, Mechanism::Bubblewrap) {
        // Inside the session's own pid namespace: only its processes.
        assert!(r.stdout.contains(&quiet), "{mechanism:?}: {}", r.stdout);
    }
    m.destroy(&mut h).await.unwrap();
    let mut left = Vec::new();
    for mk in [&quiet, &loud, &daemon] {
        if carried_within(mk, false).await {
            left.push(mk.clone());
            kill_carrying(mk);
        }
    }
    assert!(left.is_empty(), "{mechanism:?}: outlived destroy: {left:?}");
}

#[tokio::test]
async fn what_a_command_leaves_running_stays_for_the_next_and_ends_at_destroy() {
    left_running_stays_and_ends_at_destroy(Mechanism::Bubblewrap, 1).await;
    left_running_stays_and_ends_at_destroy(Mechanism::Landlock, 2).await;
}

async fn left_behind_stays_confined(mechanism: Mechanism, tag: u32) {
    let t = Tree::new(&format!("warm-held-{tag}"));
    let Some(m) = warm_manager(&t, mechanism) else {
        return;
    };
    let mut h = m.launch(t.spec(&format!("warm-held-{tag}"))).await.unwrap();
    // A host service on loopback that nothing in the sandbox may reach.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    // Left running by the first command, acting once that command ended.
    let script = format!(
        "(sleep 1; \
          if echo x > late.key 2>/dev/null; then echo created; else echo refused; fi > bg-key; \
          if bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null; then echo reached; else echo unreached; fi > bg-net; \
          if bash -c 'exec 3<>/dev/tcp/1.1.1.1/80' 2>/dev/null; then echo reached; else echo unreached; fi >> bg-net; \
          echo done > bg-done) >/dev/null 2>&1 &"
    );
    let r = run(&m, &h, &script).await;
    assert_eq!(r.exit, Some(0), "{mechanism:?}: {}", r.stderr);
    let ws = std::path::PathBuf::from(t.p("ws"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !ws.join("bg-done").exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The refusal is reported by the session (in the next command's events).
    let r = run(&m, &h, "cat bg-key bg-net").await;
    assert_eq!(
        r.stdout, "refused\nunreached\nunreached\n",
        "{mechanism:?}: {}",
        r.stderr
    );
    assert!(!ws.join("late.key").exists(), "{mechanism:?}");
    assert!(
        r.violations.iter().any(|v| v.contains("late.key")),
        "{mechanism:?}: {:?}",
        r.violations
    );
    assert!(
        listener.accept().is_err(),
        "{mechanism:?}: the host's service was reached"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_process_left_behind_is_held_by_the_sessions_rules() {
    left_behind_stays_confined(Mechanism::Bubblewrap, 3).await;
    left_behind_stays_confined(Mechanism::Landlock, 4).await;
}

/// R-PATHS-3 within a session: a repository made by one command has its
/// hooks and config denied from the next command on, for that command and
/// (in a warm session) for what an earlier command left running.
async fn made_repository_denied_next(mechanism: Mechanism, isolation: CommandIsolation, tag: u32) {
    let t = Tree::new(&format!("warm-repo-{tag}"));
    let Some(m) = manager_isolated(&t, mechanism, isolation) else {
        return;
    };
    let warm = isolation == CommandIsolation::SessionSandbox;
    let mut h = m.launch(t.spec(&format!("warm-repo-{tag}"))).await.unwrap();
    let what = format!("{mechanism:?} {isolation:?}");
    // The command that makes the repository may write its hooks; in a
    // warm session it leaves a process behind that tries again later.
    let mut script = String::from(
        "git init -q sub && echo ok > sub/.git/hooks/made-by-its-command && echo made",
    );
    if warm {
        script.push_str(
            "; (while [ ! -e go ]; do sleep 0.05; done; \
               if echo x > sub/.git/hooks/post-checkout 2>/dev/null; then echo written; else echo refused; fi > bg-hook; \
               if echo '[alias]' >> sub/.git/config 2>/dev/null; then echo written; else echo refused; fi >> bg-hook; \
               echo done > bg-done) >/dev/null 2>&1 &",
        );
    }
    let r = run(&m, &h, &script).await;
    assert_eq!(r.stdout, "made\n", "{what}: {}", r.stderr);
    let ws = std::path::PathBuf::from(t.p("ws"));
    let config_before = std::fs::read(ws.join("sub/.git/config")).unwrap();
    // The next command may not write them, by any of the usual ways.
    let r = run(
        &m,
        &h,
        "for how in 'echo x > sub/.git/hooks/pre-commit' \
                   'echo \"[core]\" >> sub/.git/config' \
                   'git -C sub config core.hooksPath /tmp' \
                   'rm sub/.git/hooks/made-by-its-command' \
                   'mv sub/.git/hooks sub/.git/hooks.old' 'mv sub/.git sub/.git.old'; do \
           if sh -c \"$how\" 2>/dev/null; then echo \"written: $how\"; fi; \
         done; echo checked; touch go",
    )
    .await;
    assert_eq!(r.stdout, "checked\n", "{what}: {}", r.stderr);
    assert!(!ws.join("sub/.git/hooks/pre-commit").exists(), "{what}");
    assert!(
        ws.join("sub/.git/hooks/made-by-its-command").exists(),
        "{what}"
    );
    assert_eq!(
        std::fs::read(ws.join("sub/.git/config")).unwrap(),
        config_before,
        "{what}"
    );
    if warm {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while !ws.join("bg-done").exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(
            std::fs::read_to_string(ws.join("bg-hook")).unwrap_or_default(),
            "refused\nrefused\n",
            "{what}: a process left behind wrote the new repository's hooks or config"
        );
        assert!(!ws.join("sub/.git/hooks/post-checkout").exists(), "{what}");
    }
    // Git itself still works in it.
    let r = run(&m, &h, "git -C sub status --short && echo fine").await;
    assert_eq!(r.stdout, "fine\n", "{what}: {}", r.stderr);
    if warm {
        moved_in_repository_denied_next(&m, &h, &ws, &what).await;
    }
    m.destroy(&mut h).await.unwrap();
}

/// A repository made outside the writable roots (in the warm sandbox's
/// temporary directory, which lasts the session) and moved in by a later
/// command counts from the command after the move.
async fn moved_in_repository_denied_next(
    m: &SandboxManager,
    h: &sandbox_core::SandboxHandle,
    ws: &std::path::Path,
    what: &str,
) {
    let r = run(
        m,
        h,
        "git init -q \"${TMPDIR:-/tmp}/prep\" && echo ok > \"${TMPDIR:-/tmp}/prep/f\" && echo made",
    )
    .await;
    assert_eq!(r.stdout, "made\n", "{what}: {}", r.stderr);
    let r = run(m, h, "mv \"${TMPDIR:-/tmp}/prep\" moved && echo moved").await;
    assert_eq!(r.stdout, "moved\n", "{what}: {}", r.stderr);
    let r = run(
        m,
        h,
        "if echo x > moved/.git/hooks/pre-push 2>/dev/null; then echo written; else echo refused; fi",
    )
    .await;
    assert_eq!(r.stdout, "refused\n", "{what}: {}", r.stderr);
    assert!(!ws.join("moved/.git/hooks/pre-push").exists(), "{what}");
}

#[tokio::test]
async fn a_repository_made_by_one_command_has_its_hooks_and_config_denied_for_the_next() {
    made_repository_denied_next(Mechanism::Bubblewrap, CommandIsolation::SessionSandbox, 11).await;
    made_repository_denied_next(Mechanism::Landlock, CommandIsolation::SessionSandbox, 12).await;
    made_repository_denied_next(
        Mechanism::Bubblewrap,
        CommandIsolation::FreshSandboxPerCommand,
        13,
    )
    .await;
    made_repository_denied_next(
        Mechanism::Landlock,
        CommandIsolation::FreshSandboxPerCommand,
        14,
    )
    .await;
}

#[tokio::test]
async fn a_commands_memory_limit_does_not_end_the_sessions_other_processes() {
    memory_limit_spares_the_rest(Mechanism::Bubblewrap, 5).await;
    // Under Landlock the limited command runs under a supervisor of its
    // own (no cgroup descriptor enters the session).
    memory_limit_spares_the_rest(Mechanism::Landlock, 6).await;
}

async fn memory_limit_spares_the_rest(mechanism: Mechanism, tag: u32) {
    let t = Tree::new(&format!("warm-oom-{tag}"));
    let Some(m) = warm_manager(&t, mechanism) else {
        return;
    };
    let cgroups = agent_sandbox::Cgroups::from_ambient();
    if cgroups.describe().matches("cgroup v").count() != 3 {
        // Where no cgroup can be made (an unprivileged user), limits are
        // refused with their own error (the command tests check that).
        return;
    }
    let mut h = m.launch(t.spec(&format!("warm-oom-{tag}"))).await.unwrap();
    let bg = marker(tag);
    let r = run(&m, &h, &format!("sleep {bg} >/dev/null 2>&1 &")).await;
    assert_eq!(r.exit, Some(0), "{}", r.stderr);
    assert!(carried_within(&bg, true).await);
    let mut hog = SandboxCommand::new("/bin/sh");
    hog.arg("-c")
        .arg("python3 -c 'b = bytearray(512 << 20); print(len(b))'");
    hog.limits(Limits {
        memory_bytes: Some(64 << 20),
        ..Limits::default()
    });
    let mut running = m.exec(&h, hog).await.unwrap();
    let mut last = None;
    while let Some(ev) = running.next_event().await {
        if matches!(ev, SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) {
            last = Some(ev);
        }
    }
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Killed {
                reason: Some(sandbox_core::KillReason::Oom),
                ..
            })
        ),
        "{mechanism:?}: {last:?}"
    );
    // The session's other process lives on, and the session takes commands.
    assert!(
        !carrying(&bg).is_empty(),
        "{mechanism:?}: the limit ended {bg}"
    );
    let r = run(&m, &h, "echo still").await;
    assert_eq!(r.stdout, "still\n", "{mechanism:?}: {}", r.stderr);
    m.destroy(&mut h).await.unwrap();
    assert!(
        !carried_within(&bg, false).await,
        "{mechanism:?}: {bg} outlived destroy"
    );
}

/// Set in the re-run, so that it does not start another.
const RERUN: &str = "AGENT_SANDBOX_TEST_ISOLATION_RERUN";

#[test]
fn the_suite_passes_with_a_fresh_sandbox_per_command() {
    if std::env::var_os(RERUN).is_some() || std::env::var_os(crate::ISOLATION_ENV).is_some() {
        return;
    }
    if !super::native::native_available() {
        return;
    }
    let me = std::env::current_exe().unwrap();
    let out = Command::new(&me)
        .args([
            "native::",
            "commands::",
            "back_to_back::",
            "landlock::",
            "worktree::",
            "--test-threads=2",
        ])
        .env(RERUN, "1")
        .env(crate::ISOLATION_ENV, "per-command")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "with a fresh sandbox per command:\n{stdout}\n{stderr}"
    );
    let passed = super::unprivileged::tests_passed(&stdout);
    assert!(passed >= 60, "only {passed} tests ran:\n{stdout}");
}

#[tokio::test]
async fn a_warm_sessions_terminal_is_made_in_the_sandboxs_own_devpts() {
    if !super::native::native_available() {
        return;
    }
    // Both profiles: a dispatch (proxies) and the terminal surface's.
    for (tag, surface) in [
        ("warm-tty-d", sandbox_core::Surface::Dispatch),
        ("warm-tty-t", sandbox_core::Surface::Terminal),
    ] {
        let t = Tree::new(tag);
        let mut b = crate::builder();
        b.home(t.p("home"))
            .temp_dir(t.p("sockets"))
            .request(
                sandbox_core::BackendRequest::Explicit(sandbox_core::SandboxBackend::Native),
                surface,
            )
            .command_isolation(CommandIsolation::SessionSandbox)
            .name_guard_launcher(crate::launcher())
            .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
        let m = b.build().unwrap();
        let mut h = m.launch(t.spec(tag)).await.unwrap();
        for round in 0..2 {
            let mut cmd = SandboxCommand::new("/bin/sh");
            cmd.arg("-c").arg("tty; ls -1 /dev/pts");
            cmd.pty(sandbox_core::PtySize::new(24, 80).unwrap());
            let mut running = m.exec(&h, cmd).await.unwrap();
            let mut seen = String::new();
            while let Some(ev) = running.next_event().await {
                if let SandboxEvent::Stdout { data } = ev {
                    seen.push_str(&String::from_utf8_lossy(&data));
                }
            }
            let tty = seen.lines().next().unwrap_or_default().trim().to_owned();
            let n = tty.strip_prefix("/dev/pts/").unwrap_or_else(|| {
                panic!("{tag} round {round}: not the sandbox's own terminal: {seen:?}")
            });
            // The sandbox's devpts holds it (the host's would not be
            // listed inside).
            assert!(
                seen.lines().skip(1).any(|l| l.trim() == n),
                "{tag} round {round}: {seen:?}"
            );
        }
        m.destroy(&mut h).await.unwrap();
    }
}

#[tokio::test]
async fn with_a_fresh_guarded_sandbox_per_command_terminate_reaches_the_command_not_the_guard() {
    if !super::native::native_available() {
        return;
    }
    let t = Tree::new("fresh-guarded-signals");
    let mut b = crate::builder();
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .command_isolation(CommandIsolation::FreshSandboxPerCommand)
        .name_guard_launcher(crate::launcher())
        .filename_rules(FilenameRules::EnforcedByNameGuard)
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    let m = b.build().unwrap();
    let mut h = m.launch(t.spec("fresh-guarded-signals")).await.unwrap();
    // Terminate, then interrupt, reach a command that handles them: it ends
    // on its own terms, not by its guard's death.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("trap 'echo term; exit 7' TERM; echo ready; while :; do sleep 0.1; done");
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    while !seen.contains("ready") {
        match running.next_event().await {
            Some(SandboxEvent::Stdout { data }) => seen.push_str(&String::from_utf8_lossy(&data)),
            Some(_) => {}
            None => panic!("ended before it was ready: {seen}"),
        }
    }
    running
        .signal(sandbox_core::CommandSignal::Terminate)
        .unwrap();
    let mut last = None;
    while let Some(ev) = running.next_event().await {
        if let SandboxEvent::Stdout { data } = &ev {
            seen.push_str(&String::from_utf8_lossy(data));
        }
        last = Some(ev);
    }
    assert_eq!(last, Some(SandboxEvent::Exit { exit_code: 7 }), "{seen}");
    assert!(seen.contains("term"), "{seen}");
    m.destroy(&mut h).await.unwrap();
}
