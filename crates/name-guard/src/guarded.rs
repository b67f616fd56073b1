//! The guarded run on Linux: give up every capability, fork the command
//! with the filter installed, and supervise its notifications until it
//! exits.

use crate::outcome::Outcome;
use crate::syscalls::{self, Abi};
use crate::{Error, ErrorKind, Invocation, filter, supervisor, sys};
use sandbox_core::InvocationProblem;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// See [`crate::run`].
pub(crate) fn run(inv: &Invocation) -> Result<Outcome, Error> {
    let Some(abi) = syscalls::NATIVE else {
        return Err(ErrorKind::UnsupportedPlatform.into());
    };
    let argv: Vec<CString> = inv
        .command
        .iter()
        .map(|a| {
            CString::new(a.as_bytes()).map_err(|_| {
                ErrorKind::Usage(
                    InvocationProblem::NulByte {
                        argument: a.to_string_lossy().chars().take(64).collect(),
                    }
                    .into(),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    if let Some(fd) = inv.report_fd {
        // Close-on-exec before the fork, so the guarded command never holds
        // it; non-blocking, so a full pipe never stalls the supervisor.
        sys::set_cloexec_nonblock(fd).map_err(|errno| ErrorKind::ReportFd { fd, errno })?;
    }
    if let Some(fd) = inv.updates_fd {
        // Likewise: the command never holds it, and a read never blocks.
        sys::set_cloexec_nonblock(fd).map_err(|errno| ErrorKind::UpdatesFd { fd, errno })?;
    }
    if let Some(fd) = inv.notify_fd {
        // Likewise; a full pipe drops the byte (the reader has one anyway).
        sys::set_cloexec_nonblock(fd).map_err(|errno| ErrorKind::UpdatesFd { fd, errno })?;
    }
    let sup_err = |errno| Error::from(ErrorKind::Supervise { errno });
    // On the host, before anything can signal it: the signals the
    // supervisor acts on arrive through a descriptor, it is the tree's
    // subreaper, and it watches its parent.
    let watch = match inv.host {
        Some(_) => Some(HostWatch::new().map_err(sup_err)?),
        None => None,
    };
    let _ = sys::ignore_signal(libc::SIGPIPE);
    // The supervisor and the command run with no capability at all.
    sys::drop_capabilities_except(inv.keep_capabilities).map_err(sup_err)?;
    // On the host, Landlock holds this process (the supervisor to be) and
    // the command alike, before anything else runs.
    let (place, nesting) = match &inv.host {
        Some(h) => {
            crate::landlock_rules::restrict(h)?;
            (filter::Place::Host, sys::Nesting::Host(&h.tcp_ports))
        }
        None => (filter::Place::Bubblewrap, sys::Nesting::Bubblewrap),
    };
    let prog = filter::program(abi, sys::getpid(), place);
    // Inside bubblewrap the host's interrupt and terminate reach every
    // process of the sandbox: the command takes them, the supervisor stays
    // to serve it (it ended with SIGTERM before, and the command was
    // reported as exiting with 143). Ignored before the fork, not after:
    // the command may be running, and signalled, before this process is
    // scheduled again. The command gets back what they did here.
    let mut ignored = vec![sys::ignore_signal(libc::SIGQUIT)];
    if watch.is_none() {
        ignored.push(sys::ignore_signal(libc::SIGINT));
        ignored.push(sys::ignore_signal(libc::SIGTERM));
    }
    let (child, listener) = sys::spawn_filtered(&prog, &argv, nesting, &ignored)
        .map_err(|errno| ErrorKind::Spawn { errno })?;
    if let Err(errno) = sys::set_non_dumpable() {
        drop(listener);
        if watch.is_some() {
            crate::tree::end_all(sys::getpid());
        }
        let _ = sys::wait_child(child);
        return Err(sup_err(errno));
    }
    supervise(abi, listener, child, inv, watch.as_ref())
}

/// What the supervisor on the host watches besides the command: the
/// signals it acts on and its parent, the host program.
struct HostWatch {
    signals: sys::SignalFd,
    /// The parent's pidfd: readable once the parent has exited.
    parent: OwnedFd,
}

impl HostWatch {
    /// The signals passed on to the tree.
    const PASSED_ON: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    fn new() -> Result<HostWatch, i32> {
        let signals = sys::SignalFd::new(&[
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            crate::END_TREE_SIGNAL,
            libc::SIGCHLD,
        ])?;
        sys::set_child_subreaper()?;
        let ppid = sys::getppid();
        let parent = sys::pidfd_open(ppid)?;
        // The parent may have exited before its pidfd was opened: then this
        // process has another parent by now.
        if sys::getppid() != ppid {
            return Err(libc::ESRCH);
        }
        Ok(HostWatch { signals, parent })
    }
}

fn supervise(
    abi: &'static Abi,
    listener: OwnedFd,
    child: i32,
    inv: &Invocation,
    watch: Option<&HostWatch>,
) -> Result<Outcome, Error> {
    let sup_err = |errno| Error::from(ErrorKind::Supervise { errno });
    let me = sys::getpid();
    let pidfd = sys::pidfd_open(child).map_err(sup_err)?;
    // Best effort: a kernel without it wakes across CPUs, nothing else.
    let _ = sys::notif_set_sync_wakeup(listener.as_raw_fd());
    let mut sup = supervisor::Supervisor::new(
        abi,
        listener.as_raw_fd(),
        inv.rules.clone(),
        inv.host.clone(),
        inv.report_fd,
    );
    sup.notify_to(inv.notify_fd);
    let mut updates = inv
        .updates_fd
        .map(|fd| (fd, sandbox_core::UpdateReader::new()));
    sup.grant_sockets(&inv.unix_sockets);
    let mut listener = Some(listener);
    loop {
        let lfd = listener.as_ref().map(AsRawFd::as_raw_fd);
        // While FIFO opens wait on worker threads, wake up now and then to
        // release those whose caller is gone.
        let timeout = if sup.has_waiting_fifo_opens() {
            100
        } else {
            -1
        };
        let [lrev, prev, srev, hrev, urev] = sys::poll_in(
            [
                lfd.unwrap_or(-1),
                pidfd.as_raw_fd(),
                watch.map_or(-1, |w| w.signals.raw()),
                watch.map_or(-1, |w| w.parent.as_raw_fd()),
                updates.as_ref().map_or(-1, |(fd, _)| *fd),
            ],
            timeout,
        )
        .map_err(sup_err)?;
        if urev != 0
            && let Some((fd, reader)) = &mut updates
            && !take_updates(*fd, reader, &mut sup)
        {
            // The host closed its end: no more rules will come.
            updates = None;
        }
        sup.release_abandoned_fifo_opens();
        if let Some(w) = watch {
            if hrev != 0 {
                // The host program is gone: so is everything it started.
                crate::tree::end_all(me);
                sup.finish_reports();
                return Ok(Outcome {
                    exit_code: 128 + libc::SIGKILL,
                    stats: sup.stats,
                });
            }
            if srev != 0 {
                while let Some(sig) = w.signals.next() {
                    if sig == crate::END_TREE_SIGNAL {
                        // The command's own exit, seen next, ends the rest.
                        crate::tree::signal_all(me, libc::SIGKILL);
                    } else if HostWatch::PASSED_ON.contains(&sig) {
                        crate::tree::signal_all(me, sig);
                    } else {
                        crate::tree::reap_orphans(child);
                    }
                }
            }
        }
        if lrev & libc::POLLIN != 0 {
            if let Some(l) = &listener {
                match sys::notif_recv(l.as_raw_fd()) {
                    Ok(n) => sup.handle(&n),
                    Err(libc::ENOENT) | Err(libc::EINTR) => {}
                    // Unusable listener: drop it; the guarded calls then fail.
                    Err(_) => listener = None,
                }
            }
        } else if lrev & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            listener = None;
        }
        if prev & libc::POLLIN != 0 {
            let status = sys::wait_child(child).map_err(sup_err)?;
            // Nothing the command started outlives it (on the host; inside
            // bubblewrap its pid namespace sees to that).
            if watch.is_some() && !crate::tree::end_all(me) {
                eprintln!("name-guard-exec: some processes the command started could not be ended");
            }
            let exit_code = match status {
                sys::ExitStatus::Code(c) => c,
                sys::ExitStatus::Signal(s) => 128 + s,
            };
            sup.finish_reports();
            return Ok(Outcome {
                exit_code,
                stats: sup.stats,
            });
        }
    }
}

/// Reads what the host sent on the rules' descriptor (until it would
/// block) and takes each rule on, before the next notification is
/// answered. Returns `false` once the host's end is closed (or the
/// descriptor fails).
fn take_updates(
    fd: i32,
    reader: &mut sandbox_core::UpdateReader,
    sup: &mut supervisor::Supervisor,
) -> bool {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match sys::read_once(fd, &mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                for update in reader.feed(&buf[..n]) {
                    sup.take_update(update);
                }
            }
            Err(libc::EINTR) => {}
            Err(libc::EAGAIN) => return true,
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_report_fd_is_a_setup_error() {
        // Far above anything a test process holds open.
        let inv = Invocation::parse(["--report-fd", "987654", "--", "true"]).unwrap();
        let e = run(&inv).unwrap_err();
        assert_eq!(
            e.kind(),
            &ErrorKind::ReportFd {
                fd: 987_654,
                errno: libc::EBADF
            }
        );
    }

    #[test]
    fn a_nul_byte_in_a_command_built_in_code_is_a_usage_error() {
        let inv = Invocation {
            rules: crate::Rules::new([".env"]).unwrap(),
            command: vec!["a\0b".into()],
            report_fd: None,
            updates_fd: None,
            notify_fd: None,
            unix_sockets: Vec::new(),
            keep_capabilities: 0,
            host: None,
        };
        let e = run(&inv).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{e}");
    }
}
