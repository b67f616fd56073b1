//! Commands one after another in one session, as a host issues them: the
//! next `exec` right after the previous command's last event is never
//! refused, and a command still running keeps the session busy.

use super::native::{Tree, manager, native_available};
use agent_sandbox::{ErrorKind, FilenameRules};
use sandbox_core::{
    CommandStatus, KillReason, OutputLimit, SandboxCommand, SandboxEvent, SandboxState,
};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_commands_back_to_back_on_a_multi_thread_runtime_are_never_refused() {
    if !native_available() {
        return;
    }
    let t = Tree::new("back-to-back");
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let mut h = m.launch(t.spec("back-to-back")).await.unwrap();
    let started = Instant::now();
    let mut slowest_end = Duration::ZERO;
    for i in 0..1000 {
        let mut running = match m.exec(&h, SandboxCommand::new("true")).await {
            Ok(r) => r,
            Err(e) => panic!("command {i} refused right after the previous one ended: {e}"),
        };
        // Active while it runs; a warm session's `true` may be over (its
        // stream not read yet) by the time the state is asked.
        let state = m.state(&h);
        assert!(
            matches!(state, Some(SandboxState::Active | SandboxState::Warm)),
            "command {i}: {state:?}"
        );
        let mut last = None;
        let mut exit_seen = None;
        while let Some(ev) = running.next_event().await {
            if matches!(ev, SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) {
                exit_seen = Some(Instant::now());
            }
            last = Some(ev);
        }
        if let Some(at) = exit_seen {
            slowest_end = slowest_end.max(at.elapsed());
        }
        assert_eq!(
            last,
            Some(SandboxEvent::Exit { exit_code: 0 }),
            "command {i}"
        );
        // The stream has ended: the command and its teardown are over.
        assert_eq!(m.state(&h), Some(SandboxState::Warm), "command {i}");
    }
    eprintln!(
        "1,000 commands in {:?}; the longest wait from the last event to the stream's end: {slowest_end:?}",
        started.elapsed()
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_still_running_keeps_the_session_busy() {
    if !native_available() {
        return;
    }
    let t = Tree::new("still-busy");
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let mut h = m.launch(t.spec("still-busy")).await.unwrap();
    let mut sleep = SandboxCommand::new("sleep");
    sleep.arg("30");
    let mut running = m.exec(&h, sleep).await.unwrap();
    // Its output has started and it runs: a second command is refused.
    assert_eq!(running.next_event().await, Some(SandboxEvent::Starting));
    assert_eq!(running.next_event().await, Some(SandboxEvent::Ready));
    let err = m.exec(&h, SandboxCommand::new("true")).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Busy { .. }), "{err}");
    assert_eq!(m.state(&h), Some(SandboxState::Active));
    running.signal(sandbox_core::CommandSignal::Kill).unwrap();
    while running.next_event().await.is_some() {}
    assert_eq!(m.state(&h), Some(SandboxState::Warm));
    let mut after = m.exec(&h, SandboxCommand::new("true")).await.unwrap();
    while after.next_event().await.is_some() {}
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_and_output_say_how_a_real_command_ended_and_hold_no_more_than_the_cap() {
    if !native_available() {
        return;
    }
    let t = Tree::new("wait-output");
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let mut h = m.launch(t.spec("wait-output")).await.unwrap();
    let mut big = SandboxCommand::new("/bin/sh");
    big.arg("-c")
        .arg("head -c 102400 /dev/zero; echo oops >&2; exit 3");
    let out = m
        .exec(&h, big)
        .await
        .unwrap()
        .output_with(OutputLimit::new(1024, 8))
        .await;
    assert_eq!(out.status, CommandStatus::Exited { code: 3 });
    assert_eq!(out.stdout, vec![0u8; 1024]);
    assert_eq!(out.dropped.stdout_bytes, 102400 - 1024);
    assert_eq!(out.stderr, b"oops\n");
    let mut slow = SandboxCommand::new("sleep");
    slow.arg("30").timeout(Duration::from_millis(300));
    let status = m.exec(&h, slow).await.unwrap().wait().await;
    assert_eq!(status.kill_reason(), Some(KillReason::Timeout), "{status}");
    // Right after: the session is free.
    assert!(
        m.exec(&h, SandboxCommand::new("true"))
            .await
            .unwrap()
            .wait()
            .await
            .success()
    );
    m.destroy(&mut h).await.unwrap();
}
