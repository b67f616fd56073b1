//! Commands driven from the host under the real sandbox: stdin through a
//! pipe (bytes exact, end of file, a JSON-RPC conversation), signals,
//! timeouts, the command's own environment, and the typed refusals.

use super::native::{Tree, manager, native_available};
use agent_sandbox::{ErrorKind, FilenameRules, SandboxManager};
use sandbox_core::{
    CommandSignal, ControlError, KillReason, Limits, OutputSink, PtySize, RunningCommand,
    SandboxCommand, SandboxEvent, SandboxHandle, Stdin, Stdout,
};
use std::time::{Duration, Instant};

fn sh(script: &str) -> SandboxCommand {
    let mut c = SandboxCommand::new("/bin/sh");
    c.arg("-c").arg(script);
    c
}

/// Everything a command printed, and how it ended.
struct Outcome {
    stdout: Vec<u8>,
    stderr: String,
    last: Option<SandboxEvent>,
}

async fn finish(mut running: RunningCommand) -> Outcome {
    let mut out = Outcome {
        stdout: Vec::new(),
        stderr: String::new(),
        last: None,
    };
    while let Some(ev) = running.next_event().await {
        match ev {
            SandboxEvent::Stdout { data } => out.stdout.extend_from_slice(&data),
            SandboxEvent::Stderr { data } => out.stderr.push_str(&String::from_utf8_lossy(&data)),
            e @ (SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) => out.last = Some(e),
            _ => {}
        }
    }
    out
}

async fn session(tag: &str) -> Option<(Tree, SandboxManager, SandboxHandle)> {
    if !native_available() {
        return None;
    }
    let t = Tree::new(tag);
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let h = m.launch(t.spec(tag)).await.unwrap();
    Some((t, m, h))
}

#[tokio::test]
async fn one_mebibyte_through_cat_arrives_byte_exact_and_eof_reaches_the_command() {
    let Some((_t, m, mut h)) = session("stdin-cat").await else {
        return;
    };
    let data: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut cmd = SandboxCommand::new("cat");
    cmd.stdin(Stdin::Piped);
    let running = m.exec(&h, cmd).await.unwrap();
    let control = running.control();
    let writer = {
        let data = data.clone();
        tokio::spawn(async move {
            control.write_stdin(&data).await.unwrap();
            control.close_stdin().await.unwrap();
        })
    };
    let out = finish(running).await;
    writer.await.unwrap();
    assert_eq!(
        out.last,
        Some(SandboxEvent::Exit { exit_code: 0 }),
        "{}",
        out.stderr
    );
    assert_eq!(out.stdout.len(), data.len());
    assert!(out.stdout == data, "the bytes differ");

    // End of file reaches a command that waits for it.
    let mut cmd = sh("cat >/dev/null; echo eof-seen");
    cmd.stdin(Stdin::Piped);
    let running = m.exec(&h, cmd).await.unwrap();
    running.write_stdin(b"some input\n").await.unwrap();
    running.close_stdin().await.unwrap();
    assert!(
        matches!(running.close_stdin().await, Err(ControlError::StdinClosed)),
        "closing twice is a typed error"
    );
    let control = running.control();
    let out = finish(running).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "eof-seen\n");
    assert!(
        matches!(
            control.write_stdin(b"late").await,
            Err(ControlError::StdinClosed | ControlError::Finished)
        ),
        "writing after the end is a typed error"
    );
    m.destroy(&mut h).await.unwrap();
}

/// A pipe whose write end is a sink for a command's output.
fn sink_pipe() -> (std::io::PipeReader, OutputSink) {
    let (r, w) = std::io::pipe().unwrap();
    let file = std::fs::File::from(std::os::fd::OwnedFd::from(w));
    (r, OutputSink::new(file))
}

#[tokio::test]
async fn output_passed_into_a_host_file_arrives_byte_exact_before_the_exit_and_as_no_events() {
    let Some((_t, m, mut h)) = session("stdout-pass").await else {
        return;
    };
    let data: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let (mut reader, sink) = sink_pipe();
    let mut cmd = sh("cat; echo on-stderr >&2");
    cmd.stdin(Stdin::Piped).stdout(Stdout::PassTo(sink));
    let running = m.exec(&h, cmd).await.unwrap();
    // The pipe is ours alone now: its last writer is the manager's.
    let collected = std::thread::spawn(move || {
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut got).unwrap();
        got
    });
    let control = running.control();
    let writer = {
        let data = data.clone();
        tokio::spawn(async move {
            control.write_stdin(&data).await.unwrap();
            control.close_stdin().await.unwrap();
        })
    };
    let out = finish(running).await;
    writer.await.unwrap();
    assert_eq!(out.last, Some(SandboxEvent::Exit { exit_code: 0 }));
    assert!(out.stdout.is_empty(), "passed output also came as events");
    assert_eq!(out.stderr, "on-stderr\n", "stderr still comes as events");
    m.destroy(&mut h).await.unwrap();
    drop(m);
    let got = collected.join().unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data, "the bytes differ");
}

#[tokio::test]
async fn output_passed_on_ends_with_the_command_not_with_what_it_left_running() {
    let Some((t, m, mut h)) = session("stdout-pass-left").await else {
        return;
    };
    let path = std::path::Path::new(&t.p("sockets")).join("passed.out");
    let file = std::fs::File::create(&path).unwrap();
    // A process left running keeps the command's stdout open and writes
    // after the command exited: in a warm session it outlives the command,
    // but not its output.
    let mut cmd = sh("(sleep 0.4; echo late; sleep 0.4; echo later) & echo now");
    cmd.stdout(Stdout::PassTo(OutputSink::new(file)));
    let running = m.exec(&h, cmd).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), finish(running))
        .await
        .unwrap();
    assert_eq!(out.last, Some(SandboxEvent::Exit { exit_code: 0 }));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "now\n");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "now\n",
        "written into the host's file after the command's exit"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_reader_that_goes_away_is_a_broken_pipe_for_the_command_not_a_hang() {
    let Some((_t, m, mut h)) = session("stdout-gone").await else {
        return;
    };
    let (reader, sink) = sink_pipe();
    drop(reader);
    let mut cmd = sh("trap '' PIPE; while echo y; do :; done; echo write-failed >&2; exit 7");
    cmd.stdout(Stdout::PassTo(sink));
    let running = m.exec(&h, cmd).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), finish(running))
        .await
        .expect("the command ends once its output has nowhere to go");
    assert_eq!(out.last, Some(SandboxEvent::Exit { exit_code: 7 }));
    assert!(out.stderr.contains("write-failed"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("agent-sandbox:"),
        "a reader going away is not reported as a failure: {}",
        out.stderr
    );

    // On a terminal, output is the terminal's: refused before anything runs.
    let (_reader, sink) = sink_pipe();
    let mut cmd = SandboxCommand::new("true");
    cmd.pty(PtySize::new(24, 80).unwrap())
        .stdout(Stdout::PassTo(sink));
    let err = m.exec(&h, cmd).await.err().unwrap();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Command(sandbox_core::CommandError::PassThroughOnTerminal)
        ),
        "{err}"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_thousand_json_rpc_round_trips_in_one_session() {
    let Some((_t, m, mut h)) = session("stdin-rpc").await else {
        return;
    };
    // A newline-delimited JSON-RPC 2.0 peer: each request gets its result.
    let peer = r#"while IFS= read -r line; do
        id=${line#*\"id\":}; id=${id%%,*}; id=${id%%\}*}
        printf '{"jsonrpc":"2.0","id":%s,"result":"ok-%s"}\n' "$id" "$id"
    done"#;
    let mut cmd = sh(peer);
    cmd.stdin(Stdin::Piped);
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut pending = Vec::new();
    for id in 0..1000u32 {
        let req = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#) + "\n";
        running.write_stdin(req.as_bytes()).await.unwrap();
        let want = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"ok-{id}"}}"#);
        // Read until this response's line is complete.
        loop {
            if let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                assert_eq!(
                    String::from_utf8_lossy(&line[..end]),
                    want,
                    "response {id} in order"
                );
                break;
            }
            match running.next_event().await {
                Some(SandboxEvent::Stdout { data }) => pending.extend_from_slice(&data),
                Some(SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) | None => {
                    panic!("the peer ended at request {id}")
                }
                Some(_) => {}
            }
        }
    }
    running.close_stdin().await.unwrap();
    let out = finish(running).await;
    assert_eq!(out.last, Some(SandboxEvent::Exit { exit_code: 0 }));
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_timeout_ends_the_command_as_killed_timeout_near_the_deadline() {
    let Some((_t, m, mut h)) = session("timeout").await else {
        return;
    };
    let mut cmd = sh("echo started; sleep 30");
    let timeout = Duration::from_millis(500);
    cmd.timeout(timeout);
    let started = Instant::now();
    let out = finish(m.exec(&h, cmd).await.unwrap()).await;
    let took = started.elapsed();
    assert!(
        matches!(
            out.last,
            Some(SandboxEvent::Killed {
                reason: Some(KillReason::Timeout),
                ..
            })
        ),
        "{:?}",
        out.last
    );
    assert!(took >= timeout, "not before the deadline: {took:?}");
    assert!(
        took < timeout + Duration::from_millis(200),
        "within 200 ms of it: {took:?}"
    );
    // The sandbox is warm again and runs the next command.
    let out = finish(m.exec(&h, sh("echo next")).await.unwrap()).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "next\n");
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn signals_reach_every_process_of_the_command() {
    let Some((_t, m, mut h)) = session("signals").await else {
        return;
    };
    // Interrupt: the shell's trap runs (its child sleep is interrupted too).
    // `ready` comes after the fork, so the signal never finds a child that
    // still holds the shell's trap.
    let cmd = sh("trap 'echo interrupted; exit 5' INT; sleep 30 & echo ready; wait");
    let mut running = m.exec(&h, cmd).await.unwrap();
    loop {
        match running.next_event().await {
            Some(SandboxEvent::Stdout { data }) if data.starts_with(b"ready") => break,
            Some(_) => {}
            None => panic!("ended before it was ready"),
        }
    }
    let control = running.control();
    let started = Instant::now();
    control.signal(CommandSignal::Interrupt).unwrap();
    let out = finish(running).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "interrupted\n");
    assert_eq!(out.last, Some(SandboxEvent::Exit { exit_code: 5 }));
    assert!(started.elapsed() < Duration::from_secs(5));
    // After the exit, a signal is a no-op and a write a typed error.
    control.signal(CommandSignal::Kill).unwrap();
    assert!(matches!(
        control.write_stdin(b"x").await,
        Err(ControlError::StdinNotPiped)
    ));

    // Kill ends a command that ignores the others.
    let cmd = sh("trap '' INT TERM; echo ready; while :; do sleep 1; done");
    let mut running = m.exec(&h, cmd).await.unwrap();
    loop {
        match running.next_event().await {
            Some(SandboxEvent::Stdout { data }) if data.starts_with(b"ready") => break,
            Some(_) => {}
            None => panic!("ended before it was ready"),
        }
    }
    running.signal(CommandSignal::Terminate).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    running.signal(CommandSignal::Kill).unwrap();
    let out = finish(running).await;
    assert!(
        matches!(out.last, Some(SandboxEvent::Killed { .. })),
        "{:?}",
        out.last
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_command_sets_its_own_variables_but_never_a_loader_or_the_proxy() {
    let Some((_t, m, mut h)) = session("cmd-env").await else {
        return;
    };
    let mut cmd = sh("echo \"$AGENT_TASK:$HTTPS_PROXY\"");
    cmd.env("AGENT_TASK", "t-42");
    let out = finish(m.exec(&h, cmd).await.unwrap()).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "t-42:http://127.0.0.1:3128\n"
    );
    for (name, why) in [
        ("LD_PRELOAD", "always deleted"),
        ("BASH_ENV", "always deleted"),
        ("HTTPS_PROXY", "proxy"),
    ] {
        let mut cmd = sh("true");
        cmd.env(name, "/tmp/x");
        let err = m.exec(&h, cmd).await.unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::Env(_)), "{name}: {err}");
        assert!(err.to_string().contains(name), "{err}");
        assert!(err.to_string().contains(why), "{name}: {err}");
    }
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn what_cannot_be_honoured_is_refused_before_anything_runs() {
    let Some((_t, m, mut h)) = session("refusals").await else {
        return;
    };
    let mut cmd = sh("true");
    cmd.timeout(Duration::ZERO);
    let err = m.exec(&h, cmd).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Command(_)), "{err}");
    let mut cmd = sh("true");
    cmd.limits(Limits {
        max_processes: Some(0),
        ..Limits::default()
    });
    assert!(matches!(
        m.exec(&h, cmd).await.unwrap_err().kind(),
        ErrorKind::Command(_)
    ));
    m.destroy(&mut h).await.unwrap();
}

/// Whether this process may make cgroups for limits (root on these hosts;
/// an unprivileged user gets a typed refusal instead, tested below).
fn cgroups_writable() -> bool {
    agent_sandbox::Cgroups::from_ambient()
        .describe()
        .matches("cgroup v")
        .count()
        == 3
}

/// A session for a limits test. Where this process may make no cgroup
/// (an unprivileged user), what the test checks is that `limits` are
/// refused with the typed error before anything runs, and it gets `None`.
async fn limited_session(
    tag: &str,
    limits: Limits,
) -> Option<(Tree, SandboxManager, SandboxHandle)> {
    let (t, m, mut h) = session(tag).await?;
    if cgroups_writable() {
        return Some((t, m, h));
    }
    let err = m.exec(&h, limited(limits, "true")).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::LimitUnavailable { .. }),
        "{err}"
    );
    m.destroy(&mut h).await.unwrap();
    None
}

/// The number a command printed, or `default` when it printed none.
fn printed<T: std::str::FromStr>(out: &Outcome, default: T) -> T {
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(default)
}

/// A command of `script` with `limits` (the microvm and QEMU tests' too).
pub(super) fn limited(limits: Limits, script: &str) -> SandboxCommand {
    let mut c = sh(script);
    c.limits(limits);
    c
}

#[tokio::test]
async fn a_memory_limit_ends_an_allocating_process_as_out_of_memory() {
    let limits = Limits {
        memory_bytes: Some(64 << 20),
        ..Limits::default()
    };
    let Some((_t, m, mut h)) = limited_session("oom", limits).await else {
        return;
    };
    let hog = "python3 -c 'b = bytearray(512 << 20); print(len(b))'";
    assert!(
        h.details["limits"]
            .as_str()
            .unwrap()
            .contains("memory: cgroup")
    );
    let out = finish(m.exec(&h, limited(limits, hog)).await.unwrap()).await;
    assert!(
        matches!(
            out.last,
            Some(SandboxEvent::Killed {
                reason: Some(KillReason::Oom),
                ..
            })
        ),
        "{:?} {}",
        out.last,
        out.stderr
    );
    // Under the limit the same sandbox runs normally.
    let small = "python3 -c 'b = bytearray(8 << 20); print(len(b))'";
    let out = finish(m.exec(&h, limited(limits, small)).await.unwrap()).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "8388608\n",
        "{}",
        out.stderr
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_fork_bomb_under_a_process_limit_is_contained_and_nothing_survives() {
    let limits = Limits {
        max_processes: Some(10),
        ..Limits::default()
    };
    let Some((_t, m, mut h)) = limited_session("forkbomb", limits).await else {
        return;
    };
    // Fifty forks under a limit of ten: the ones beyond it fail (EAGAIN).
    let many = "python3 -c '\nimport os, time\nn = 0\ntry:\n    for _ in range(50):\n        if os.fork() == 0:\n            time.sleep(5)\n            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)'";
    let out = finish(m.exec(&h, limited(limits, many)).await.unwrap()).await;
    let running: u32 = printed(&out, 99);
    assert!(
        running <= 10,
        "at most ten children ran: {running} ({:?} {:?} {})",
        out.last,
        String::from_utf8_lossy(&out.stdout),
        out.stderr
    );
    // A real fork bomb ends at its timeout; the host stays responsive and
    // no process of it is left.
    let mut bomb = limited(limits, "b() { b | b & }; b; wait");
    bomb.timeout(Duration::from_secs(2));
    let before = Instant::now();
    let out = finish(m.exec(&h, bomb).await.unwrap()).await;
    assert!(
        before.elapsed() < Duration::from_secs(6),
        "{:?}",
        before.elapsed()
    );
    assert!(matches!(
        out.last,
        Some(SandboxEvent::Killed { .. }) | Some(SandboxEvent::Exit { .. })
    ));
    let probe = Instant::now();
    let out = finish(m.exec(&h, sh("echo alive")).await.unwrap()).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "alive\n");
    assert!(
        probe.elapsed() < Duration::from_secs(3),
        "the next command starts at once"
    );
    m.destroy(&mut h).await.unwrap();
    let leftover = std::fs::read_dir("/sys/fs/cgroup/pids")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("agent-sandbox-{}-", std::process::id()))
        })
        .count();
    assert_eq!(leftover, 0, "every command's cgroup is removed");
}

#[tokio::test]
async fn a_cpu_limit_holds_a_busy_loop_to_its_share() {
    let limits = Limits {
        cpu_millis: Some(100),
        ..Limits::default()
    };
    let Some((_t, m, mut h)) = limited_session("cpu", limits).await else {
        return;
    };
    let busy = "python3 -c '\nimport time\nt = time.time()\nwhile time.time() - t < 1.0: pass\nprint(time.process_time())'";
    let out = finish(m.exec(&h, limited(limits, busy)).await.unwrap()).await;
    let cpu: f64 = printed(&out, 9.0);
    assert!(
        cpu < 0.5,
        "a tenth of a CPU for a second of wall time: {cpu} s ({})",
        out.stderr
    );
    m.destroy(&mut h).await.unwrap();
}

/// Reads the terminal's output until `want` shows (at most 10 s), adding
/// it to `seen`.
async fn expect(running: &mut RunningCommand, seen: &mut String, want: &str) {
    expect_since(running, seen, 0, want).await;
}

/// As [`expect`], for `want` in what arrived after byte `since` of `seen`.
async fn expect_since(running: &mut RunningCommand, seen: &mut String, since: usize, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen[since..].contains(want) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, running.next_event()).await {
            Ok(Some(SandboxEvent::Stdout { data })) => {
                seen.push_str(&String::from_utf8_lossy(&data))
            }
            Ok(Some(SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) | None) => {
                panic!("ended before {want:?} showed: {seen:?}")
            }
            Ok(Some(_)) => {}
            Err(_) => panic!("{want:?} never showed: {seen:?}"),
        }
    }
}

#[tokio::test]
async fn on_a_terminal_tty_names_the_sandboxs_own_pts_and_follows_resizes() {
    let Some((_t, m, mut h)) = session("pty-size").await else {
        return;
    };
    let mut cmd = sh("tty; stty size; ls -1 /dev/pts; read x; stty size");
    cmd.pty(PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    expect(&mut running, &mut seen, "ptmx").await;
    assert!(
        seen.contains("/dev/pts/0\r\n"),
        "the sandbox's own first terminal: {seen:?}"
    );
    assert!(seen.contains("24 80\r\n"), "{seen:?}");
    assert!(
        seen.contains("0\r\nptmx"),
        "no other terminal is reachable inside: {seen:?}"
    );
    running.resize(PtySize::new(30, 100).unwrap()).unwrap();
    running.write_stdin(b"\n").await.unwrap();
    expect(&mut running, &mut seen, "30 100").await;
    let out = finish(running).await;
    assert_eq!(
        out.last,
        Some(SandboxEvent::Exit { exit_code: 0 }),
        "{seen:?}"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn an_interactive_shell_has_job_control_and_ctrl_c_ends_only_the_foreground_job() {
    let Some((_t, m, mut h)) = session("pty-bash").await else {
        return;
    };
    let mut cmd = SandboxCommand::new("bash");
    cmd.arg("--norc").arg("--noprofile").arg("-i");
    cmd.pty(PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    // The default prompt (PS1 is a shell hook the environment policy
    // never lets through).
    expect(&mut running, &mut seen, "bash-").await;
    running.write_stdin(b"sleep 100 &\n").await.unwrap();
    expect(&mut running, &mut seen, "[1] ").await;
    running.write_stdin(b"fg\n").await.unwrap();
    expect(&mut running, &mut seen, "sleep 100\r\n").await;
    // bash prints the job before it hands it the terminal: a Ctrl-C in
    // between would reach bash itself.
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.signal(CommandSignal::Interrupt).unwrap();
    // Typed ahead of the prompt, a line may be flushed with the ^C: wait
    // for the shell's third prompt (after `sleep &` and `fg`).
    expect(&mut running, &mut seen, "^C").await;
    // The prompt may come in the same read as the ^C: look after the ^C.
    let after = seen.rfind("^C").map_or(0, |i| i + 2);
    expect_since(&mut running, &mut seen, after, "bash-").await;
    running.write_stdin(b"echo alive $?\n").await.unwrap();
    expect(&mut running, &mut seen, "alive 130").await;
    running.write_stdin(b"exit 7\n").await.unwrap();
    let out = finish(running).await;
    assert!(!seen.contains("no job control"), "{seen:?}");
    assert_eq!(
        out.last,
        Some(SandboxEvent::Exit { exit_code: 7 }),
        "{seen:?}"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn keystrokes_injected_from_inside_reach_only_the_commands_own_terminal() {
    let Some((_t, m, mut h)) = session("pty-tiocsti").await else {
        return;
    };
    // TIOCSTI on the controlling terminal: where the kernel still allows it,
    // the byte lands in the sandbox's own terminal (and comes back to the
    // host as output); no terminal of the host is there to reach.
    let inject = "python3 -c '\nimport fcntl, termios\ntry:\n    t = open(\"/dev/tty\")\n    for b in (b\"Z\", b\"\\n\"):\n        fcntl.ioctl(t, termios.TIOCSTI, b)\n    print(\"injected\")\nexcept OSError as e:\n    print(\"refused\", e.errno)\n'; read -r x; echo \"read:$x\"";
    let mut cmd = sh(inject);
    cmd.pty(PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    // "injected" or "refused": both end so.
    expect(&mut running, &mut seen, "ed").await;
    if seen.contains("injected") {
        expect(&mut running, &mut seen, "read:Z").await;
    } else {
        assert!(seen.contains("refused"), "{seen:?}");
        running.write_stdin(b"typed\n").await.unwrap();
        expect(&mut running, &mut seen, "read:typed").await;
    }
    let out = finish(running).await;
    assert_eq!(
        out.last,
        Some(SandboxEvent::Exit { exit_code: 0 }),
        "{seen:?}"
    );
    m.destroy(&mut h).await.unwrap();
}
