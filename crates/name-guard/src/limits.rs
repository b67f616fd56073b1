//! The supervisor's bounds on what it reads from and does for the guarded
//! process.

/// Longest path read from the guarded process, terminating NUL included.
pub const PATH_MAX: usize = 4096;
/// Most symbolic links followed for one creating open.
pub const MAX_SYMLINK_HOPS: usize = 40;
/// Most times a creating open is retried when a symbolic link appears at
/// its final component while it is being performed.
pub const MAX_RETRIES: usize = 8;
/// Most opens of existing FIFOs waiting at once on worker threads; past
/// it, an open of a FIFO answers `EAGAIN` rather than stall the supervisor.
pub const MAX_WAITING_FIFO_OPENS: usize = 256;

/// The most bytes of directory entries the supervisor lists for one
/// `getdents` on the host (a larger buffer gets fewer entries, as the
/// call allows).
pub const MAX_LISTING_READ: usize = 256 * 1024;
