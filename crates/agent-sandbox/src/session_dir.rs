//! A session's private (0700) directory on the host: the bridges' Unix
//! sockets (bubblewrap), the CA bundle, the temp dir (Seatbelt). Removed
//! with everything in it when the session ends.
//!
//! A host process killed with `SIGKILL` cannot remove it. So each one
//! records its owner (`owner`: the process's pid and start time, written
//! before anything else), and [`remove_left_behind_in`] (run when a
//! manager is built) removes the directories of owners that are gone: ours
//! by uid and mode, with an owner record that names a process that no
//! longer runs, never by name alone. On Linux only (elsewhere no start time
//! can be read, and nothing is removed).
//!
//! On Windows there is no POSIX mode: the directory is created under the
//! temp dir given (the user's own by default) and keeps the access that
//! directory gives its new children.

use crate::Error;
use sandbox_core::ProcessStamp;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What a session directory's name starts with.
const PREFIX: &str = "agent-sandbox-";
/// The file in a session directory that names its owner.
const OWNER_FILE: &str = "owner";
/// The directory of a gVisor session's runtime state (runsc's `--root`).
#[cfg(unix)]
const RUNTIME_STATE: &str = "state";

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
        let dir = SessionDir { path };
        if let Some(me) = ProcessStamp::current_from_ambient() {
            let owner = dir.path.join(OWNER_FILE);
            std::fs::write(&owner, format!("{me}\n"))
                .map_err(|e| Error::io(format!("writing {}", owner.display()), e))?;
        }
        Ok(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionDir {
    fn drop(&mut self) {
        let _ = remove_tree(&self.path);
    }
}

/// Removes `path` with everything below it. A directory its owner cannot
/// read (the `work` directory an overlay mount leaves behind has mode 0)
/// is made readable first, links not followed, then the removal is tried
/// again.
pub(crate) fn remove_tree(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(first) => {
            #[cfg(unix)]
            {
                drop(first);
                let mut stack = vec![path.to_path_buf()];
                let mut seen = 0usize;
                while let Some(dir) = stack.pop() {
                    seen += 1;
                    if seen > 1_000_000 {
                        break;
                    }
                    let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                        continue;
                    };
                    if !meta.is_dir() {
                        continue;
                    }
                    let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
                    if let Ok(entries) = std::fs::read_dir(&dir) {
                        stack.extend(entries.flatten().map(|e| e.path()));
                    }
                }
                std::fs::remove_dir_all(path)
            }
            #[cfg(not(unix))]
            Err(first)
        }
    }
}

/// Most entries of a temp dir kept readable by [`hidden_sessions_in`];
/// those past it are unreadable (fail closed).
#[cfg(target_os = "linux")]
const MAX_KEPT_READABLE: usize = 4096;

/// How a session without a mount namespace (the Landlock mechanism, whose
/// reads are allowed everywhere but the denied paths) is kept from reading
/// other sessions' directories in `base`, the manager's temp dir: `base`
/// itself denied, and read again: `own` (the session's directories and
/// mounts that lie in `base`) and every entry of `base` that is not a
/// session directory, as it is now (a deny below one still holds: the
/// nearer rule wins). Another session's directory, whenever it is made, is
/// then unreadable, and so is anything made in `base` after the launch
/// (fail closed). Returns `(deny, read_again)`; both empty when `base` is
/// `/` (nothing can be denied there without denying everything). Reads the
/// ambient file system (the listing of `base`).
#[cfg(target_os = "linux")]
pub(crate) fn hidden_sessions_in(base: &Path, own: &[&Path]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    if base.parent().is_none() {
        return (Vec::new(), Vec::new());
    }
    let mut again: Vec<PathBuf> = own
        .iter()
        .filter(|p| p.starts_with(base) && *p != &base)
        .map(|p| p.to_path_buf())
        .collect();
    if let Ok(entries) = std::fs::read_dir(base) {
        let others = entries
            .flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with(PREFIX))
            .take(MAX_KEPT_READABLE);
        again.extend(others.map(|e| e.path()));
    }
    (vec![base.to_path_buf()], again)
}

/// Removes the session directories in `base` whose owning process is gone
/// (killed before it could remove them), and returns them. A directory is
/// removed only when all of these hold: its name starts with
/// `agent-sandbox-`, it is a directory (not a link to one), it is this
/// user's and mode 0700, it holds no gVisor runtime state (`state/`),
/// its `owner` record reads as a [`ProcessStamp`],
/// and that process no longer runs (its pid is free, or held by a process
/// that started at another time). One still being made (no record yet) or
/// from another user is left alone. Reads and changes the ambient file
/// system; does nothing elsewhere than Linux.
pub(crate) fn remove_left_behind_in(base: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    if !cfg!(target_os = "linux") {
        return removed;
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return removed;
    };
    // A bound on the work one build does in a crowded temp dir.
    for entry in entries.flatten().take(100_000) {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        if is_left_behind(&path) && remove_tree(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(unix)]
fn is_left_behind(path: &Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_dir()
        || meta.uid() != rustix::process::geteuid().as_raw()
        || meta.mode() & 0o777 != 0o700
    {
        return false;
    }
    // A gVisor session's runtime state: its sandbox, started detached, may
    // still run after its host was killed, and runsc can end it only
    // through this state. Left for `runsc --root=DIR/state kill`, not
    // removed from under a running sandbox.
    if path.join(RUNTIME_STATE).exists() {
        return false;
    }
    let Ok(f) = std::fs::File::open(path.join(OWNER_FILE)) else {
        return false;
    };
    let mut text = Vec::new();
    if f.take(sandbox_core::MAX_STAMP_LEN as u64 + 1)
        .read_to_end(&mut text)
        .is_err()
    {
        return false;
    }
    ProcessStamp::parse(&text)
        .is_some_and(|owner| owner.pid != std::process::id() && owner.is_gone_from_ambient())
}

#[cfg(not(unix))]
fn is_left_behind(_path: &Path) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test code: a failed unwrap is a failed test"
    )]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[cfg(target_os = "linux")]
    #[test]
    fn other_sessions_are_hidden_and_the_rest_reads_again() {
        let base = std::env::temp_dir().join(format!("hidden-sessions-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in [
            "agent-sandbox-1-0-a",
            "agent-sandbox-2-0-b",
            "user-file-dir",
        ] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let own = base.join("agent-sandbox-2-0-b");
        let view = base.join("agent-sandbox-3-0-c/repo");
        let elsewhere = Path::new("/srv/x");
        let (deny, again) = super::hidden_sessions_in(&base, &[&own, &view, elsewhere]);
        assert_eq!(deny, std::slice::from_ref(&base));
        let mut again: Vec<String> = again
            .iter()
            .map(|p| p.strip_prefix(&base).unwrap().display().to_string())
            .collect();
        again.sort();
        assert_eq!(
            again,
            [
                "agent-sandbox-2-0-b",
                "agent-sandbox-3-0-c/repo",
                "user-file-dir"
            ]
        );
        assert_eq!(
            super::hidden_sessions_in(Path::new("/"), &[&own]),
            (vec![], vec![])
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    fn dir_with_owner(base: &Path, name: &str, owner: Option<&str>, mode: u32) -> PathBuf {
        let d = base.join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("sock"), "").unwrap();
        if let Some(o) = owner {
            std::fs::write(d.join(OWNER_FILE), o).unwrap();
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    }

    #[test]
    fn only_directories_of_owners_that_are_gone_are_removed() {
        let base = std::env::temp_dir().join(format!("session-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir(&base).unwrap();
        let me = ProcessStamp::current_from_ambient().unwrap();
        let init = ProcessStamp::of_pid_from_ambient(1).unwrap();
        let gone = format!("{} 1\n", u32::MAX - 1);
        let reused = format!("{} {}\n", init.pid, init.start_time + 1);
        let live = format!("{init}\n");
        let mine = format!("{me}\n");
        let removed_ones = [
            dir_with_owner(&base, "agent-sandbox-1-0-a", Some(&gone), 0o700),
            dir_with_owner(&base, "agent-sandbox-1-0-b", Some(&reused), 0o700),
        ];
        let kept = [
            dir_with_owner(&base, "agent-sandbox-2-0-a", Some(&live), 0o700),
            dir_with_owner(&base, "agent-sandbox-2-0-b", Some(&mine), 0o700),
            dir_with_owner(&base, "agent-sandbox-2-0-c", None, 0o700),
            dir_with_owner(&base, "agent-sandbox-2-0-d", Some("junk"), 0o700),
            dir_with_owner(&base, "agent-sandbox-2-0-e", Some(&gone), 0o755),
            dir_with_owner(&base, "something-else", Some(&gone), 0o700),
            {
                let d = dir_with_owner(&base, "agent-sandbox-2-0-f", Some(&gone), 0o700);
                std::fs::create_dir(d.join(RUNTIME_STATE)).unwrap();
                d
            },
        ];
        let target = dir_with_owner(&base, "target", Some(&gone), 0o700);
        std::os::unix::fs::symlink(&target, base.join("agent-sandbox-link")).unwrap();
        let mut removed = remove_left_behind_in(&base);
        removed.sort();
        assert_eq!(removed, removed_ones);
        for d in &removed_ones {
            assert!(!d.exists(), "{}", d.display());
        }
        for d in kept.iter().chain([&target]) {
            assert!(d.join("sock").exists(), "{}", d.display());
        }
        assert!(base.join("agent-sandbox-link").exists());
        // A new session directory records its owner: this process.
        let fresh = SessionDir::create_in(&base).unwrap();
        assert_eq!(
            std::fs::read_to_string(fresh.path().join(OWNER_FILE)).unwrap(),
            mine
        );
        assert!(remove_left_behind_in(&base).is_empty());
        drop(fresh);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
