//! The Linux and WSL2 native probe: bubblewrap where it runs, else Landlock
//! with the name guard, and which kernels can run the name guard.

use super::{
    FilenameRuleSupport, HINT_INSTALL_BUBBLEWRAP, LINUX_FALLBACK_TOOLS, LINUX_REQUIRED_TOOLS,
    NAME_GUARD_MIN_KERNEL, NOTE_BUBBLEWRAP, NOTE_LANDLOCK, NOTE_NAME_GUARD, NativeMechanism,
    NativeProbe,
};
use crate::host::{HostView, find_on_path};
use std::path::Path;

/// The `(major, minor)` of a Linux release string (`uname -r`, such as
/// `6.1.0-18-amd64` or `5.14.0-284.el9.x86_64`): decimal digits, a dot,
/// decimal digits, then anything. `None` for anything else (a sign, a
/// missing minor, a number over `u32`).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    fn number(s: &str) -> Option<(u32, &str)> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            return None;
        }
        Some((s[..end].parse().ok()?, &s[end..]))
    }
    let (major, rest) = number(release.trim())?;
    let (minor, _) = number(rest.strip_prefix('.')?)?;
    Some((major, minor))
}

/// Whether a Linux release string names a kernel that can run the name
/// guard: at least [`NAME_GUARD_MIN_KERNEL`]. The one place this is
/// decided; the probe and the `name-guard` crate both ask it. A release
/// [`kernel_version`] cannot read is `false`.
pub fn kernel_runs_name_guard(release: &str) -> bool {
    kernel_version(release).is_some_and(|v| v >= NAME_GUARD_MIN_KERNEL)
}

/// Whether a Linux release can run the name guard on this build's
/// architecture.
fn name_guard_support(release: &str) -> FilenameRuleSupport {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return FilenameRuleSupport::Unavailable(
            "the name guard has system call tables for x86-64 and aarch64 only".to_string(),
        );
    }
    if kernel_runs_name_guard(release) {
        return FilenameRuleSupport::NameGuard;
    }
    let (maj, min) = NAME_GUARD_MIN_KERNEL;
    match kernel_version(release) {
        Some((a, b)) => FilenameRuleSupport::Unavailable(format!(
            "kernel {a}.{b} is older than {maj}.{min} (seccomp user notification with descriptor injection and killable waits)"
        )),
        None => FilenameRuleSupport::Unavailable(
            "kernel release unknown (need Linux 5.19 or later)".to_string(),
        ),
    }
}

/// The Linux and WSL2 probe. Selection order: bubblewrap where it runs
/// (one trial launch), else Landlock with the name guard, else nothing,
/// with the hint. Only `bwrap` is required for bubblewrap; `socat` is
/// looked up for the bridges' fallback.
pub(super) fn probe_linux<H: HostView + ?Sized>(
    host: &H,
    path_var: Option<&std::ffi::OsString>,
) -> NativeProbe {
    let release = host
        .read_small_file(Path::new("/proc/sys/kernel/osrelease"))
        .unwrap_or_default();
    let filename_rules = name_guard_support(&release);
    let mut tools = Vec::new();
    let mut missing = Vec::new();
    for tool in LINUX_REQUIRED_TOOLS {
        match find_on_path(host, path_var, tool.binary) {
            Some(found) => tools.push((tool.binary.to_string(), found)),
            None => missing.push(tool.package.to_string()),
        }
    }
    for tool in LINUX_FALLBACK_TOOLS {
        if let Some(found) = find_on_path(host, path_var, tool.binary) {
            tools.push((tool.binary.to_string(), found));
        }
    }
    // Installed is not enough: one trial launch shows whether this host
    // lets bubblewrap make its namespaces.
    // `None`: not installed; `Some(why)`: installed, and the trial failed.
    let bubblewrap_failed = match tools.iter().find(|(name, _)| name == "bwrap") {
        Some((_, bwrap)) => host.try_bubblewrap(bwrap).err().map(Some),
        None => Some(None),
    };
    let Some(bubblewrap_failed) = bubblewrap_failed else {
        let note = match &filename_rules {
            FilenameRuleSupport::NameGuard => format!("{NOTE_BUBBLEWRAP}; {NOTE_NAME_GUARD}"),
            FilenameRuleSupport::Unavailable(why) => format!(
                "{NOTE_BUBBLEWRAP}; filename rules not enforceable ({why}): launches with writable mounts are refused"
            ),
            FilenameRuleSupport::Seatbelt => NOTE_BUBBLEWRAP.to_string(),
        };
        return NativeProbe {
            available: true,
            mechanism: Some(NativeMechanism::Bubblewrap),
            tools,
            note: Some(note),
            requires_install: false,
            missing_packages: Vec::new(),
            hint: None,
            filename_rules,
        };
    };
    let landlock = match (&filename_rules, host.try_landlock()) {
        (FilenameRuleSupport::NameGuard, Ok(())) => Ok(()),
        (FilenameRuleSupport::NameGuard, Err(why)) => Err(why),
        (FilenameRuleSupport::Unavailable(why), _) => {
            Err(format!("the name guard cannot run ({why})"))
        }
        (FilenameRuleSupport::Seatbelt, _) => Err("not Linux".to_owned()),
    };
    let requires_install = !missing.is_empty();
    match (bubblewrap_failed, landlock) {
        (None, Ok(())) => NativeProbe {
            available: true,
            mechanism: Some(NativeMechanism::Landlock),
            tools,
            note: Some(format!(
                "{NOTE_LANDLOCK}; bubblewrap is not installed; {NOTE_NAME_GUARD}; {HINT_INSTALL_BUBBLEWRAP}"
            )),
            requires_install,
            missing_packages: missing,
            hint: Some(HINT_INSTALL_BUBBLEWRAP.to_string()),
            filename_rules,
        },
        (Some(why), Ok(())) => NativeProbe {
            available: true,
            mechanism: Some(NativeMechanism::Landlock),
            tools,
            note: Some(format!(
                "{NOTE_LANDLOCK}; bubblewrap cannot make its namespaces here ({why}); {NOTE_NAME_GUARD}"
            )),
            requires_install: false,
            missing_packages: Vec::new(),
            hint: None,
            filename_rules,
        },
        (None, Err(no_landlock)) => NativeProbe {
            available: false,
            mechanism: None,
            tools,
            note: None,
            requires_install,
            hint: Some(format!(
                "install the missing packages: sudo apt-get install {}; nor can Landlock confine here ({no_landlock})",
                missing.join(" ")
            )),
            missing_packages: missing,
            filename_rules,
        },
        (Some(why), Err(no_landlock)) => NativeProbe {
            available: false,
            mechanism: None,
            tools,
            note: None,
            requires_install: false,
            missing_packages: Vec::new(),
            hint: Some(format!(
                "bwrap is installed but cannot make its namespaces on this host ({why}); user namespaces may be disabled or restricted here; nor can Landlock confine here ({no_landlock})"
            )),
            filename_rules,
        },
    }
}
