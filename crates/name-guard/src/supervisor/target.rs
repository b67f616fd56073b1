//! The calling thread: facts read from its `/proc` entry on demand, and
//! strings read from its memory.

use crate::PATH_MAX;
use crate::sys;

/// Facts about the calling thread, read from `/proc` on demand.
pub(super) struct Target {
    pub(super) tid: u32,
    pub(super) status: Option<(u32, u32)>,
}

impl Target {
    pub(super) fn status(&mut self) -> Result<(u32, u32), i32> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.tid))
            .map_err(|e| e.raw_os_error().unwrap_or(libc::ESRCH))?;
        let mut tgid = None;
        let mut umask = None;
        for line in text.lines().take(64) {
            if let Some(v) = line.strip_prefix("Tgid:") {
                tgid = v.trim().parse::<u32>().ok();
            } else if let Some(v) = line.strip_prefix("Umask:") {
                umask = u32::from_str_radix(v.trim(), 8).ok();
            }
        }
        let s = (tgid.ok_or(libc::ESRCH)?, umask.unwrap_or(0o022));
        self.status = Some(s);
        Ok(s)
    }

    pub(super) fn umask(&mut self) -> Result<u32, i32> {
        self.status().map(|s| s.1)
    }

    /// `/proc/self` and `/proc/thread-self` name the caller, not the
    /// supervisor: rewrite that prefix, and `/dev/fd`, `/dev/stdin`,
    /// `/dev/stdout`, `/dev/stderr` (links into `/proc/self/fd`) to the
    /// caller's descriptor directory. The final component is unchanged.
    pub(super) fn rewrite(&mut self, path: Vec<u8>) -> Result<Vec<u8>, i32> {
        // The standard links into `/proc/self/fd`.
        for (prefix, fd) in [
            (&b"/dev/fd"[..], ""),
            (&b"/dev/stdin"[..], "/0"),
            (&b"/dev/stdout"[..], "/1"),
            (&b"/dev/stderr"[..], "/2"),
        ] {
            if path.starts_with(prefix)
                && (path.len() == prefix.len() || path[prefix.len()] == b'/')
            {
                let tgid = self.status()?.0;
                let mut out = format!("/proc/{tgid}/fd{fd}").into_bytes();
                out.extend_from_slice(&path[prefix.len()..]);
                return Ok(out);
            }
        }
        for (prefix, thread) in [
            (&b"/proc/self"[..], false),
            (&b"/proc/thread-self"[..], true),
        ] {
            if path.starts_with(prefix)
                && (path.len() == prefix.len() || path[prefix.len()] == b'/')
            {
                let tgid = self.status()?.0;
                let mut out = if thread {
                    format!("/proc/{tgid}/task/{}", self.tid).into_bytes()
                } else {
                    format!("/proc/{tgid}").into_bytes()
                };
                out.extend_from_slice(&path[prefix.len()..]);
                return Ok(out);
            }
        }
        Ok(path)
    }
}

/// Read a NUL-terminated string of at most [`PATH_MAX`] bytes from the
/// caller's memory, one page at a time (a string may end just before an
/// unmapped page).
pub(super) fn read_c_string(tid: u32, addr: u64) -> Result<Vec<u8>, i32> {
    if addr == 0 {
        return Err(libc::EFAULT);
    }
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < PATH_MAX {
        let page_left = 4096 - (at % 4096) as usize;
        let want = page_left.min(PATH_MAX - out.len());
        let chunk = sys::read_target(tid, at, want)?;
        if let Some(i) = chunk.iter().position(|&c| c == 0) {
            out.extend_from_slice(&chunk[..i]);
            return Ok(out);
        }
        out.extend_from_slice(&chunk);
        at = at.checked_add(want as u64).ok_or(libc::EFAULT)?;
    }
    Err(libc::ENAMETOOLONG)
}
