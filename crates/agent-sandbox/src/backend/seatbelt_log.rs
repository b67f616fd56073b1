//! A Seatbelt session's denials from the macOS system log.
//!
//! Every deny rule of a session's profile carries the session's tag
//! (`(with message "TAG")`), and macOS ends the log line of each denial it
//! makes with that tag. For the life of the session this module runs
//! `log stream --style ndjson --predicate 'eventMessage ENDSWITH "TAG"'`,
//! reads one JSON object per line and turns the `eventMessage` of each into
//! a `violation` event with seatbelt-profile's parser; every command of the
//! session subscribes. The command line and the mapping are plain code,
//! tested on any OS with recorded lines and a stand-in `log` program.
//!
//! Input safety: a line longer than [`MAX_NDJSON_LINE`] bytes is skipped
//! unread to its end; JSON nesting is bounded by serde_json's recursion
//! limit; a line that is not a JSON object with a string `eventMessage`,
//! or whose message is not a denial ending with the tag, is ignored.

use sandbox_core::SandboxViolation;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::broadcast;

/// Where `log` lives on every macOS.
pub(crate) const LOG_PROGRAM: &str = "/usr/bin/log";

/// Longest ndjson line read, in bytes.
pub(crate) const MAX_NDJSON_LINE: usize = seatbelt_profile::MAX_LOG_STREAM_LINE;

/// Denials queued for a command that has not read them yet.
const QUEUE: usize = 1024;

/// A fresh tag for one session's denials: unique in this process, and
/// with the process id, on this machine.
pub(crate) fn session_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("agent-sandbox-{}-{n}", std::process::id())
}

/// The arguments of `log` for the denials tagged `tag`.
pub(crate) fn stream_args(tag: &str) -> Vec<OsString> {
    [
        "stream".to_owned(),
        "--style".to_owned(),
        "ndjson".to_owned(),
        "--predicate".to_owned(),
        format!("eventMessage ENDSWITH \"{tag}\""),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// The denial one ndjson line of `log stream` reports, when it is one of
/// the session tagged `tag`.
pub(crate) fn violation_of_line(line: &[u8], tag: &str) -> Option<SandboxViolation> {
    seatbelt_profile::parse_log_stream_line(line, tag)
}

/// The running `log stream` of one session.
pub(crate) struct SystemLog {
    child: tokio::process::Child,
    tx: broadcast::Sender<SandboxViolation>,
    reader: tokio::task::JoinHandle<()>,
}

impl SystemLog {
    /// Starts `program` (`log`, or a stand-in) for the denials tagged `tag`.
    /// `note` hears, once, why it ended if it ends before [`SystemLog::stop`]
    /// (a refusal to read the log, say).
    pub(crate) fn start(
        program: &Path,
        tag: &str,
        note: crate::LogSink,
    ) -> std::io::Result<SystemLog> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(stream_args(tag))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        crate::process_fds::close_inherited_fds(&mut cmd);
        let mut child = cmd.spawn()?;
        let (tx, _) = broadcast::channel(QUEUE);
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let sender = tx.clone();
        let tag = tag.to_owned();
        let shown = program.display().to_string();
        let reader = tokio::spawn(async move {
            if let Some(out) = stdout {
                forward_lines(out, &tag, &sender).await;
            }
            // The stream ended while the session lives: say why.
            let mut why = String::new();
            if let Some(err) = stderr {
                let mut first = Vec::new();
                let mut r = BufReader::new(err);
                let _ = read_bounded_line(&mut r, &mut first).await;
                why = String::from_utf8_lossy(&first).trim().to_owned();
            }
            note(&format!(
                "agent-sandbox: the system log stream ({shown}) ended; later denials of this session are not reported as violations{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {why}")
                }
            ));
        });
        Ok(SystemLog { child, tx, reader })
    }

    /// The denials from now on, for one command.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<SandboxViolation> {
        self.tx.subscribe()
    }

    /// Ends the stream with the session.
    pub(crate) async fn stop(mut self) {
        self.reader.abort();
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// Starts the session's log stream, or says in a note why there is none:
/// denials then go unreported, and the launch goes on.
pub(crate) fn start_or_note(program: &Path, tag: &str, note: &crate::LogSink) -> Option<SystemLog> {
    match SystemLog::start(program, tag, note.clone()) {
        Ok(l) => Some(l),
        Err(e) => {
            note(&format!(
                "agent-sandbox: no violations from the system log for this session: starting {} failed: {e}",
                program.display()
            ));
            None
        }
    }
}

/// Reads `out` line by line, sending each denial of `tag`.
async fn forward_lines<R: AsyncRead + Unpin>(
    out: R,
    tag: &str,
    tx: &broadcast::Sender<SandboxViolation>,
) {
    let mut r = BufReader::new(out);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded_line(&mut r, &mut line).await {
            Ok(Line::End) | Err(_) => return,
            Ok(Line::TooLong) => {}
            Ok(Line::Read) => {
                if let Some(v) = violation_of_line(&line, tag) {
                    let _ = tx.send(v);
                }
            }
        }
    }
}

enum Line {
    Read,
    TooLong,
    End,
}

/// One line into `buf` (without its newline), at most [`MAX_NDJSON_LINE`]
/// bytes kept: a longer one is consumed to its end and reported as such.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Line> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if !any {
                Line::End
            } else if too_long {
                Line::TooLong
            } else {
                Line::Read
            });
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long && buf.len() + part.len() <= MAX_NDJSON_LINE {
            buf.extend_from_slice(part);
        } else {
            too_long = true;
            buf.clear();
        }
        let used = done.unwrap_or(chunk.len());
        r.consume(used);
        if done.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

/// The `log` program a manager uses unless told otherwise.
pub(crate) fn default_program() -> PathBuf {
    PathBuf::from(LOG_PROGRAM)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::sync::{Arc, Mutex};

    const TAG: &str = "agent-sandbox-77-0";

    #[test]
    fn the_command_line_names_the_tag() {
        let args: Vec<String> = stream_args(TAG)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "stream",
                "--style",
                "ndjson",
                "--predicate",
                "eventMessage ENDSWITH \"agent-sandbox-77-0\""
            ]
        );
        let tag = session_tag();
        assert_ne!(tag, session_tag(), "each session gets its own tag");
        assert!(seatbelt_profile::Profile::new().tag_denials(&tag).is_ok());
    }

    #[test]
    fn recorded_lines_map_to_violations() {
        let ours = r#"{"eventMessage":"Sandbox: cat(412) deny(1) file-read-data /Users/x/.ssh/id_rsa agent-sandbox-77-0","processImagePath":"/kernel","timestamp":"2026-12-01 10:00:00.000000+0000"}"#;
        let v = violation_of_line(ours.as_bytes(), TAG).unwrap();
        assert_eq!(
            (v.action.as_str(), v.target.as_str()),
            ("file-read-data", "/Users/x/.ssh/id_rsa")
        );
        let net = r#"{"eventMessage":"Sandbox: curl(9) deny(1) network-outbound 93.184.216.34:443 agent-sandbox-77-0"}"#;
        let v = violation_of_line(net.as_bytes(), TAG).unwrap();
        assert_eq!(v.target, "93.184.216.34:443");
        let ignored = [
            // Another session's denial.
            r#"{"eventMessage":"Sandbox: cat(412) deny(1) file-read-data /a agent-sandbox-77-1"}"#.to_owned(),
            // Not a denial.
            r#"{"eventMessage":"Filtering the log data using \"eventMessage ENDSWITH\" agent-sandbox-77-0"}"#.to_owned(),
            // No message, a message of another type, not JSON, not an object.
            r#"{"timestamp":"x"}"#.to_owned(),
            r#"{"eventMessage":7}"#.to_owned(),
            "Sandbox: cat(1) deny(1) file-read-data /a agent-sandbox-77-0".to_owned(),
            "[1,2]".to_owned(),
            String::new(),
            // Deep nesting stops at serde_json's limit, without a panic.
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
            // Over the line limit.
            format!(
                r#"{{"eventMessage":"Sandbox: cat(1) deny(1) file-read-data /{} agent-sandbox-77-0"}}"#,
                "a".repeat(MAX_NDJSON_LINE)
            ),
        ];
        for line in ignored {
            assert!(
                violation_of_line(line.as_bytes(), TAG).is_none(),
                "{line:.80}"
            );
        }
    }

    #[tokio::test]
    async fn long_lines_are_skipped_and_the_next_one_is_read() {
        let long = format!("{}\n", "x".repeat(MAX_NDJSON_LINE + 10));
        let ok = r#"{"eventMessage":"Sandbox: a(1) deny(1) process-fork agent-sandbox-77-0"}"#;
        let input = format!("{long}{ok}\n{ok}");
        let (tx, mut rx) = broadcast::channel(8);
        forward_lines(input.as_bytes(), TAG, &tx).await;
        for _ in 0..2 {
            assert_eq!(rx.try_recv().unwrap().action, "process-fork");
        }
        assert!(rx.try_recv().is_err());
    }

    /// A stand-in `log`: records its arguments and pid, prints recorded
    /// lines, then waits to be stopped.
    #[cfg(unix)]
    fn stand_in(dir: &Path) -> PathBuf {
        let p = dir.join("log");
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > {dir}/args\necho $$ > {dir}/pid\n\
             echo '{{\"eventMessage\":\"Sandbox: cat(1) deny(1) file-read-data /other agent-sandbox-77-9\"}}'\n\
             echo '{{\"eventMessage\":\"Sandbox: cat(1) deny(1) file-read-data /s/id_rsa agent-sandbox-77-0\"}}'\n\
             exec sleep 30\n",
            dir = dir.display()
        );
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    }

    #[cfg(unix)]
    fn alive(pid: &str) -> bool {
        // A zombie is gone for this purpose: it runs nothing.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_stream_runs_from_start_to_stop_and_reports_the_sessions_denials() {
        let dir = tempfile::tempdir().unwrap();
        let program = stand_in(dir.path());
        let notes = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = notes.clone();
        let note: crate::LogSink = Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned()));
        let log = SystemLog::start(&program, TAG, note).unwrap();
        let mut rx = log.subscribe();
        let v = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(v.target, "/s/id_rsa");
        let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
        assert_eq!(
            args.lines().collect::<Vec<_>>(),
            stream_args(TAG)
                .iter()
                .map(|a| a.to_str().unwrap())
                .collect::<Vec<_>>()
        );
        let pid = std::fs::read_to_string(dir.path().join("pid")).unwrap();
        let pid = pid.trim();
        assert!(alive(pid));
        log.stop().await;
        assert!(!alive(pid), "log stream outlived its session");
        assert!(
            notes.lock().unwrap().is_empty(),
            "{:?}",
            notes.lock().unwrap()
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_missing_or_refusing_log_is_a_note() {
        let notes = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = notes.clone();
        let note: crate::LogSink = Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned()));
        assert!(start_or_note(Path::new("/nonexistent/log"), TAG, &note).is_none());
        assert!(notes.lock().unwrap()[0].contains("no violations from the system log"));
        // A `log` that refuses (as it does without the right to read the
        // log): the stream ends and its first error line is the note.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(
            &p,
            "#!/bin/sh\necho 'log: Must be admin to run stream' >&2\nexit 64\n",
        )
        .unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let log = start_or_note(&p, TAG, &note).unwrap();
        for _ in 0..100 {
            if notes.lock().unwrap().len() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let n = notes.lock().unwrap().clone();
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(
            n[1].ends_with(": log: Must be admin to run stream"),
            "{}",
            n[1]
        );
        log.stop().await;
    }
}
