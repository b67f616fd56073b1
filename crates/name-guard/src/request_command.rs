//! A command as a host's request gives it (argv, `KEY=VALUE` entries and a
//! working directory, as bytes), built for the session init and the
//! microvm agent alike: nothing of the starting process's environment.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// The command `argv` with exactly `env` in `cwd`; `None` for an empty
/// argv. An entry without `=` is a variable with an empty value.
pub(crate) fn command(
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    cwd: &[u8],
) -> Option<std::process::Command> {
    let program = argv.first()?;
    let mut c = std::process::Command::new(OsStr::from_bytes(program));
    c.args(argv.iter().skip(1).map(|a| OsStr::from_bytes(a)))
        .env_clear()
        .current_dir(OsStr::from_bytes(cwd));
    for kv in env {
        let (k, v) = match kv.iter().position(|b| *b == b'=') {
            Some(i) => (&kv[..i], kv.get(i + 1..).unwrap_or_default()),
            None => (kv.as_slice(), &b""[..]),
        };
        c.env(OsStr::from_bytes(k), OsStr::from_bytes(v));
    }
    Some(c)
}
