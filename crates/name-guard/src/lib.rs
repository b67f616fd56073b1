//! Creation-time filename rules inside a bubblewrap sandbox (R-NAMEGUARD-1).
//!
//! bubblewrap can hide or freeze an existing path, but it cannot stop a
//! process from creating a *new* file called `.env`, `id.key` or `x.pem`
//! inside a writable mount (R-DISPATCH-3). This crate closes that gap from
//! inside the sandbox with seccomp user notification:
//!
//! - [`run`] (the `name-guard-exec` launcher) forks. The child sets
//!   `no_new_privs`, installs a seccomp filter with a listener and passes the
//!   listener to the parent over a socket pair, then execs the command.
//! - The filter sends every call that can create a name to the parent:
//!   `open`/`openat` whose flags hold `O_CREAT` or `O_TMPFILE` (tested in the
//!   filter), `creat`, every `openat2`, `mknod`/`mknodat`,
//!   `rename`/`renameat`/`renameat2`, `link`/`linkat` and
//!   `symlink`/`symlinkat`. It refuses with `EPERM` the calls that would go
//!   around the supervisor: `io_uring_setup`, `open_by_handle_at`,
//!   `name_to_handle_at`, `pidfd_getfd`, `ptrace` and `process_vm_writev`
//!   aimed at the supervisor, a nested filter asking for its own listener,
//!   every non-x86-64 system call ABI.
//! - The parent, the supervisor, is not filtered. For each notification it
//!   reads the path arguments once from the caller's memory (at most
//!   [`PATH_MAX`] bytes), checks that the notification is still valid,
//!   decides on the final path component, and either answers `EACCES` or
//!   performs the call itself with the checked bytes: the parent directory is
//!   opened relative to the caller's `/proc/PID/cwd`, `/proc/PID/fd/N` or
//!   `/proc/PID/root`, the call is made on that directory descriptor and the
//!   checked name under the caller's umask, and the result is returned
//!   (`SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SEND` for a new
//!   descriptor, keeping the caller's `O_CLOEXEC`). The supervisor never
//!   answers "continue", so a second thread that rewrites the path buffer
//!   changes nothing: the bytes decided on are the bytes used.
//! - A creating open follows a symbolic link at the final component itself,
//!   hop by hop (at most [`MAX_SYMLINK_HOPS`]), and opens the final name with
//!   `O_NOFOLLOW`, so `ok -> x.pem` cannot create `x.pem`; an existing file of
//!   a denied name may still be opened, never created.
//! - The supervisor makes itself non-dumpable, so the guarded process cannot
//!   read or write its memory. If it dies, the listener closes and every
//!   notified call in the guarded process fails (`ENOSYS`): the guard fails
//!   closed. When the command exits, the launcher exits with its status (a
//!   signal `N` becomes `128 + N`).
//!
//! Use it as the command bubblewrap runs:
//!
//! ```text
//! bwrap ... -- name-guard-exec --deny .env --deny '*.key' --deny '*.pem' -- CMD ARGS
//! ```
//!
//! # Example
//!
//! ```
//! use name_guard::{Invocation, Rules};
//!
//! let inv = Invocation::parse(["--deny", ".env", "--deny", "*.pem", "--", "true"])?;
//! assert_eq!(inv.command.len(), 1);
//! let rules = Rules::new([".env", "*.key", "*.pem"])?;
//! assert!(rules.denies_name(b"id.key"));
//! assert!(!rules.denies_name(b"notes.txt"));
//! # Ok::<(), name_guard::Error>(())
//! ```
//!
//! # Input safety
//!
//! Everything read from the guarded process is bounded: a path is at most
//! [`PATH_MAX`] bytes read page by page, an `openat2` `struct open_how` at
//! most 512 bytes (non-zero bytes past the known 24 are refused with
//! `E2BIG`), a symbolic link target at most [`PATH_MAX`] bytes and at most
//! [`MAX_SYMLINK_HOPS`] links per open. Rules are bounded by [`MAX_RULES`]
//! and [`MAX_RULE_LEN`]. A failure to read or resolve answers the call with
//! an error; nothing the guarded process does can panic the supervisor.
//!
//! Limits of this first step: x86-64 only; an `openat2` that creates with
//! `resolve` flags is answered `ENOSYS` (callers fall back to `openat`);
//! `mkdir` and `bind` of a Unix socket (which create names but hold no
//! data) are not supervised; the supervisor handles one call at a time.
//!
//! # Crate features
//!
//! None. The crate depends on `libc` (the system calls, in one module) and
//! `thiserror`.

mod error;
mod filter;
mod rules;
mod supervisor;
mod sys;

pub use error::{Error, ErrorKind};
pub use rules::{MAX_RULE_LEN, MAX_RULES, Rules};
pub use supervisor::{MAX_RETRIES, MAX_SYMLINK_HOPS, PATH_MAX, Stats};

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

/// Most arguments of the guarded command.
pub const MAX_COMMAND_ARGS: usize = 4096;

/// A parsed `name-guard-exec` command line:
/// `--deny GLOB... -- CMD ARGS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The denied names.
    pub rules: Rules,
    /// The command and its arguments (at least one element).
    pub command: Vec<OsString>,
}

impl Invocation {
    /// Parse the arguments after the program name.
    pub fn parse<I, S>(args: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut denies: Vec<String> = Vec::new();
        let mut it = args.into_iter().map(Into::into);
        let mut command = Vec::new();
        while let Some(a) = it.next() {
            if a == "--" {
                command.extend(it.by_ref().take(MAX_COMMAND_ARGS + 1));
                break;
            }
            if a == "--deny" {
                let Some(v) = it.next() else {
                    return Err(ErrorKind::Usage("--deny needs a value".into()).into());
                };
                let Some(v) = v.to_str() else {
                    return Err(ErrorKind::Usage("a rule is not UTF-8".into()).into());
                };
                if denies.len() >= MAX_RULES {
                    return Err(ErrorKind::TooManyRules { limit: MAX_RULES }.into());
                }
                denies.push(v.to_string());
                continue;
            }
            return Err(ErrorKind::Usage(format!(
                "unexpected argument {:?}; usage: name-guard-exec --deny GLOB... -- CMD ARGS",
                a.to_string_lossy()
            ))
            .into());
        }
        if command.is_empty() {
            return Err(ErrorKind::Usage("no command after --".into()).into());
        }
        if command.len() > MAX_COMMAND_ARGS {
            return Err(ErrorKind::Usage(format!(
                "more than {MAX_COMMAND_ARGS} command arguments"
            ))
            .into());
        }
        Ok(Invocation {
            rules: Rules::new(denies)?,
            command,
        })
    }
}

/// What the guarded command did, and what the supervisor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The exit code to report: the command's, or `128 + N` when a signal
    /// `N` ended it.
    pub exit_code: i32,
    /// The supervisor's counters.
    pub stats: Stats,
}

/// Run `inv.command` under the guard and supervise it until it exits.
///
/// Must be called from a single-threaded process (it forks), inside the
/// sandbox. Errors are setup failures; once the command runs, the outcome is
/// its exit status.
pub fn run(inv: &Invocation) -> Result<Outcome, Error> {
    if !cfg!(target_arch = "x86_64") {
        return Err(ErrorKind::UnsupportedPlatform.into());
    }
    let argv: Vec<CString> = inv
        .command
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| ErrorKind::Usage("an argument contains a NUL byte".into()))?;
    let prog = filter::program(sys::getpid());
    let (child, listener) =
        sys::spawn_filtered(&prog, &argv).map_err(|errno| ErrorKind::Spawn { errno })?;
    sys::ignore_signal(libc::SIGINT);
    sys::ignore_signal(libc::SIGQUIT);
    if let Err(errno) = sys::set_non_dumpable() {
        drop(listener);
        let _ = sys::wait_child(child);
        return Err(ErrorKind::Supervise { errno }.into());
    }
    supervise(listener, child, &inv.rules)
}

fn supervise(listener: std::os::fd::OwnedFd, child: i32, rules: &Rules) -> Result<Outcome, Error> {
    use std::os::fd::AsRawFd;
    let sup_err = |errno| Error::from(ErrorKind::Supervise { errno });
    let pidfd = sys::pidfd_open(child).map_err(sup_err)?;
    let mut sup = supervisor::Supervisor::new(listener.as_raw_fd(), rules);
    let mut listener = Some(listener);
    loop {
        let lfd = listener.as_ref().map(AsRawFd::as_raw_fd);
        let (lrev, prev) = sys::poll2(lfd, pidfd.as_raw_fd()).map_err(sup_err)?;
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
            let exit_code = match status {
                sys::ExitStatus::Code(c) => c,
                sys::ExitStatus::Signal(s) => 128 + s,
            };
            return Ok(Outcome {
                exit_code,
                stats: sup.stats,
            });
        }
    }
}
