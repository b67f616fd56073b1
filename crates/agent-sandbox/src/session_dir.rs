//! A session's private (0700) directory on the host: the bridges' Unix
//! sockets (bubblewrap), the CA bundle, the temp dir (Seatbelt). Removed
//! with everything in it when the session ends.
//!
//! On Windows there is no POSIX mode: the directory is created under the
//! temp dir given (the user's own by default) and keeps the access that
//! directory gives its new children.

use crate::Error;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A private directory for one session, removed on drop.
#[derive(Debug)]
pub(crate) struct SessionDir {
    path: PathBuf,
}

impl SessionDir {
    /// Creates `<tmp>/agent-sandbox-<pid>-<n>` with mode 0700 (on Unix;
    /// on Windows with the access it inherits from `base`).
    pub(crate) fn create_in(base: &Path) -> Result<SessionDir, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = base.join(format!(
            "agent-sandbox-{}-{n}-{nanos:x}",
            std::process::id()
        ));
        std::fs::create_dir(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        #[cfg(unix)]
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io(format!("chmod 0700 {}", path.display()), e))?;
        Ok(SessionDir { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
