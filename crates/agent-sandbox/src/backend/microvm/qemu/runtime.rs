//! The VM runtime as a manager finds it: the host's QEMU, kernel, jail and
//! file server, and a canary guest booted once per process and launcher
//! (the probe, [`super::probe_ambient`]), its verdict cached. Its result
//! is the `microvm` section of the probe report the manager decides with,
//! and, where a guest runs, what each session boots (each manager builds
//! its own copy of the guest image, removed with it).

use super::fileserver::find_virtiofsd_ambient;
use super::session::Config;
use super::{Probed, TCG_BOOT_WAIT, probe::Probe};
use crate::session_dir::SessionDir;
use bwrap_spec::{FilenameRules, NameGuardLauncher};
use sandbox_core::{MicrovmProbe, MicrovmRuntimeKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// How the probe's guest booted: what each manager's guests boot with.
#[derive(Debug)]
pub(crate) struct Found {
    probed: Probed,
    /// The agent program the image is built around (the launcher).
    launcher: NameGuardLauncher,
    bwrap: PathBuf,
    virtiofsd: PathBuf,
}

/// What the probe found: the report's `microvm` section, and the guest
/// when one runs.
#[derive(Clone, Debug)]
pub(crate) struct Probing {
    pub(crate) microvm: MicrovmProbe,
    pub(crate) found: Option<Arc<Found>>,
}

impl Probing {
    fn unavailable(reason: String) -> Probing {
        Probing {
            microvm: MicrovmProbe {
                available: false,
                runtime: None,
                kind: None,
                version: None,
                note: None,
                reason: Some(reason),
            },
            found: None,
        }
    }

    /// The session configuration of the guest found, with the guest image
    /// built again (from the same host files) in a directory of its own
    /// under `temp_dir`, removed with the configuration: the probe's
    /// verdict is cached for the process, its files are not.
    pub(crate) fn config(
        &self,
        temp_dir: PathBuf,
        filename_rules: FilenameRules,
    ) -> Result<Config, String> {
        let f = self
            .found
            .as_ref()
            .ok_or_else(|| "the probe booted no guest".to_owned())?;
        let image_dir = SessionDir::create_in(&temp_dir).map_err(|e| e.to_string())?;
        let initrd = super::write_initrd(
            &f.probed.config.kernel,
            f.launcher.host_path(),
            image_dir.path(),
        )?;
        let mut vm = f.probed.config.clone();
        vm.memory_mib = super::guest_mib(std::fs::metadata(&initrd).map_or(0, |m| m.len()));
        Ok(Config {
            vm,
            initrd,
            _image_dir: Arc::new(image_dir),
            bwrap: f.bwrap.clone(),
            virtiofsd: f.virtiofsd.clone(),
            temp_dir,
            filename_rules,
            name_guard: f.launcher.clone(),
            boot_wait: TCG_BOOT_WAIT,
        })
    }
}

/// The first executable named `name` on `PATH` or in the system's usual
/// directories. Reads the ambient machine.
fn find_program_ambient(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/bin", "/usr/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Whether a leading argument can go on the guest kernel's command line
/// as one argument of the agent.
fn fits_kernel_cmdline(arg: &str) -> bool {
    !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'"' | b'\'' | b'\\'))
}

/// Probes the VM runtime for `launcher` (the guest's agent), once per
/// process and launcher: the result is cached. Boots a canary guest (about
/// 2 s emulated) on a thread of its own, with its files in `temp_dir`.
/// Reads the ambient machine.
pub(crate) fn probe_cached_ambient(
    launcher: &NameGuardLauncher,
    temp_dir: &Path,
    emulated_only: bool,
) -> Probing {
    static CACHE: OnceLock<Mutex<HashMap<String, Probing>>> = OnceLock::new();
    let key = format!("{launcher:?} {emulated_only}");
    let cache = CACHE.get_or_init(Mutex::default);
    // One probe at a time: a second builder waits for the first's answer.
    let Ok(mut cache) = cache.lock() else {
        return Probing::unavailable("the VM runtime's probe cache is poisoned".into());
    };
    if let Some(p) = cache.get(&key) {
        return p.clone();
    }
    let (launcher, temp_dir) = (launcher.clone(), temp_dir.to_path_buf());
    let probing = std::thread::Builder::new()
        .name("qemu-probe".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match rt {
                Ok(rt) => rt.block_on(probe(&launcher, &temp_dir, emulated_only)),
                Err(e) => Probing::unavailable(format!("starting the probe's runtime: {e}")),
            }
        })
        .map_err(|e| e.to_string())
        .and_then(|t| {
            t.join()
                .map_err(|_| "the probe's thread panicked".to_owned())
        });
    let probing = probing.unwrap_or_else(Probing::unavailable);
    cache.insert(key, probing.clone());
    probing
}

/// `emulated_only`: the emulated guest was asked for by name, so no KVM
/// canary is tried (and waited for) first.
async fn probe(launcher: &NameGuardLauncher, temp_dir: &Path, emulated_only: bool) -> Probing {
    let Some(bwrap) = find_program_ambient("bwrap") else {
        return Probing::unavailable(
            "bubblewrap not found: the guest's file server and QEMU run in its jails \
             (sudo apt-get install bubblewrap)"
                .into(),
        );
    };
    let Some(virtiofsd) = find_virtiofsd_ambient() else {
        return Probing::unavailable(
            "virtiofsd not found: it serves the guest its file system \
             (sudo apt-get install qemu-system-common)"
                .into(),
        );
    };
    let mut agent_args = Vec::new();
    for a in launcher.leading_args() {
        match a.to_str() {
            Some(s) if fits_kernel_cmdline(s) => agent_args.push(s.to_owned()),
            _ => {
                return Probing::unavailable(format!(
                    "the launcher's argument {a:?} cannot be passed on a kernel command line"
                ));
            }
        }
    }
    // The canary's files go with the probe.
    let image_dir = match SessionDir::create_in(temp_dir) {
        Ok(d) => d,
        Err(e) => return Probing::unavailable(e.to_string()),
    };
    let qemu = find_program_ambient("qemu-system-x86_64");
    let (verdict, probed) = super::probe_ambient(
        qemu.as_deref(),
        &bwrap,
        launcher.host_path(),
        &agent_args,
        image_dir.path(),
        emulated_only,
    )
    .await;
    let line = verdict.line();
    match (verdict, probed) {
        (v @ Probe::Runs { .. }, Some(probed)) => Probing {
            microvm: MicrovmProbe {
                available: true,
                runtime: qemu,
                kind: Some(if v.is_hardware_vm() {
                    MicrovmRuntimeKind::QemuKvm
                } else {
                    MicrovmRuntimeKind::QemuTcg
                }),
                version: Some(probed.release.clone()),
                note: Some(line),
                reason: None,
            },
            found: Some(Arc::new(Found {
                probed,
                launcher: launcher.clone(),
                bwrap,
                virtiofsd,
            })),
        },
        _ => Probing::unavailable(line),
    }
}

#[cfg(test)]
mod tests {
    use super::fits_kernel_cmdline;

    #[test]
    fn only_plain_words_go_on_the_kernel_command_line() {
        assert!(fits_kernel_cmdline("--name-guard-exec"));
        for bad in ["", "a b", "a\"b", "a'b", "a\\b", "tab\there", "é"] {
            assert!(!fits_kernel_cmdline(bad), "{bad:?}");
        }
    }
}
