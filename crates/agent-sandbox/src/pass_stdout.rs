//! Passing a command's stdout into a host file ([`sandbox_core::Stdout::PassTo`])
//! on a thread of its own, until end of file or until the host lets go.
//!
//! On Linux the thread waits for the pipe and for a stop pipe together, and
//! moves what is there with `splice` (pipe to file in the kernel) where the
//! file takes that, else reads and writes. Dropping the [`Passed`] closes
//! the stop pipe: the thread then passes on only what the pipe holds at
//! that moment and ends, so that processes a command left running in a warm
//! session, which hold the pipe open, cannot write into the host's file
//! after the command's `exit` event. Elsewhere (no warm sessions there) it
//! copies to end of file.

use sandbox_core::OutputSink;
use tokio::sync::oneshot;

/// The thread passing stdout on: its result (the bytes passed, or why it
/// stopped), and, while held, its permission to go on.
pub(crate) struct Passed {
    done: oneshot::Receiver<std::io::Result<u64>>,
    #[cfg(target_os = "linux")]
    _go_on: Option<rustix::fd::OwnedFd>,
}

impl Passed {
    /// Lets go: what the pipe holds now is still passed on, then passing
    /// on ends (see [`Passed::ended`]) even while writers hold the pipe.
    pub(crate) fn stop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            self._go_on = None;
        }
    }

    /// Waits for passing on to end (end of file, a failed write, or
    /// after [`Passed::stop`]).
    pub(crate) async fn ended(&mut self) -> std::io::Result<u64> {
        (&mut self.done).await.unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "no thread could be started to pass it on",
            ))
        })
    }
}

/// Passes the command's stdout into `sink` on a thread of its own. A failed
/// write ends it, and the pipe's end is closed with it (the command sees a
/// broken pipe). If no thread can start, the pipe is closed at once.
pub(crate) fn pass_on(out: tokio::process::ChildStdout, sink: OutputSink) -> Passed {
    let (tx, done) = oneshot::channel();
    #[cfg(target_os = "linux")]
    let (stop, go_on) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok((r, w)) => (Some(r), Some(w)),
        Err(_) => (None, None),
    };
    let spawned = std::thread::Builder::new()
        .name("agent-sandbox-stdout".into())
        .spawn(move || {
            #[cfg(target_os = "linux")]
            let passed = linux::pass(out, sink, stop);
            #[cfg(not(target_os = "linux"))]
            let passed = copy_to_end(out, sink);
            let _ = tx.send(passed);
        });
    drop(spawned);
    Passed {
        done,
        #[cfg(target_os = "linux")]
        _go_on: go_on,
    }
}

/// To end of file (where no warm session holds the pipe past the command).
#[cfg(not(target_os = "linux"))]
fn copy_to_end(out: tokio::process::ChildStdout, sink: OutputSink) -> std::io::Result<u64> {
    #[cfg(unix)]
    let from = out.into_owned_fd().map(std::fs::File::from);
    #[cfg(windows)]
    let from = out.into_owned_handle().map(std::fs::File::from);
    from.and_then(|mut from| {
        let mut to = sink.file();
        std::io::copy(&mut from, &mut to)
    })
}

#[cfg(target_os = "linux")]
mod linux {
    use rustix::event::{PollFd, PollFlags, poll};
    use rustix::fd::{AsFd, OwnedFd};
    use rustix::io::Errno;
    use sandbox_core::OutputSink;
    use std::io::{Read, Write};

    /// Most bytes one `splice` or read moves.
    const CHUNK: usize = 64 * 1024;

    /// Until end of file, a failed write, or `stop` readable (its other end
    /// closed: the host let go), after which only what the pipe holds then
    /// is passed on. Without a stop pipe, to end of file.
    pub(super) fn pass(
        out: tokio::process::ChildStdout,
        sink: OutputSink,
        stop: Option<OwnedFd>,
    ) -> std::io::Result<u64> {
        let from = std::fs::File::from(out.into_owned_fd()?);
        let to = sink.file();
        let mut spliced = true;
        let mut total = 0u64;
        let mut buf = vec![0u8; CHUNK];
        // Bytes left to pass once stopped; `None` while going on.
        let mut last: Option<usize> = None;
        loop {
            if last == Some(0) {
                return Ok(total);
            }
            if last.is_none() {
                let ready = wait(&from, stop.as_ref())?;
                if ready.stopped {
                    last = Some(available(&from));
                    continue;
                }
            }
            let want = last.map_or(CHUNK, |l| l.min(CHUNK));
            let moved = if spliced {
                match rustix::pipe::splice(
                    &from,
                    None,
                    to.as_fd(),
                    None,
                    want,
                    // The pipe has bytes (or its end): poll said so, or it
                    // held them when stopped. The file may block.
                    rustix::pipe::SpliceFlags::empty(),
                ) {
                    Err(Errno::INVAL) => {
                        // This file takes no splice: read and write instead.
                        spliced = false;
                        continue;
                    }
                    r => r.map_err(std::io::Error::from),
                }
            } else {
                read_some(&from, &mut buf[..want])
                    .and_then(|n| (&*to).write_all(&buf[..n]).map(|()| n))
            };
            match moved {
                Ok(0) => return Ok(total),
                Ok(n) => {
                    total += n as u64;
                    if let Some(l) = last.as_mut() {
                        *l = l.saturating_sub(n);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if last.is_some() {
                        return Ok(total);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    struct Ready {
        stopped: bool,
    }

    /// Waits until the pipe has bytes (or its end) or the host let go.
    fn wait(from: &std::fs::File, stop: Option<&OwnedFd>) -> std::io::Result<Ready> {
        let mut fds = vec![PollFd::new(from, PollFlags::IN)];
        if let Some(s) = stop {
            fds.push(PollFd::new(s, PollFlags::IN));
        }
        loop {
            match poll(&mut fds, None) {
                Ok(_) => break,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let stopped = fds.get(1).is_some_and(|s| !s.revents().is_empty());
        Ok(Ready { stopped })
    }

    /// How many bytes the pipe holds now (`FIONREAD`); 0 when unknown.
    fn available(from: &std::fs::File) -> usize {
        rustix::io::ioctl_fionread(from).map_or(0, |n| n as usize)
    }

    /// One read that does not wait: the pipe is read only after `poll`
    /// said it has bytes, or to pass on what it held when stopped.
    fn read_some(from: &std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let flags = rustix::fs::fcntl_getfl(from)?;
        if !flags.contains(rustix::fs::OFlags::NONBLOCK) {
            rustix::fs::fcntl_setfl(from, flags | rustix::fs::OFlags::NONBLOCK)?;
        }
        (&*from).read(buf)
    }
}
