//! Setting up the guest before the agent serves: the mounts every program
//! expects, the devices only the host may use hidden, the host's share as
//! the root, the kernel modules, the channel's port, and terminals under
//! gVisor.

use super::{PORT_NAME, PORT_WAIT, ROOT_TAG};
use std::time::{Duration, Instant};

/// Mounts a `devpts` on `/dev/pts` when there is no `/dev/ptmx` to open.
pub(super) fn mount_terminals_if_missing() {
    if std::path::Path::new("/dev/ptmx").exists() && std::path::Path::new("/dev/pts/ptmx").exists()
    {
        return;
    }
    let _ = std::fs::create_dir_all("/dev/pts");
    if let Err(e) = rustix::mount::mount(
        "devpts",
        "/dev/pts",
        "devpts",
        rustix::mount::MountFlags::NOSUID | rustix::mount::MountFlags::NOEXEC,
        Some(c"mode=0620,ptmxmode=0666"),
    ) {
        eprintln!("vm-agent: mounting /dev/pts: {e}");
    }
    if !std::path::Path::new("/dev/ptmx").exists() {
        let _ = std::os::unix::fs::symlink("pts/ptmx", "/dev/ptmx");
    }
}

/// Mounts what every program expects; a failure is reported, not fatal.
pub(super) fn mount_basics() {
    use rustix::mount::{MountFlags, mount};
    for (src, dir, fs, flags) in [
        (
            "proc",
            "/proc",
            "proc",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        ),
        (
            "sysfs",
            "/sys",
            "sysfs",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        ),
        ("devtmpfs", "/dev", "devtmpfs", MountFlags::NOSUID),
        (
            "tmpfs",
            "/tmp",
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
        ),
    ] {
        let _ = std::fs::create_dir_all(dir);
        if let Err(e) = mount(src, dir, fs, flags, None::<&std::ffi::CStr>) {
            eprintln!("vm-agent: mounting {dir}: {e}");
        }
    }
    let _ = std::fs::create_dir_all("/dev/pts");
    let _ = mount(
        "devpts",
        "/dev/pts",
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"mode=0620,ptmxmode=0666"),
    );
}

/// Removes the device nodes that reach the host from the guest's `/dev`:
/// the serial console (QEMU writes it into a host file, which a command
/// writing to it could grow without end), the kernel log's writer (which
/// prints to that console) and the virtio ports (the agent's own is open
/// already). Commands, without `CAP_MKNOD`, cannot make them again.
pub(super) fn hide_host_facing_devices() {
    const PREFIXES: [&str; 4] = ["console", "ttyS", "kmsg", "vport"];
    let Ok(entries) = std::fs::read_dir("/dev") else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if PREFIXES.iter().any(|p| name.starts_with(p))
            && let Err(err) = std::fs::remove_file(e.path())
        {
            eprintln!("vm-agent: removing /dev/{name}: {err}");
        }
    }
}

/// Mounts the host's share tagged [`ROOT_TAG`] and makes it the root, as
/// `switch_root` does: the guest's `/proc` and `/dev` (with its devpts)
/// move onto it, the initramfs stays behind, out of reach of the
/// commands' paths. The share is mounted `nosuid`.
pub(super) fn switch_to_host_share() -> std::io::Result<()> {
    use rustix::mount::{MountFlags, mount, mount_move};
    const NEW: &str = "/newroot";
    std::fs::create_dir_all(NEW)?;
    mount(
        ROOT_TAG,
        NEW,
        "virtiofs",
        MountFlags::NOSUID,
        None::<&std::ffi::CStr>,
    )?;
    for dir in ["/dev", "/proc"] {
        let to = format!("{NEW}{dir}");
        if std::path::Path::new(&to).is_dir() {
            mount_move(dir, to.as_str())?;
        }
    }
    std::env::set_current_dir(NEW)?;
    mount_move(".", "/")?;
    rustix::process::chroot(".")?;
    std::env::set_current_dir("/")?;
    Ok(())
}

/// Loads each module named in `/modules.order` (one path a line, in
/// order); one built into the kernel or loaded already is no error.
pub(super) fn load_modules() {
    let Ok(list) = std::fs::read_to_string("/modules.order") else {
        return;
    };
    for path in list.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let loaded = std::fs::File::open(path)
            .and_then(|f| rustix::system::finit_module(&f, c"", 0).map_err(std::io::Error::from));
        match loaded {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) => eprintln!("vm-agent: loading {path}: {e}"),
        }
    }
}

/// The port named [`PORT_NAME`], opened for reading and writing.
pub(super) fn find_port() -> std::io::Result<std::fs::File> {
    let deadline = Instant::now() + PORT_WAIT;
    loop {
        if let Ok(entries) = std::fs::read_dir("/sys/class/virtio-ports") {
            for e in entries.flatten() {
                let name = std::fs::read_to_string(e.path().join("name")).unwrap_or_default();
                if name.trim() == PORT_NAME {
                    let dev = std::path::Path::new("/dev").join(e.file_name());
                    return std::fs::OpenOptions::new().read(true).write(true).open(dev);
                }
            }
        }
        if Instant::now() > deadline {
            return Err(std::io::Error::from_raw_os_error(libc::ENOENT));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
