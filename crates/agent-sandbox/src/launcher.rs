//! The host program as its own name-guard launcher: one call first in
//! `main` ([`run_inner_role_if_launched`]) and one builder setting
//! ([`crate::ManagerBuilder::inner_roles_from_current_exe`]), so a host
//! needs no second binary to run sessions with writable mounts.

use std::ffi::OsStr;

/// The first argument that starts the host program as the name guard's
/// launcher (inside the sandbox, in front of each command).
pub const NAME_GUARD_MARKER: &str = "--agent-sandbox-name-guard";

/// Runs this program's inner role and exits, when the program was started
/// as one of them inside a sandbox (first argument [`NAME_GUARD_MARKER`]):
/// the name guard in front of a command, a warm session's init, the agent
/// of a gVisor sandbox or QEMU guest, or a terminal's leader there. Returns
/// at once otherwise, having changed nothing.
///
/// Call it first in `main`, before any thread exists (the guard forks and
/// must be single-threaded; so not under `#[tokio::main]`, whose runtime
/// starts its threads before the body runs: build the runtime after this
/// call). A manager built with
/// [`crate::ManagerBuilder::inner_roles_from_current_exe`] starts the
/// program this way inside each sandbox. The exit status is the command's
/// (`128 + N` when signal `N` ended it); a usage or setup error is printed
/// on stderr, prefixed `name-guard-exec: `, and exits with 125.
pub fn run_inner_role_if_launched() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(NAME_GUARD_MARKER)) {
        return;
    }
    std::process::exit(guard_exit_code(args))
}

/// The former name of [`run_inner_role_if_launched`], which starts every
/// inner role, not only the name guard.
#[deprecated(since = "0.1.0", note = "renamed run_inner_role_if_launched")]
pub fn run_name_guard_if_launched() {
    run_inner_role_if_launched();
}

/// Runs the guard's command line `args` to its end: the exit code.
fn guard_exit_code(args: impl Iterator<Item = std::ffi::OsString>) -> i32 {
    let args: Vec<std::ffi::OsString> = args.collect();
    // A warm session's first process: the same program, as its init.
    #[cfg(target_os = "linux")]
    if let Some(code) = name_guard::run_session_init_if_asked(&args) {
        return code;
    }
    // A microvm guest's first process: the same program, as its agent.
    #[cfg(target_os = "linux")]
    if let Some(code) = name_guard::run_vm_agent_if_asked(&args) {
        return code;
    }
    let outcome = name_guard::Invocation::parse(args)
        .and_then(|inv| name_guard::run(&inv))
        .map(|o| o.exit_code & 0xff);
    outcome.unwrap_or_else(|e| {
        eprintln!("name-guard-exec: {e}");
        125
    })
}
