//! A successful bubblewrap trial remembered across processes, so that a
//! one-shot program (a CLI run per command) does not pay a trial launch
//! each time.
//!
//! The record lives in the user's runtime directory (`XDG_RUNTIME_DIR`,
//! only when it is a directory of this user's that nobody else may enter;
//! for root without one, `/run/agent-sandbox`, made 0700)
//! and holds a key of everything the answer depends on: the bubblewrap
//! binary (path, device, inode, size, modification time), the kernel
//! release, the user, and the user-namespace sysctls. A record is used for
//! at most [`TRIAL_TTL`]; only successes are kept, so a host that starts
//! refusing namespaces for another reason fails at launch (with
//! bubblewrap's own error, never unconfined), and a host that gets fixed is
//! offered at once.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a remembered success counts.
pub(crate) const TRIAL_TTL: Duration = Duration::from_secs(3600);

/// The record's file name in the runtime directory.
const RECORD: &str = "agent-sandbox-bwrap-trial";
/// The gVisor trial's record's file name in the runtime directory.
pub(crate) const GVISOR_RECORD: &str = "agent-sandbox-gvisor-trial";

/// The sysctls that decide whether an unprivileged user may make
/// namespaces.
#[cfg(unix)]
const SYSCTLS: &[&str] = &[
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

/// Root's record directory when it has no `XDG_RUNTIME_DIR` (a service, CI):
/// in `/run`, where only root may create entries.
#[cfg(unix)]
const ROOT_RUNTIME_DIR: &str = "/run/agent-sandbox";

/// The user's runtime directory, when it is one only this user may enter;
/// for root without one, `/run/agent-sandbox` (made 0700 when missing).
pub(crate) fn runtime_dir() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR") else {
        return root_runtime_dir();
    };
    let dir = PathBuf::from(dir);
    if !dir.is_absolute() {
        return None;
    }
    private_to_us(&dir).then_some(dir)
}

#[cfg(unix)]
fn root_runtime_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        return None;
    }
    let dir = PathBuf::from(ROOT_RUNTIME_DIR);
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    private_to_us(&dir).then_some(dir)
}

#[cfg(not(unix))]
fn root_runtime_dir() -> Option<PathBuf> {
    None
}

#[cfg(unix)]
fn private_to_us(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid());
    meta.is_dir() && meta.mode() & 0o077 == 0 && uid.is_ok_and(|u| u == meta.uid())
}

#[cfg(not(unix))]
fn private_to_us(_dir: &Path) -> bool {
    false
}

/// What a trial of `bwrap` depends on, as one line; `None` when it cannot
/// be known (then nothing is remembered).
pub(crate) fn key(bwrap: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(bwrap).ok()?;
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        let sysctls: Vec<String> = SYSCTLS
            .iter()
            .map(|p| {
                std::fs::read_to_string(p)
                    .map(|v| v.trim().to_owned())
                    .unwrap_or_else(|_| "-".to_owned())
            })
            .collect();
        Some(format!(
            "v1 {} {}:{}:{}:{} {} {uid} {}",
            bwrap.display(),
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            release.trim(),
            sysctls.join(",")
        ))
    }
    #[cfg(not(unix))]
    {
        let _ = bwrap;
        None
    }
}

/// Whether `dir` remembers a success for `key` younger than `ttl`.
pub(crate) fn remembered(dir: &Path, key: &str, ttl: Duration) -> bool {
    remembered_as(dir, RECORD, key, ttl)
}

/// [`remembered`] for the record named `record`.
pub(crate) fn remembered_as(dir: &Path, record: &str, key: &str, ttl: Duration) -> bool {
    let path = dir.join(record);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return false;
    };
    let fresh = meta
        .modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < ttl);
    fresh
        && meta.is_file()
        && meta.len() <= 4096
        && std::fs::read_to_string(&path).is_ok_and(|k| k == key)
}

/// What the record named `record` in `dir` holds after its first line,
/// when that line is `key` and the record is younger than `ttl`: a value
/// remembered with the success (one line, such as a runtime's version),
/// so that asking for it again can be skipped.
pub(crate) fn recalled(dir: &Path, record: &str, key: &str, ttl: Duration) -> Option<String> {
    let path = dir.join(record);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let fresh = meta
        .modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < ttl);
    if !fresh || !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let (first, value) = text.split_once('\n')?;
    (first == key && !value.is_empty() && !value.contains('\n')).then(|| value.to_owned())
}

/// Remembers a success for `key` in `dir` (written aside, then renamed in
/// place). A failure to write is not an error: the next process tries
/// bubblewrap again.
pub(crate) fn remember(dir: &Path, key: &str) {
    remember_as(dir, RECORD, key)
}

/// [`remember`] for the record named `record`.
pub(crate) fn remember_as(dir: &Path, record: &str, key: &str) {
    let tmp = dir.join(format!("{record}.{}", std::process::id()));
    if std::fs::write(&tmp, key).is_ok() && std::fs::rename(&tmp, dir.join(record)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn root_without_a_runtime_directory_gets_a_private_one_in_run() {
        use std::os::unix::fs::MetadataExt;
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        match root_runtime_dir() {
            Some(dir) => {
                assert!(root, "only root gets {ROOT_RUNTIME_DIR}");
                assert_eq!(dir, Path::new(ROOT_RUNTIME_DIR));
                let meta = std::fs::symlink_metadata(&dir).unwrap();
                assert!(meta.is_dir() && meta.mode() & 0o077 == 0 && meta.uid() == 0);
            }
            None => assert!(
                !root || !Path::new("/run").is_dir(),
                "root in a writable /run"
            ),
        }
    }

    #[test]
    fn a_success_is_remembered_for_its_key_and_its_time_only() {
        let dir = std::env::temp_dir().join(format!("trial-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(!remembered(&dir, "k1", TRIAL_TTL), "nothing yet");
        remember(&dir, "k1");
        assert!(remembered(&dir, "k1", TRIAL_TTL));
        assert!(!remembered(&dir, "k2", TRIAL_TTL), "another key");
        assert!(!remembered(&dir, "k1", Duration::ZERO), "too old");
        remember(&dir, "k2");
        assert!(remembered(&dir, "k2", TRIAL_TTL) && !remembered(&dir, "k1", TRIAL_TTL));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_value_remembered_with_a_success_is_recalled_for_its_key_only() {
        let dir = std::env::temp_dir().join(format!("trial-recall-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = GVISOR_RECORD;
        assert_eq!(
            recalled(&dir, r, "gvisor k1", TRIAL_TTL),
            None,
            "nothing yet"
        );
        remember_as(&dir, r, "gvisor k1\n20221219");
        assert_eq!(
            recalled(&dir, r, "gvisor k1", TRIAL_TTL).as_deref(),
            Some("20221219")
        );
        assert_eq!(
            recalled(&dir, r, "gvisor k2", TRIAL_TTL),
            None,
            "another runsc"
        );
        assert_eq!(
            recalled(&dir, r, "gvisor k1", Duration::ZERO),
            None,
            "too old"
        );
        // An earlier record without a value, or with more than one line.
        for bad in ["gvisor k1", "gvisor k1\n", "gvisor k1\na\nb"] {
            remember_as(&dir, r, bad);
            assert_eq!(recalled(&dir, r, "gvisor k1", TRIAL_TTL), None, "{bad:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_key_names_the_binary_the_kernel_and_the_user() {
        let k = key(Path::new("/bin/sh")).unwrap();
        assert!(k.starts_with("v1 /bin/sh "), "{k}");
        assert!(key(Path::new("/no/such/bwrap")).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn only_a_private_directory_of_ours_is_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("trial-cache-dir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(private_to_us(&dir));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!private_to_us(&dir), "others may enter");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
