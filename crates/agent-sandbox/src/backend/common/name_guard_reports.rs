//! The name guard's side channel: a pipe whose write end the launcher inside
//! the sandbox reports each refused name on, read here into `violation`
//! events (`file-write-create` and the path).

use rustix::fd::{AsRawFd, OwnedFd};
use sandbox_core::SandboxViolation;
use std::collections::VecDeque;

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

    /// The write end, which the caller drops once the last command that
    /// inherits it has been spawned (the reader sees end of file when every
    /// write end is closed), and the reader. Must run inside the runtime.
    pub(crate) fn start(self) -> std::io::Result<(OwnedFd, ReportReader)> {
        let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(self.read)?;
        Ok((
            self.write,
            ReportReader {
                pipe: Some(pipe),
                lines: ReportLines::default(),
                ready: VecDeque::new(),
            },
        ))
    }
}

/// Reads the report pipe into violations. [`ReportReader::take_ready`]
/// reads what is in the pipe without waiting: the guard writes its report
/// before the refused call returns, so taking it before passing on the
/// command's later output keeps the two in order.
pub(crate) struct ReportReader {
    pipe: Option<tokio::net::unix::pipe::Receiver>,
    lines: ReportLines,
    ready: VecDeque<SandboxViolation>,
}

impl ReportReader {
    /// Reads whatever the pipe holds now (never waits).
    pub(crate) fn take_ready(&mut self) -> Vec<SandboxViolation> {
        self.read_available();
        self.ready.drain(..).collect()
    }

    /// The next violation; `None` once every write end is closed and all
    /// was read. Cancel-safe: what was read stays queued.
    pub(crate) async fn next(&mut self) -> Option<SandboxViolation> {
        loop {
            if let Some(v) = self.ready.pop_front() {
                return Some(v);
            }
            let pipe = self.pipe.as_ref()?;
            if pipe.readable().await.is_err() {
                self.close();
                continue;
            }
            self.read_available();
        }
    }

    fn read_available(&mut self) {
        let mut buf = [0u8; 4096];
        while let Some(pipe) = &self.pipe {
            match pipe.try_read(&mut buf) {
                Ok(0) => self.close(),
                Ok(n) => {
                    let mut out = Vec::new();
                    self.lines.push(&buf[..n], &mut out);
                    self.ready.extend(out);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => self.close(),
            }
        }
    }

    fn close(&mut self) {
        self.pipe = None;
        let mut out = Vec::new();
        self.lines.finish(&mut out);
        self.ready.extend(out);
    }
}

/// Splits report bytes into lines. Complete lines become violations (the
/// ones that do not parse are skipped); a line longer than the launcher
/// ever writes is skipped to its end.
#[derive(Default)]
struct ReportLines {
    buf: Vec<u8>,
    skipping: bool,
}

impl ReportLines {
    fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SandboxViolation>) {
        let limit = name_guard::MAX_REPORT_LINE;
        while !bytes.is_empty() {
            let (chunk, rest, ended) = match bytes.iter().position(|b| *b == b'\n') {
                Some(i) => (&bytes[..=i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            bytes = rest;
            if !self.skipping {
                self.buf.extend_from_slice(chunk);
                if self.buf.len() > limit + 1 {
                    self.buf.clear();
                    self.skipping = true;
                }
            }
            if ended {
                if !self.skipping
                    && let Some(v) = violation_of(&self.buf)
                {
                    out.push(v);
                }
                self.buf.clear();
                self.skipping = false;
            }
        }
    }

    /// End of file: a last line without its newline still counts.
    fn finish(&mut self, out: &mut Vec<SandboxViolation>) {
        if !self.skipping
            && !self.buf.is_empty()
            && let Some(v) = violation_of(&self.buf)
        {
            out.push(v);
        }
        self.buf.clear();
        self.skipping = false;
    }
}

/// The violation for one report line.
pub(crate) fn violation_of(line: &[u8]) -> Option<SandboxViolation> {
    let denial = name_guard::parse_denial_line(line).ok()?;
    let raw = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line)).into_owned();
    let mut v = SandboxViolation::new(denial.call.violation_action(), denial.path);
    v.raw = Some(raw);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pieces: &[&[u8]]) -> Vec<(String, String)> {
        let mut lines = ReportLines::default();
        let mut out = Vec::new();
        for p in pieces {
            lines.push(p, &mut out);
        }
        lines.finish(&mut out);
        out.into_iter().map(|v| (v.action, v.target)).collect()
    }

    #[test]
    fn lines_become_violations_and_junk_is_skipped() {
        let long = vec![b'a'; name_guard::MAX_REPORT_LINE + 10];
        let input: Vec<u8> = [
            &b"open /w/x.pem\n"[..],
            b"nonsense\n",
            &long,
            b"\nrename /w/.env\n",
            b"mkdir /w/a\\nb.key",
        ]
        .concat();
        let want = [
            ("file-write-create".to_string(), "/w/x.pem".to_string()),
            ("file-write-create".to_string(), "/w/.env".to_string()),
            ("file-write-create".to_string(), "/w/a\x0ab.key".to_string()),
        ];
        assert_eq!(split(&[&input]), want);
        // The same bytes in any pieces give the same violations.
        for size in [1, 2, 7, 100, 5000] {
            let pieces: Vec<&[u8]> = input.chunks(size).collect();
            assert_eq!(split(&pieces), want, "pieces of {size}");
        }
    }
}
