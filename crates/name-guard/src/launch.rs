//! Running a command under the guard: the outcome, the launcher program,
//! and the kernel it needs. The guarded run itself is Linux only
//! (`guarded.rs`); elsewhere [`run`] says the platform is unsupported.

use crate::{Error, Invocation};
use std::ffi::OsString;
use std::process::ExitCode;

/// The oldest kernel the guard runs on, as (major, minor):
/// `SECCOMP_ADDFD_FLAG_SEND` appeared in Linux 5.14 and
/// `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` in 5.19; without the latter a
/// signal can make a call the supervisor performed run a second time.
pub const MIN_KERNEL: (u32, u32) = sandbox_core::NAME_GUARD_MIN_KERNEL;

/// Whether a kernel release string (`uname -r`, such as
/// `"5.14.0-284.el9.x86_64"`) names a kernel at least [`MIN_KERNEL`].
/// Anything that does not start with `MAJOR.MINOR` is `false`. The same
/// decision as the host probe's ([`sandbox_core::kernel_runs_name_guard`]).
pub fn kernel_release_supported(release: &str) -> bool {
    sandbox_core::kernel_runs_name_guard(release)
}

/// The signal that makes a launcher on the host (`--landlock`) kill the
/// command and every process it started, then exit: the host's "kill"
/// (`SIGKILL` would end the supervisor alone and leave the tree behind).
/// `SIGUSR1`.
#[cfg(target_os = "linux")]
pub const END_TREE_SIGNAL: i32 = libc::SIGUSR1;

#[cfg(target_os = "linux")]
pub use crate::tree::END_TREE_DEADLINE;

/// The host's last resort for a supervisor (`supervisor`, its child, not
/// yet waited for) that did not end its tree: sends `SIGKILL` to every
/// live process below it, found through `/proc`, until none is left or
/// [`END_TREE_DEADLINE`] passed. What one forks while it dies is found in
/// the next pass; what dies stays below the supervisor as a zombie until
/// the supervisor itself is killed, which is the caller's next step (kill
/// it first and the tree would be orphaned away from it). Returns whether
/// nothing was left alive. Reads `/proc`: the ambient machine.
#[cfg(target_os = "linux")]
pub fn kill_tree_below(supervisor: u32) -> bool {
    let Ok(root) = i32::try_from(supervisor) else {
        return false;
    };
    crate::tree::kill_live_below(root, END_TREE_DEADLINE)
}

/// Every live process below `root` (its children, theirs, ...), found
/// through `/proc` by parent. Reads `/proc`: the ambient machine.
#[cfg(target_os = "linux")]
pub fn processes_below_ambient(root: u32) -> Vec<u32> {
    let Ok(root) = i32::try_from(root) else {
        return Vec::new();
    };
    crate::tree::live_below(root)
        .into_iter()
        .filter_map(|pid| u32::try_from(pid).ok())
        .collect()
}

pub use crate::outcome::{Outcome, Stats};

/// Run `inv.command` under the guard and supervise it until it exits.
///
/// Must be called from a single-threaded process (it forks), inside the
/// sandbox. Errors are setup failures; once the command runs, the outcome is
/// its exit status. Off Linux on x86-64 or aarch64 it fails with
/// [`crate::ErrorKind::UnsupportedPlatform`].
pub fn run(inv: &Invocation) -> Result<Outcome, Error> {
    crate::guarded::run(inv)
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
pub fn launcher_main<I, S>(args: I) -> ExitCode
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    #[cfg(target_os = "linux")]
    if let Some(code) = crate::session_init::run_if_asked(&args) {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    #[cfg(target_os = "linux")]
    if let Some(code) = crate::vm_agent::run_if_asked(&args) {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_gate_is_the_probe_s() {
        // The table is sandbox-core's (testdata/kernel.toml); this checks
        // that the guard asks the same question.
        for (release, want) in [
            ("6.1.0-18-amd64", true),
            ("5.19", true),
            ("5.14.0-284.el9.x86_64", false),
            ("+6.1", false),
            ("", false),
        ] {
            assert_eq!(kernel_release_supported(release), want, "{release:?}");
            assert_eq!(
                kernel_release_supported(release),
                sandbox_core::kernel_runs_name_guard(release)
            );
        }
        assert_eq!(MIN_KERNEL, (5, 19));
    }

    #[test]
    fn launcher_main_usage_errors_exit_125() {
        let code = launcher_main(["--deny", "a/b", "--", "true"]);
        assert_eq!(code, ExitCode::from(125));
        let code = launcher_main(["--bogus"]);
        assert_eq!(code, ExitCode::from(125));
    }
}
