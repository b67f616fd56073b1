//! The `microvm` backend on gVisor, for real: the native escape tests that
//! apply, behind a kernel that is not the host's, and suspend/resume.

use super::commands::limited;
use super::native::{Run, Tree, origin, run};
use agent_sandbox::{ErrorKind, FilenameRules, ManagerBuilder, SandboxManager, VmRequirement};
use connect_proxy::IpPolicy;
use sandbox_core::{
    Access, BackendRequest, KillReason, Mode, SandboxBackend, SandboxCommand, SandboxEvent,
    SandboxState, Surface, probe_ambient,
};
use std::time::{Duration, Instant};

/// gVisor works here, or the test fails with the install line.
fn gvisor_available() -> bool {
    let m = &probe_ambient().microvm;
    test_support::require(
        m.available,
        &format!(
            "gVisor's runsc for the microvm backend ({})",
            m.reason.clone().unwrap_or_default()
        ),
        "apt-get install runsc",
    )
}

fn builder(t: &Tree, rules: Option<FilenameRules>, origin_port: Option<u16>) -> ManagerBuilder {
    let mut ip = IpPolicy::new();
    if origin_port.is_some() {
        ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    }
    let mut b = ManagerBuilder::from_ambient();
    b.request(
        BackendRequest::Explicit(SandboxBackend::Microvm),
        Surface::Dispatch,
    )
    .home(t.p("home"))
    .temp_dir(t.p("sockets"))
    .name_guard_launcher(crate::launcher())
    .ip_policy(ip)
    .base_env(vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("GITHUB_TOKEN".into(), "ghp_must_not_pass".into()),
    ]);
    if let Some(r) = rules {
        b.filename_rules(r);
    }
    if origin_port.is_some() {
        b.allow("localhost");
    }
    b
}

fn manager(t: &Tree, origin_port: Option<u16>) -> SandboxManager {
    builder(t, Some(FilenameRules::DropFilenameGlobDenies), origin_port)
        .build()
        .unwrap()
}

/// The host's first non-loopback IPv4 address, if it has one.
fn host_address() -> Option<std::net::Ipv4Addr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    match s.local_addr().ok()?.ip() {
        std::net::IpAddr::V4(a) if !a.is_loopback() && !a.is_unspecified() => Some(a),
        _ => None,
    }
}

#[tokio::test]
async fn a_default_launch_needing_filename_rules_is_refused_with_the_reason() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-refuse");
    let m = builder(&t, None, None).build().unwrap();
    let err = m.launch(t.spec("gv-refuse")).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::MicrovmFilenameRules { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("--no-filename-rules"), "{err}");
    // Asking the name guard to enforce them cannot be honoured: an error.
    let err = builder(&t, Some(FilenameRules::EnforcedByNameGuard), None)
        .build()
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NameGuardUnavailable { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_hardware_vm_required_refuses_gvisor() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-hw");
    let err = builder(&t, Some(FilenameRules::DropFilenameGlobDenies), None)
        .require_hardware_vm(VmRequirement::HardwareVm)
        .build()
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::HardwareVmRequired { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not a hardware VM"), "{err}");
}

#[tokio::test]
async fn the_escape_tests_hold_behind_gvisor() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-escape");
    let port = origin();
    let m = manager(&t, Some(port));
    assert!(m.selection().label.contains("not a hardware VM"));
    let mut h = m.launch(t.spec("gv-escape")).await.unwrap();
    assert_eq!(h.backend, SandboxBackend::Microvm);
    assert_eq!(h.details["runtime"], "gvisor");
    assert_eq!(h.details["hardwareVm"], "no");
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let udp = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let addr = host_address()
        .map(|a| a.to_string())
        .unwrap_or("10.0.0.1".into());
    let r = run(
        &m,
        &h,
        &format!(
            "cat ~/.ssh/id_rsa; echo x > .git/hooks/pre-commit && echo HOOK; echo x > ~/.bashrc && echo BASHRC; \
             echo ok > ws-file && echo WS-WRITABLE; \
             echo RELEASE=$(uname -r); env | sort; \
             echo PIDS=$(ls /proc | grep -c '^[0-9]'); \
             curl -sS -m 10 http://localhost:{port}/ ; echo; \
             curl -sS -m 10 --socks5-hostname 127.0.0.1:1080 http://localhost:{port}/ ; echo; \
             curl -s -m 10 -o /dev/null -w 'denied=%{{http_code}}\\n' http://blocked.example.test/ ; \
             curl -s -m 5 --noproxy '*' http://127.0.0.1:{port}/ && echo LOOPBACK-REACHED; \
             python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b\"leak\", (\"{addr}\", {udp_port}))' 2>/dev/null; \
             exit 7"
        ),
    )
    .await;
    let out = &r.stdout;
    assert_eq!(r.exit, Some(7), "{}", r.stderr);
    assert!(
        !out.contains("SECRET-KEY"),
        "the secret set is unreadable: {out}"
    );
    assert!(
        !out.contains("HOOK") && !out.contains("BASHRC"),
        "write denies hold: {out}"
    );
    assert!(
        out.contains("WS-WRITABLE"),
        "chat mode's mount is writable: {out}"
    );
    assert!(!out.contains("ghp_must_not_pass"), "{out}");
    assert!(out.contains("HTTP_PROXY=http://127.0.0.1:3128"), "{out}");
    let release = out
        .lines()
        .find_map(|l| l.strip_prefix("RELEASE="))
        .unwrap_or_default();
    assert!(
        !release.is_empty() && release != host_release.trim(),
        "uname -r inside: {release:?}"
    );
    let pids: usize = out
        .lines()
        .find_map(|l| l.strip_prefix("PIDS="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(usize::MAX);
    assert!(
        pids <= 12,
        "/proc shows only the session's processes: {pids}\n{out}"
    );
    assert_eq!(
        out.matches("origin-hello").count(),
        2,
        "{out}\n{}",
        r.stderr
    );
    assert!(out.contains("denied=403"), "{out}");
    assert!(
        !out.contains("LOOPBACK-REACHED"),
        "host loopback unreachable: {out}"
    );
    assert!(
        r.violations
            .iter()
            .any(|v| v == "network-outbound blocked.example.test:80"),
        "{:?}",
        r.violations
    );
    std::thread::sleep(Duration::from_millis(200));
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a UDP datagram reached the host"
    );
    assert!(std::path::Path::new(&t.p("ws/ws-file")).exists());
    let dir = std::path::PathBuf::from(h.details["sessionDir"].as_str().unwrap());
    m.destroy(&mut h).await.unwrap();
    assert!(!dir.exists(), "the runtime's state is removed");
}

#[tokio::test]
async fn review_mode_and_protected_paths_are_read_only() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-ro");
    std::fs::create_dir_all(t.p("orig")).unwrap();
    std::fs::write(t.p("orig/f"), "keep").unwrap();
    let m = manager(&t, None);
    let mut spec = t.spec("gv-ro");
    spec.mode = Mode::Review;
    spec.bind_mounts
        .push(sandbox_core::SandboxBindMount::new(t.p("orig"), Access::ReadWrite).unwrap());
    spec.protected_paths.push(t.p("orig"));
    let mut h = m.launch(spec).await.unwrap();
    let r = run(
        &m,
        &h,
        &format!(
            "echo x > {ws}/new && echo WROTE; echo x > {o}/f && echo PROT; cat {o}/f",
            ws = t.p("ws"),
            o = t.p("orig")
        ),
    )
    .await;
    assert!(
        !r.stdout.contains("WROTE") && !r.stdout.contains("PROT"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("keep"), "{} {}", r.stdout, r.stderr);
    m.destroy(&mut h).await.unwrap();
    assert_eq!(std::fs::read_to_string(t.p("orig/f")).unwrap(), "keep");
}

/// Runs `script` and returns its output, for the lifecycle tests.
/// How many host processes belong to the session's runsc (their command
/// line names its state directory), and their resident memory in KiB.
fn session_rss(state_dir: &str) -> (usize, u64) {
    let needle = format!("--root={state_dir}");
    let mut procs = 0;
    let mut rss = 0;
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmd)
            .split('\0')
            .any(|a| a == needle)
        {
            continue;
        }
        procs += 1;
        rss += std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            })
            .unwrap_or(0);
    }
    (procs, rss)
}

async fn out(m: &SandboxManager, h: &sandbox_core::SandboxHandle, script: &str) -> Run {
    run(m, h, script).await
}

#[tokio::test]
async fn background_processes_stay_and_suspend_resume_keeps_them_counting() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-suspend");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-suspend")).await.unwrap();
    let r = out(
        &m,
        &h,
        "(i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done) >/dev/null 2>&1 & echo started",
    )
    .await;
    assert!(r.stdout.contains("started"), "{}", r.stderr);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let before: u64 = out(&m, &h, "cat /tmp/count")
        .await
        .stdout
        .trim()
        .parse()
        .unwrap();
    assert!(before > 0, "the loop runs between commands");

    if rustix::process::geteuid().as_raw() != 0 {
        // Without root this runsc cannot restore: suspend is refused before
        // any checkpoint, and the session goes on as it was.
        let err = m.suspend(&mut h).await.unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NotSupported { .. }),
            "{err}"
        );
        assert_eq!(h.state, SandboxState::Warm);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let later: u64 = out(&m, &h, "cat /tmp/count")
            .await
            .stdout
            .trim()
            .parse()
            .unwrap();
        assert!(later > before, "still counting: {before} then {later}");
        m.destroy(&mut h).await.unwrap();
        return;
    }
    let state_dir = format!("{}/state", h.details["sessionDir"].as_str().unwrap());
    let (procs, rss) = session_rss(&state_dir);
    assert!(
        procs > 0 && rss > 0,
        "the sandbox runs on the host: {procs} {rss}"
    );
    let started = Instant::now();
    m.suspend(&mut h).await.unwrap();
    let took = started.elapsed();
    assert_eq!(h.state, SandboxState::Suspended);
    assert_eq!(m.state(&h), Some(SandboxState::Suspended));
    let bytes = m.checkpoint_bytes(&h).unwrap();
    let (procs_after, rss_after) = session_rss(&state_dir);
    eprintln!(
        "suspend took {took:?}, checkpoint {bytes} bytes; the session's runsc processes: \
         {procs} with {rss} KiB resident before, {procs_after} with {rss_after} KiB after"
    );
    assert!(bytes > 0);
    assert_eq!(
        (procs_after, rss_after),
        (0, 0),
        "suspended, nothing of the sandbox stays in memory"
    );
    let err = m.exec(&h, SandboxCommand::new("true")).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Suspended { .. }), "{err}");
    assert!(m.suspend(&mut h).await.is_err(), "suspended twice");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let started = Instant::now();
    m.resume(&mut h).await.unwrap();
    eprintln!("resume took {:?}", started.elapsed());
    assert_eq!(h.state, SandboxState::Warm);
    let err = m.resume(&mut h).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NotSuspended { .. }),
        "{err}"
    );
    let at_resume: u64 = out(&m, &h, "cat /tmp/count")
        .await
        .stdout
        .trim()
        .parse()
        .unwrap();
    assert!(
        at_resume >= before,
        "the counter went on from where it was: {before} -> {at_resume}"
    );
    assert!(
        at_resume < before + 20,
        "no counting while suspended: {before} -> {at_resume}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later: u64 = out(&m, &h, "cat /tmp/count")
        .await
        .stdout
        .trim()
        .parse()
        .unwrap();
    assert!(
        later > at_resume,
        "and keeps counting: {at_resume} -> {later}"
    );

    // Destroying a suspended session works too.
    m.suspend(&mut h).await.unwrap();
    m.destroy(&mut h).await.unwrap();
    assert_eq!(h.state, SandboxState::Destroyed);
}

#[tokio::test]
async fn a_timeout_kills_the_command_inside() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-timeout");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-timeout")).await.unwrap();
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("echo go; sleep 60")
        .timeout(Duration::from_millis(500));
    let started = Instant::now();
    let mut events = m.exec(&h, cmd).await.unwrap();
    let mut last = None;
    while let Some(ev) = events.next_event().await {
        last = Some(ev);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Killed {
                reason: Some(KillReason::Timeout),
                ..
            })
        ),
        "{last:?}"
    );
    let r = out(&m, &h, "ps -e -o comm= 2>/dev/null | grep -c sleep || true").await;
    assert!(
        r.stdout.trim().parse::<u32>().unwrap_or(9) <= 1,
        "{}",
        r.stdout
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_command_on_a_terminal_behind_gvisor_follows_resizes_and_ctrl_c() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-pty");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-pty")).await.unwrap();
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg(
        "stty size; echo READY; read x; stty size; trap 'echo TRAPPED' INT; \
         echo SLEEPING; sleep 100; echo AFTER-INT; uname -r; echo DONE",
    );
    cmd.pty(sandbox_core::PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    super::landlock::expect(&mut running, &mut seen, "READY").await;
    assert!(seen.contains("24 80\r\n"), "{seen:?}");
    running
        .resize(sandbox_core::PtySize::new(30, 100).unwrap())
        .unwrap();
    running.write_stdin(b"\n").await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "SLEEPING").await;
    assert!(seen.contains("30 100\r\n"), "{seen:?}");
    // Ctrl-C reaches the foreground job inside: sleep ends, the trap runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    running
        .control()
        .signal(sandbox_core::CommandSignal::Interrupt)
        .unwrap();
    super::landlock::expect(&mut running, &mut seen, "DONE").await;
    assert!(
        seen.contains("TRAPPED") && seen.contains("AFTER-INT"),
        "{seen:?}"
    );
    // gVisor's kernel, not the host's.
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(!seen.contains(host.trim()), "{seen:?}");
    assert_eq!(exit_code(&mut running).await, Some(0), "{seen:?}");
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn the_terminal_surface_runs_in_a_gvisor_sandbox_with_the_terminal_profile() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-terminal");
    let port = origin();
    let mut b = ManagerBuilder::from_ambient();
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .name_guard_launcher(crate::launcher())
        .request(
            BackendRequest::Explicit(SandboxBackend::Microvm),
            Surface::Terminal,
        )
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    let m = b.build().unwrap();
    let mut spec = sandbox_core::SandboxSpec::new("gv-term", "w");
    spec.guest_workdir = Some(t.p("ws"));
    let mut h = m.launch(spec).await.unwrap();
    assert_eq!(h.details["network"], "host");
    let r = run(
        &m,
        &h,
        &format!(
            "cat ~/.ssh/id_rsa; ls ~/.ssh; echo note > ~/notes && echo HOME-WRITABLE; \
             echo x > file && echo WORKDIR-WRITABLE; echo RELEASE=$(uname -r); \
             curl -sS -m 10 http://127.0.0.1:{port}/"
        ),
    )
    .await;
    assert!(
        !r.stdout.contains("SECRET-KEY") && !r.stdout.contains("id_rsa"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("HOME-WRITABLE") && r.stdout.contains("WORKDIR-WRITABLE"),
        "{} {}",
        r.stdout,
        r.stderr
    );
    // The host's network, as the terminal profile gives it, behind
    // gVisor's kernel.
    assert!(
        r.stdout.contains("origin-hello"),
        "{} {}",
        r.stdout,
        r.stderr
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        !r.stdout.contains(&format!("RELEASE={}", host.trim())),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("RELEASE="), "{}", r.stdout);
    assert_eq!(
        std::fs::read_to_string(t.p("home/notes")).unwrap(),
        "note\n"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_session_dropped_without_destroy_leaves_no_sandbox_running() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-drop");
    let m = manager(&t, None);
    let h = m.launch(t.spec("gv-drop")).await.unwrap();
    let r = out(&m, &h, "sleep 1000 >/dev/null 2>&1 & echo started").await;
    assert!(r.stdout.contains("started"), "{}", r.stderr);
    let state_dir = format!("{}/state", h.details["sessionDir"].as_str().unwrap());
    assert!(session_rss(&state_dir).0 > 0, "the sandbox runs");
    // The host forgets to destroy (or panics): the manager goes.
    drop(m);
    let (left, _) = session_rss(&state_dir);
    assert_eq!(left, 0, "a detached sandbox outlived its manager");
    assert!(!std::path::Path::new(&state_dir).exists());
}

/// Runs `cmd` to its end: stdout, stderr and the last event.
async fn finish(
    m: &SandboxManager,
    h: &sandbox_core::SandboxHandle,
    cmd: SandboxCommand,
) -> (String, String, Option<SandboxEvent>) {
    let mut running = m.exec(h, cmd).await.unwrap();
    let (mut stdout, mut stderr, mut last) = (Vec::new(), Vec::new(), None);
    while let Some(ev) = running.next_event().await {
        match &ev {
            SandboxEvent::Stdout { data } => stdout.extend_from_slice(data),
            SandboxEvent::Stderr { data } => stderr.extend_from_slice(data),
            _ => {}
        }
        last = Some(ev);
    }
    (
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
        last,
    )
}

#[tokio::test]
async fn process_memory_and_cpu_limits_hold_inside_gvisor() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-limits");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-limits")).await.unwrap();
    assert!(
        h.details["limits"]
            .as_str()
            .unwrap()
            .contains("processes: gVisor"),
        "{:?}",
        h.details
    );
    // Fifty forks under a limit of ten: the ones past it fail inside.
    let procs = sandbox_core::Limits {
        max_processes: Some(10),
        ..Default::default()
    };
    let many = "python3 -c '\nimport os, time\nn = 0\ntry:\n    for _ in range(50):\n        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)'";
    let (stdout, stderr, last) = finish(&m, &h, limited(procs, many)).await;
    let forked: u32 = stdout.trim().parse().unwrap_or(99);
    assert!(
        forked < 10,
        "fewer than ten children ran: {forked} ({last:?} {stderr})"
    );
    // What it left running ended with it.
    let (stdout, _, _) = finish(
        &m,
        &h,
        limited(
            sandbox_core::Limits::default(),
            "ps -e -o comm= | grep -c sleep || true",
        ),
    )
    .await;
    assert_eq!(
        stdout.trim(),
        "0",
        "no child of the limited command is left"
    );
    // Past the memory limit the command ends as out of memory.
    let memory = sandbox_core::Limits {
        memory_bytes: Some(64 << 20),
        ..Default::default()
    };
    let hog = "python3 -c 'b = bytearray(512 << 20); print(len(b))'";
    let (stdout, stderr, last) = finish(&m, &h, limited(memory, hog)).await;
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Killed {
                reason: Some(KillReason::Oom),
                ..
            })
        ),
        "{last:?} {stdout} {stderr}"
    );
    assert!(!stdout.contains("536870912"), "{stdout}");
    // Under it the same session runs normally.
    let small = "python3 -c 'b = bytearray(8 << 20); print(len(b))'";
    let (stdout, stderr, _) = finish(&m, &h, limited(memory, small)).await;
    assert_eq!(stdout, "8388608\n", "{stderr}");
    // A quarter of a CPU: gVisor's kernel ignores CPU quotas, so the host
    // holds the whole sandbox to it while the command runs (with root;
    // refused without).
    let cpu = sandbox_core::Limits {
        cpu_millis: Some(250),
        ..Default::default()
    };
    let busy = "python3 -c '\nimport time\nt, n = time.time(), 0\nwhile time.time() - t < 2: n += 1\nprint(n)'";
    if rustix::process::geteuid().as_raw() != 0 {
        let err = m.exec(&h, limited(cpu, busy)).await.unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::LimitUnavailable { .. }),
            "{err}"
        );
    } else {
        let (slow, stderr, _) = finish(&m, &h, limited(cpu, busy)).await;
        let slow: f64 = slow.trim().parse().unwrap_or(f64::MAX);
        let (fast, _, _) = finish(&m, &h, limited(Default::default(), busy)).await;
        let fast: f64 = fast.trim().parse().unwrap_or(0.0);
        assert!(
            slow < fast * 0.6,
            "a quarter CPU got {slow} loops against {fast} unlimited ({stderr})"
        );
    }
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn an_open_terminal_carries_on_across_suspend_and_resume() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-pty-resume");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-pty-resume")).await.unwrap();
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("n=0; echo READY; while read l; do [ \"$l\" = quit ] && break; n=$((n+1)); echo \"got $n $l\"; done; echo BYE $n");
    cmd.pty(sandbox_core::PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    super::landlock::expect(&mut running, &mut seen, "READY").await;
    running.write_stdin(b"one\n").await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "got 1 one").await;
    if rustix::process::geteuid().as_raw() != 0 {
        // Without root this runsc cannot restore: refused, the terminal
        // goes on as it was.
        let err = m.suspend(&mut h).await.unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NotSupported { .. }),
            "{err}"
        );
        running.write_stdin(b"two\n").await.unwrap();
        super::landlock::expect(&mut running, &mut seen, "got 2 two").await;
        m.destroy(&mut h).await.unwrap();
        return;
    }
    // Suspended with the terminal open: the sandbox leaves the host.
    m.suspend(&mut h).await.unwrap();
    assert_eq!(m.state(&h), Some(SandboxState::Suspended));
    let state_dir = format!("{}/state", h.details["sessionDir"].as_str().unwrap());
    assert_eq!(session_rss(&state_dir).0, 0, "no sandbox process is left");
    // What is typed meanwhile waits for the restored sandbox.
    running.write_stdin(b"two\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    m.resume(&mut h).await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "got 2 two").await;
    running.write_stdin(b"three\n").await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "got 3 three").await;
    // The shell's state went on: three lines counted.
    running.write_stdin(b"quit\n").await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "BYE 3").await;
    assert_eq!(exit_code(&mut running).await, Some(0), "{seen:?}");
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn ctrl_c_reaches_a_job_control_shells_foreground_job_behind_gvisor() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-jobs");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-jobs")).await.unwrap();
    let mut cmd = SandboxCommand::new("/bin/bash");
    cmd.arg("--norc").arg("--noprofile").arg("-i");
    cmd.pty(sandbox_core::PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    running.write_stdin(b"sleep 60 & echo BG\n").await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "BG").await;
    running.write_stdin(b"sleep 30\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Typed Ctrl-C: the foreground `sleep 30` (a process group of its own
    // under the shell's job control) ends; the shell and its background
    // job go on.
    let typed = std::time::Instant::now();
    running
        .control()
        .signal(sandbox_core::CommandSignal::Interrupt)
        .unwrap();
    running.write_stdin(b"echo FG-ENDED $?\n").await.unwrap();
    super::landlock::expect(&mut running, &mut seen, "FG-ENDED 130").await;
    assert!(
        typed.elapsed() < Duration::from_secs(10),
        "the foreground job ended at the Ctrl-C, not at its end"
    );
    running
        .write_stdin(b"jobs; echo JOBS-$((1+1)); exit 3\n")
        .await
        .unwrap();
    super::landlock::expect(&mut running, &mut seen, "JOBS-2").await;
    assert!(
        seen.contains("Running"),
        "the background job lives: {seen:?}"
    );
    assert_eq!(exit_code(&mut running).await, Some(3), "{seen:?}");
    m.destroy(&mut h).await.unwrap();
}

/// The command's exit code once its events end (`None`: it did not exit).
async fn exit_code(running: &mut sandbox_core::RunningCommand) -> Option<i32> {
    let mut exit = None;
    while let Some(ev) = running.next_event().await {
        if let SandboxEvent::Exit { exit_code } = ev {
            exit = Some(exit_code);
        }
    }
    exit
}

#[tokio::test]
async fn everyday_file_tools_work_on_any_path_behind_gvisor() {
    if !gvisor_available() {
        return;
    }
    let t = Tree::new("gv-tools");
    std::fs::create_dir_all(t.p("ws/src")).unwrap();
    std::fs::write(t.p("ws/src/lib.rs"), "fn main() {}\n").unwrap();
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("gv-tools")).await.unwrap();
    let ws = t.p("ws");
    // This runsc refuses statx and newfstatat with AT_NO_AUTOMOUNT, which
    // coreutils passes: each tool on an absolute path, a relative one and
    // the system's, in a pipeline and a subshell (traced processes).
    let r = run(
        &m,
        &h,
        &format!(
            "ls /usr >/dev/null && echo LS-ABS; ls -la {ws}/src | grep -q lib.rs && echo LS-LA; \
             (cd {ws} && ls src >/dev/null && echo LS-REL); stat -c %s {ws}/src/lib.rs; \
             find {ws} -name lib.rs | grep -q lib.rs && echo FIND; \
             cp -a {ws}/src {ws}/copy && cmp {ws}/src/lib.rs {ws}/copy/lib.rs && echo CP-A; \
             sh -c 'stat -c %F /etc' ; exit 7"
        ),
    )
    .await;
    for word in [
        "LS-ABS",
        "LS-LA",
        "LS-REL",
        "13\n",
        "FIND",
        "CP-A",
        "directory",
    ] {
        assert!(
            r.stdout.contains(word),
            "{word}: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    assert!(!r.stderr.contains("Invalid argument"), "{}", r.stderr);
    // The command's own exit status comes through the tracer.
    assert_eq!(r.exit, Some(7), "{}", r.stderr);
    m.destroy(&mut h).await.unwrap();
}
