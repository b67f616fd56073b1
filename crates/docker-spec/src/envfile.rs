//! The 0600 env file that carries secret variables.

use crate::{Error, ErrorKind};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// An env file written for one `docker run`; removed on drop.
#[derive(Debug)]
pub struct EnvFile {
    path: PathBuf,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl EnvFile {
    /// Creates a new file (never an existing one) with mode 0600 in `dir`
    /// and writes one `NAME=VALUE` line per variable. Names and values are
    /// already validated (no newline, no NUL).
    pub(crate) fn write(dir: &Path, vars: &[(String, String)]) -> Result<EnvFile, Error> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("docker-env-{}-{n}-{nanos}.env", std::process::id()));
        let io = |source| ErrorKind::EnvFile {
            path: path.clone(),
            source,
        };
        let mut file = private_new_file(&path).map_err(io)?;
        let guard = EnvFile { path: path.clone() };
        let mut text = String::new();
        for (name, value) in vars {
            text.push_str(name);
            text.push('=');
            text.push_str(value);
            text.push('\n');
        }
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(guard)
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A new file (never an existing one) that only its owner can read.
#[cfg(unix)]
fn private_new_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Off Unix the standard library cannot make a file private to its owner,
/// so secrets are refused rather than written with inherited access.
#[cfg(not(unix))]
fn private_new_file(_path: &Path) -> std::io::Result<std::fs::File> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "a 0600 env file for secrets can only be made on a Unix host",
    ))
}

impl Drop for EnvFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
