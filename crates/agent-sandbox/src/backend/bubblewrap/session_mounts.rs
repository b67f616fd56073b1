//! Read-only binds added to a warm session's running sandbox: the denies of
//! a git repository made by one of its commands (R-PATHS-3), which a
//! sandbox built at launch could not know. bubblewrap would have made the
//! same binds at launch: each ancestor pinned by a bind onto itself (so it
//! cannot be renamed away), then the denied path bound onto itself
//! read-only.
//!
//! A short-lived helper joins the sandbox's mount namespace (through the
//! user namespace that owns it, when the caller is not root) and makes the
//! mounts there. Nothing inside can undo them: the sandbox's processes
//! have no capability in that namespace.

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ffi::CString;
use std::io;
use std::os::unix::process::CommandExt;

/// One bind of a path onto itself inside the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SelfBind {
    /// Writable as before: the path becomes a mount point, which cannot be
    /// renamed or removed.
    Pin,
    /// Read-only, with everything below it.
    ReadOnly,
}

/// `NS_GET_USERNS` (`_IO(0xb7, 0x1)`): the user namespace that owns a
/// namespace.
const NS_GET_USERNS: libc::c_ulong = 0xb701;

/// The user namespace that owns the namespace `ns`.
fn owning_user_ns(ns: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    // SAFETY: NS_GET_USERNS takes no argument and returns a new descriptor
    // (or -1); `ns` is open for the call.
    #[allow(
        unsafe_code,
        reason = "no safe wrapper for NS_GET_USERNS; the block carries its SAFETY comment"
    )]
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_USERNS) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by the kernel as a new descriptor that
    // nothing else owns.
    #[allow(
        unsafe_code,
        reason = "taking ownership of a descriptor the kernel returned; the block carries its SAFETY comment"
    )]
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The mount flags a bind-remount must keep: those the kernel locks on a
/// mount made in a less privileged namespace (and the access-time ones).
fn kept_flags(st: &rustix::fs::StatFs) -> rustix::mount::MountFlags {
    use rustix::mount::MountFlags as M;
    let f = st.f_flags as u64;
    let mut out = M::empty();
    for (bit, flag) in [
        (libc::ST_NOSUID, M::NOSUID),
        (libc::ST_NODEV, M::NODEV),
        (libc::ST_NOEXEC, M::NOEXEC),
        (libc::ST_NOATIME, M::NOATIME),
        (libc::ST_NODIRATIME, M::NODIRATIME),
        (libc::ST_RELATIME, M::RELATIME),
    ] {
        if f & bit != 0 {
            out |= flag;
        }
    }
    out
}

/// Makes `binds` (paths as the sandbox sees them), in order, in the mount
/// namespace of process `pid` (the sandbox's first process).
pub(crate) fn bind_in_sandbox(pid: u32, binds: &[(SelfBind, CString)]) -> io::Result<()> {
    if binds.is_empty() {
        return Ok(());
    }
    let mnt_ns = std::fs::File::open(format!("/proc/{pid}/ns/mnt"))?;
    let owner = owning_user_ns(mnt_ns.as_fd())?;
    let raw = (mnt_ns.as_raw_fd(), owner.as_raw_fd());
    let binds = binds.to_vec();
    let mut helper = std::process::Command::new("/bin/true");
    helper
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    // SAFETY: the closure runs in the forked, single-threaded child before
    // exec. It borrows two descriptors that stay open in the parent until
    // the helper has exited and paths allocated before the fork, makes only
    // system calls (setns, mount, statfs) through rustix and allocates
    // nothing. It ends with `_exit`, which is async-signal-safe and runs no
    // destructor or atexit handler of the parent's copy.
    #[allow(
        unsafe_code,
        reason = "the mount helper needs raw syscalls in pre_exec; the block carries its SAFETY comment"
    )]
    unsafe {
        helper.pre_exec(move || {
            use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
            let mnt = BorrowedFd::borrow_raw(raw.0);
            let user = BorrowedFd::borrow_raw(raw.1);
            // Root joins the mount namespace as it is; another caller first
            // joins the user namespace that owns it (it is its owner, so it
            // holds every capability there).
            if move_into_link_name_space(mnt, Some(LinkNameSpaceType::Mount)).is_err() {
                move_into_link_name_space(user, Some(LinkNameSpaceType::User))?;
                move_into_link_name_space(mnt, Some(LinkNameSpaceType::Mount))?;
            }
            for (kind, path) in &binds {
                rustix::mount::mount_bind_recursive(path.as_c_str(), path.as_c_str())?;
                if *kind == SelfBind::ReadOnly {
                    let st = rustix::fs::statfs(path.as_c_str())?;
                    rustix::mount::mount_remount(
                        path.as_c_str(),
                        rustix::mount::MountFlags::BIND
                            | rustix::mount::MountFlags::RDONLY
                            | kept_flags(&st),
                        c"",
                    )?;
                }
            }
            libc::_exit(0)
        });
    }
    let status = helper.status()?;
    drop((mnt_ns, owner));
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "the mount helper failed: {status}"
        )))
    }
}
