//! The host view: every fact the probe and path resolution read from the
//! host goes through [`HostView`], so tests describe a host instead of
//! touching the real one (R-PROBE-3).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// The operating system family of a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Os {
    /// Linux (including WSL).
    Linux,
    /// macOS.
    MacOs,
    /// Windows.
    Windows,
    /// Anything else (BSDs, illumos, ...).
    Other,
}

impl Os {
    /// The OS this binary was compiled for.
    pub fn current() -> Os {
        if cfg!(target_os = "linux") {
            Os::Linux
        } else if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(target_os = "windows") {
            Os::Windows
        } else {
            Os::Other
        }
    }

    /// Parses `linux`, `macos`, `windows` or anything else (as `Other`).
    pub fn from_name(name: &str) -> Os {
        match name.to_ascii_lowercase().as_str() {
            "linux" => Os::Linux,
            "macos" | "darwin" => Os::MacOs,
            "windows" => Os::Windows,
            _ => Os::Other,
        }
    }
}

/// Read access to the facts of a host that the probe and path sets need.
///
/// [`AmbientHost`] reads the real machine; [`FakeHost`] is a described one
/// for tests. Implementations must not panic and should bound every call in
/// time (a hung network file system must not hang the host program).
pub trait HostView {
    /// The host's OS family.
    fn os(&self) -> Os;
    /// An environment variable of the host program (`PATH`, ...).
    fn var_os(&self, name: &str) -> Option<OsString>;
    /// The first few KiB of a small text file such as
    /// `/proc/sys/kernel/osrelease`, or `None` if it cannot be read.
    fn read_small_file(&self, path: &Path) -> Option<String>;
    /// Whether `path` is a regular file with an execute bit set.
    fn is_executable_file(&self, path: &Path) -> bool;
    /// Whether `path` exists (any file type, symlinks followed).
    fn exists(&self, path: &Path) -> bool;
    /// The path with every symlink resolved, or `None` if it does not exist
    /// or cannot be resolved.
    fn canonicalize(&self, path: &Path) -> Option<PathBuf>;
    /// Whether `path` is a directory (symlinks followed). The provided
    /// implementation answers `false`, which makes callers treat an entry as a
    /// file.
    fn is_dir(&self, path: &Path) -> bool {
        let _ = path;
        false
    }
    /// Whether `path` is known to be a regular file (symlinks followed).
    /// `false` means "not known to be": a missing path, another type, a
    /// lookup that failed or timed out. The provided implementation answers
    /// `false`, so callers that narrow a rule for files (a Seatbelt
    /// `literal` instead of `subpath`) keep the wider one.
    fn is_file(&self, path: &Path) -> bool {
        let _ = path;
        false
    }

    /// The names in the directory `path` (symlinks followed; no `.` or
    /// `..`), at most [`MAX_LISTED_NAMES`], or `None` when it cannot be
    /// listed: missing, not a directory, unreadable, over the limit, or a
    /// lookup that timed out. The provided implementation answers `None`,
    /// so a caller that must see every entry (the matches of a read-deny
    /// glob) refuses rather than miss one.
    fn list_dir(&self, path: &Path) -> Option<Vec<OsString>> {
        let _ = path;
        None
    }

    /// Starts the bubblewrap at `bwrap` once, with the namespaces a real
    /// launch uses, running `true` ([`BWRAP_TRY_ARGS`]), and says whether it
    /// worked: `Err` carries what bubblewrap said. A host where bubblewrap
    /// is installed but cannot make namespaces (no user namespaces for
    /// this user, a container without the capability) fails here, so the
    /// probe never offers it. The provided implementation answers `Err`
    /// (fail closed): a view that cannot run programs cannot vouch for one.
    /// The real host remembers a success for an hour in the user's private
    /// runtime directory (`XDG_RUNTIME_DIR`), keyed by the binary, the
    /// kernel, the user and the user-namespace sysctls.
    fn try_bubblewrap(&self, bwrap: &Path) -> Result<(), String> {
        let _ = bwrap;
        Err("this host view cannot start bubblewrap to try it".to_owned())
    }

    /// Starts one tiny gVisor sandbox with the `runsc` at `runsc`
    /// (`runsc --network=none do true`, as root or with `--rootless`, its
    /// state in a fresh directory removed after) and answers gVisor's
    /// release (`20221219`), or `Err` with what went wrong. The provided
    /// implementation answers `Err` (fail closed). The real host remembers
    /// a success for an hour, as for bubblewrap, keyed by the binary, the
    /// kernel and the user.
    fn try_gvisor(&self, runsc: &Path) -> Result<String, String> {
        let _ = runsc;
        Err("this host view cannot start gVisor to try it".to_owned())
    }

    /// Says whether this kernel can enforce every Landlock rule the
    /// Landlock mechanism uses ([`LANDLOCK_MIN_ABI`](crate::LANDLOCK_MIN_ABI):
    /// file rules, TCP bind and connect rules, and the abstract Unix socket
    /// and signal scopes), by creating (and dropping) such a ruleset: `Err`
    /// says why not. Nothing is restricted by asking. The provided
    /// implementation answers `Err` (fail closed).
    fn try_landlock(&self) -> Result<(), String> {
        Err("this host view cannot try Landlock".to_owned())
    }
}

/// The arguments of the probe's one bubblewrap launch
/// ([`HostView::try_bubblewrap`]): every namespace a dispatch launch
/// unshares, a read-only root, `/proc` and `/dev`, and `true`.
pub const BWRAP_TRY_ARGS: &[&str] = &[
    "--unshare-all",
    "--die-with-parent",
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--",
    "true",
];

/// The longest part of bubblewrap's error kept for the probe's reason.
const TRY_ERROR_LIMIT: usize = 300;

/// Most names [`HostView::list_dir`] gives for one directory.
pub const MAX_LISTED_NAMES: usize = 65_536;

/// How much of a small file [`HostView::read_small_file`] reads.
pub const SMALL_FILE_LIMIT: u64 = 4096;

/// The real host. Its name says it reads ambient authority: the process
/// environment and the file system.
///
/// [`AmbientHost::from_ambient`] bounds every call in time (each runs on a
/// helper thread), which suits the one-time probe.
/// [`AmbientHost::from_ambient_untimed`] calls the file system directly, for
/// the many cheap lookups of a launch on local paths.
#[derive(Clone, Debug)]
pub struct AmbientHost {
    timeout: Option<Duration>,
}

impl AmbientHost {
    /// The real host, with a 2 s limit on each check.
    pub fn from_ambient() -> AmbientHost {
        AmbientHost {
            timeout: Some(Duration::from_secs(2)),
        }
    }

    /// The real host, with the given limit on each check.
    pub fn from_ambient_with_timeout(timeout: Duration) -> AmbientHost {
        AmbientHost {
            timeout: Some(timeout),
        }
    }

    /// The real host, calling the file system directly without a time limit.
    pub fn from_ambient_untimed() -> AmbientHost {
        AmbientHost { timeout: None }
    }

    fn call<T, F>(&self, f: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        match self.timeout {
            Some(t) => run_with_timeout(t, f),
            None => Some(f()),
        }
    }
}

/// Runs `f` on a helper thread and waits at most `timeout` for its answer.
/// A call that does not answer in time gives `None`; its thread is left to
/// finish on its own.
pub fn run_with_timeout<T, F>(timeout: Duration, f: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("sandbox-probe-check".into())
        .spawn(move || {
            let _ = tx.send(f());
        });
    match spawned {
        Ok(_) => rx.recv_timeout(timeout).ok(),
        Err(_) => None,
    }
}

impl HostView for AmbientHost {
    fn os(&self) -> Os {
        Os::current()
    }

    fn var_os(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }

    fn read_small_file(&self, path: &Path) -> Option<String> {
        use std::io::Read;
        let path = path.to_path_buf();
        self.call(move || {
            let file = std::fs::File::open(path).ok()?;
            let mut buf = String::new();
            file.take(SMALL_FILE_LIMIT).read_to_string(&mut buf).ok()?;
            Some(buf)
        })
        .flatten()
    }

    fn is_executable_file(&self, path: &Path) -> bool {
        let path = path.to_path_buf();
        self.call(move || {
            let Ok(meta) = std::fs::metadata(path) else {
                return false;
            };
            if !meta.is_file() {
                return false;
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                meta.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                true
            }
        })
        .unwrap_or(false)
    }

    fn exists(&self, path: &Path) -> bool {
        let path = path.to_path_buf();
        self.call(move || path.exists()).unwrap_or(false)
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        let path = path.to_path_buf();
        // Most paths asked about (the secret and write-deny sets) do not
        // exist: one lstat answers for those, where resolving costs a
        // readlink per component. A path lstat cannot reach cannot be
        // resolved either.
        self.call(move || {
            std::fs::symlink_metadata(&path).ok()?;
            std::fs::canonicalize(path).ok()
        })
        .flatten()
    }

    fn is_dir(&self, path: &Path) -> bool {
        let path = path.to_path_buf();
        self.call(move || path.is_dir()).unwrap_or(false)
    }

    fn is_file(&self, path: &Path) -> bool {
        let path = path.to_path_buf();
        self.call(move || path.is_file()).unwrap_or(false)
    }

    fn list_dir(&self, path: &Path) -> Option<Vec<OsString>> {
        let path = path.to_path_buf();
        self.call(move || {
            let mut names = Vec::new();
            for entry in std::fs::read_dir(path).ok()? {
                if names.len() >= MAX_LISTED_NAMES {
                    return None;
                }
                names.push(entry.ok()?.file_name());
            }
            Some(names)
        })
        .flatten()
    }

    fn try_bubblewrap(&self, bwrap: &Path) -> Result<(), String> {
        // A success this user's earlier processes saw for the same binary,
        // kernel and sysctls, within the hour.
        let cache = trial_cache::runtime_dir().zip(trial_cache::key(bwrap));
        if let Some((dir, key)) = &cache
            && trial_cache::remembered(dir, key, trial_cache::TRIAL_TTL)
        {
            return Ok(());
        }
        let tried = self.try_bubblewrap_now(bwrap);
        if let (Ok(()), Some((dir, key))) = (&tried, &cache) {
            trial_cache::remember(dir, key);
        }
        tried
    }
    fn try_landlock(&self) -> Result<(), String> {
        self.try_landlock_now()
    }

    fn try_gvisor(&self, runsc: &Path) -> Result<String, String> {
        // A success remembered for this very runsc (its file, the kernel,
        // the user) holds its version too: neither the trial nor
        // `runsc --version` runs again within the record's life.
        let cache = trial_cache::runtime_dir().zip(trial_cache::key(runsc));
        let record = cache
            .as_ref()
            .map(|(dir, key)| (dir.clone(), format!("gvisor {key}")));
        if let Some((dir, key)) = &record
            && let Some(version) =
                trial_cache::recalled(dir, trial_cache::GVISOR_RECORD, key, trial_cache::TRIAL_TTL)
        {
            return Ok(version);
        }
        let version = gvisor_trial::version(runsc)?;
        gvisor_trial::run_once(runsc)?;
        if let Some((dir, key)) = &record
            && !version.contains('\n')
        {
            trial_cache::remember_as(
                dir,
                trial_cache::GVISOR_RECORD,
                &format!("{key}\n{version}"),
            );
        }
        Ok(version)
    }
}

impl AmbientHost {
    /// See [`HostView::try_landlock`]; called by the [`HostView`] impl.
    fn try_landlock_now(&self) -> Result<(), String> {
        landlock_trial::try_ruleset()
    }

    /// One trial launch of `bwrap`, now.
    fn try_bubblewrap_now(&self, bwrap: &Path) -> Result<(), String> {
        let bwrap = bwrap.to_path_buf();
        // Its own limit (namespaces can be slow to make on a loaded host);
        // the ambient probe as a whole is bounded too.
        run_with_timeout(Duration::from_secs(3), move || {
            let out = std::process::Command::new(&bwrap)
                .args(BWRAP_TRY_ARGS)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .output()
                .map_err(|e| format!("starting {} failed: {e}", bwrap.display()))?;
            if out.status.success() {
                return Ok(());
            }
            let said = String::from_utf8_lossy(&out.stderr);
            let said: String = said.trim().chars().take(TRY_ERROR_LIMIT).collect();
            Err(if said.is_empty() {
                format!("bubblewrap exited with {}", out.status)
            } else {
                said
            })
        })
        .unwrap_or_else(|| Err("a trial launch did not finish within 3 s".to_owned()))
    }
}

/// Looks `name` up on a `PATH` value the way a careful shell would, but
/// stricter: empty entries and relative entries (which a shell reads as the
/// working directory) are skipped, so a `bwrap` dropped into the current
/// directory never counts. Returns the first absolute match that is an
/// executable regular file.
pub fn find_on_path<H: HostView + ?Sized>(
    host: &H,
    path_var: Option<&OsString>,
    name: &str,
) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| host.is_executable_file(candidate))
}

mod fake;
mod gvisor_trial;
mod landlock_trial;
mod memo;
mod trial_cache;
pub use fake::FakeHost;
pub use memo::RememberingHost;
