//! `agent-run` end to end on the real host.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_agent-run");

fn native() -> bool {
    let p = &sandbox_core::probe_ambient().native;
    test_support::require(
        p.mechanism == Some(sandbox_core::NativeMechanism::Bubblewrap),
        "bubblewrap (the native sandbox's namespace mechanism)",
        "apt-get install bubblewrap",
    )
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("agent-run-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn agent_run(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("CC_SERVER_SANDBOX")
        .output()
        .unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn without_the_name_guard_the_default_launch_is_refused_and_names_the_opt_out() {
    if !native() {
        return;
    }
    let d = scratch("refused");
    let o = agent_run(&d, &["--no-name-guard", "--", "true"]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(e.contains("agent sandbox ON"), "{e}");
    assert!(
        e.contains("refusing to launch") && e.contains("--no-filename-rules"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn default_launch_enforces_filename_rules_with_agent_run_as_its_own_guard() {
    if !native() {
        return;
    }
    if !sandbox_core::probe_ambient()
        .native
        .filename_rules
        .is_enforceable()
    {
        test_support::require(
            false,
            "a kernel that can run the name guard (Linux 5.19 or later, x86-64)",
            "run the tests on such a kernel",
        );
        return;
    }
    let d = scratch("guarded");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let o = agent_run(
        &d,
        &[
            "--",
            "sh",
            "-c",
            "echo a > a.txt; echo k > sub/id.key; mv a.txt .env; echo b > b.txt; cat b.txt",
        ],
    );
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "b\n");
    assert!(e.contains("enforced at creation by name-guard"), "{e}");
    let sub = d.join("sub/id.key");
    let env = d.join(".env");
    for p in [&sub, &env] {
        assert!(!p.exists(), "{} created", p.display());
        assert!(
            e.contains(&format!("violation: file-write-create {}", p.display())),
            "{e}"
        );
    }
    assert!(
        d.join("a.txt").exists(),
        "the refused rename left the source"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn opt_out_passes_output_and_exit_status_through() {
    if !native() {
        return;
    }
    let d = scratch("status");
    let o = agent_run(
        &d,
        &[
            "--no-filename-rules",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 5",
        ],
    );
    assert_eq!(o.status.code(), Some(5));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "out\n");
    let e = err(&o);
    assert!(e.contains("err\n") && e.contains("backend native"), "{e}");
    assert!(e.contains("DROPPED"), "the opt-out is logged: {e}");
    let o = agent_run(&d, &["--no-filename-rules", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(o.status.code(), Some(137), "128+signal: {}", err(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn violations_are_printed_and_review_mode_is_read_only() {
    if !native() {
        return;
    }
    let d = scratch("violation");
    let o = agent_run(
        &d,
        &[
            "--no-filename-rules",
            "--mode",
            "review",
            "--",
            "sh",
            "-c",
            "curl -s -o /dev/null http://not-allowed.example.test/; echo x > f && echo WROTE; true",
        ],
    );
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains("violation: network-outbound not-allowed.example.test:80"),
        "{e}"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("WROTE"));
    assert!(!d.join("f").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn sandbox_off_runs_on_the_host_and_says_so() {
    let d = scratch("off");
    let o = agent_run(&d, &["--sandbox", "off", "--", "sh", "-c", "echo x > f"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("agent sandbox DISABLED by --sandbox off") && e.contains("backend none"),
        "{e}"
    );
    assert!(d.join("f").exists());
    // The `--name=value` spelling, and an `=` after `--` stays the command's.
    let o = agent_run(&d, &["--sandbox=off", "--", "sh", "-c", "echo a=b"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "a=b\n");
    assert!(err(&o).contains("agent sandbox DISABLED by --sandbox off"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_explicit_microvm_without_a_runtime_fails_loudly() {
    if sandbox_core::probe_ambient().microvm.available {
        eprintln!("SKIPPED: this host can start a microVM");
        return;
    }
    let d = scratch("microvm");
    let o = agent_run(&d, &["--backend", "microvm", "--", "true"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert!(e.to_lowercase().contains("microvm"), "{e}");
    assert!(
        !e.contains("backend native") && !e.contains("backend none"),
        "never downgraded: {e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn backend_microvm_runs_in_gvisor_and_a_hardware_vm_requirement_refuses_it() {
    if !test_support::require(
        sandbox_core::probe_ambient().microvm.available,
        "gVisor's runsc for the microvm backend",
        "apt-get install runsc",
    ) {
        return;
    }
    let d = scratch("microvm-gvisor");
    let o = agent_run(
        &d,
        &[
            "--backend",
            "microvm",
            "--microvm-runtime",
            "gvisor",
            "--no-filename-rules",
            "--",
            "uname",
            "-r",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let inside = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    assert!(!inside.is_empty() && inside != host.trim(), "{inside}");
    assert!(err(&o).contains("not a hardware VM"), "{}", err(&o));
    startup_names_the_session_backend(&err(&o), "microvm: gVisor");
    let o = agent_run(
        &d,
        &[
            "--backend",
            "microvm",
            "--require-hardware-vm",
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("a hardware VM was required"),
        "{}",
        err(&o)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn microvm_runtime_qemu_runs_in_a_guest_and_an_emulated_one_is_not_a_hardware_vm() {
    let install = "apt-get install qemu-system-x86 linux-image-cloud-amd64 bubblewrap";
    if test_support::tool("qemu-system-x86_64", install).is_none() {
        return;
    }
    let d = scratch("microvm-qemu");
    std::fs::write(d.join("in.txt"), "from the host\n").unwrap();
    let qemu = [
        "--backend",
        "microvm",
        "--microvm-runtime",
        "qemu",
        "--no-filename-rules",
    ];
    let o = agent_run(
        &d,
        &[
            &qemu[..],
            &[
                "--",
                "sh",
                "-c",
                "uname -r; cat in.txt; echo made > out.txt",
            ],
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let inside = out.lines().next().unwrap_or_default();
    assert!(!inside.is_empty() && inside != host.trim(), "{out}");
    assert!(out.contains("from the host"), "{out}");
    assert_eq!(
        std::fs::read_to_string(d.join("out.txt")).unwrap(),
        "made\n"
    );
    startup_names_the_session_backend(&err(&o), "microvm: ");
    // Asked for as emulated, it tries no KVM canary first.
    let tcg = agent_run(
        &d,
        &[
            "--backend",
            "microvm",
            "--microvm-runtime",
            "qemu-tcg",
            "--no-filename-rules",
            "--",
            "true",
        ],
    );
    assert_eq!(tcg.status.code(), Some(0), "{}", err(&tcg));
    assert!(
        !err(&tcg).contains("its canary did not answer"),
        "{}",
        err(&tcg)
    );
    let emulated = err(&o).contains("emulated");
    assert!(
        emulated || err(&o).contains("hardware VM"),
        "the label names the runtime: {}",
        err(&o)
    );
    if emulated {
        let o = agent_run(
            &d,
            &[&qemu[..], &["--require-hardware-vm", "--", "true"]].concat(),
        );
        assert_eq!(o.status.code(), Some(1), "{}", err(&o));
        assert!(
            err(&o).contains("a hardware VM was required"),
            "{}",
            err(&o)
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// The start-up line names the session's backend (`want`), and the native
/// probe's line, after it, says it is not the session's.
fn startup_names_the_session_backend(stderr: &str, want: &str) {
    let on: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("agent sandbox ON"))
        .collect();
    assert_eq!(on.len(), 1, "one start-up line: {stderr}");
    assert!(
        on[0].contains(&format!("agent sandbox ON: {want}")),
        "{stderr}"
    );
    assert!(!on[0].contains("no kernel boundary"), "{stderr}");
    let native = stderr
        .lines()
        .position(|l| l.contains("no kernel boundary"));
    let startup = stderr.lines().position(|l| l.contains("agent sandbox ON"));
    if let Some(native) = native {
        assert!(native > startup.unwrap_or(usize::MAX), "{stderr}");
        assert!(
            stderr
                .lines()
                .nth(native)
                .unwrap_or_default()
                .contains("not this manager's sessions"),
            "{stderr}"
        );
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    let d = scratch("usage");
    for args in [
        &["--mode", "yolo", "--", "true"][..],
        &["--network", "maybe", "--", "true"][..],
        &[][..],
    ] {
        let o = agent_run(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(err(&o).contains("try '--help'"), "{args:?}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn proxy_is_the_only_way_out_and_the_guard_holds_as_an_unprivileged_user() {
    if !native() {
        return;
    }
    if !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten().take(8) {
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\norigin",
            );
        }
    });
    let guard = sandbox_core::probe_ambient()
        .native
        .filename_rules
        .is_enforceable();
    let d = scratch("nobody");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let script = format!(
        "id -u; curl -sS -m 10 http://localhost:{port}/; echo; \
         curl -s -m 10 -o /dev/null -w 'code=%{{http_code}}\\n' http://denied.example.test/; \
         bash -c 'echo > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo DIRECT-TCP; \
         echo k > x.pem 2>/dev/null && echo PEM-WRITTEN; echo ok > notes.txt && echo NOTES; true"
    );
    let o = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .args(if guard {
            None
        } else {
            Some("--no-filename-rules")
        })
        .args([
            "--allow",
            "localhost",
            "--allow-cidr",
            "127.0.0.1/32",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(&d)
        .env("HOME", "/nonexistent")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{e}");
    assert!(out.starts_with("65534\n"), "{out}");
    assert!(
        out.contains("origin"),
        "allowed origin through the proxy: {out}{e}"
    );
    assert!(out.contains("code=403"), "{out}");
    assert!(!out.contains("DIRECT-TCP"), "{out}");
    // The name guard runs for the unprivileged user too.
    assert!(out.contains("NOTES"), "{out}{e}");
    if guard {
        assert!(!out.contains("PEM-WRITTEN"), "{out}{e}");
        assert!(!d.join("x.pem").exists());
    }
    assert!(
        e.contains("violation: network-outbound denied.example.test:80"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Whether this kernel runs the Landlock mechanism; fails with what to do
/// when not (never passes empty).
fn landlock() -> bool {
    use sandbox_core::HostView;
    let host = sandbox_core::AmbientHost::from_ambient_untimed();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let tried = host.try_landlock();
    test_support::require(
        sandbox_core::kernel_runs_name_guard(&release) && tried.is_ok(),
        &format!("Landlock ABI 6 or later and the name guard's kernel ({tried:?})"),
        "run the tests on Linux 6.12 or later with Landlock among the active LSMs (lsm=...,landlock)",
    )
}

/// A directory of links to every program in /usr/bin and /bin but
/// bubblewrap and socat: PATH as on a fresh machine, without uninstalling
/// anything.
fn path_without_bubblewrap(d: &std::path::Path) -> std::path::PathBuf {
    let bin = d.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for dir in ["/usr/bin", "/bin"] {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name();
            if name == "bwrap" || name == "socat" || bin.join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), bin.join(&name));
        }
    }
    bin
}

#[test]
fn without_bubblewrap_the_readme_command_runs_confined_under_landlock() {
    if !landlock() {
        return;
    }
    let d = scratch("nobwrap");
    let bin = path_without_bubblewrap(&d);
    let ws = d.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let run_with = |extra: &[&str], script: &str| {
        let mut args = extra.to_vec();
        args.extend(["--", "sh", "-c", script]);
        Command::new(BIN)
            .args(&args)
            .current_dir(&ws)
            .env_remove("CC_SERVER_SANDBOX")
            .env("PATH", &bin)
            .output()
            .unwrap()
    };
    // The README's first command.
    let o = run_with(
        &[],
        "id; ls -a ~; echo k > id.key; curl -sS -o /dev/null https://example.com || echo \"blocked (curl exit $?)\"",
    );
    let (out, e) = (String::from_utf8_lossy(&o.stdout).into_owned(), err(&o));
    assert_eq!(o.status.code(), Some(0), "{out}{e}");
    assert!(e.contains("agent sandbox ON: landlock: "), "{e}");
    assert!(
        e.contains("install bubblewrap for namespace isolation: sudo apt-get install bubblewrap"),
        "{e}"
    );
    assert!(!e.contains("socat"), "socat is never asked for: {e}");
    assert!(e.contains("agent-run: backend native (landlock"), "{e}");
    assert!(
        e.contains(&format!(
            "violation: file-write-create {}/id.key",
            ws.display()
        )),
        "{e}"
    );
    assert!(
        e.contains("violation: network-outbound example.com:443"),
        "{e}"
    );
    assert!(out.contains("blocked (curl exit"), "{out}");
    assert!(!ws.join("id.key").exists());
    // The explicit opt-outs run it on the host, and say so.
    for opt in [&["--backend", "none"][..], &["--sandbox", "off"][..]] {
        let o = run_with(opt, "echo k > made.key");
        assert_eq!(o.status.code(), Some(0), "{opt:?}: {}", err(&o));
        assert!(err(&o).contains("backend none"), "{}", err(&o));
        assert!(ws.join("made.key").exists(), "{opt:?}");
        std::fs::remove_file(ws.join("made.key")).unwrap();
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// The pids whose command line holds the argument `marker`.
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

/// Polls `done` every 50 ms for up to 10 s.
fn within_10s(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !done() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    true
}

/// `agent-run --mechanism landlock` (as `user`, when given) with a home
/// holding `.ssh/id_ed25519`: the key's directory is not listable, a
/// background process is gone when the run ends, and after a `kill -9` of
/// `agent-run` itself nothing it started is left (supervisor, shell,
/// double-forked `setsid` process ignoring SIGTERM).
fn landlock_run_leaves_nothing(tag: u32, user: Option<&str>) {
    run_leaves_nothing(tag, user, "landlock");
}

/// As [`landlock_run_leaves_nothing`], under `mechanism`.
fn run_leaves_nothing(tag: u32, user: Option<&str>, mechanism: &str) {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch(&format!("leaves-{tag}"));
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let home = d.join("home");
    // Where agent-run makes its session directories (its TMPDIR).
    let sessions = d.join("sessions");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), "KEY").unwrap();
    for p in [&home, &home.join(".ssh"), &sessions] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let command = |script: &str| {
        let mut c = match user {
            Some(u) => {
                let mut c = Command::new("/usr/bin/setpriv");
                c.args([
                    &format!("--reuid={u}"),
                    &format!("--regid={u}"),
                    "--clear-groups",
                    BIN,
                ]);
                c
            }
            None => Command::new(BIN),
        };
        c.args(["--mechanism", mechanism, "--", "sh", "-c", script])
            .current_dir(&d)
            .env_remove("CC_SERVER_SANDBOX")
            .env("HOME", &home)
            .env("TMPDIR", &sessions);
        c
    };
    let session_dirs = || {
        std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("agent-sandbox-"))
            .collect::<Vec<_>>()
    };
    let m = |n: u32| format!("{}.{}{n}", 4300 + tag, std::process::id());
    // The key's directory, and a run that leaves a background job.
    let o = command(&format!(
        "ls -a ~/.ssh; ls ~/.ssh/; find ~/.ssh; sleep {} >/dev/null 2>&1 & \
         (setsid sh -c 'trap \"\" TERM HUP; exec sleep {}' >/dev/null 2>&1 &); echo RAN",
        m(1),
        m(2)
    ))
    .output()
    .unwrap();
    let (out, e) = (String::from_utf8_lossy(&o.stdout).into_owned(), err(&o));
    assert!(out.contains("RAN"), "{out}{e}");
    assert!(
        !out.contains("id_ed25519") && !e.contains("id_ed25519"),
        "the key's name was listed: {out}{e}"
    );
    let gone = within_10s(|| carrying(&m(1)).is_empty() && carrying(&m(2)).is_empty());
    let left: Vec<u32> = [m(1), m(2)].iter().flat_map(|x| carrying(x)).collect();
    for pid in &left {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    assert!(gone, "outlived agent-run: {left:?}");
    // kill -9 of agent-run while its command runs.
    let mut child = command(&format!(
        "(setsid sh -c 'trap \"\" TERM HUP; exec sleep {}' >/dev/null 2>&1 &); exec sleep {}",
        m(3),
        m(4)
    ))
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    assert!(
        within_10s(|| !carrying(&m(3)).is_empty() && !carrying(&m(4)).is_empty()),
        "the command never started"
    );
    // The supervisor: agent-run's child that carries the command.
    let supervisor: Vec<u32> = carrying(&m(4))
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.contains("agent-run"))
        })
        .collect();
    child.kill().unwrap();
    let _ = child.wait();
    let gone = within_10s(|| {
        carrying(&m(3)).is_empty()
            && carrying(&m(4)).is_empty()
            && supervisor
                .iter()
                .all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
    });
    let left: Vec<u32> = [m(3), m(4)].iter().flat_map(|x| carrying(x)).collect();
    for pid in &left {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    assert!(
        gone,
        "outlived a kill -9 of agent-run: {left:?} {supervisor:?}"
    );
    // Its session directory was left behind; the next run removes it
    // (its owner is gone) and says so.
    let left_behind = session_dirs();
    assert_eq!(left_behind.len(), 1, "{left_behind:?}");
    let o = command("true").output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        err(&o).contains("removed 1 session directories left by host processes that are gone"),
        "{}",
        err(&o)
    );
    assert_eq!(session_dirs(), Vec::<String>::new());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn under_landlock_secrets_are_not_listed_and_nothing_outlives_the_run() {
    if !landlock() {
        return;
    }
    landlock_run_leaves_nothing(1, None);
}

/// The same under bubblewrap: what a command left running in its warm
/// session, and the whole sandbox after a `kill -9` of `agent-run`.
#[test]
fn under_bubblewrap_nothing_outlives_the_run_or_a_killed_agent_run() {
    if !native() {
        return;
    }
    run_leaves_nothing(3, None, "bubblewrap");
}

#[test]
fn under_landlock_as_an_unprivileged_user_nothing_outlives_the_run() {
    if !landlock()
        || !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    landlock_run_leaves_nothing(2, Some("65534"));
}

/// The local addresses of the TCP sockets `pid` listens on in this
/// process's network namespace (the host's).
fn tcp_listeners_of(pid: u32) -> Vec<String> {
    let inodes: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            l.strip_prefix("socket:[")
                .and_then(|r| r.strip_suffix(']'))
                .map(str::to_owned)
        })
        .collect();
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        for line in std::fs::read_to_string(table).unwrap().lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // local_address, st (0A = LISTEN), inode
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                found.push(f[1].to_string());
            }
        }
    }
    found
}

#[test]
fn no_other_user_reaches_the_sessions_proxies_or_its_broker() {
    if !native()
        || !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
        || test_support::tool("socat", "apt-get install socat").is_none()
    {
        return;
    }
    let d = scratch("private");
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(
        d.join("rules.toml"),
        "[[rule]]\nname = \"read\"\ndecision = \"allow\"\nhosts = [\"api.example.test\"]\nclasses = [\"rest-read\"]\n",
    )
    .unwrap();
    let child = Command::new(BIN)
        .args(["--broker", "api.example.test", "--broker-rules"])
        .arg(d.join("rules.toml"))
        .args(["--broker-credential-env", "REAL_TOKEN", "--", "sh", "-c"])
        .arg(
            "curl -s -m 10 -o /dev/null -w 'code=%{http_code}\\n' http://denied.example.test/; \
             while [ ! -e stop ]; do sleep 0.05; done",
        )
        .current_dir(&d)
        .env_remove("CC_SERVER_SANDBOX")
        .env("TMPDIR", &tmp)
        .env("REAL_TOKEN", "real-credential-never-shared")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The session's socket directory, once its sockets exist.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let dir = loop {
        let found = std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.join("socks.sock").exists());
        if let Some(p) = found {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "no session directory");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // While the command runs (with its broker and its in-namespace
    // listeners), the host program listens on no TCP port of the host.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(tcp_listeners_of(child.id()), Vec::<String>::new());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", dir.display());
    // Another user cannot connect to the bridges' sockets.
    for name in ["http.sock", "socks.sock"] {
        let sock = dir.join(name);
        let o = Command::new("/usr/bin/setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "socat",
                "-u",
            ])
            .arg("OPEN:/dev/null")
            .arg(format!("UNIX-CONNECT:{}", sock.display()))
            .output()
            .unwrap();
        assert!(!o.status.success(), "uid 65534 reached {name}");
        assert!(err(&o).contains("Permission denied"), "{}", err(&o));
    }
    std::fs::write(d.join("stop"), "").unwrap();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    // The session's own command reached its proxies all along.
    assert_eq!(o.status.code(), Some(0), "{out}{}", err(&o));
    assert!(out.contains("code=403"), "{out}{}", err(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn stdin_that_is_not_a_terminal_passes_through_to_the_command() {
    if !native() {
        return;
    }
    let d = scratch("stdin");
    let mut child = Command::new(BIN)
        .args(["--", "cat"])
        .current_dir(&d)
        .env_remove("CC_SERVER_SANDBOX")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"hi").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), "hi", "{}", err(&o));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_timeout_ends_the_command_with_status_124() {
    if !native() {
        return;
    }
    let d = scratch("timeout");
    let started = std::time::Instant::now();
    let o = agent_run(&d, &["--timeout", "0.5", "--", "sleep", "30"]);
    assert_eq!(o.status.code(), Some(124), "{}", err(&o));
    assert!(err(&o).contains("ran out of time"), "{}", err(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let o = agent_run(&d, &["--timeout", "0", "--", "true"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a zero timeout is a usage error: {}",
        err(&o)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn limits_from_the_command_line_are_enforced_or_refused() {
    if !native() {
        return;
    }
    let d = scratch("limits");
    let hog = [
        "--memory",
        "64M",
        "--",
        "python3",
        "-c",
        "b = bytearray(512 << 20)",
    ];
    let o = agent_run(&d, &hog);
    if agent_sandbox::Cgroups::from_ambient()
        .describe()
        .contains("memory: cgroup")
    {
        assert_eq!(o.status.code(), Some(137), "{}", err(&o));
        assert!(err(&o).contains("ran out of memory"), "{}", err(&o));
    } else {
        assert_eq!(o.status.code(), Some(1), "{}", err(&o));
        assert!(
            err(&o).contains("memory limit cannot be enforced"),
            "{}",
            err(&o)
        );
    }
    for bad in [
        ["--memory", "12X"],
        ["--memory", "64"],
        ["--pids", "-1"],
        ["--cpus", "0"],
    ] {
        let o = agent_run(&d, &[bad[0], bad[1], "--", "true"]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", err(&o));
        assert!(err(&o).contains(bad[0]), "{}", err(&o));
        // Refused before anything starts: no start-up line.
        assert!(!err(&o).contains("agent sandbox ON"), "{}", err(&o));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// `agent-run` in a real terminal (a tmux pane), driven by its keys.
struct Pane {
    tmux: std::path::PathBuf,
    socket: String,
}

impl Pane {
    fn tmux(&self, args: &[&str]) -> Output {
        Command::new(&self.tmux)
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap()
    }
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success());
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(
            &self
                .tmux(&["capture-pane", "-p", "-t", "t", "-S", "-200"])
                .stdout,
        )
        .into_owned()
    }
    fn wait_for(&self, text: &str) {
        self.wait_until(|screen| screen.contains(text));
    }
    fn wait_until(&self, done: impl Fn(&str) -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        while !done(&self.screen()) {
            assert!(
                std::time::Instant::now() < deadline,
                "never came:\n{}",
                self.screen()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// Drives `agent-run -- bash -i` in a tmux pane (as `user`, through
/// setpriv, when given): tty, resizes, job control, Ctrl-C, the exit status.
fn drive_a_shell_in_a_pane(tag: &str, user: Option<&str>) {
    let Some(tmux) = test_support::tool("tmux", "apt-get install tmux") else {
        return;
    };
    use std::os::unix::fs::PermissionsExt;
    let d = scratch(tag);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let pane = Pane {
        tmux,
        socket: format!("agent-run-{tag}-{}", std::process::id()),
    };
    let as_user = match user {
        Some(uid) => format!("/usr/bin/setpriv --reuid={uid} --regid={uid} --clear-groups "),
        None => String::new(),
    };
    let shell = format!(
        "env -u CC_SERVER_SANDBOX {as_user}{BIN} -- bash --norc --noprofile -i; echo EXIT=$?; sleep 60"
    );
    let o = pane.tmux(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "100",
        "-y",
        "30",
        "-c",
        &d.display().to_string(),
        &shell,
    ]);
    assert!(o.status.success(), "{}", err(&o));
    pane.wait_for("bash-");
    if let Some(uid) = user {
        pane.keys(&["id -u", "Enter"]);
        pane.wait_for(&format!("\n{uid}\n"));
    }
    pane.keys(&["tty", "Enter"]);
    pane.wait_for("/dev/pts/0");
    pane.keys(&["stty size", "Enter"]);
    pane.wait_for("30 100");
    assert!(
        pane.tmux(&["resize-window", "-t", "t", "-x", "120", "-y", "40"])
            .status
            .success()
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    pane.keys(&["stty size", "Enter"]);
    pane.wait_for("40 120");
    pane.keys(&["sleep 100", "Enter"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let prompts = pane.screen().matches("bash-").count();
    pane.keys(&["C-c"]);
    pane.wait_for("^C");
    // The next prompt: a line typed ahead of it may go with the ^C.
    pane.wait_until(|screen| screen.matches("bash-").count() > prompts);
    pane.keys(&["echo alive $?", "Enter"]);
    pane.wait_for("alive 130");
    pane.keys(&["exit 3", "Enter"]);
    pane.wait_for("EXIT=3");
    assert!(
        !pane.screen().contains("no job control"),
        "{}",
        pane.screen()
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn in_a_terminal_the_command_gets_a_terminal_of_its_own_with_keys_resizes_and_ctrl_c() {
    if !native() {
        return;
    }
    drive_a_shell_in_a_pane("tty", None);
}

#[test]
fn an_unprivileged_user_gets_the_same_terminal() {
    if !native() {
        return;
    }
    if !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    drive_a_shell_in_a_pane("tty-nobody", Some("65534"));
}

#[test]
fn as_an_unprivileged_user_stdin_passes_and_an_unenforceable_limit_refuses_the_run() {
    if !native() {
        return;
    }
    if !test_support::require_root()
        || test_support::tool("setpriv", "apt-get install util-linux").is_none()
    {
        return;
    }
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("nobody-stdin");
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
    let nobody = |args: &[&str], input: &[u8]| {
        let mut child = Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .current_dir(&d)
            .env_remove("CC_SERVER_SANDBOX")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    };
    let o = nobody(
        &["--no-filename-rules", "--", "sh", "-c", "id -u; cat"],
        b"from the host\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "65534\nfrom the host\n",
        "{}",
        err(&o)
    );
    // This user may make no cgroup here: the limit is refused, not dropped.
    let o = nobody(&["--no-filename-rules", "--pids", "10", "--", "true"], b"");
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("limit cannot be enforced"), "{}", err(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

/// The `--events` lines, each parsed, and checked to be exactly the serde
/// form of the event it parses to.
fn parse_events(text: &str) -> Vec<sandbox_core::SandboxEvent> {
    text.lines()
        .map(|l| {
            let ev: sandbox_core::SandboxEvent =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
            assert_eq!(serde_json::to_string(&ev).unwrap(), l);
            ev
        })
        .collect()
}

/// The bytes of every `stdout` event, in order.
fn stdout_of(events: &[sandbox_core::SandboxEvent]) -> String {
    let mut out = Vec::new();
    for ev in events {
        if let sandbox_core::SandboxEvent::Stdout { data } = ev {
            out.extend_from_slice(data);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The summary line `agent-run` ends with.
fn summary_line(e: &str) -> &str {
    e.lines()
        .rev()
        .find(|l| l.starts_with("agent-run: violations: ") || *l == "agent-run: no violations")
        .unwrap_or_else(|| panic!("no summary line in {e}"))
}

#[test]
fn events_go_to_a_descriptor_as_json_lines_and_violations_are_counted_at_exit() {
    use sandbox_core::SandboxEvent;
    if !native() {
        return;
    }
    let guard = sandbox_core::probe_ambient()
        .native
        .filename_rules
        .is_enforceable();
    let d = scratch("events-fd");
    let script = "echo hello; echo k > id.key; \
                  curl -sS -m 10 -o /dev/null https://not-allowed.example.test/ || echo \"blocked (curl exit $?)\"; \
                  exit 3";
    // The events on descriptor 3, a pipe to this test; the command's own
    // stdout goes to a file.
    let opt_out = if guard { "" } else { "--no-filename-rules" };
    let o = Command::new("/bin/sh")
        .args([
            "-c",
            "exec \"$0\" $2 --events json:3 -- sh -c \"$1\" 3>&1 >out.txt",
            BIN,
            script,
            opt_out,
        ])
        .current_dir(&d)
        .env_remove("CC_SERVER_SANDBOX")
        .output()
        .unwrap();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(3), "{e}");
    let events = parse_events(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(events.first(), Some(&SandboxEvent::Starting), "{events:?}");
    assert_eq!(
        events.last(),
        Some(&SandboxEvent::Exit { exit_code: 3 }),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|ev| matches!(ev, SandboxEvent::Violation { violation }
            if violation.action == "network-outbound"
                && violation.target == "not-allowed.example.test:443")),
        "{events:?}\n{e}"
    );
    let out = stdout_of(&events);
    assert!(
        out.starts_with("hello\n") && out.contains("blocked (curl exit"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(d.join("out.txt")).unwrap(), out);
    let want = if guard {
        "agent-run: violations: file-write-create 1, network-outbound 1"
    } else {
        "agent-run: violations: network-outbound 1"
    };
    assert_eq!(summary_line(&e), want, "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn events_to_a_file_replace_what_it_held_and_a_clean_run_says_no_violations() {
    use sandbox_core::SandboxEvent;
    if !native() {
        return;
    }
    let d = scratch("events-file");
    let logs = scratch("events-file-log");
    let file = logs.join("events.jsonl");
    std::fs::write(&file, "stale\n".repeat(100)).unwrap();
    let events_arg = format!("--events=json={}", file.display());
    let o = agent_run(
        &d,
        &[&events_arg, "--", "sh", "-c", "echo out; echo err >&2"],
    );
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "out\n");
    let events = parse_events(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(events.first(), Some(&SandboxEvent::Starting));
    assert_eq!(events.last(), Some(&SandboxEvent::Exit { exit_code: 0 }));
    assert_eq!(stdout_of(&events), "out\n");
    assert!(
        events
            .iter()
            .any(|ev| matches!(ev, SandboxEvent::Stderr { data } if data == b"err\n")),
        "{events:?}"
    );
    assert_eq!(summary_line(&e), "agent-run: no violations");
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&logs).unwrap();
}

#[test]
fn events_and_broker_flags_refuse_bad_values_naming_what_to_type() {
    let d = scratch("flag-usage");
    for (args, says) in [
        (&["--events", "json:1"][..], "--events takes json:FD"),
        (&["--events", "yaml"][..], "or json=FILE, not \"yaml\""),
        (
            &["--broker-template", "header:x api key"][..],
            "--broker-template takes bearer, token, git-basic or header:NAME",
        ),
        (
            &["--broker-phantom-env", "1KEY"][..],
            "--broker-phantom-env takes a variable name",
        ),
        (
            &["--broker-port", "0"][..],
            "--broker-port takes a port number from 1 to 65535, not \"0\"",
        ),
    ] {
        let mut all = args.to_vec();
        all.extend(["--", "true"]);
        let o = agent_run(&d, &all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", err(&o));
        assert!(
            err(&o).contains(says) && err(&o).contains("try '--help'"),
            "{args:?}: {}",
            err(&o)
        );
    }
    // A descriptor this program was not started with.
    let o = agent_run(&d, &["--events", "json:987", "--", "true"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(
        err(&o).contains("descriptor 987 is not open for writing")
            && err(&o).contains("start agent-run with 987>FILE or a pipe on 987"),
        "{}",
        err(&o)
    );
    // The usage text explains each new flag.
    let o = agent_run(&d, &["--help"]);
    let usage = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--events <json:FD|json=FILE>",
        "--broker-template <TEMPLATE>",
        "--broker-phantom-env <NAME>",
        "--broker-port <PORT>",
    ] {
        assert!(usage.contains(flag), "{usage}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_api_key_header_is_brokered_and_the_command_holds_only_the_phantom() {
    use test_support::tls_origin::{Origin, Reply, TestPki};
    if !native() || test_support::tool("curl", "apt-get install curl").is_none() {
        return;
    }
    const KEY: &str = "sk-real-api-key-4b1d9e";
    // A local HTTPS origin standing in for an LLM API, reached by name
    // (localhost, so the host's resolver finds it) on its own port.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let pki = TestPki::new(&["localhost"]);
    let origin = rt.block_on(Origin::start(&pki, |_| async {
        Reply::new("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\norigin-ok")
    }));
    let port = origin.addr().port().to_string();
    let d = scratch("api-key");
    let conf = scratch("api-key-conf");
    let rules = conf.join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"messages\"\ndecision = \"allow\"\nhosts = [\"localhost\"]\nclasses = [\"rest-read\", \"rest-write\"]\n",
    )
    .unwrap();
    let ca = conf.join("origin-ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let script = format!(
        "printf 'key=%s\\n' \"$ANTHROPIC_API_KEY\"; printf 'gh=%s\\n' \"${{GH_TOKEN-unset}}\"; \
         curl -sS -m 20 -X POST -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'content-type: application/json' \
         -d '{{}}' https://localhost:{port}/v1/messages; echo"
    );
    let o = Command::new(BIN)
        .args(["--allow-cidr", "127.0.0.1/32", "--broker", "localhost"])
        .arg("--broker-rules")
        .arg(&rules)
        .args([
            "--broker-credential-env",
            "ANTHROPIC_API_KEY",
            "--broker-template",
            "header:x-api-key",
            "--broker-phantom-env",
            "ANTHROPIC_API_KEY",
            "--broker-port",
            &port,
        ])
        .arg("--upstream-ca")
        .arg(&ca)
        .args(["--", "sh", "-c", &script])
        .current_dir(&d)
        .env_remove("CC_SERVER_SANDBOX")
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{e}");
    let phantom = out
        .lines()
        .find_map(|l| l.strip_prefix("key="))
        .unwrap_or_else(|| panic!("no key line in {out}{e}"))
        .to_owned();
    assert!(!phantom.is_empty() && phantom != KEY, "{out}");
    assert!(
        out.contains("gh=unset\n"),
        "the default variables are not set: {out}"
    );
    assert!(out.contains("origin-ok"), "{out}{e}");
    let seen = origin.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].request_line(), "POST /v1/messages HTTP/1.1");
    assert_eq!(seen[0].headers("x-api-key"), [KEY], "{}", seen[0].head);
    assert_eq!(seen[0].header("authorization"), None, "{}", seen[0].head);
    assert!(!seen[0].head.contains(&phantom), "{}", seen[0].head);
    assert!(
        !format!("{out}{e}").contains(KEY),
        "the key leaked: {out}{e}"
    );
    assert_eq!(summary_line(&e), "agent-run: no violations");
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&conf).unwrap();
}

/// `--allow-unix-socket` lets the command reach exactly that host socket
/// (with `SSH_AUTH_SOCK` when it names it); a socket a host process made in
/// the worktree stays unreachable; the Docker socket needs the louder flag.
#[test]
fn a_granted_unix_socket_is_reached_and_a_host_socket_in_the_worktree_is_not() {
    if !native()
        || !sandbox_core::probe_ambient()
            .native
            .filename_rules
            .is_enforceable()
        || test_support::tool("python3", "apt-get install python3").is_none()
    {
        return;
    }
    let d = scratch("sockets");
    let outside = scratch("sockets-agent");
    let agent = outside.join("agent.sock");
    let agent_l = std::os::unix::net::UnixListener::bind(&agent).unwrap();
    let in_tree = std::os::unix::net::UnixListener::bind(d.join("host.sock")).unwrap();
    in_tree.set_nonblocking(true).unwrap();
    let script = "import os, socket\n\
        c = lambda p: socket.socket(socket.AF_UNIX).connect_ex(p)\n\
        print('agent', c(os.environ['SSH_AUTH_SOCK']))\n\
        print('tree', c('host.sock'))\n";
    // With the filename rules dropped too: the guard still supervises
    // connect wherever something is writable.
    for rules in [&[][..], &["--no-filename-rules"][..]] {
        let o = Command::new(BIN)
            .args(rules)
            .args([
                "--allow-unix-socket",
                agent.to_str().unwrap(),
                "--",
                "python3",
                "-c",
                script,
            ])
            .current_dir(&d)
            .env("SSH_AUTH_SOCK", &agent)
            .env_remove("CC_SERVER_SANDBOX")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("agent 0\n") && out.contains("tree 13\n"),
            "{rules:?}: {out}{}",
            err(&o)
        );
        assert!(agent_l.accept().is_ok());
        assert!(
            in_tree.accept().is_err(),
            "{rules:?}: the worktree's host socket was reached"
        );
        assert!(
            err(&o).contains("violation: network-outbound"),
            "{rules:?}: {}",
            err(&o)
        );
    }

    let o = agent_run(
        &d,
        &["--allow-unix-socket", "/var/run/docker.sock", "--", "true"],
    );
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err(&o).contains("--allow-root-equivalent-unix-socket PATH"),
        "{}",
        err(&o)
    );
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&outside).unwrap();
}

/// `--settings FILE` in a real confined run: the file's review mode makes
/// the worktree read-only; a key that is no flag stops before anything runs.
#[test]
fn a_settings_file_sets_the_run_and_an_unknown_key_is_refused() {
    if !native() {
        return;
    }
    let d = scratch("settings");
    let file = d.join("agent-run.toml");
    std::fs::write(&file, "mode = \"review\"\nno-filename-rules = true\n").unwrap();
    let f = file.to_str().unwrap();
    let o = agent_run(
        &d,
        &[
            "--settings",
            f,
            "--",
            "sh",
            "-c",
            "touch made 2>/dev/null && echo WROTE || echo READONLY",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "READONLY\n",
        "{}",
        err(&o)
    );
    assert!(!d.join("made").exists());
    std::fs::write(&file, "mode = \"review\"\nallow-all = true\n").unwrap();
    let o = agent_run(&d, &["--settings", f, "--", "touch", "made"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("unknown field `allow-all`"), "{}", err(&o));
    assert!(!d.join("made").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

/// The `SigIgn` mask of a `/proc/PID/status` text.
fn ignored_signals(status: &str) -> u64 {
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .unwrap_or_else(|| panic!("no SigIgn line in {status:?}"));
    u64::from_str_radix(line.trim(), 16).unwrap()
}

/// A host started in the background of a script has SIGINT and SIGQUIT
/// ignored (a shell does that for `host &`), and an ignored signal stays
/// ignored across exec; the sandboxed command gets both back at their
/// defaults, so Ctrl-C on its terminal and the host's signals reach it.
#[test]
fn a_host_that_ignores_interrupts_does_not_pass_that_on_to_the_command() {
    if !native() {
        return;
    }
    // SIGINT is 2 and SIGQUIT 3 on Linux; bit N - 1 of the mask is signal N.
    let job_signals: u64 = (1 << 1) | (1 << 2);
    let d = scratch("sigign");
    let host = |inner: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("trap '' INT QUIT; exec {inner}"))
            .arg(BIN)
            .current_dir(&d)
            .env_remove("CC_SERVER_SANDBOX")
            .output()
            .unwrap()
    };
    // The setup means something: the host itself has both ignored.
    let o = host("cat /proc/self/status");
    let ignored = ignored_signals(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(ignored & job_signals, job_signals, "{ignored:x}");
    let o = host("\"$0\" -- cat /proc/self/status");
    assert!(o.status.success(), "{}", err(&o));
    let ignored = ignored_signals(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(ignored & job_signals, 0, "{ignored:x}: {}", err(&o));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_broker_with_backend_none_is_refused_and_the_command_never_runs() {
    let d = scratch("broker-none");
    std::fs::write(
        d.join("rules.toml"),
        "[[rule]]\nname = \"read\"\ndecision = \"allow\"\nhosts = [\"api.example.com\"]\nclasses = [\"rest-read\"]\n",
    )
    .unwrap();
    for opt in [&["--backend", "none"][..], &["--sandbox", "off"][..]] {
        let mut args = vec![
            "--broker",
            "api.example.com",
            "--broker-rules",
            "rules.toml",
            "--broker-credential-env",
            "AGENT_RUN_TEST_TOKEN",
        ];
        args.extend_from_slice(opt);
        args.extend_from_slice(&["--", "sh", "-c", "touch ran"]);
        let o = Command::new(BIN)
            .args(&args)
            .current_dir(&d)
            .env_remove("CC_SERVER_SANDBOX")
            .env("AGENT_RUN_TEST_TOKEN", "real-token")
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1), "{opt:?}: {e}");
        assert!(
            e.contains("the credential broker needs a sandbox") && e.contains("none backend"),
            "{opt:?}: {e}"
        );
        assert!(!d.join("ran").exists(), "{opt:?}: the command ran: {e}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// `--runner-state-dir DIR`: writable even in review mode, and the
/// filename rules keep to the workspace: the runner's own
/// `sessions/<pid>.<hash>.key` is made there, a key in the workspace is
/// refused, and a tree of keys made in the state directory reaches the
/// workspace only by a copy that leaves its keys out. Under each mechanism.
#[test]
fn a_runner_state_dir_is_writable_in_every_mode_and_free_of_the_filename_rules() {
    if !native() {
        return;
    }
    let mut mechanisms = vec!["bubblewrap"];
    {
        use sandbox_core::HostView;
        let tried = sandbox_core::AmbientHost::from_ambient_untimed().try_landlock();
        if test_support::require(
            tried.is_ok(),
            &format!("Landlock ABI 6 or later ({tried:?})"),
            "run the tests on Linux 6.12 or later with Landlock among the active LSMs (lsm=...,landlock)",
        ) {
            mechanisms.push("landlock");
        }
    }
    for mechanism in mechanisms {
        let d = scratch(&format!("state-{mechanism}"));
        std::fs::create_dir_all(d.join("ws")).unwrap();
        std::fs::create_dir_all(d.join("config")).unwrap();
        let config = d.join("config").display().to_string();
        let ws = d.join("ws").display().to_string();
        let script = format!(
            "mkdir -p {config}/sessions && echo s > {config}/sessions/4242.a1b2.key && echo STATE-KEY; \
             echo k > {ws}/id.key 2>/dev/null && echo WS-KEY; \
             mkdir -p {config}/tree && echo t > {config}/tree/inner.pem; \
             mv {config}/tree {ws}/tree 2>/dev/null; \
             test -e {ws}/tree/inner.pem && echo TREE-KEY-MOVED; true"
        );
        for mode in ["chat", "review"] {
            let o = agent_run(
                &d,
                &[
                    "--mechanism",
                    mechanism,
                    "--mode",
                    mode,
                    "--mount",
                    &ws,
                    "--runner-state-dir",
                    &config,
                    "--",
                    "sh",
                    "-c",
                    &script,
                ],
            );
            let (out, e) = (String::from_utf8_lossy(&o.stdout), err(&o));
            let at = format!("{mechanism}, {mode}");
            assert_eq!(o.status.code(), Some(0), "{at}:\n{out}\n{e}");
            assert!(
                out.contains("STATE-KEY"),
                "{at}: the runner's key:\n{out}\n{e}"
            );
            assert!(!out.contains("WS-KEY"), "{at}:\n{out}\n{e}");
            assert!(!out.contains("TREE-KEY-MOVED"), "{at}:\n{out}\n{e}");
            assert!(d.join("config/sessions/4242.a1b2.key").exists(), "{at}");
            assert!(!d.join("ws/id.key").exists(), "{at}");
            assert!(!d.join("ws/tree/inner.pem").exists(), "{at}");
            let _ = std::fs::remove_dir_all(d.join("config/tree"));
            let _ = std::fs::remove_dir_all(d.join("ws/tree"));
        }
        // A state directory that holds the workspace would leave it without
        // the rules: refused.
        let o = agent_run(
            &d,
            &[
                "--mechanism",
                mechanism,
                "--mount",
                &ws,
                "--runner-state-dir",
                &d.display().to_string(),
                "--",
                "true",
            ],
        );
        assert_eq!(o.status.code(), Some(1), "{mechanism}: {}", err(&o));
        assert!(
            err(&o).contains("a runner state directory may not hold a writable mount"),
            "{mechanism}: {}",
            err(&o)
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=u", "-c", "user.email=u@example.invalid"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

#[test]
fn workspace_runs_the_command_in_its_own_view_and_collects_its_branch_into_the_checkout() {
    if !native() || test_support::tool("git", "apt-get install git").is_none() {
        return;
    }
    let d = scratch("workspace");
    let repo = d.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README"), "hi\n").unwrap();
    git(&repo, &["add", "README"]);
    git(&repo, &["commit", "-qm", "first"]);
    let main_before = git(&repo, &["rev-parse", "main"]);
    let script = format!(
        "test \"$(pwd)\" != {r} && echo ELSEWHERE; echo fixed >> README && \
         git -c user.name=a -c user.email=a@example.invalid commit -qam fix && echo COMMIT; \
         git update-ref refs/heads/main HEAD; echo x >> {r}/README; true",
        r = repo.display()
    );
    let o = agent_run(
        &d,
        &[
            "--workspace",
            repo.to_str().unwrap(),
            "--workspace-branch",
            "fix",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let (out, e) = (String::from_utf8_lossy(&o.stdout), err(&o));
    assert_eq!(o.status.code(), Some(0), "{out}\n{e}");
    assert!(
        out.contains("ELSEWHERE") && out.contains("COMMIT"),
        "{out}\n{e}"
    );
    // Under bubblewrap the view is an overlay in the sandbox's namespace.
    assert!(e.contains("(overlay layering)"), "{e}");
    // The checkout: main where it was, the README untouched, the work as
    // a session ref alone.
    assert_eq!(git(&repo, &["rev-parse", "main"]), main_before);
    assert_eq!(
        std::fs::read_to_string(repo.join("README")).unwrap(),
        "hi\n"
    );
    let refs = git(
        &repo,
        &["for-each-ref", "--format=%(refname)", "refs/sessions"],
    );
    assert_eq!(refs.lines().count(), 1, "{refs}");
    assert!(refs.ends_with("/fix"), "{refs}");
    assert!(e.contains(&format!("collected {refs} at ")), "{e}");
    assert_eq!(git(&repo, &["log", "--format=%s", &refs]), "fix\nfirst");
    // Bad uses are usage errors.
    let o = agent_run(&d, &["--workspace-branch", "x", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = agent_run(
        &d,
        &[
            "--workspace",
            repo.to_str().unwrap(),
            "--workdir",
            "/",
            "--",
            "true",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = agent_run(&d, &["--workspace", d.to_str().unwrap(), "--", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        err(&o).contains("cannot be a workspace's checkout"),
        "{}",
        err(&o)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn errors_name_their_cause_and_the_examples_run_as_written() {
    if !native() {
        return;
    }
    let d = scratch("errors");
    // A refused connection says why.
    let o = agent_run(
        &d,
        &[
            "--",
            "sh",
            "-c",
            "curl -sS -o /dev/null https://blocked.example/ 2>/dev/null; true",
        ],
    );
    assert!(
        err(&o).contains(
            "violation: network-outbound blocked.example:443 (host is not in the allowlist)"
        ),
        "{}",
        err(&o)
    );
    // An events file in the writable mount is the run's, not the command's.
    let o = agent_run(
        &d,
        &[
            "--events",
            "json=ev.jsonl",
            "--",
            "sh",
            "-c",
            "echo forged > ev.jsonl; true",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let log = std::fs::read_to_string(d.join("ev.jsonl")).unwrap();
    assert!(
        log.starts_with("{\"type\":\"starting\"}") && !log.contains("\nforged"),
        "{log}"
    );
    // A missing command: the shell's 127 and what to check.
    let o = agent_run(&d, &["--", "no-such-command-here"]);
    assert_eq!(o.status.code(), Some(127), "{}", err(&o));
    assert!(err(&o).contains("command not found"), "{}", err(&o));
    assert!(!err(&o).contains("destroy the session"), "{}", err(&o));
    // A working directory in no mount: refused before the launch, naming
    // the directory and the flag.
    let o = agent_run(&d, &["--mount", "/usr/share:ro", "--", "true"]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains(&format!("--mount {}", d.display())) && e.contains("is in no mount"),
        "{e}"
    );
    // --help's example spelling: `.:rw` is the writable mount of `.`.
    let o = agent_run(
        &d,
        &["--mount", ".:rw", "--", "sh", "-c", "echo hi > made.txt"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(d.join("made.txt")).unwrap(), "hi\n");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn every_flag_of_help_is_a_settings_key() {
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let mut flags: Vec<&str> = help
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| w.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
        .filter(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect();
    flags.sort_unstable();
    flags.dedup();
    assert!(flags.len() > 30, "{flags:?}");
    for flag in flags {
        if ["help", "version", "settings"].contains(&flag) {
            continue;
        }
        // A value of the wrong type is another error; an unknown key is
        // what must not happen.
        for value in ["true", "\"x\"", "[\"x\"]", "1"] {
            if let Err(e) = agent_sandbox_examples::settings_args(&format!("{flag} = {value}\n")) {
                assert!(
                    !e.contains("unknown field"),
                    "--{flag} has no settings key: {e}"
                );
            }
        }
    }
}

#[test]
fn audit_writes_one_ocsf_record_per_step_to_its_file() {
    if !native() {
        return;
    }
    let d = scratch("audit");
    let trail = d.join("home-audit.jsonl");
    let o = agent_run(
        &d,
        &[
            "--audit",
            trail.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo x > .env; exit 4",
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let text = std::fs::read_to_string(&trail).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps: Vec<(u64, u64)> = records
        .iter()
        .map(|r| {
            (
                r["class_uid"].as_u64().unwrap(),
                r["activity_id"].as_u64().unwrap(),
            )
        })
        .collect();
    // Start, the command's launch, the refused .env, its end, the stop.
    assert_eq!(
        steps,
        [(6002, 3), (1007, 1), (1001, 1), (1007, 2), (6002, 4)],
        "{text}"
    );
    assert_eq!(records[3]["exit_code"], 4, "{text}");
    assert!(
        records[2]["file"]["path"]
            .as_str()
            .unwrap()
            .ends_with("/.env")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&trail).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_allowed_host_the_network_fails_is_said_as_such_and_not_counted() {
    if !native() {
        return;
    }
    let d = scratch("upstream");
    // A loopback port nothing listens on: the proxy's dial is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let o = agent_run(
        &d,
        &[
            "--allow",
            "localhost",
            "--allow-cidr",
            "127.0.0.1/32",
            "--",
            "sh",
            "-c",
            &format!("curl -s -o /dev/null --max-time 10 http://localhost:{port}/; true"),
        ],
    );
    let e = err(&o);
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert!(
        e.contains(&format!(
            "agent-run: localhost:{port} was allowed, but the upstream failed"
        )),
        "{e}"
    );
    assert!(!e.contains("violation: network-outbound"), "{e}");
    assert!(e.contains("agent-run: no violations"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn log_format_json_writes_every_line_as_json_with_the_sessions_spans() {
    if !native() {
        return;
    }
    let d = scratch("log-json");
    let o = agent_run(
        &d,
        &[
            "--log-format",
            "json",
            "--mount",
            ".:rw",
            "--",
            "sh",
            "-c",
            "echo out; touch .env; exit 3",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    // The command's own output passes through untouched.
    assert_eq!(String::from_utf8_lossy(&o.stdout), "out\n");
    let e = err(&o);
    // Every line but the command's own stderr (`touch: ...`) is JSON.
    let (json, others): (Vec<&str>, Vec<&str>) = e.lines().partition(|l| l.starts_with('{'));
    assert!(others.iter().all(|l| l.starts_with("touch:")), "{others:?}");
    let lines: Vec<serde_json::Value> = json
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not a JSON line: {l}")))
        .collect();
    let text = |l: &serde_json::Value, k: &str| l[k].as_str().unwrap_or_default().to_owned();
    for l in &lines {
        let time = text(l, "time");
        assert!(time.len() == 27 && time.ends_with('Z'), "{l}");
        assert!(
            ["INFO", "WARN", "ERROR"].contains(&text(l, "level").as_str()),
            "{l}"
        );
    }
    // The manager's probe line, agent-run's own lines, the refusal as a
    // warning, and the manager's refusal event in the command's span
    // with the session's id.
    assert!(
        lines.iter().any(|l| text(l, "target") == "agent_sandbox"
            && text(l, "message").starts_with("agent sandbox ON")),
        "{e}"
    );
    assert!(
        lines.iter().any(|l| text(l, "target") == "agent_run"
            && text(l, "message").starts_with("backend native")),
        "{e}"
    );
    let v = lines
        .iter()
        .find(|l| text(l, "message").starts_with("violation: file-write-create"))
        .unwrap_or_else(|| panic!("no violation line: {e}"));
    assert_eq!(text(v, "level"), "WARN");
    let refused = lines
        .iter()
        .find(|l| text(l, "target").starts_with("agent_sandbox") && text(l, "message") == "refused")
        .unwrap_or_else(|| panic!("no refusal event: {e}"));
    let spans = refused["spans"].as_array().unwrap();
    assert!(
        spans.iter().any(|s| s["name"] == "agent_sandbox.command"
            && text(s, "session_id").starts_with("agent-run-")
            && text(s, "program") == "sh"),
        "{refused}"
    );
    assert!(!d.join(".env").exists());
}
