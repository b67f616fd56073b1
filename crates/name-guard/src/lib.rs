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
//!   `symlink`/`symlinkat`, `mkdir`/`mkdirat` (aarch64 has only the `*at`
//!   forms; each architecture's calls and numbers are one table, the
//!   `syscalls` module, from which the filter is built and by which the
//!   supervisor reads a call's arguments), `bind` (a Unix socket
//!   bound to a path creates a name; every bind is performed on a copy of
//!   the address) and `connect` (by path, only a Unix socket the guarded
//!   tree bound itself may be reached: a socket a host process makes in a
//!   writable mount is refused with `EACCES` and reported as a `connect`
//!   denial, `network-outbound` for a host; every connect is performed on
//!   a copy of the address, a path through an `O_PATH` descriptor of the
//!   checked socket, a blocking one on a worker thread). It refuses with
//!   `EPERM`
//!   the calls that would go around the supervisor: `io_uring_setup`,
//!   `open_by_handle_at`, `name_to_handle_at`, `pidfd_getfd`, `ptrace` and
//!   `process_vm_writev` aimed at the supervisor, a nested filter asking for
//!   its own listener, new mount or user namespaces (`unshare` and `clone`
//!   with `CLONE_NEWNS` or `CLONE_NEWUSER`), every mount call and `setns`
//!   (an overlay mount makes a file appear on a plain write), every
//!   system call ABI but the native one (on x86-64 the x32 ABI and i386
//!   `int 0x80`, on aarch64 32-bit compat calls); `clone3`, whose flags it
//!   cannot read,
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
//!   answers "continue" to a call with a path, so a second thread that
//!   rewrites the path buffer changes nothing: the bytes decided on are the
//!   bytes used.
//! - The caller's umask is read from its `/proc/TID/status` and remembered
//!   for its thread (held by a pidfd, so a reused thread id starts afresh).
//!   `umask(2)`, whose one argument is a number, is sent to the supervisor
//!   too and answered "continue": every remembered mask is forgotten, and
//!   none is remembered again until that caller has been seen once more or
//!   is gone, so each creation is made under the mask its caller has at
//!   that moment.
//! - The decision is on the final component (a trailing slash, as in
//!   `mkdir("x.pem/")`, is ignored for it) against the glob rules, and on
//!   the absolute path against the path rules, ignoring ASCII case (see
//!   [`Rules`]). A `renameat2` with `RENAME_EXCHANGE` or `RENAME_WHITEOUT`
//!   creates the old name too, so it is refused when either name is
//!   denied. A rename or a symbolic link is also refused when a path rule
//!   lies below the new name (moving a directory to `.claude` would bring
//!   `.claude/settings.json` into being).
//! - `--state-dir PATH` names a runner state directory: the glob rules (on
//!   the final component, such as `*.key`) do not hold strictly inside it,
//!   so the runner may keep its own keys there, while the path rules still
//!   do. A rename from inside one to anywhere else, or back, is answered
//!   `EXDEV`, as between two file systems: a tree made there reaches the
//!   rest only by a copy, each name created under the rules
//!   ([`Rules::state_dirs`]).
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
//!   signal `N` becomes `128 + N`). The command gets `SIGKILL` if the
//!   supervisor dies (`PR_SET_PDEATHSIG`).
//!
//! On the host, with no bubblewrap around it (the Landlock mechanism),
//! `--landlock` and its options ([`sandbox_core::HostConfinement`],
//! checked into [`HostRules`]) make the launcher apply Landlock rules to
//! itself before it forks, as a hard requirement (a kernel without Landlock
//! ABI 6 fails the run): reads everywhere but `--read-deny` paths (granted
//! on the siblings along each one's path, computed then), writes only below
//! `--write` trees and on the terminal and null devices, TCP `bind`
//! nowhere and `connect` only to the `--connect-tcp` ports, and the abstract
//! Unix socket and signal scopes. The filter then also sends the supervisor
//! every open that may write (`O_WRONLY`, `O_RDWR`, `O_TRUNC`), `truncate`,
//! `unlink`, `unlinkat`, `rmdir`, `getdents` and `getdents64`; allows only Unix stream and seqpacket
//! and TCP stream sockets (`EACCES` for UDP, raw, packet, netlink and Unix
//! datagram sockets); and refuses `MSG_FASTOPEN` sends. The supervisor
//! refuses (`EACCES`, reported) writing, truncating, removing, renaming or
//! linking a `--protect` path or anything below it, and a file that was
//! one at launch under any other name (by device and inode); an existing
//! file is opened for writing through the very descriptor that was
//! checked. A TCP connect reaches only 127.0.0.1 on a `--connect-tcp` port
//! (reported as `connect ADDRESS:PORT` otherwise). Listing a `--read-deny`
//! directory, or one below it, is refused (`EACCES`): Landlock's listing
//! right, granted on the directories above a secret so that they can be
//! listed, would hold for the secret too, so the supervisor lists every
//! directory itself (through the caller's own descriptor, into its buffer,
//! at most [`MAX_LISTING_READ`] bytes a call) after checking it.
//!
//! On the host nothing the command starts outlives it, as a pid namespace
//! would ensure: the supervisor is the tree's subreaper
//! (`PR_SET_CHILD_SUBREAPER`, so a double-forked or `setsid` process comes
//! back to it), and when the command exits it kills every process below
//! itself (found through `/proc`) and reaps them before it exits. It does
//! the same when its own parent (the host program) exits, however it died
//! (a `pidfd` of the parent, polled with the listener), and on `SIGUSR1`
//! ([`END_TREE_SIGNAL`], the host's "kill"); `SIGINT`, `SIGTERM` and
//! `SIGHUP` are passed on to every process below it. The command runs in
//! a Landlock domain nested in the supervisor's and scoped for signals, so
//! nothing in the tree can signal the supervisor (by pid, group or `-1`).
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
//! act as `name-guard-exec`. Its command line is
//! [`sandbox_core::NameGuardInvocation`], the value the bubblewrap plan
//! builds; [`Invocation`] is that line with its rules compiled.
//! [`kernel_release_supported`] tells whether a kernel release is at least
//! [`MIN_KERNEL`], which the guard needs (the probe's own decision,
//! [`sandbox_core::kernel_runs_name_guard`]).
//!
//! The rules, the report format and the command line are portable; the
//! filter, the supervisor and the system calls are Linux only (modules
//! behind `cfg(target_os = "linux")`), and [`run`] elsewhere fails with
//! [`ErrorKind::UnsupportedPlatform`].
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
//! whatever the bytes. The command line's limits are
//! [`sandbox_core::NameGuardInvocation`]'s: `--report-fd` takes at most six
//! decimal digits, at most [`MAX_RULES`] rules and [`MAX_COMMAND_ARGS`]
//! command arguments, none longer than
//! [`sandbox_core::NameGuardInvocation::MAX_ARG_BYTES`] or holding a NUL.
//!
//! Limits: x86-64 and aarch64 only (elsewhere [`run`] fails with
//! [`ErrorKind::UnsupportedPlatform`]); an `openat2` with `resolve` flags is answered
//! `ENOSYS` (callers fall back to `openat`); `bind` and `connect` are
//! performed on the caller's socket taken with `pidfd_getfd`, so a caller
//! the supervisor may not trace (one running an unreadable binary, or,
//! where Yama restricts tracing to descendants, a daemon that left the
//! guarded tree) cannot bind or connect, and the peer of such a connect
//! sees the supervisor's pid in `SO_PEERCRED` (the same user); Unix
//! datagrams sent with an address (`sendto`, `sendmsg`) are not judged;
//! a socket the tree bound is known by device and inode, so a host
//! socket that later reuses the inode of a deleted one would pass;
//! symbolic links in the middle
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
//! # Cost
//!
//! Every guarded call is a round trip to the supervisor: the caller
//! sleeps, the supervisor wakes, performs the call and hands the result
//! over. When the two run on different CPUs, each of those wake-ups may
//! have to wake an idle CPU, and on a virtual machine whose idle CPUs halt
//! at once that goes through the host: on a 2-CPU machine with the
//! `haltpoll` idle driver and guest halt polling off
//! (`/sys/module/haltpoll/parameters/guest_halt_poll_ns` at 0), extracting
//! 4000 small files on tmpfs took about 45 ms plain and 390 ms guarded,
//! and 115 ms guarded with that parameter at 200000
//! (`benches/README.md`). The guard does not pin the command to a CPU to
//! avoid this; a host that runs creation-heavy commands under it may want
//! guest halt polling on.
//!
//! # Crate features
//!
//! None. The crate depends on `sandbox-core` (the command line, the kernel
//! gate), `libc` on Linux (the system calls, in the `sys` modules) and
//! `thiserror`; its tests also use `tempfile`, and bubblewrap, `cc`, `git`,
//! `tar` and cargo from the machine.

mod error;
mod host;
mod invocation;
mod launch;
mod limits;
mod outcome;
pub mod report;
mod rules;

#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod guarded;
#[cfg(not(target_os = "linux"))]
#[path = "unsupported.rs"]
mod guarded;
#[cfg(target_os = "linux")]
mod landlock_rules;
#[cfg(target_os = "linux")]
mod proc_net;
#[cfg(target_os = "linux")]
mod request_command;
#[cfg(target_os = "linux")]
mod session_init;
#[cfg(target_os = "linux")]
mod supervisor;
#[cfg(target_os = "linux")]
mod sys;
#[cfg(target_os = "linux")]
mod syscalls;
#[cfg(target_os = "linux")]
mod tree;
#[cfg(target_os = "linux")]
mod vm_agent;

/// Entry points for the fuzz targets; not a stable API.
#[cfg(target_os = "linux")]
#[doc(hidden)]
pub mod fuzzing;

pub use error::{Error, ErrorKind};
pub use host::HostRules;
pub use invocation::{Invocation, MAX_COMMAND_ARGS};
#[cfg(target_os = "linux")]
pub use launch::{END_TREE_DEADLINE, END_TREE_SIGNAL, kill_tree_below, processes_below_ambient};
pub use launch::{MIN_KERNEL, Outcome, Stats, kernel_release_supported, launcher_main, run};
pub use limits::{
    MAX_LISTING_READ, MAX_RETRIES, MAX_SYMLINK_HOPS, MAX_WAITING_FIFO_OPENS, PATH_MAX,
};
pub use report::{
    Denial, DeniedCall, MAX_REPORT_LINE, VIOLATION_ACTION, format_denial_line, parse_denial_line,
};
pub use rules::{MAX_RULE_LEN, MAX_RULES, Rules};
#[cfg(target_os = "linux")]
pub use session_init::{SESSION_INIT_FLAG, run_if_asked as run_session_init_if_asked};
#[cfg(target_os = "linux")]
pub use vm_agent::{
    PORT_NAME as VM_AGENT_PORT_NAME, ROOT_FLAG as VM_AGENT_ROOT_FLAG,
    STDIO_FLAG as VM_AGENT_STDIO_FLAG, VM_AGENT_FLAG, run_if_asked as run_vm_agent_if_asked,
};
