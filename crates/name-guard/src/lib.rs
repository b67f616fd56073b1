//! Creation-time filename rules inside a bubblewrap sandbox (R-NAMEGUARD-1).
//!
//! bubblewrap can hide or freeze an existing path, but it cannot stop a
//! process from creating a *new* file called `.env`, `id.key` or `x.pem`
//! inside a writable mount (R-DISPATCH-3). This crate closes that gap from
//! inside the sandbox with seccomp user notification:
//!
//! - [`run`] (the `name-guard-exec` launcher) gives up every capability
//!   (so the supervisor can do nothing on the command's behalf that the
//!   command could not, and the command cannot trace it), then forks. The
//!   child sets `no_new_privs`, installs a seccomp filter with a listener
//!   and passes the listener to the parent over a socket pair, then execs
//!   the command.
//! - The filter sends every call that can create a name to the parent:
//!   `open`/`openat` whose flags hold `O_CREAT` or `O_TMPFILE` (tested in the
//!   filter), `creat`, every `openat2`, `mknod`/`mknodat`,
//!   `rename`/`renameat`/`renameat2`, `link`/`linkat`,
//!   `symlink`/`symlinkat`, `mkdir`/`mkdirat` and `bind` (a Unix socket
//!   bound to a path creates a name; every bind is performed on a copy of
//!   the address). It refuses with `EPERM`
//!   the calls that would go around the supervisor: `io_uring_setup`,
//!   `open_by_handle_at`, `name_to_handle_at`, `pidfd_getfd`, `ptrace` and
//!   `process_vm_writev` aimed at the supervisor, a nested filter asking for
//!   its own listener, new mount or user namespaces (`unshare` and `clone`
//!   with `CLONE_NEWNS` or `CLONE_NEWUSER`), every mount call and `setns`
//!   (an overlay mount makes a file appear on a plain write), every
//!   non-x86-64 system call ABI; `clone3`, whose flags it cannot read,
//!   answers `ENOSYS` (the C library falls back to `clone`).
//!   `prctl(PR_SET_DUMPABLE, 0)` answers 0 and changes nothing: the
//!   supervisor, without capabilities, could not read a non-dumpable
//!   caller's path arguments.
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
//! - The decision is on the final component (a trailing slash, as in
//!   `mkdir("x.pem/")`, is ignored for it) against the glob rules, and on
//!   the absolute path against the path rules, ignoring ASCII case (see
//!   [`Rules`]). A `renameat2` with `RENAME_EXCHANGE` or `RENAME_WHITEOUT`
//!   creates the old name too, so it is refused when either name is
//!   denied. A rename or a symbolic link is also refused when a path rule
//!   lies below the new name (moving a directory to `.claude` would bring
//!   `.claude/settings.json` into being).
//! - The supervisor acts as itself, so in procfs it only serves the
//!   caller's own `/proc/PID` (`/proc/self/...`, and `/dev/fd/N`,
//!   `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, which are read as links
//!   into its descriptor directory): such a name opens the caller's own
//!   entry or open file, creating nothing. Every other procfs parent (the
//!   supervisor's own `/proc/PID/mem`, reached directly or through a
//!   planted link, another process's entries) is refused with `EACCES`.
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
//! # Denial reports
//!
//! With `--report-fd N`, the launcher marks descriptor `N` close-on-exec
//! before it forks (the guarded command never holds it) and non-blocking,
//! and the supervisor writes one line per refusal to it:
//! `<call> <escaped-absolute-path>\n`, for example `open /w/x.pem`. The
//! format, its escaping and its parser ([`parse_denial_line`]) are in
//! [`report`]. Writing never blocks the supervisor: a line the descriptor
//! does not take at once is dropped and counted in
//! [`Stats::reports_dropped`]. `N` must be open (else [`run`] fails with
//! [`ErrorKind::ReportFd`]) and may not be 0, 1 or 2. `O_NONBLOCK` is set on
//! the open file description, which other holders of it share.
//!
//! [`launcher_main`] is the whole launcher program, so any host binary can
//! act as `name-guard-exec`. [`kernel_release_supported`] tells whether a
//! kernel release is at least [`MIN_KERNEL`], which the guard needs.
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
//! assert!(rules.denies_name(b"X.PEM"));
//! let d = name_guard::parse_denial_line(b"mkdir /w/id.key\n")?;
//! assert_eq!((d.call.as_str(), d.path.as_str()), ("mkdir", "/w/id.key"));
//! assert!(name_guard::kernel_release_supported("6.1.0-18-amd64"));
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
//! an error; nothing the guarded process does can panic the supervisor. A
//! denial report line is at most [`MAX_REPORT_LINE`] bytes (a longer path is
//! cut); [`parse_denial_line`] refuses longer lines and never panics,
//! whatever the bytes. `--report-fd` takes at most six decimal digits.
//!
//! Limits: x86-64 only; an `openat2` with `resolve` flags is answered
//! `ENOSYS` (callers fall back to `openat`); `bind` is performed on the
//! caller's socket taken with `pidfd_getfd`, so a caller the supervisor may
//! not trace (one running an unreadable binary, or, where Yama restricts
//! tracing to descendants, a daemon that left the guarded tree) cannot
//! bind; symbolic links in the middle
//! of a path are resolved by the kernel for the supervisor (the same mount
//! namespace, since the command cannot make another), so one pointing into
//! `/proc/self` reaches the supervisor's entries and is refused; the
//! supervisor handles one call at a time, except the open of an existing
//! FIFO, which waits for its other end on a worker thread so that it never
//! holds up the calls of the process that would open that other end (a
//! wait whose caller is gone is released by opening the other end for an
//! instant; past [`MAX_WAITING_FIFO_OPENS`] waiting at once, a FIFO open
//! answers `EAGAIN`); rules match ASCII case
//! insensitively only (other Unicode case folding is not applied); `mkdir`,
//! `mknod`, `symlink` or `link` onto a denied name that already exists
//! answer `EEXIST`, as the kernel would, and report nothing;
//! [`run`] does not check the kernel version itself. A report
//! line is written only for a refusal because a rule matched, not for other
//! errors; a line longer than `PIPE_BUF` (4096 bytes) may reach a pipe in
//! two writes, and if the command ends while the reader is not reading, the
//! rest is dropped after about a second and the reader sees a line without
//! its `\n`.
//!
//! # Crate features
//!
//! None. The crate depends on `libc` (the system calls, in one module) and
//! `thiserror`; its tests also use `tempfile`, and bubblewrap, `cc`, `git`,
//! `tar` and cargo from the machine.

mod error;
mod filter;
pub mod report;
mod rules;
mod supervisor;
mod sys;

pub use error::{Error, ErrorKind};
pub use report::{
    Denial, DeniedCall, MAX_REPORT_LINE, VIOLATION_ACTION, format_denial_line, parse_denial_line,
};
pub use rules::{MAX_RULE_LEN, MAX_RULES, Rules};
pub use supervisor::{MAX_RETRIES, MAX_SYMLINK_HOPS, MAX_WAITING_FIFO_OPENS, PATH_MAX, Stats};

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

/// Most arguments of the guarded command.
pub const MAX_COMMAND_ARGS: usize = 4096;

/// Largest descriptor number `--report-fd` accepts, plus one.
const REPORT_FD_LIMIT: i32 = 1_000_000;

const USAGE: &str = "usage: name-guard-exec [--report-fd N] --deny GLOB... -- CMD ARGS";

/// The oldest kernel the guard runs on, as (major, minor):
/// `SECCOMP_ADDFD_FLAG_SEND` appeared in Linux 5.14 and
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` in 5.19; without the latter a
/// signal can make a call the supervisor performed run a second time.
pub const MIN_KERNEL: (u32, u32) = (5, 19);

/// Whether a kernel release string (`uname -r`, such as
/// `"5.14.0-284.el9.x86_64"`) names a kernel at least [`MIN_KERNEL`].
/// Anything that does not start with `MAJOR.MINOR` is `false`.
pub fn kernel_release_supported(release: &str) -> bool {
    fn number(s: &str) -> Option<(u32, &str)> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            return None;
        }
        Some((s[..end].parse().ok()?, &s[end..]))
    }
    let Some((major, rest)) = number(release.trim()) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix('.') else {
        return false;
    };
    let Some((minor, _)) = number(rest) else {
        return false;
    };
    (major, minor) >= MIN_KERNEL
}

/// A parsed `name-guard-exec` command line:
/// `[--report-fd N] --deny GLOB... -- CMD ARGS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The denied names.
    pub rules: Rules,
    /// The command and its arguments (at least one element).
    pub command: Vec<OsString>,
    /// The descriptor denial reports are written to (`--report-fd N`); see
    /// [`report`].
    pub report_fd: Option<i32>,
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
        let mut report_fd = None;
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
            if a == "--report-fd" {
                if report_fd.is_some() {
                    return Err(ErrorKind::Usage("--report-fd given twice".into()).into());
                }
                let Some(v) = it.next() else {
                    return Err(ErrorKind::Usage("--report-fd needs a value".into()).into());
                };
                report_fd = Some(parse_report_fd(&v)?);
                continue;
            }
            return Err(ErrorKind::Usage(format!(
                "unexpected argument {:?}; {USAGE}",
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
            report_fd,
        })
    }
}

/// A descriptor number: decimal digits only, below one million, and not a
/// standard stream (the guarded command keeps those).
fn parse_report_fd(v: &std::ffi::OsStr) -> Result<i32, Error> {
    let bad = || -> Error {
        ErrorKind::Usage(format!(
            "--report-fd needs a descriptor number from 3 to {}, not {:?}",
            REPORT_FD_LIMIT - 1,
            v.to_string_lossy().chars().take(32).collect::<String>()
        ))
        .into()
    };
    let b = v.as_bytes();
    if b.is_empty() || b.len() > 6 || !b.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let n: i32 = v.to_str().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    if !(3..REPORT_FD_LIMIT).contains(&n) {
        return Err(bad());
    }
    Ok(n)
}

/// The whole `name-guard-exec` program: parse `args` (the arguments after
/// the program name), run the command under the guard and return its exit
/// status. A usage or setup error is printed on stderr, prefixed
/// `name-guard-exec: `, and gives 125. When the environment variable
/// `NAME_GUARD_STATS` is set, the supervisor's counters are printed on
/// stderr at the end: `name-guard-exec: handled N calls, denied M`, followed
/// by `, reports dropped K` when `--report-fd` is given.
///
/// Any host program can act as the launcher by calling this (for example
/// when it is invoked under another name); it must be single-threaded at
/// that point, as [`run`] forks.
pub fn launcher_main<I, S>(args: I) -> std::process::ExitCode
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    use std::process::ExitCode;
    let inv = match Invocation::parse(args) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("name-guard-exec: {e}");
            return ExitCode::from(125);
        }
    };
    match run(&inv) {
        Ok(out) => {
            if std::env::var_os("NAME_GUARD_STATS").is_some() {
                if inv.report_fd.is_some() {
                    eprintln!(
                        "name-guard-exec: handled {} calls, denied {}, reports dropped {}",
                        out.stats.handled, out.stats.denied, out.stats.reports_dropped
                    );
                } else {
                    eprintln!(
                        "name-guard-exec: handled {} calls, denied {}",
                        out.stats.handled, out.stats.denied
                    );
                }
            }
            ExitCode::from(u8::try_from(out.exit_code & 0xff).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("name-guard-exec: {e}");
            ExitCode::from(125)
        }
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
    if let Some(fd) = inv.report_fd {
        // Close-on-exec before the fork, so the guarded command never holds
        // it; non-blocking, so a full pipe never stalls the supervisor.
        sys::set_cloexec_nonblock(fd).map_err(|errno| ErrorKind::ReportFd { fd, errno })?;
    }
    sys::ignore_signal(libc::SIGPIPE);
    // The supervisor and the command run with no capability at all.
    sys::drop_all_capabilities().map_err(|errno| ErrorKind::Supervise { errno })?;
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
    supervise(listener, child, &inv.rules, inv.report_fd)
}

fn supervise(
    listener: std::os::fd::OwnedFd,
    child: i32,
    rules: &Rules,
    report_fd: Option<i32>,
) -> Result<Outcome, Error> {
    use std::os::fd::AsRawFd;
    let sup_err = |errno| Error::from(ErrorKind::Supervise { errno });
    let pidfd = sys::pidfd_open(child).map_err(sup_err)?;
    let mut sup = supervisor::Supervisor::new(listener.as_raw_fd(), rules, report_fd);
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
        let (lrev, prev) = sys::poll2(lfd, pidfd.as_raw_fd(), timeout).map_err(sup_err)?;
        sup.release_abandoned_fifo_opens();
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
            sup.finish_reports();
            return Ok(Outcome {
                exit_code,
                stats: sup.stats,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases() {
        let table = [
            ("6.18.44-fc-v857", true),
            ("5.19.0-46-generic", true),
            ("5.19", true),
            ("5.14.0-284.el9.x86_64", false),
            ("5.15.0-1051-azure", false),
            ("6.8.0-1015-azure", true),
            ("10.0.1", true),
            ("6.0", true),
            ("5.13.19-arch1", false),
            ("5.4.0-150-generic", false),
            ("4.4.0-19041-Microsoft", false),
            ("4.20.0", false),
            ("3.10.0-1160.el7.x86_64", false),
            ("", false),
            ("linux", false),
            ("5", false),
            ("5.", false),
            (".14", false),
            ("v5.14", false),
            ("5,14", false),
            ("-6.1", false),
            ("99999999999.1", false),
            ("6.99999999999", false),
        ];
        for (release, want) in table {
            assert_eq!(kernel_release_supported(release), want, "{release:?}");
        }
    }

    #[test]
    fn report_fd_option() {
        let inv = Invocation::parse(["--report-fd", "3", "--deny", ".env", "--", "true"]).unwrap();
        assert_eq!(inv.report_fd, Some(3));
        let inv =
            Invocation::parse(["--deny", ".env", "--report-fd", "999999", "--", "x"]).unwrap();
        assert_eq!(inv.report_fd, Some(999_999));
        assert_eq!(inv.command, vec![OsString::from("x")]);
        // After `--` it belongs to the command.
        let inv = Invocation::parse(["--", "cmd", "--report-fd", "3"]).unwrap();
        assert_eq!(inv.report_fd, None);
        assert_eq!(inv.command.len(), 3);
        for bad in [
            &["--report-fd", "3", "--report-fd", "4", "--", "x"][..],
            &["--report-fd", "1000000", "--", "x"],
            &["--report-fd", "-1", "--", "x"],
            &["--report-fd", "+4", "--", "x"],
            &["--report-fd", "", "--", "x"],
            &["--report-fd", "3a", "--", "x"],
            &["--report-fd", " 3", "--", "x"],
            &["--report-fd", "1", "--", "x"],
            &["--report-fd", "0", "--", "x"],
            &["--report-fd"],
        ] {
            let e = Invocation::parse(bad.iter().copied()).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::Usage(_)), "{bad:?}: {e}");
        }
    }

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
    fn launcher_main_usage_errors_exit_125() {
        let code = launcher_main(["--deny", "a/b", "--", "true"]);
        assert_eq!(code, std::process::ExitCode::from(125));
        let code = launcher_main(["--bogus"]);
        assert_eq!(code, std::process::ExitCode::from(125));
    }
}
