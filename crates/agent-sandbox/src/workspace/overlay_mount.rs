//! Mounting a workspace's overlay in a mount namespace of its own, between
//! fork and exec of the program that makes the sandbox (bubblewrap), which
//! then finds the view at its path and binds it like any other mount.
//!
//! Root unshares a mount namespace; another user first unshares a user
//! namespace of its own, mapping only its own ids (it holds every
//! capability there and none outside), so the mount is made without
//! privilege. Mount events no longer reach the host from that namespace
//! (`/` made a slave), and the overlay dies with the last process in it.
//!
//! Only [`MountPlan::mount_before_exec`] is unsafe: its closure runs in the
//! forked child of a threaded parent and so makes system calls only, on
//! strings made before the fork.

use super::overlay::{OverlayView, mark_opaque, skeleton};
use rustix::fd::AsFd;
use std::ffi::CString;
use std::ffi::OsStr;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// Everything the child needs, made before the fork.
#[derive(Clone, Debug)]
pub(crate) struct MountPlan {
    view: CString,
    upper: CString,
    work: CString,
    lowers: Vec<CString>,
    /// `Some((uid_map, gid_map))` when a user namespace is needed.
    maps: Option<(CString, CString)>,
}

fn c_path(p: &std::path::Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::other(format!("{} holds a NUL byte", p.display())))
}

impl MountPlan {
    /// The plan for `o`, for the calling user.
    pub(crate) fn new(o: &OverlayView) -> io::Result<MountPlan> {
        let uid = rustix::process::geteuid();
        let maps = if uid.is_root() {
            None
        } else {
            let gid = rustix::process::getegid().as_raw();
            let uid = uid.as_raw();
            Some((
                CString::new(format!("{uid} {uid} 1")).map_err(io::Error::other)?,
                CString::new(format!("{gid} {gid} 1")).map_err(io::Error::other)?,
            ))
        };
        Ok(MountPlan {
            view: c_path(&o.view)?,
            upper: c_path(&o.upper)?,
            work: c_path(&o.work)?,
            lowers: o
                .lowers
                .iter()
                .map(|l| c_path(l))
                .collect::<io::Result<_>>()?,
            maps,
        })
    }

    /// Has `command`'s child mount the overlay in namespaces of its own
    /// before it execs; a failure fails the spawn with the system call's
    /// error.
    pub(crate) fn mount_before_exec(&self, command: &mut std::process::Command) {
        let plan = self.clone();
        // SAFETY: the closure runs in the forked, single-threaded child
        // before exec. It reads the plan's strings (allocated before the
        // fork and moved into the closure), and makes only system calls
        // through rustix (unshare, open, write, mount and the new mount
        // API), none of which allocates or takes a lock.
        #[allow(
            unsafe_code,
            reason = "the overlay is mounted between fork and exec; the block carries its SAFETY comment"
        )]
        unsafe {
            command.pre_exec(move || plan.mount_in_child());
        }
    }

    /// The child's side (see [`Self::mount_before_exec`]).
    fn mount_in_child(&self) -> io::Result<()> {
        use rustix::mount::{
            FsMountFlags, FsOpenFlags, MountAttrFlags, MountPropagationFlags, MoveMountFlags,
            fsconfig_create, fsconfig_set_flag, fsconfig_set_string, fsmount, fsopen, move_mount,
        };
        use rustix::thread::UnshareFlags;
        match &self.maps {
            Some((uid_map, gid_map)) => {
                // SAFETY: the child has one thread, so no other thread's
                // view of its namespaces or credentials can be broken.
                #[allow(
                    unsafe_code,
                    reason = "unshare in a single-threaded child; the block carries its SAFETY comment"
                )]
                unsafe {
                    rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)?;
                }
                write_proc(c"/proc/self/setgroups", b"deny")?;
                write_proc(c"/proc/self/uid_map", uid_map.as_bytes())?;
                write_proc(c"/proc/self/gid_map", gid_map.as_bytes())?;
            }
            None => {
                // SAFETY: as above.
                #[allow(
                    unsafe_code,
                    reason = "unshare in a single-threaded child; the block carries its SAFETY comment"
                )]
                unsafe {
                    rustix::thread::unshare_unsafe(UnshareFlags::NEWNS)?;
                }
            }
        }
        rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::REC | MountPropagationFlags::DOWNSTREAM,
        )?;
        let fs = fsopen(c"overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
        fsconfig_set_flag(fs.as_fd(), c"userxattr")?;
        for lower in &self.lowers {
            fsconfig_set_string(fs.as_fd(), c"lowerdir+", lower.as_c_str())?;
        }
        fsconfig_set_string(fs.as_fd(), c"upperdir", self.upper.as_c_str())?;
        fsconfig_set_string(fs.as_fd(), c"workdir", self.work.as_c_str())?;
        fsconfig_create(fs.as_fd())?;
        let mnt = fsmount(
            fs.as_fd(),
            FsMountFlags::FSMOUNT_CLOEXEC,
            MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
        )?;
        move_mount(
            mnt.as_fd(),
            c"",
            rustix::fs::CWD,
            self.view.as_c_str(),
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        Ok(())
    }
}

/// Writes `bytes` to the `/proc` file `path` in one call.
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let n = rustix::io::write(&fd, bytes)?;
    if n != bytes.len() {
        return Err(io::Error::from_raw_os_error(libc::EIO));
    }
    Ok(())
}

/// Whether an overlay workspace can be mounted with its layers in
/// `temp_dir`: tried once per process and temp dir (a child mounts a tiny
/// overlay in a namespace of its own, in a scratch directory of
/// `temp_dir`); `Err` says why not.
pub(crate) fn available(temp_dir: &Path) -> Result<(), String> {
    type Tried = std::sync::Mutex<Vec<(PathBuf, Result<(), String>)>>;
    static TRIED: std::sync::OnceLock<Tried> = std::sync::OnceLock::new();
    let tried = TRIED.get_or_init(Default::default);
    if let Ok(t) = tried.lock()
        && let Some((_, r)) = t.iter().find(|(d, _)| d == temp_dir)
    {
        return r.clone();
    }
    let r = try_mount(temp_dir);
    if let Ok(mut t) = tried.lock()
        && t.len() < 64
    {
        t.push((temp_dir.to_path_buf(), r.clone()));
    }
    r
}

fn try_mount(temp_dir: &Path) -> Result<(), String> {
    let dir = crate::session_dir::SessionDir::create_in(temp_dir).map_err(|e| e.to_string())?;
    let lower = dir.path().join("lower");
    std::fs::create_dir(&lower).map_err(|e| e.to_string())?;
    let o = skeleton(dir.path(), OsStr::new("v"), vec![lower]).map_err(|e| e.to_string())?;
    std::fs::create_dir(o.upper.join("d")).map_err(|e| e.to_string())?;
    mark_opaque(&o.upper.join("d")).map_err(|e| e.to_string())?;
    try_view(&o)
}

/// Mounts `o` once in a namespace of its own that ends at once: whether
/// the sandbox will be able to (a checkout on a file system overlayfs
/// cannot take as a layer fails here); `Err` says why not.
pub(crate) fn try_view(o: &OverlayView) -> Result<(), String> {
    let plan = MountPlan::new(o).map_err(|e| e.to_string())?;
    let mut c = std::process::Command::new("/bin/true");
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    plan.mount_before_exec(&mut c);
    match c.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("the trial mount's child ended with {s}")),
        Err(e) => Err(format!("mounting an overlay failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_that_cannot_be_mounted_is_said_so() {
        let root = std::env::temp_dir().join(format!("overlay-try-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let o = skeleton(&root, OsStr::new("v"), vec![root.join("no-such-lower")]).unwrap();
        let why = try_view(&o).unwrap_err();
        assert!(why.contains("mounting an overlay failed"), "{why}");
        std::fs::create_dir(root.join("no-such-lower")).unwrap();
        if available(&root).is_ok() {
            assert_eq!(try_view(&o), Ok(()));
        }
        crate::session_dir::remove_tree(&root).unwrap();
    }
}
