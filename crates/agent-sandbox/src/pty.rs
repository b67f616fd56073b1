//! Terminals for commands: a fresh PTY pair per command, the host holding
//! the master ([`PtyMaster`]), the slave the command's stdin, stdout,
//! stderr and controlling terminal.
//!
//! Under bubblewrap the pair is made in the sandbox's own devpts instance
//! (`--dev` mounts one): the host opens the sandbox's `ptmx` through
//! `/proc/PID/root` while bubblewrap holds the command, so the slave is
//! `/dev/pts/0` there and `tty` names a device that exists inside. The
//! command starts as `sh -c 'exec 0<>/dev/pts/0 1>&0 2>&0 && exec setsid
//! -w -c "$@"'`: the slave becomes its stdio, and util-linux's `setsid -c`
//! makes it a session leader with the slave as its controlling terminal
//! (bubblewrap's `--new-session` leaves the session to the sandbox's first
//! process), so job control works. Elsewhere the pair is made on the host. Never is the host's own terminal given
//! to the command.
//!
//! Terminals are Unix's: on other platforms (Windows) a command asking for
//! one is refused before it runs
//! ([`crate::ErrorKind::NotOnThisPlatform`]), and [`PtyMaster`] is a type
//! with no value.

#[cfg(unix)]
use rustix::fd::{AsFd, OwnedFd};
use sandbox_core::PtySize;
use std::io;
#[cfg(unix)]
use tokio::io::unix::AsyncFd;

#[cfg(target_os = "linux")]
/// The slave's path inside a sandbox: the first pair of a fresh devpts.
pub(crate) const SANDBOX_SLAVE: &str = "/dev/pts/0";

#[cfg(target_os = "linux")]
/// The wrapper that makes the slave the command's terminal inside a
/// sandbox: `sh -c SCRIPT /dev/pts/0 CMD...`.
pub(crate) const ATTACH_SCRIPT: &str = r#"exec 0<>"$0" 1>&0 2>&0 && exec setsid -w -c "$@""#;

#[cfg(unix)]
fn winsize(size: PtySize) -> rustix::termios::Winsize {
    rustix::termios::Winsize {
        ws_row: size.rows(),
        ws_col: size.cols(),
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

#[cfg(unix)]
/// A fresh master, close-on-exec (set at open where the system allows it).
fn open_master() -> io::Result<OwnedFd> {
    use rustix::pty::OpenptFlags;
    #[cfg(target_os = "linux")]
    let master =
        rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    #[cfg(not(target_os = "linux"))]
    let master = {
        let m = rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)?;
        rustix::io::fcntl_setfd(&m, rustix::io::FdFlags::CLOEXEC)?;
        m
    };
    Ok(master)
}

#[cfg(unix)]
/// A pair on the host: (master, slave).
pub(crate) fn open_on_host(size: PtySize) -> io::Result<(OwnedFd, OwnedFd)> {
    let master = open_master()?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let name = rustix::pty::ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    rustix::termios::tcsetwinsize(&master, winsize(size))?;
    Ok((master, slave))
}

#[cfg(target_os = "linux")]
/// The master of a fresh pair in the devpts of the sandbox whose first
/// process is `pid`, once that sandbox has mounted its own (waits up to
/// two seconds). Its slave must be [`SANDBOX_SLAVE`].
pub(crate) async fn open_in_sandbox(pid: u32, size: PtySize) -> io::Result<OwnedFd> {
    let host_devpts = rustix::fs::stat("/dev/pts")?.st_dev;
    let pts = format!("/proc/{pid}/root/dev/pts");
    // bubblewrap reports the pid before it mounts the sandbox's devpts,
    // which it does a few milliseconds later: look every millisecond (the
    // timer's resolution; one stat each), so that the terminal opens
    // within about a millisecond of the mount.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut mounted = false;
    loop {
        if rustix::fs::stat(std::path::Path::new(&pts)).is_ok_and(|s| s.st_dev != host_devpts) {
            mounted = true;
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    if !mounted {
        return Err(io::Error::other("the sandbox did not mount its own devpts"));
    }
    let master = rustix::fs::open(
        std::path::Path::new(&format!("{pts}/ptmx")),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    rustix::pty::unlockpt(&master)?;
    let name = rustix::pty::ptsname(&master, Vec::new())?;
    if name.as_bytes() != SANDBOX_SLAVE.as_bytes() {
        return Err(io::Error::other(format!(
            "the sandbox's first terminal is {}, not {SANDBOX_SLAVE}",
            name.to_string_lossy()
        )));
    }
    rustix::termios::tcsetwinsize(&master, winsize(size))?;
    Ok(master)
}

#[cfg(target_os = "linux")]
/// A fresh pair in the devpts of the running sandbox whose first process is
/// `pid` (a warm session's): (master, slave), the master opened from the host through
/// that process's root, the slave from the master. Inside, the slave is `/dev/pts/N` of the
/// sandbox's own devpts.
pub(crate) fn open_pair_in_sandbox(pid: u32, size: PtySize) -> io::Result<(OwnedFd, OwnedFd)> {
    let pts = format!("/proc/{pid}/root/dev/pts");
    let host_devpts = rustix::fs::stat("/dev/pts")?.st_dev;
    if rustix::fs::stat(std::path::Path::new(&pts))?.st_dev == host_devpts {
        return Err(io::Error::other("the sandbox has no devpts of its own"));
    }
    let flags = rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC;
    let master = rustix::fs::open(
        std::path::Path::new(&format!("{pts}/ptmx")),
        flags,
        rustix::fs::Mode::empty(),
    )?;
    rustix::pty::unlockpt(&master)?;
    let slave = rustix::pty::ioctl_tiocgptpeer(
        &master,
        rustix::pty::OpenptFlags::RDWR
            | rustix::pty::OpenptFlags::NOCTTY
            | rustix::pty::OpenptFlags::CLOEXEC,
    )?;
    rustix::termios::tcsetwinsize(&master, winsize(size))?;
    Ok((master, slave))
}

/// The host's end of a command's terminal.
#[cfg(unix)]
pub(crate) struct PtyMaster {
    fd: AsyncFd<OwnedFd>,
}

#[cfg(unix)]
impl PtyMaster {
    /// Wraps a master (made non-blocking). Must run inside the runtime.
    pub(crate) fn new(fd: OwnedFd) -> io::Result<PtyMaster> {
        let flags = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, flags | rustix::fs::OFlags::NONBLOCK)?;
        // SAFETY: an `OwnedFd` is a valid open descriptor that stays open,
        // and names the same file, until the `AsyncFd` that owns it drops
        // it; `as_raw_fd` always returns that descriptor.
        #[allow(
            unsafe_code,
            reason = "registering an owned descriptor with the reactor; the SAFETY comment says why it holds"
        )]
        let fd = unsafe { AsyncFd::register(fd) }.map_err(|e| e.into_parts().1)?;
        Ok(PtyMaster { fd })
    }

    /// Reads what the terminal shows; `Ok(0)` once every slave is closed
    /// (Linux answers `EIO` then).
    pub(crate) async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|fd| {
                rustix::io::read(fd.get_ref().as_fd(), &mut *buf).map_err(io::Error::from)
            }) {
                Ok(Ok(n)) => return Ok(n),
                Ok(Err(e)) if e.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) => {
                    return Ok(0);
                }
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }

    /// Writes all of `data` as typed input.
    pub(crate) async fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let mut guard = self.fd.writable().await?;
            match guard
                .try_io(|fd| rustix::io::write(fd.get_ref().as_fd(), data).map_err(io::Error::from))
            {
                Ok(Ok(n)) => data = &data[n..],
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }

    /// Types one byte now if the terminal takes it without waiting (a
    /// control character such as Ctrl-C, kept in order with what is typed
    /// after it); `false` when it would have to wait.
    pub(crate) fn try_type(&self, byte: u8) -> bool {
        rustix::io::write(self.fd.get_ref(), &[byte]).is_ok_and(|n| n == 1)
    }

    /// Sets the terminal's size; the foreground job gets `SIGWINCH`.
    pub(crate) fn resize(&self, size: PtySize) -> io::Result<()> {
        rustix::termios::tcsetwinsize(self.fd.get_ref(), winsize(size)).map_err(io::Error::from)
    }

    /// The terminal's size as (rows, columns). The VM runtime wraps the
    /// slave it relays a guest's terminal through in this type too, and
    /// reads the size the host set on the master here.
    #[cfg(target_os = "linux")]
    pub(crate) fn size(&self) -> io::Result<(u16, u16)> {
        let w = rustix::termios::tcgetwinsize(self.fd.get_ref())?;
        Ok((w.ws_row, w.ws_col))
    }

    /// Sets the terminal raw (no echo, no line editing, no signals).
    #[cfg(target_os = "linux")]
    pub(crate) fn make_raw(&self) -> io::Result<()> {
        let mut t = rustix::termios::tcgetattr(self.fd.get_ref())?;
        t.make_raw();
        rustix::termios::tcsetattr(self.fd.get_ref(), rustix::termios::OptionalActions::Now, &t)?;
        Ok(())
    }
}

/// The host's end of a command's terminal: without terminals (Windows)
/// there is never one (the type has no value).
#[cfg(not(unix))]
pub(crate) enum PtyMaster {}

#[cfg(not(unix))]
impl PtyMaster {
    pub(crate) async fn read(&self, _buf: &mut [u8]) -> io::Result<usize> {
        match *self {}
    }

    pub(crate) async fn write_all(&self, _data: &[u8]) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn try_type(&self, _byte: u8) -> bool {
        match *self {}
    }

    pub(crate) fn resize(&self, _size: PtySize) -> io::Result<()> {
        match *self {}
    }
}
