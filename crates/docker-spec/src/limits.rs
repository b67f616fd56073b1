//! Resource limits and the container user.

use crate::{Error, ErrorKind};

/// Resource limits. `--memory-swap` always equals `--memory`, so the
/// container gets no swap beyond its memory limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `--pids-limit`: 1 to 1 000 000 (default 512).
    pub pids: u32,
    /// `--memory` and `--memory-swap`, in bytes: 6 MiB to 1 TiB (default 2 GiB).
    pub memory_bytes: u64,
    /// `--cpus`, in thousandths of a CPU: 1 to 1 024 000, or none (default).
    pub milli_cpus: Option<u32>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            pids: 512,
            memory_bytes: 2 << 30,
            milli_cpus: None,
        }
    }
}

impl Limits {
    pub(crate) fn check(&self) -> Result<(), Error> {
        let bad = |limit, value, reason| {
            Err(ErrorKind::InvalidLimit {
                limit,
                value,
                reason,
            }
            .into())
        };
        if self.pids == 0 || self.pids > 1_000_000 {
            return bad("pids", u64::from(self.pids), "must be 1 to 1000000");
        }
        if self.memory_bytes < 6 << 20 || self.memory_bytes > 1 << 40 {
            return bad("memory", self.memory_bytes, "must be 6 MiB to 1 TiB");
        }
        if let Some(m) = self.milli_cpus
            && (m == 0 || m > 1_024_000)
        {
            return bad("cpus", u64::from(m), "must be 1 to 1024000 thousandths");
        }
        Ok(())
    }

    /// The `--cpus` value (`1.5` for 1500), if set.
    pub(crate) fn cpus_value(&self) -> Option<String> {
        self.milli_cpus
            .map(|m| format!("{}.{:03}", m / 1000, m % 1000))
    }
}

/// The numeric user the container runs as; never root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct User {
    /// User id, non-zero.
    pub uid: u32,
    /// Group id, non-zero.
    pub gid: u32,
}

impl Default for User {
    /// `1000:1000`.
    fn default() -> User {
        User {
            uid: 1000,
            gid: 1000,
        }
    }
}

impl User {
    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.uid == 0 || self.gid == 0 {
            return Err(ErrorKind::RootUser {
                uid: self.uid,
                gid: self.gid,
            }
            .into());
        }
        Ok(())
    }
}
