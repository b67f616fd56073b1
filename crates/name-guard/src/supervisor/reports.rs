//! Denial reports: one line per refusal to the report descriptor, never
//! blocking the supervisor.

use super::Supervisor;
use crate::report::{self, DeniedCall};
use crate::sys;
use std::os::fd::RawFd;

impl Supervisor {
    /// Write what a short write left of a report line, without blocking.
    /// Returns whether nothing is left.
    fn flush_pending(&self, fd: RawFd) -> bool {
        let mut p = self.pending.borrow_mut();
        while !p.is_empty() {
            match sys::write_once(fd, &p) {
                Ok(0) => return false,
                Ok(n) => {
                    let n = n.min(p.len());
                    p.drain(..n);
                }
                Err(libc::EINTR) => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Best-effort: write one report line; a line that cannot be written
    /// at once is dropped and counted. A short write keeps the rest for the
    /// next report, so lines are never interleaved.
    pub(super) fn report(&self, call: DeniedCall, path: &[u8]) {
        let Some(fd) = self.report_fd else { return };
        if !self.flush_pending(fd) {
            self.dropped.set(self.dropped.get() + 1);
            return;
        }
        let line = report::format_denial_line(call, path);
        let mut tries = 0;
        loop {
            match sys::write_once(fd, &line) {
                Ok(n) if n >= line.len() => return,
                Ok(0) => break,
                Ok(n) => {
                    *self.pending.borrow_mut() = line[n..].to_vec();
                    return;
                }
                Err(libc::EINTR) if tries < 3 => tries += 1,
                Err(_) => break,
            }
        }
        self.dropped.set(self.dropped.get() + 1);
    }

    /// Give the rest of a cut report line a little time to be read when the
    /// guarded command ends; count it as dropped otherwise.
    pub(crate) fn finish_reports(&mut self) {
        if let Some(fd) = self.report_fd {
            for _ in 0..10 {
                if self.flush_pending(fd) {
                    break;
                }
                sys::poll_out(fd, 100);
            }
            if !self.pending.get_mut().is_empty() {
                self.pending.get_mut().clear();
                self.dropped.set(self.dropped.get() + 1);
            }
        }
        self.stats.reports_dropped += self.dropped.take();
    }
}
