#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]
use super::*;
use std::time::Duration;
use tokio::io::AsyncReadExt;

#[cfg(target_os = "linux")]
#[test]
fn the_end_signal_is_the_supervisor_s() {
    assert_eq!(END_TREE.as_raw(), name_guard::END_TREE_SIGNAL);
}

/// Lets the other tasks run until none has more to do right now.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn input_given_before_the_start_reaches_the_command_when_it_starts() {
    let state = Arc::new(ControlState::new(true));
    let control = Control(state.clone());
    let early = tokio::spawn(async move {
        control.write_stdin(b"before the start").await?;
        control.close_stdin().await
    });
    settle().await;
    assert!(!early.is_finished(), "the write waits for the process");

    let mut cat = tokio::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (stdin, pid) = (cat.stdin.take(), cat.id());
    state.started(stdin, pid).await;
    let done = tokio::time::timeout(Duration::from_secs(20), early).await;
    assert!(
        matches!(done, Ok(Ok(Ok(())))),
        "the start let the waiting write and close go on"
    );
    let mut out = String::new();
    let mut stdout = cat.stdout.take().unwrap();
    stdout.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "before the start");
    assert!(cat.wait().await.unwrap().success());
}

#[tokio::test]
async fn a_command_that_ends_unstarted_ends_the_waiting_writes() {
    let state = Arc::new(ControlState::new(true));
    let writer = Control(state.clone());
    let closer = Control(state.clone());
    let write = tokio::spawn(async move { writer.write_stdin(b"x").await });
    let close = tokio::spawn(async move { closer.close_stdin().await });
    settle().await;
    assert!(!write.is_finished() && !close.is_finished());

    state.finished().await;
    let wait = Duration::from_secs(20);
    let write = tokio::time::timeout(wait, write).await;
    let close = tokio::time::timeout(wait, close).await;
    assert!(matches!(write, Ok(Ok(Err(ControlError::Finished)))));
    assert!(
        matches!(close, Ok(Ok(Ok(())))),
        "end of file is what it has"
    );
}
