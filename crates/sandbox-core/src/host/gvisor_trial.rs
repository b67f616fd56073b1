//! The probe's one gVisor sandbox: `runsc --version` for the release, then
//! `runsc --network=none do /bin/true` with its state in a fresh directory
//! of its own, removed afterwards. Each step is bounded in time.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long `runsc --version` may take.
const VERSION_LIMIT: Duration = Duration::from_secs(2);
/// How long the trial sandbox may take (it starts in about 0.25 s here).
const TRIAL_LIMIT: Duration = Duration::from_secs(4);
/// The longest part of runsc's error kept for the probe's reason.
const ERROR_LIMIT: usize = 300;

/// gVisor's release, from `runsc --version`.
pub(crate) fn version(runsc: &Path) -> Result<String, String> {
    let runsc = runsc.to_path_buf();
    let shown = runsc.display().to_string();
    let out = crate::host::run_with_timeout(VERSION_LIMIT, move || {
        Command::new(&runsc)
            .arg("--version")
            .env_clear()
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
    })
    .ok_or_else(|| format!("{shown} --version did not answer within 2 s"))?
    .map_err(|e| format!("starting {shown} failed: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    crate::gvisor_version::gvisor_release(&text).ok_or_else(|| {
        let first: String = text.lines().next().unwrap_or("").chars().take(80).collect();
        format!("{shown} --version does not name a gVisor release: {first:?}")
    })
}

/// Whether this process runs as root (then runsc needs no `--rootless`).
fn is_root() -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// One tiny sandbox, now.
pub(crate) fn run_once(runsc: &Path) -> Result<(), String> {
    let state = std::env::temp_dir().join(format!(
        "agent-sandbox-gvisor-trial-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir(&state).map_err(|e| format!("creating {}: {e}", state.display()))?;
    let runsc = runsc.to_path_buf();
    let root_dir = state.clone();
    let tried = crate::host::run_with_timeout(TRIAL_LIMIT, move || {
        let mut c = Command::new(&runsc);
        c.arg(format!("--root={}", root_dir.display()));
        if !is_root() {
            c.arg("--rootless");
        }
        c.args(["--network=none", "do", "/bin/true"])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let out = c
            .output()
            .map_err(|e| format!("starting {} failed: {e}", runsc.display()))?;
        if out.status.success() {
            return Ok(());
        }
        let said = String::from_utf8_lossy(&out.stderr);
        let said: String = said.trim().chars().take(ERROR_LIMIT).collect();
        Err(if said.is_empty() {
            format!("runsc exited with {}", out.status)
        } else {
            said
        })
    })
    .unwrap_or_else(|| Err("a trial sandbox did not finish within 4 s".to_owned()));
    let _ = std::fs::remove_dir_all(&state);
    tried
}
