//! The guest's first filesystem, built from the host's own files: our
//! agent (the name-guard launcher program, run as the guest's `/init`) with
//! the shared libraries it needs, the kernel modules of the virtio
//! transport and console (a distribution kernel builds them as modules),
//! and a busybox where the host has a static one, for the commands a guest
//! runs before the host's system directories are shared with it. Nothing
//! is downloaded.

use super::cpio::{Cpio, Kind};
use std::path::{Path, PathBuf};

/// The modules the agent needs, by name; their dependencies come first.
const MODULES: &[&str] = &["virtio_mmio", "virtio_console", "virtiofs"];
/// Largest `modules.dep` read.
const MAX_MODULES_DEP: u64 = 8 << 20;
/// The busybox applets linked in the guest's `/bin`.
const APPLETS: &[&str] = &[
    "sh", "ls", "cat", "echo", "uname", "sleep", "ps", "mkdir", "rm", "touch", "id", "env", "true",
    "false", "grep", "head", "wc", "kill", "mount", "hostname", "ip", "stty", "tr", "nc",
];

/// A kernel installed on the host, with its modules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GuestKernel {
    /// The kernel image (`/boot/vmlinuz-RELEASE`).
    pub(crate) image: PathBuf,
    /// Its release (`6.1.0-57-cloud-amd64`).
    pub(crate) release: String,
    /// `/lib/modules/RELEASE`.
    pub(crate) modules: PathBuf,
}

impl GuestKernel {
    /// The kernel at `image` with its modules under `/lib/modules`.
    pub(crate) fn at(image: &Path) -> Result<GuestKernel, String> {
        let name = image
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let release = name
            .strip_prefix("vmlinuz-")
            .ok_or_else(|| format!("{} is not named vmlinuz-RELEASE", image.display()))?
            .to_owned();
        let modules = Path::new("/lib/modules").join(&release);
        if !modules.join("modules.dep").is_file() {
            return Err(format!(
                "{} has no modules.dep: the kernel's modules are not installed",
                modules.display()
            ));
        }
        Ok(GuestKernel {
            image: image.to_path_buf(),
            release,
            modules,
        })
    }

    /// The newest kernel in `/boot` with its modules installed, preferring
    /// one built for virtual machines (`-cloud-`). Reads the ambient
    /// machine.
    pub(crate) fn find_ambient() -> Result<GuestKernel, String> {
        let mut found: Vec<PathBuf> = std::fs::read_dir("/boot")
            .map_err(|e| format!("/boot: {e}"))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("vmlinuz-"))
            })
            .collect();
        // Cloud kernels last, then by name: the last is preferred.
        found.sort_by_key(|p| {
            let n = p.display().to_string();
            (n.contains("-cloud-"), n)
        });
        let mut why = String::from("no /boot/vmlinuz-* kernel");
        for image in found.iter().rev() {
            match GuestKernel::at(image) {
                Ok(k) => return Ok(k),
                Err(e) => why = e,
            }
        }
        Err(why)
    }
}

/// The module files to load, dependencies first (paths under the kernel's
/// modules directory), from `modules.dep`.
pub(crate) fn module_order(dep: &str, wanted: &[&str]) -> Result<Vec<String>, String> {
    let mut deps: std::collections::HashMap<&str, (&str, Vec<&str>)> = Default::default();
    for line in dep.lines() {
        let Some((path, rest)) = line.split_once(':') else {
            continue;
        };
        let name = path
            .rsplit('/')
            .next()
            .unwrap_or(path)
            .split('.')
            .next()
            .unwrap_or_default();
        deps.insert(name, (path, rest.split_whitespace().collect()));
    }
    let by_path = |p: &str| -> String {
        p.rsplit('/')
            .next()
            .unwrap_or(p)
            .split('.')
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let mut order: Vec<String> = Vec::new();
    fn visit(
        name: &str,
        deps: &std::collections::HashMap<&str, (&str, Vec<&str>)>,
        by_path: &dyn Fn(&str) -> String,
        order: &mut Vec<String>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > 16 {
            return Err(format!("module {name}: dependencies nested too deep"));
        }
        let (path, needs) = deps
            .get(name)
            .ok_or_else(|| format!("module {name} is not in modules.dep"))?;
        for n in needs {
            visit(&by_path(n), deps, by_path, order, depth + 1)?;
        }
        if !order.iter().any(|o| o == path) {
            order.push((*path).to_owned());
        }
        Ok(())
    }
    for w in wanted {
        visit(w, &deps, &by_path, &mut order, 0)?;
    }
    Ok(order)
}

/// The shared libraries `binary` loads (its interpreter included), from
/// `ldd`'s answer.
fn libraries_of(binary: &Path) -> Result<Vec<PathBuf>, String> {
    let out = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|e| format!("running ldd: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // A static binary: nothing to add.
        return Ok(Vec::new());
    }
    Ok(text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.trim().split(' ').next()?,
                None => l.split(' ').next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

fn read(p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Adds `path` (absolute, in the guest) with every directory above it.
fn add_with_parents(
    a: &mut Cpio,
    dirs: &mut Vec<String>,
    path: &str,
    kind: Kind,
    perm: u32,
    data: &[u8],
) {
    let rel = path.trim_start_matches('/');
    let mut at = String::new();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
        if !dirs.contains(&at) {
            a.add(&at, Kind::Dir, 0o755, &[]);
            dirs.push(at.clone());
        }
    }
    a.add(rel, kind, perm, data);
}

/// The initramfs: `agent` as `/init`, its libraries, the modules and
/// their `/modules.order`, busybox when `busybox` is given.
pub(crate) fn build(
    kernel: &GuestKernel,
    agent: &Path,
    busybox: Option<&Path>,
) -> Result<Vec<u8>, String> {
    let mut a = Cpio::default();
    let mut dirs: Vec<String> = Vec::new();
    for d in ["dev", "proc", "sys", "tmp", "bin", "root"] {
        a.add(d, Kind::Dir, 0o755, &[]);
        dirs.push(d.to_owned());
    }
    a.add("dev/console", Kind::CharDevice(5, 1), 0o600, &[]);
    a.add("dev/null", Kind::CharDevice(1, 3), 0o666, &[]);
    a.add("init", Kind::File, 0o755, &read(agent)?);
    let mut libs = libraries_of(agent)?;
    if let Some(b) = busybox {
        libs.extend(libraries_of(b)?);
        add_with_parents(
            &mut a,
            &mut dirs,
            "/bin/busybox",
            Kind::File,
            0o755,
            &read(b)?,
        );
        for applet in APPLETS {
            a.add(&format!("bin/{applet}"), Kind::Symlink, 0o777, b"busybox");
        }
    }
    libs.sort();
    libs.dedup();
    for lib in &libs {
        let data =
            read(&std::fs::canonicalize(lib).map_err(|e| format!("{}: {e}", lib.display()))?)?;
        add_with_parents(
            &mut a,
            &mut dirs,
            &lib.display().to_string(),
            Kind::File,
            0o755,
            &data,
        );
    }
    let dep_path = kernel.modules.join("modules.dep");
    let dep = {
        use std::io::Read as _;
        let mut s = String::new();
        std::fs::File::open(&dep_path)
            .and_then(|f| f.take(MAX_MODULES_DEP).read_to_string(&mut s))
            .map_err(|e| format!("{}: {e}", dep_path.display()))?;
        s
    };
    let mut order = String::new();
    for m in module_order(&dep, MODULES)? {
        let guest = format!("/lib/modules/{}", m.rsplit('/').next().unwrap_or(&m));
        add_with_parents(
            &mut a,
            &mut dirs,
            &guest,
            Kind::File,
            0o644,
            &read(&kernel.modules.join(&m))?,
        );
        order.push_str(&guest);
        order.push('\n');
    }
    a.add("modules.order", Kind::File, 0o644, order.as_bytes());
    Ok(a.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_come_after_what_they_need_once_each() {
        let dep = "kernel/drivers/virtio/virtio_mmio.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n\
                   kernel/drivers/char/virtio_console.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n\
                   kernel/drivers/virtio/virtio.ko: kernel/drivers/virtio/virtio_ring.ko\n\
                   kernel/drivers/virtio/virtio_ring.ko:\n\
                   kernel/fs/fuse/virtiofs.ko: kernel/fs/fuse/fuse.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko\n\
                   kernel/fs/fuse/fuse.ko:\n";
        assert_eq!(
            module_order(dep, MODULES).unwrap(),
            [
                "kernel/drivers/virtio/virtio_ring.ko",
                "kernel/drivers/virtio/virtio.ko",
                "kernel/drivers/virtio/virtio_mmio.ko",
                "kernel/drivers/char/virtio_console.ko",
                "kernel/fs/fuse/fuse.ko",
                "kernel/fs/fuse/virtiofs.ko",
            ]
        );
        assert!(
            module_order("", MODULES)
                .unwrap_err()
                .contains("virtio_mmio")
        );
        // A loop of dependencies is refused, not followed forever.
        let looped = "a.ko: b.ko\nb.ko: a.ko\n";
        assert!(
            module_order(looped, &["a"])
                .unwrap_err()
                .contains("too deep")
        );
    }
}
