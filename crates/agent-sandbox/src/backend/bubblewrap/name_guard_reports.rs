//! The name guard's side channel: a pipe whose write end the launcher inside
//! the sandbox reports each refused name on, read here into `violation`
//! events (`file-write-create` and the path).

use rustix::fd::{AsRawFd, OwnedFd};
use sandbox_core::SandboxViolation;
use std::io::{BufRead, BufReader, Read};
use tokio::sync::mpsc;

/// Most denials queued for the event stream before the reader waits.
const QUEUE: usize = 1024;

/// The report pipe of one command.
pub(crate) struct ReportPipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl ReportPipe {
    pub(crate) fn new() -> std::io::Result<ReportPipe> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok(ReportPipe { read, write })
    }

    /// The descriptor number the launcher writes to (the same inside, since
    /// bubblewrap passes inherited descriptors through).
    pub(crate) fn write_fd(&self) -> i32 {
        self.write.as_raw_fd()
    }

    /// Lets `cmd` inherit the write end.
    pub(crate) fn inherit_in(&self, cmd: &mut tokio::process::Command) {
        crate::process_fds::inherit_fds(cmd, [self.write.as_raw_fd()]);
    }

    /// Starts reading reports; returns the write end, which the caller
    /// drops once the last command that inherits it has been spawned (the
    /// reader ends when every write end is closed).
    pub(crate) fn start(self) -> (OwnedFd, mpsc::Receiver<SandboxViolation>) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let read = std::fs::File::from(self.read);
        tokio::task::spawn_blocking(move || read_reports(read, &tx));
        (self.write, rx)
    }
}

/// Reads report lines until end of file; lines that do not parse (or are
/// longer than the launcher ever writes) are skipped.
fn read_reports<R: Read>(r: R, tx: &mpsc::Sender<SandboxViolation>) {
    let limit = name_guard::MAX_REPORT_LINE as u64;
    let mut r = BufReader::new(r);
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        let n = match (&mut r).take(limit + 1).read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(_) => return,
        };
        if n == 0 {
            return;
        }
        if line.last() != Some(&b'\n') && n as u64 > limit {
            // Over-long: skip to the end of the line.
            loop {
                line.clear();
                match (&mut r).take(limit).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) if line.last() == Some(&b'\n') => break,
                    Ok(_) => {}
                }
            }
            continue;
        }
        if let Some(v) = violation_of(&line)
            && tx.blocking_send(v).is_err()
        {
            return;
        }
    }
}

/// The violation for one report line.
pub(crate) fn violation_of(line: &[u8]) -> Option<SandboxViolation> {
    let denial = name_guard::parse_denial_line(line).ok()?;
    let raw = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line)).into_owned();
    let mut v = SandboxViolation::new(name_guard::VIOLATION_ACTION, denial.path);
    v.raw = Some(raw);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_violations_and_junk_is_skipped() {
        let input: Vec<u8> = [
            &b"open /w/x.pem\n"[..],
            b"nonsense\n",
            &vec![b'a'; name_guard::MAX_REPORT_LINE + 10],
            b"\nrename /w/.env\n",
            b"mkdir /w/a\\nb.key",
        ]
        .concat();
        let (tx, mut rx) = mpsc::channel(16);
        read_reports(&input[..], &tx);
        drop(tx);
        let mut got = Vec::new();
        while let Ok(v) = rx.try_recv() {
            got.push((v.action, v.target));
        }
        assert_eq!(
            got,
            [
                ("file-write-create".to_string(), "/w/x.pem".to_string()),
                ("file-write-create".to_string(), "/w/.env".to_string()),
                ("file-write-create".to_string(), "/w/a\x0ab.key".to_string()),
            ]
        );
    }
}
