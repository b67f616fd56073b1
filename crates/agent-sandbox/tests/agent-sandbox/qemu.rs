//! The `microvm` backend on QEMU, for real: a guest with a kernel of its
//! own (emulated here: this host's KVM boots no stock kernel), the native
//! escape tests that apply, the guest's view of the host, and a command's
//! controls (input, terminal, signals, timeout) over the guest's channel.

use super::commands::limited;
use super::native::{Run, Tree, origin, run};
use agent_sandbox::{ErrorKind, FilenameRules, ManagerBuilder, SandboxManager, VmRequirement};
use connect_proxy::IpPolicy;
use sandbox_core::{
    Access, BackendRequest, CommandSignal, KillReason, Mode, PtySize, SandboxBackend,
    SandboxCommand, SandboxEvent, Stdin, Surface,
};
use std::time::{Duration, Instant};

const INSTALL: &str = "apt-get install qemu-system-x86 linux-image-cloud-amd64 bubblewrap";

/// QEMU, a guest kernel and bubblewrap are here, or the test fails with
/// the install line.
fn qemu_available() -> bool {
    test_support::tool("qemu-system-x86_64", INSTALL).is_some()
        && test_support::tool("bwrap", INSTALL).is_some()
        && test_support::require(
            std::fs::read_dir("/boot").is_ok_and(|d| {
                d.flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"))
            }),
            "a kernel in /boot for the guest",
            INSTALL,
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
    .microvm_runtime_qemu()
    .name_guard_launcher(crate::launcher())
    .home(t.p("home"))
    .temp_dir(t.p("sockets"))
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

/// A manager with the filename rules at their default: enforced by the
/// name guard around the guest's file server.
fn manager(t: &Tree, origin_port: Option<u16>) -> SandboxManager {
    builder(t, None, origin_port).build().unwrap()
}

/// Host processes whose command line holds `needle`.
fn processes_naming(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            String::from_utf8_lossy(&cmd)
                .contains(needle)
                .then_some(pid)
        })
        .collect()
}

#[tokio::test]
async fn the_escape_tests_hold_in_a_qemu_guest() {
    if !qemu_available() {
        return;
    }
    let t = Tree::new("qemu-escape");
    let port = origin();
    let m = manager(&t, Some(port));
    // Emulated here: the label says so and never claims a hardware VM.
    let label = m.selection().label;
    assert!(
        label.contains("emulated") || label.contains("hardware"),
        "{label}"
    );
    let mut h = m.launch(t.spec("qemu-escape")).await.unwrap();
    assert_eq!(h.backend, SandboxBackend::Microvm);
    assert_eq!(h.details["runtime"], "qemu");
    let hardware = h.details["hardwareVm"] == "yes";
    if !hardware {
        assert!(label.contains("not a hardware VM"), "{label}");
        assert_eq!(h.details["accelerator"], "tcg");
    }
    let dir = h.details["sessionDir"].as_str().unwrap().to_owned();
    let host_release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    // A service on the host's loopback that only a way around the proxies
    // would reach.
    let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let service_port = service.local_addr().unwrap().port();
    let r: Run = run(
        &m,
        &h,
        &format!(
            "cat ~/.ssh/id_rsa; echo x > .git/hooks/pre-commit && echo HOOK; \
             echo x > .git/config && echo CONFIG; echo x > ~/.bashrc && echo BASHRC; \
             echo x > /usr/evil && echo USR; \
             echo ok > ws-file && echo WS-WRITABLE; \
             echo s > .env && echo DOTENV; echo k > deploy.key && echo KEY; \
             mv ws-file moved.pem && echo PEM; mkdir sub; echo k > sub/x.key && echo SUBKEY; \
             echo RELEASE=$(uname -r); env | sort; grep -E '^Cap(Eff|Bnd)' /proc/self/status; \
             umount /proc 2>/dev/null && echo UNMOUNTED; mknod /tmp/nd c 1 3 2>/dev/null && echo MKNOD; \
             ls /dev | grep -q -E '^(console|ttyS|kmsg|vport)' && echo HOSTDEV; \
             for d in console ttyS0 kmsg; do echo console-$((6*7))-mark > /dev/$d; done 2>/dev/null; \
             for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); \
               [ -n \"$c\" ] && echo \"PROCESS: $c\"; done; \
             echo NET=$(ls /sys/class/net 2>/dev/null || ls /proc/sys/net/ipv4/conf | grep -v -e all -e default); \
             curl -sS -m 20 http://localhost:{port}/ ; echo; \
             curl -sS -m 20 --socks5-hostname 127.0.0.1:1080 http://localhost:{port}/ ; echo; \
             curl -s -m 20 -o /dev/null -w 'denied=%{{http_code}}\\n' http://blocked.example.test/ ; \
             curl -s -m 3 --noproxy '*' http://127.0.0.1:{service_port}/ && echo LOOPBACK-REACHED; \
             curl -s -m 3 --noproxy '*' http://10.0.2.2:{service_port}/ && echo HOST-REACHED; \
             curl -s -m 3 --noproxy '*' http://169.254.169.254/ && echo METADATA-REACHED; \
             exit 7"
        ),
    )
    .await;
    let out = &r.stdout;
    assert_eq!(r.exit, Some(7), "{out}\n{}", r.stderr);
    assert!(
        !out.contains("SECRET-KEY"),
        "the secret set is unreadable: {out}"
    );
    // Whole lines: the process listing shows the script itself.
    let said = |word: &str| out.lines().any(|l| l == word);
    // The command has no capability in the guest: it cannot uncover what
    // is beneath the guest's own /proc or make a device.
    assert!(said("CapEff:\t0000000000000000"), "{out}");
    assert!(said("CapBnd:\t0000000000000000"), "{out}");
    for denied in [
        "HOOK",
        "CONFIG",
        "BASHRC",
        "USR",
        "DOTENV",
        "KEY",
        "PEM",
        "SUBKEY",
        "UNMOUNTED",
        "MKNOD",
        "HOSTDEV",
    ] {
        assert!(!said(denied), "write deny {denied} holds: {out}");
    }
    assert!(said("WS-WRITABLE"), "the mount is writable: {out}");
    assert!(!out.contains("ghp_must_not_pass"), "{out}");
    assert!(out.contains("HTTP_PROXY=http://127.0.0.1:3128"), "{out}");
    let release = out
        .lines()
        .find_map(|l| l.strip_prefix("RELEASE="))
        .unwrap_or_default();
    assert!(
        !release.is_empty() && release != host_release.trim(),
        "uname -r inside is the guest's kernel: {release:?}"
    );
    // No host process is visible: the guest's agent, the command's shell
    // and its children (and the guest's kernel threads, which have no
    // command line).
    let procs: Vec<&str> = out.lines().filter(|l| l.starts_with("PROCESS: ")).collect();
    assert!(
        procs.len() <= 5 && procs.iter().any(|p| p.contains("--vm-agent")),
        "{procs:#?}"
    );
    assert!(
        !procs
            .iter()
            .any(|p| p.contains("qemu") || p.contains("cargo")),
        "{procs:#?}"
    );
    assert!(said("NET=lo"), "no interface but loopback: {out}");
    assert_eq!(
        out.matches("origin-hello").count(),
        2,
        "{out}\n{}",
        r.stderr
    );
    assert!(out.contains("denied=403"), "{out}");
    for reached in ["LOOPBACK-REACHED", "HOST-REACHED", "METADATA-REACHED"] {
        assert!(!said(reached), "{reached}: {out}");
    }
    assert!(
        r.violations
            .iter()
            .any(|v| v == "network-outbound blocked.example.test:80"),
        "{:?}",
        r.violations
    );
    assert_eq!(std::fs::read_to_string(t.p("ws/ws-file")).unwrap(), "ok\n");
    assert!(!std::path::Path::new("/usr/evil").exists());
    assert_eq!(
        std::fs::read_to_string(t.p("ws/.git/config")).unwrap(),
        "[core]\n"
    );
    // Nothing a command writes reaches the guest's console, which QEMU
    // writes into a host file.
    let console = std::fs::read_to_string(format!("{dir}/console.log")).unwrap_or_default();
    assert!(!console.contains("console-42-mark"), "{console}");
    // QEMU and the file server run for the session, and end with it.
    assert!(!processes_naming(&dir).is_empty());
    m.destroy(&mut h).await.unwrap();
    assert!(
        !std::path::Path::new(&dir).exists(),
        "the guest's files are removed"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_naming(&dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        processes_naming(&dir).is_empty(),
        "QEMU or its file server outlived destroy"
    );
}

#[tokio::test]
async fn a_guest_command_has_input_a_terminal_signals_and_a_timeout() {
    if !qemu_available() {
        return;
    }
    let t = Tree::new("qemu-controls");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("qemu-controls")).await.unwrap();
    // Piped input, to its end.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("tr a-z A-Z; echo end")
        .stdin(Stdin::Piped);
    let mut running = m.exec(&h, cmd).await.unwrap();
    running.write_stdin(b"typed input\n").await.unwrap();
    running.close_stdin().await.unwrap();
    let (out, last) = collect(&mut running).await;
    assert_eq!(out, "TYPED INPUT\nend\n");
    assert_eq!(last, Some(SandboxEvent::Exit { exit_code: 0 }));
    // Output faster than it is taken arrives whole: the channel's queues
    // wait rather than drop, and the host holds at most their depth.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg("head -c 5000000 /dev/zero | tr '\\0' a");
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut bytes = 0usize;
    let mut last = None;
    while let Some(ev) = running.next_event().await {
        match ev {
            SandboxEvent::Stdout { data } => {
                assert!(data.iter().all(|b| *b == b'a'));
                bytes += data.len();
                // A slow reader.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            e @ (SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) => last = Some(e),
            _ => {}
        }
    }
    assert_eq!(bytes, 5_000_000);
    assert_eq!(last, Some(SandboxEvent::Exit { exit_code: 0 }));
    // A terminal of the guest's own, its size, a resize and what is typed.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("stty size; tty; read line; stty size; echo got $line")
        .pty(PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    while !seen.contains("/dev/pts/") {
        match running.next_event().await {
            Some(SandboxEvent::Stdout { data }) => seen.push_str(&String::from_utf8_lossy(&data)),
            Some(_) => {}
            None => panic!("ended early: {seen}"),
        }
    }
    // The size travels to the guest before the line typed after it.
    running.resize(PtySize::new(30, 100).unwrap()).unwrap();
    running.write_stdin(b"words\r").await.unwrap();
    let (rest, last) = collect(&mut running).await;
    let text = format!("{seen}{rest}").replace('\r', "");
    assert!(text.starts_with("24 80\n/dev/pts/"), "{text:?}");
    assert!(text.ends_with("30 100\ngot words\n"), "{text:?}");
    assert_eq!(last, Some(SandboxEvent::Exit { exit_code: 0 }));
    // Terminate reaches the command's trap.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("trap 'echo term; exit 9' TERM; echo ready; while :; do sleep 0.1; done");
    let mut running = m.exec(&h, cmd).await.unwrap();
    wait_for(&mut running, "ready").await;
    running.signal(CommandSignal::Terminate).unwrap();
    let (out, last) = collect(&mut running).await;
    assert!(out.contains("term"), "{out}");
    assert_eq!(last, Some(SandboxEvent::Exit { exit_code: 9 }));
    // The host's kill ends it, and says so.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg("echo ready; sleep 60");
    let mut running = m.exec(&h, cmd).await.unwrap();
    wait_for(&mut running, "ready").await;
    running.signal(CommandSignal::Kill).unwrap();
    let (_, last) = collect(&mut running).await;
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Killed {
                reason: Some(KillReason::Manual),
                ..
            })
        ),
        "{last:?}"
    );
    // A timeout.
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("sleep 60")
        .timeout(Duration::from_millis(800));
    let started = Instant::now();
    let mut running = m.exec(&h, cmd).await.unwrap();
    let (_, last) = collect(&mut running).await;
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
    assert!(started.elapsed() < Duration::from_secs(10));
    // What one command leaves running is there for the next; a missing
    // program fails to start.
    let r = run(&m, &h, "sleep 300 & echo $! > /tmp/bg").await;
    assert_eq!(r.exit, Some(0), "{}", r.stderr);
    let r = run(&m, &h, "kill -0 $(cat /tmp/bg) && echo ALIVE").await;
    assert!(r.stdout.contains("ALIVE"), "{} {}", r.stdout, r.stderr);
    let mut running = m
        .exec(&h, SandboxCommand::new("/nonexistent"))
        .await
        .unwrap();
    let (_, last) = collect(&mut running).await;
    // The guest says why (127, as a shell); a guest too slow to answer
    // under load ends it as not seen.
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Exit { exit_code: 127 } | SandboxEvent::Killed { .. })
        ),
        "{last:?}"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn review_mode_and_protected_paths_are_read_only_in_the_guest() {
    if !qemu_available() {
        return;
    }
    let t = Tree::new("qemu-ro");
    std::fs::create_dir_all(t.p("orig")).unwrap();
    std::fs::write(t.p("orig/f"), "keep").unwrap();
    let m = manager(&t, None);
    let mut spec = t.spec("qemu-ro");
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
    assert!(!std::path::Path::new(&t.p("ws/new")).exists());
}

#[tokio::test]
async fn what_the_qemu_runtime_cannot_honour_is_refused() {
    if !qemu_available() {
        return;
    }
    let t = Tree::new("qemu-refuse");
    // Without the launcher there is no agent for the guest.
    let err = ManagerBuilder::from_ambient()
        .request(
            BackendRequest::Explicit(SandboxBackend::Microvm),
            Surface::Dispatch,
        )
        .microvm_runtime_qemu()
        .home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .build()
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::MicrovmRuntimeUnavailable { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("launcher"), "{err}");
    // A hardware VM, where the guest is emulated (on KVM it is one).
    let m = manager(&t, None);
    if m.selection().label.contains("not a hardware VM") {
        let err = builder(&t, None, None)
            .require_hardware_vm(VmRequirement::HardwareVm)
            .build()
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::HardwareVmRequired { .. }),
            "{err}"
        );
    }
    // Suspend: QEMU cannot save a guest while a virtio-fs share is
    // attached; the session carries on.
    let mut h = m.launch(t.spec("qemu-refuse")).await.unwrap();
    let err = m.suspend(&mut h).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NotSupported { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("virtio-fs"), "{err}");
    let r = run(&m, &h, "echo still").await;
    assert_eq!(r.stdout, "still\n");
    m.destroy(&mut h).await.unwrap();
}

async fn collect(running: &mut sandbox_core::RunningCommand) -> (String, Option<SandboxEvent>) {
    let mut out = String::new();
    let mut last = None;
    while let Some(ev) = running.next_event().await {
        match ev {
            SandboxEvent::Stdout { data } => out.push_str(&String::from_utf8_lossy(&data)),
            e @ (SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) => last = Some(e),
            _ => {}
        }
    }
    (out, last)
}

async fn wait_for(running: &mut sandbox_core::RunningCommand, word: &str) {
    let mut seen = String::new();
    while !seen.contains(word) {
        match running.next_event().await {
            Some(SandboxEvent::Stdout { data }) => seen.push_str(&String::from_utf8_lossy(&data)),
            Some(_) => {}
            None => panic!("ended before {word}: {seen}"),
        }
    }
}

#[tokio::test]
async fn memory_process_and_cpu_limits_hold_in_the_guest_kernel() {
    if !qemu_available() {
        return;
    }
    let t = Tree::new("qemu-limits");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("qemu-limits")).await.unwrap();
    // Past the memory limit the guest's kernel ends it: out of memory.
    let memory = sandbox_core::Limits {
        memory_bytes: Some(64 << 20),
        ..Default::default()
    };
    // In 16 MiB pieces: one large allocation past the guest's own memory
    // would be refused outright (MemoryError) rather than reach the limit.
    let hog = "python3 -c 'b = [bytearray(16 << 20) for _ in range(24)]; print(len(b))'";
    let mut running = m.exec(&h, limited(memory, hog)).await.unwrap();
    let (out, last) = collect(&mut running).await;
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Killed {
                reason: Some(KillReason::Oom),
                ..
            })
        ),
        "{last:?} {out}"
    );
    // Fifty forks under a limit of ten: the ones past it fail.
    let procs = sandbox_core::Limits {
        max_processes: Some(10),
        ..Default::default()
    };
    let many = "python3 -c '\nimport os, time\nn = 0\ntry:\n    for _ in range(50):\n        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)'";
    let mut running = m.exec(&h, limited(procs, many)).await.unwrap();
    let (out, last) = collect(&mut running).await;
    let forked: u32 = out.trim().parse().unwrap_or(99);
    assert!(forked < 10, "fewer than ten children ran: {out} {last:?}");
    // A quarter of a CPU: a busy loop gets about that much CPU time per
    // second of wall-clock time.
    let cpu = sandbox_core::Limits {
        cpu_millis: Some(250),
        ..Default::default()
    };
    let busy = "python3 -c '\nimport time\nt, c = time.time(), time.process_time()\nwhile time.time() - t < 2: pass\nprint(round((time.process_time() - c) / (time.time() - t), 2))'";
    let mut running = m.exec(&h, limited(cpu, busy)).await.unwrap();
    let (out, last) = collect(&mut running).await;
    let share: f64 = out.trim().parse().unwrap_or(9.0);
    assert!(share < 0.5, "CPU share under a 0.25 limit: {out} {last:?}");
    // Without limits the same loop is not held.
    let mut running = m.exec(&h, limited(Default::default(), busy)).await.unwrap();
    let (out, _) = collect(&mut running).await;
    let free: f64 = out.trim().parse().unwrap_or(0.0);
    assert!(free > share, "unlimited {free} against limited {share}");
    m.destroy(&mut h).await.unwrap();
}
