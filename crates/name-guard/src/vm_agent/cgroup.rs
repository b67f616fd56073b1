//! Per-command limits inside the guest: each limited command runs in a
//! cgroup of the guest's own kernel, made by the agent.
//!
//! The hierarchy is mounted once, at the first limited command, on a
//! directory the agent makes and then detaches: the agent keeps a
//! descriptor of it and no path reaches it, so a command (root in the
//! guest, without capabilities, but the owner of every cgroup file) cannot
//! raise its own limits or leave its cgroup.
//!
//! - cgroup v2 (a Linux guest): `memory.max` (swap off), `pids.max` and
//!   `cpu.max` are the kernel's; an out-of-memory kill is read from
//!   `memory.events` at the command's end.
//! - cgroup v1 (gVisor's cgroupfs): `pids.max` is enforced by gVisor's
//!   kernel; `memory.limit_in_bytes` is not, so the agent watches
//!   `memory.usage_in_bytes` every [`WATCH_EVERY`] and ends the command's
//!   processes once past the limit (a command can go past it by what it
//!   allocates within one interval); CPU quotas are not enforced there, so
//!   a CPU limit is refused (`EOPNOTSUPP`).
//!
//! At a command's end what it left running in its cgroup is killed and
//! the cgroup removed, as on the host.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags};
use sandbox_core::vm_wire::VmLimits;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How often a v1 command's memory use is read.
const WATCH_EVERY: Duration = Duration::from_millis(5);
/// Where the hierarchy is mounted for the moment it takes to open it.
const MOUNT_AT: &str = "/dev/.agent-cgroup";
/// Longest `cgroup.procs` or `memory.events` read.
const MAX_READ: usize = 64 * 1024;
/// Most rounds of killing what is left in a cgroup before it is removed.
const KILL_ROUNDS: usize = 100;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Version {
    V1,
    V2,
}

struct Hierarchy {
    root: OwnedFd,
    version: Version,
}

static HIERARCHY: OnceLock<Result<Hierarchy, i32>> = OnceLock::new();

fn hierarchy() -> Result<&'static Hierarchy, i32> {
    HIERARCHY
        .get_or_init(mount_hierarchy)
        .as_ref()
        .map_err(|e| *e)
}

/// Mounts cgroup v2, else v1 with the memory, pids and CPU controllers,
/// opens it and detaches the mount.
fn mount_hierarchy() -> Result<Hierarchy, i32> {
    use rustix::mount::{MountFlags, UnmountFlags, mount, unmount};
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    match std::fs::create_dir(MOUNT_AT) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.raw_os_error().unwrap_or(libc::EIO)),
    }
    let version = if mount(
        "cgroup2",
        MOUNT_AT,
        "cgroup2",
        flags,
        None::<&std::ffi::CStr>,
    )
    .is_ok()
    {
        Version::V2
    } else {
        mount(
            "cgroup",
            MOUNT_AT,
            "cgroup",
            flags,
            Some(c"memory,pids,cpu,cpuacct"),
        )
        .map_err(|e| e.raw_os_error())?;
        Version::V1
    };
    let root = rustix::fs::open(
        MOUNT_AT,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let detached = unmount(MOUNT_AT, UnmountFlags::DETACH);
    let _ = std::fs::remove_dir(MOUNT_AT);
    let root = root.map_err(|e| e.raw_os_error())?;
    detached.map_err(|e| e.raw_os_error())?;
    if version == Version::V2 {
        // Each controller the children may use; one the kernel lacks
        // fails the limit that needs it, when asked.
        for c in ["+memory", "+pids", "+cpu"] {
            let _ = write_at(root.as_fd(), "cgroup.subtree_control", c);
        }
    }
    Ok(Hierarchy { root, version })
}

fn write_at(dir: BorrowedFd<'_>, name: &str, value: &str) -> Result<(), i32> {
    let f = rustix::fs::openat(dir, name, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| e.raw_os_error())?;
    rustix::io::write(&f, value.as_bytes()).map_err(|e| e.raw_os_error())?;
    Ok(())
}

fn read_at(dir: BorrowedFd<'_>, name: &str) -> Option<String> {
    let f = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let mut buf = vec![0u8; MAX_READ];
    let mut len = 0;
    while len < buf.len() {
        match rustix::io::read(&f, buf.get_mut(len..)?) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).ok()
}

/// One limited command's cgroup.
pub(super) struct CommandCgroup {
    name: String,
    dir: Arc<OwnedFd>,
    /// Its `cgroup.procs`, open for writing: the child writes `0` there
    /// before its exec (the descriptor closes at the exec).
    procs: OwnedFd,
    version: Version,
    /// v1's memory limit, watched.
    watched: Option<u64>,
    over: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
}

impl CommandCgroup {
    /// Makes command `id`'s cgroup with `limits` set; an errno where the
    /// guest cannot hold one of them.
    pub(super) fn create(id: u64, limits: &VmLimits) -> Result<CommandCgroup, i32> {
        let h = hierarchy()?;
        if h.version == Version::V1 && limits.cpu_millis.is_some() {
            return Err(libc::EOPNOTSUPP);
        }
        let name = format!("c{id}");
        rustix::fs::mkdirat(&h.root, name.as_str(), Mode::from_raw_mode(0o755))
            .map_err(|e| e.raw_os_error())?;
        let made = Self::open(h, name.clone(), limits);
        if made.is_err() {
            let _ = rustix::fs::unlinkat(&h.root, name.as_str(), AtFlags::REMOVEDIR);
        }
        made
    }

    fn open(h: &Hierarchy, name: String, limits: &VmLimits) -> Result<CommandCgroup, i32> {
        let dir = rustix::fs::openat(
            &h.root,
            name.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())?;
        if let Some(n) = limits.max_processes {
            write_at(dir.as_fd(), "pids.max", &n.to_string())?;
        }
        let mut watched = None;
        match h.version {
            Version::V2 => {
                if let Some(bytes) = limits.memory_bytes {
                    write_at(dir.as_fd(), "memory.max", &bytes.to_string())?;
                    // No swap: the limit is the memory's, as on the host.
                    let _ = write_at(dir.as_fd(), "memory.swap.max", "0");
                }
                if let Some(millis) = limits.cpu_millis {
                    let quota = u64::from(millis).saturating_mul(100).max(1000);
                    write_at(dir.as_fd(), "cpu.max", &format!("{quota} 100000"))?;
                }
            }
            Version::V1 => watched = limits.memory_bytes,
        }
        let procs = rustix::fs::openat(
            &dir,
            "cgroup.procs",
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())?;
        Ok(CommandCgroup {
            name,
            dir: Arc::new(dir),
            procs,
            version: h.version,
            watched,
            over: Arc::new(AtomicBool::new(false)),
            ended: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The descriptor the child writes `0` into before its exec.
    pub(super) fn procs(&self) -> BorrowedFd<'_> {
        self.procs.as_fd()
    }

    /// Starts watching the memory limit where the kernel does not hold it.
    pub(super) fn watch(&self) {
        let Some(limit) = self.watched else { return };
        let (dir, over, ended) = (self.dir.clone(), self.over.clone(), self.ended.clone());
        let _ = std::thread::Builder::new()
            .name("memory-watch".into())
            .spawn(move || {
                while !ended.load(Ordering::SeqCst) {
                    let used = read_at(dir.as_fd(), "memory.usage_in_bytes")
                        .and_then(|v| v.trim().parse::<u64>().ok());
                    if used.is_some_and(|u| u > limit) {
                        over.store(true, Ordering::SeqCst);
                        kill_all(dir.as_fd());
                        return;
                    }
                    std::thread::sleep(WATCH_EVERY);
                }
            });
    }

    /// At the command's end: whether it went past its memory limit; what
    /// it left running is killed and the cgroup removed.
    pub(super) fn finish(self) -> bool {
        self.ended.store(true, Ordering::SeqCst);
        let mut over = self.over.load(Ordering::SeqCst);
        if self.version == Version::V2 {
            over |= read_at(self.dir.as_fd(), "memory.events").is_some_and(|e| {
                e.lines().any(|l| {
                    l.strip_prefix("oom_kill ")
                        .is_some_and(|n| n.trim().parse::<u64>().is_ok_and(|n| n > 0))
                })
            });
        }
        kill_all(self.dir.as_fd());
        if let Ok(h) = hierarchy() {
            for _ in 0..KILL_ROUNDS {
                match rustix::fs::unlinkat(&h.root, self.name.as_str(), AtFlags::REMOVEDIR) {
                    Err(rustix::io::Errno::BUSY) => {
                        kill_all(self.dir.as_fd());
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    _ => break,
                }
            }
        }
        over
    }
}

/// Kills every process in the cgroup `dir` until it holds none (bounded).
fn kill_all(dir: BorrowedFd<'_>) {
    for _ in 0..KILL_ROUNDS {
        let Some(procs) = read_at(dir, "cgroup.procs") else {
            return;
        };
        let pids: Vec<i32> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
