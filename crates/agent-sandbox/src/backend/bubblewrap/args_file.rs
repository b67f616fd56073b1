//! Passing bubblewrap its options: on the command line, or through
//! `--args FD` when a plan is too long for one.

use crate::Error;
use std::ffi::OsString;
use std::path::Path;

/// Adds bubblewrap's options to `cmd`: on the command line when they fit,
/// else through `--args FD` from an unnamed file in `temp_dir`, which the
/// child inherits (keep the returned file until the spawn returned). Each
/// spawn needs its own file: bubblewrap reads it to the end.
pub(crate) fn options_for(
    cmd: &mut tokio::process::Command,
    options: &[OsString],
    temp_dir: &Path,
) -> Result<Option<std::fs::File>, Error> {
    let bytes: usize = options.iter().map(|a| a.len() + 1).sum();
    if bytes <= bwrap_spec::MAX_ARGV_BYTES {
        cmd.args(options);
        return Ok(None);
    }
    let (body, tail) = match options.split_last() {
        Some((last, body)) if last == "--" => (body, true),
        _ => (options, false),
    };
    let file = args_file(body, temp_dir)
        .map_err(|e| Error::io("writing bubblewrap's options to a file", e))?;
    let fd = rustix::fd::AsRawFd::as_raw_fd(&file);
    crate::process_fds::inherit_fds(cmd, [fd]);
    cmd.arg("--args").arg(fd.to_string());
    if tail {
        cmd.arg("--");
    }
    Ok(Some(file))
}

/// An unnamed file in `dir` (`O_TMPFILE`, never visible by name) holding
/// `args` NUL-separated, positioned at its start: the payload of
/// `bwrap --args FD`.
fn args_file(args: &[OsString], dir: &Path) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, Write};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE)
        .open(dir)?;
    let mut payload = Vec::new();
    for a in args {
        payload.extend_from_slice(a.as_encoded_bytes());
        payload.push(0);
    }
    f.write_all(&payload)?;
    f.rewind()?;
    Ok(f)
}
