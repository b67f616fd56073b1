//! A command run through an agent: its start, input, output, terminal,
//! signals and end as host pipes (or a host terminal mirroring the
//! agent's), so its events are exactly a host process's.

use super::Link;
use crate::process::{ChildStdio, CommandProcess};
use crate::running::CommandIo;
use crate::seam::ExecRequest;
use crate::{Error, ErrorKind};
use rustix::fd::OwnedFd;
use sandbox_core::vm_wire::{FromGuest, MAX_DATA, ToGuest, VmExec, VmLimits, VmStdio};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// How often a terminal's size is compared with the guest's.
const RESIZE_POLL: Duration = Duration::from_millis(50);

fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| Error::io("creating a command's pipe", e.into()))
}

/// Starts `request` through the agent of `guest` with `limits`: the
/// command's pipes or host terminal are set in `io`, signals go to its
/// process group inside. The caller runs the returned child to its end.
pub(crate) fn start_command(
    guest: &Arc<Link>,
    request: &ExecRequest<'_>,
    io: &mut CommandIo,
    limits: VmLimits,
) -> Result<GuestChild, Error> {
    let guest = guest.clone();
    let id = guest.next_id.fetch_add(1, Ordering::Relaxed);
    let text = |v: &std::ffi::OsStr| v.as_bytes().to_vec();
    let exec = VmExec {
        id,
        argv: request.argv.iter().map(|a| text(a)).collect(),
        env: request
            .env
            .iter()
            .map(|(k, v)| {
                let mut kv = text(k);
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                kv
            })
            .collect(),
        cwd: request.workdir.as_bytes().to_vec(),
        stdio: match request.terminal {
            Some(size) => VmStdio::Terminal {
                rows: size.rows(),
                cols: size.cols(),
            },
            None => VmStdio::Pipes,
        },
        limits,
    };
    let exec = ToGuest::Exec(exec);
    exec.check().map_err(|e| {
        Error::io(
            "passing the command to the guest",
            std::io::Error::other(e.to_string()),
        )
    })?;
    let replies = guest.channel.command(id);
    let (status_tx, status_rx) = oneshot::channel();
    let oom = Arc::new(AtomicBool::new(false));
    let replies = (replies, oom.clone());
    let child = match request.terminal {
        Some(size) => {
            let err = |e: std::io::Error| Error::io("opening a terminal for the command", e);
            let (master, slave) = crate::pty::open_on_host(size).map_err(err)?;
            io.terminal = Some(Arc::new(crate::pty::PtyMaster::new(master).map_err(err)?));
            // The relay's end: it only carries bytes between the host's
            // master and the guest's terminal, whose own line discipline
            // echoes, edits lines and sends the signals.
            let slave = crate::pty::PtyMaster::new(slave).map_err(err)?;
            slave.make_raw().map_err(err)?;
            tokio::spawn(terminal_pump(id, guest.clone(), slave, replies, status_tx));
            GuestChild {
                id,
                guest: guest.clone(),
                status: status_rx,
                stdio: (None, None, None),
                out_of_memory: oom,
            }
        }
        None => {
            let (out_r, out_w) = pipe()?;
            let (err_r, err_w) = pipe()?;
            let io_err = |e: std::io::Error| Error::io("creating a command's pipe", e);
            let out_w = tokio::net::unix::pipe::Sender::from_owned_fd(out_w).map_err(io_err)?;
            let err_w = tokio::net::unix::pipe::Sender::from_owned_fd(err_w).map_err(io_err)?;
            let stdin = match request.stdin {
                sandbox_core::Stdin::Piped => {
                    let (in_r, in_w) = pipe()?;
                    let in_r =
                        tokio::net::unix::pipe::Receiver::from_owned_fd(in_r).map_err(io_err)?;
                    tokio::spawn(stdin_pump(id, guest.clone(), in_r));
                    Some(
                        tokio::process::ChildStdin::from_std(std::process::ChildStdin::from(in_w))
                            .map_err(io_err)?,
                    )
                }
                _ => None,
            };
            tokio::spawn(output_pump(
                replies,
                (out_w, err_w),
                status_tx,
                guest.clone(),
            ));
            GuestChild {
                id,
                guest: guest.clone(),
                status: status_rx,
                out_of_memory: oom,
                stdio: (
                    stdin,
                    Some(
                        tokio::process::ChildStdout::from_std(std::process::ChildStdout::from(
                            out_r,
                        ))
                        .map_err(io_err)?,
                    ),
                    Some(
                        tokio::process::ChildStderr::from_std(std::process::ChildStderr::from(
                            err_r,
                        ))
                        .map_err(io_err)?,
                    ),
                ),
            }
        }
    };
    guest
        .channel
        .send(&exec)
        .map_err(|e| ErrorKind::GuestUnavailable { reason: e.0 })?;
    if request.stdin != sandbox_core::Stdin::Piped && request.terminal.is_none() {
        // Its input ends at once.
        let _ = guest.channel.send(&ToGuest::Stdin {
            id,
            data: Vec::new(),
        });
    }
    let signals = guest.clone();
    io.control.remote_started(Box::new(move |signal| {
        let _ = signals.channel.send(&ToGuest::Signal { id, signal });
    }));
    Ok(child)
}

/// Carries what the host writes to the command's stdin into the guest;
/// its end ends the guest command's input.
async fn stdin_pump(id: u64, guest: Arc<Link>, mut r: tokio::net::unix::pipe::Receiver) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; MAX_DATA];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let data = buf.get(..n).unwrap_or_default().to_vec();
                if guest
                    .channel
                    .send_data(&ToGuest::Stdin { id, data })
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
    let _ = guest
        .channel
        .send_data(&ToGuest::Stdin {
            id,
            data: Vec::new(),
        })
        .await;
}

/// The command's end as the host sees a process's: its wait status, or
/// why it has none.
type Ended = std::io::Result<std::process::ExitStatus>;

/// What the guest said of a command, to the command's end.
fn ended_with(m: &FromGuest) -> Option<Ended> {
    use std::os::unix::process::ExitStatusExt;
    match m {
        FromGuest::Ended { wait_status, .. } => {
            Some(Ok(std::process::ExitStatus::from_raw(*wait_status)))
        }
        FromGuest::Failed { errno, .. } => Some(Err(std::io::Error::from_raw_os_error(*errno))),
        _ => None,
    }
}

fn guest_gone() -> Ended {
    Err(std::io::Error::other(
        "the guest ended before the command did",
    ))
}

/// Writes the command's output from the guest into the host pipes, in
/// order, then closes them and reports its end.
async fn output_pump(
    (mut replies, oom): (mpsc::Receiver<FromGuest>, Arc<AtomicBool>),
    (mut out, mut err): (
        tokio::net::unix::pipe::Sender,
        tokio::net::unix::pipe::Sender,
    ),
    status: oneshot::Sender<Ended>,
    _guest: Arc<Link>,
) {
    let ended = loop {
        let Some(m) = replies.recv().await else {
            break guest_gone();
        };
        match &m {
            FromGuest::Stdout { data, .. } => {
                let _ = out.write_all(data).await;
            }
            FromGuest::Stderr { data, .. } => {
                let _ = err.write_all(data).await;
            }
            FromGuest::OutOfMemory { .. } => oom.store(true, Ordering::SeqCst),
            _ => {
                if let Some(e) = ended_with(&m) {
                    break e;
                }
            }
        }
    };
    drop((out, err));
    let _ = status.send(ended);
}

/// Carries a terminal command's screen from the guest to the host
/// terminal's slave, what is typed on the host to the guest, and the host
/// terminal's size to the guest's (compared every [`RESIZE_POLL`]).
async fn terminal_pump(
    id: u64,
    guest: Arc<Link>,
    slave: crate::pty::PtyMaster,
    (mut replies, oom): (mpsc::Receiver<FromGuest>, Arc<AtomicBool>),
    status: oneshot::Sender<Ended>,
) {
    let mut size = slave.size().ok();
    let mut buf = vec![0u8; MAX_DATA];
    let mut tick = tokio::time::interval(RESIZE_POLL);
    let ended = loop {
        tokio::select! {
            m = replies.recv() => {
                let Some(m) = m else { break guest_gone() };
                match &m {
                    FromGuest::Stdout { data, .. } | FromGuest::Stderr { data, .. } => {
                        // A host terminal that is gone shows nothing.
                        let _ = slave.write_all(data).await;
                    }
                    FromGuest::OutOfMemory { .. } => oom.store(true, Ordering::SeqCst),
                    _ => if let Some(e) = ended_with(&m) { break e },
                }
            }
            r = slave.read(&mut buf) => {
                match r {
                    Ok(n) if n > 0 => {
                        // A resize made before this was typed reaches the
                        // guest first.
                        resize_if_changed(&slave, &mut size, id, &guest);
                        let data = buf.get(..n).unwrap_or_default().to_vec();
                        let _ = guest.channel.send_data(&ToGuest::Stdin { id, data }).await;
                    }
                    // Nothing more is typed; the screen still comes.
                    _ => tokio::time::sleep(RESIZE_POLL).await,
                }
            }
            _ = tick.tick() => resize_if_changed(&slave, &mut size, id, &guest),
        }
    };
    // The master reads what is left, then the end of the terminal.
    drop(slave);
    let _ = status.send(ended);
}

/// Sends the host terminal's size to the guest's when it changed since
/// `size` (the size last sent).
fn resize_if_changed(
    slave: &crate::pty::PtyMaster,
    size: &mut Option<(u16, u16)>,
    id: u64,
    guest: &Link,
) {
    let now = slave.size().ok();
    if let Some((rows, cols)) = now
        && now != *size
    {
        *size = now;
        let _ = guest.channel.send(&ToGuest::Resize { id, rows, cols });
    }
}

/// A command in the guest as the runner task follows it.
pub(crate) struct GuestChild {
    id: u64,
    guest: Arc<Link>,
    status: oneshot::Receiver<Ended>,
    /// The agent said it went past its memory limit.
    out_of_memory: Arc<AtomicBool>,
    stdio: ChildStdio,
}

impl CommandProcess for GuestChild {
    fn host_pid(&self) -> Option<u32> {
        None
    }

    fn take_stdio(&mut self) -> ChildStdio {
        (
            self.stdio.0.take(),
            self.stdio.1.take(),
            self.stdio.2.take(),
        )
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match (&mut self.status).await {
            Ok(ended) => ended,
            Err(_) => guest_gone(),
        }
    }

    fn start_kill(&mut self) -> std::io::Result<()> {
        let _ = self.guest.channel.send(&ToGuest::Signal {
            id: self.id,
            signal: libc::SIGKILL,
        });
        Ok(())
    }

    fn limit_killed(&self) -> Option<sandbox_core::KillReason> {
        self.out_of_memory
            .load(Ordering::SeqCst)
            .then_some(sandbox_core::KillReason::Oom)
    }

    fn force_kill(&mut self) -> std::io::Result<()> {
        // The agent did not end it within the grace: the guest ends, every
        // process in it with it, and later commands are refused.
        (self.guest.kill)();
        Ok(())
    }
}
