//! Commands one after another in one session, as a host issues them: the
//! next `exec` right after the previous command's last event is never
//! refused, and a command still running keeps the session busy.

use super::native::{Tree, manager, native_available};
use agent_sandbox::{ErrorKind, FilenameRules};
use sandbox_core::{SandboxCommand, SandboxEvent, SandboxPort, SandboxState};
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
        assert_eq!(m.state(&h), Some(SandboxState::Active), "command {i}");
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
