//! The file-system calls the supervisor performs for the guarded process,
//! on directory descriptors it opened itself, and the report descriptor's
//! writes.
#![allow(
    unsafe_code,
    reason = "a system-call module of the guard: every block carries its SAFETY comment"
)]

use super::{check, cstr_ptr, errno, owned};
use std::ffi::CStr;
use std::os::fd::{OwnedFd, RawFd};

/// `openat(2)`.
pub(crate) fn openat(dir: RawFd, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    owned(unsafe { libc::openat(dir, cstr_ptr(path), flags | libc::O_CLOEXEC, mode) })
}

/// `mknodat(2)`.
pub(crate) fn mknodat(dir: RawFd, name: &CStr, mode: u32, dev: u64) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated and outlives the call.
    check(unsafe { libc::mknodat(dir, cstr_ptr(name), mode, dev) }).map(|_| ())
}

/// `renameat2(2)`.
pub(crate) fn renameat2(od: RawFd, on: &CStr, nd: RawFd, nn: &CStr, flags: u32) -> Result<(), i32> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    check(unsafe { libc::renameat2(od, cstr_ptr(on), nd, cstr_ptr(nn), flags) }).map(|_| ())
}

/// `linkat(2)`.
pub(crate) fn linkat(od: RawFd, on: &CStr, nd: RawFd, nn: &CStr, flags: i32) -> Result<(), i32> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    check(unsafe { libc::linkat(od, cstr_ptr(on), nd, cstr_ptr(nn), flags) }).map(|_| ())
}

/// `symlinkat(2)`.
pub(crate) fn symlinkat(target: &CStr, nd: RawFd, nn: &CStr) -> Result<(), i32> {
    // SAFETY: both strings are NUL-terminated and outlive the call.
    check(unsafe { libc::symlinkat(cstr_ptr(target), nd, cstr_ptr(nn)) }).map(|_| ())
}

/// `readlinkat(2)`, bounded by `limit` bytes (`ENAMETOOLONG` beyond).
pub(crate) fn readlinkat(dir: RawFd, name: &CStr, limit: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; limit + 1];
    // SAFETY: `buf` has `limit + 1` writable bytes; `name` is NUL-terminated.
    let n = unsafe { libc::readlinkat(dir, cstr_ptr(name), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(errno());
    }
    let n = n as usize;
    if n > limit {
        return Err(libc::ENAMETOOLONG);
    }
    buf.truncate(n);
    Ok(buf)
}

/// `mkdirat(2)`.
pub(crate) fn mkdirat(dir: RawFd, name: &CStr, mode: u32) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated and outlives the call.
    check(unsafe { libc::mkdirat(dir, cstr_ptr(name), mode) }).map(|_| ())
}

/// Set `FD_CLOEXEC` and `O_NONBLOCK` on `fd`; fails with `EBADF` when it is
/// not open.
pub(crate) fn set_cloexec_nonblock(fd: RawFd) -> Result<(), i32> {
    // SAFETY: fcntl with integer arguments on a descriptor number; an unknown
    // descriptor is reported as EBADF.
    unsafe {
        let fdfl = check(libc::fcntl(fd, libc::F_GETFD))?;
        check(libc::fcntl(fd, libc::F_SETFD, fdfl | libc::FD_CLOEXEC))?;
        let fl = check(libc::fcntl(fd, libc::F_GETFL))?;
        check(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Whether the directory `dir` is on procfs.
pub(crate) fn is_procfs(dir: RawFd) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `st` is a valid out pointer for one `struct statfs`, read only
    // when the call succeeded (it then initialised it).
    unsafe {
        libc::fstatfs(dir, st.as_mut_ptr()) == 0
            // PROC_SUPER_MAGIC
            && st.assume_init().f_type == 0x9fa0
    }
}

/// A close-on-exec duplicate of `fd`.
pub(crate) fn dup_cloexec(fd: RawFd) -> Result<OwnedFd, i32> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor number; the result is a
    // new descriptor this process owns, or -1 with errno.
    owned(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) })
}

/// Whether `name` in the directory `dir` is a FIFO (not following a
/// symbolic link at `name`).
pub(crate) fn is_fifo_at(dir: RawFd, name: &CStr) -> bool {
    file_type_at(dir, name) == Some(libc::S_IFIFO)
}

/// Whether `name` in `dir` is a regular file (not followed if a symbolic
/// link); `false` when it cannot be read.
pub(crate) fn is_regular_at(dir: RawFd, name: &CStr) -> bool {
    file_type_at(dir, name) == Some(libc::S_IFREG)
}

/// The file type bits of `name` in `dir`, not followed if a symbolic link.
fn file_type_at(dir: RawFd, name: &CStr) -> Option<libc::mode_t> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated and outlives the call; `st` is a
    // valid out pointer for one `struct stat`, read only when the call
    // succeeded (it then initialised it).
    unsafe {
        (libc::fstatat(
            dir,
            cstr_ptr(name),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        ) == 0)
            .then(|| st.assume_init().st_mode & libc::S_IFMT)
    }
}

/// One `write(2)` of `buf` to `fd`; returns the number of bytes written.
pub(crate) fn write_once(fd: RawFd, buf: &[u8]) -> Result<usize, i32> {
    // SAFETY: `buf` is valid for `buf.len()` bytes for the call.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 { Err(errno()) } else { Ok(n as usize) }
}

/// One `read(2)` from `fd` into `buf`; returns the number of bytes read
/// (0 at the end).
pub(crate) fn read_once(fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 { Err(errno()) } else { Ok(n as usize) }
}

/// Wait up to `ms` milliseconds for `fd` to accept output.
pub(crate) fn poll_out(fd: RawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: `p` is one valid `pollfd`.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && p.revents & libc::POLLOUT != 0
}

/// The umask [`with_umask`] last set, `None` before the first.
static UMASK: std::sync::Mutex<Option<u32>> = std::sync::Mutex::new(None);

/// Run `f` with the process umask `mask`. The supervisor creates names
/// only on behalf of a caller, each time under that caller's umask, so the
/// mask is left in place afterwards and changed only when a call needs
/// another one: no system call at all while the callers keep one umask.
/// The lock is held across `f`, so no other thread changes the mask in
/// between.
pub(crate) fn with_umask<T>(mask: u32, f: impl FnOnce() -> T) -> T {
    let mask = mask & 0o777;
    let mut set = UMASK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if *set != Some(mask) {
        // SAFETY: `umask` cannot fail and touches no memory.
        unsafe { libc::umask(mask) };
        *set = Some(mask);
    }
    f()
}

/// One `pread(2)` of up to `buf.len()` bytes at offset 0; returns the
/// number of bytes read.
pub(crate) fn pread_start(fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the call.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 { Err(errno()) } else { Ok(n as usize) }
}

/// `connect(2)` of `sock` to the raw address bytes `addr`.
pub(crate) fn connect_raw(sock: RawFd, addr: &[u8]) -> Result<(), i32> {
    let len = libc::socklen_t::try_from(addr.len()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `addr` is valid for `len` bytes for the call; the kernel copies
    // it and checks its family and length itself.
    check(unsafe { libc::connect(sock, addr.as_ptr().cast(), len) }).map(|_| ())
}

/// Whether the open file description of `fd` is non-blocking.
pub(crate) fn is_nonblocking(fd: RawFd) -> Result<bool, i32> {
    // SAFETY: F_GETFL takes no argument and touches no memory of ours.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    Ok(flags & libc::O_NONBLOCK != 0)
}

/// The device and inode of what `name` in `dir` names (symbolic links
/// followed, as `connect` follows them), which must be a socket: another
/// kind of file is `ECONNREFUSED`, as `connect` answers for it; a missing
/// one the lookup's error.
pub(crate) fn socket_id(dir: RawFd, name: &CStr) -> Result<(u64, u64), i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `st` is valid for one `struct stat`,
    // which the kernel fills on success.
    check(unsafe { libc::fstatat(dir, name.as_ptr(), st.as_mut_ptr(), 0) })?;
    // SAFETY: fstatat returned 0, so it filled `st`.
    socket_of(unsafe { st.assume_init() })
}

/// The socket `name` in `dir` (symbolic links followed) held open as an
/// `O_PATH` descriptor, with its device and inode: connecting through
/// `/proc/self/fd/N` of that descriptor reaches exactly the socket that
/// was checked, whatever is renamed or relinked meanwhile.
pub(crate) fn open_socket(dir: RawFd, name: &CStr) -> Result<(OwnedFd, (u64, u64)), i32> {
    // SAFETY: `name` is NUL-terminated; the result is checked.
    let fd = owned(unsafe { libc::openat(dir, name.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) })?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is open, `st` is valid for one `struct stat`, which the
    // kernel fills on success.
    check(unsafe { libc::fstat(std::os::fd::AsRawFd::as_raw_fd(&fd), st.as_mut_ptr()) })?;
    // SAFETY: fstat returned 0, so it filled `st`.
    let id = socket_of(unsafe { st.assume_init() })?;
    Ok((fd, id))
}

fn socket_of(st: libc::stat) -> Result<(u64, u64), i32> {
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(libc::ECONNREFUSED);
    }
    Ok((st.st_dev, st.st_ino))
}

/// `bind(2)` of `sock` to the raw address bytes `addr`.
pub(crate) fn bind_raw(sock: RawFd, addr: &[u8]) -> Result<(), i32> {
    let len = libc::socklen_t::try_from(addr.len()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `addr` is valid for `len` bytes for the call; the kernel copies
    // it and checks its family and length itself.
    check(unsafe { libc::bind(sock, addr.as_ptr().cast(), len) }).map(|_| ())
}

/// Whether the IPv6 socket `sock` takes IPv6 only (`IPV6_V6ONLY`), so that
/// its wildcard address does not stand for IPv4's too.
pub(crate) fn ipv6_only(sock: RawFd) -> Result<bool, i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are valid for the call; the kernel writes at
    // most `len` bytes into `v`.
    check(unsafe {
        libc::getsockopt(
            sock,
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&raw mut v).cast(),
            &mut len,
        )
    })?;
    Ok(v != 0)
}

/// `unlinkat(2)`: `flags` is 0 or `AT_REMOVEDIR`.
pub(crate) fn unlinkat(dir: RawFd, name: &CStr, flags: i32) -> Result<(), i32> {
    // SAFETY: `name` is NUL-terminated; the kernel only reads it.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(|_| ())
}

/// `truncate(2)` of the file `path` names.
pub(crate) fn truncate(path: &CStr, len: i64) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated; the kernel only reads it.
    check(unsafe { libc::truncate(path.as_ptr(), len) }).map(|_| ())
}

/// The device, inode and file type (`st_mode & S_IFMT`) of the open file
/// `fd` (an `O_PATH` descriptor will do).
pub(crate) fn file_id(fd: RawFd) -> Result<(u64, u64, u32), i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is valid for one `struct stat`, which the kernel fills on
    // success; an empty path with AT_EMPTY_PATH names `fd` itself.
    check(unsafe {
        libc::fstatat(
            fd,
            c"".as_ptr(),
            st.as_mut_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: fstatat returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    Ok((st.st_dev, st.st_ino, st.st_mode & libc::S_IFMT))
}

/// The directory entries of `fd` into `buf` with the caller's own call
/// (`nr`: `getdents` or `getdents64`, whose record layouts differ); the
/// number of bytes written.
pub(crate) fn getdents(nr: i64, fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: `buf` is `buf.len()` writable bytes owned by the caller; the
    // kernel writes at most that many.
    let r = unsafe {
        libc::syscall(
            nr as libc::c_long,
            fd,
            buf.as_mut_ptr().cast::<libc::c_void>(),
            buf.len(),
        )
    };
    if r < 0 {
        return Err(errno());
    }
    usize::try_from(r).map_err(|_| libc::EIO)
}
