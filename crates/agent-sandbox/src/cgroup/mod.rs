//! Resource limits through cgroups: a fresh cgroup per command (v2 where
//! the host delegates the controller, v1 where the controller lives there),
//! the command's first process moved into it before it runs, out-of-memory
//! kills read back, and everything left in it killed when the command ends.
//!
//! [`Cgroups::from_ambient`] reads where this process's cgroups are and
//! which of them it may write; a limit no cgroup here can enforce is an
//! error at `exec`, never dropped.
//!
//! cgroups are Linux's: elsewhere [`Cgroups::from_ambient`] finds none, so
//! no command cgroup is ever made and every limit is
//! [`ErrorKind::LimitUnavailable`].

#[cfg(target_os = "linux")]
mod detect;

use crate::{Error, ErrorKind};
use sandbox_core::Limits;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The CFS period CPU limits are expressed in (100 ms).
const CPU_PERIOD_US: u64 = 100_000;

/// Where commands' cgroups are made, per controller.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cgroups {
    memory: Option<Place>,
    pids: Option<Place>,
    cpu: Option<Place>,
}

/// A writable cgroup directory that has the controller.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    unified: bool,
    dir: PathBuf,
}

impl Cgroups {
    /// No cgroups: any limit is refused.
    pub fn none() -> Cgroups {
        Cgroups::default()
    }

    /// Reads this process's cgroups (`/proc/self/cgroup`,
    /// `/proc/self/mountinfo`) and keeps, per controller (memory, pids,
    /// cpu), a directory this process may create cgroups in: the unified
    /// hierarchy when it delegates the controller (`cgroup.subtree_control`
    /// lists it), else the v1 hierarchy of the controller. Off Linux there
    /// are none ([`Cgroups::none`]).
    #[cfg(target_os = "linux")]
    pub fn from_ambient() -> Cgroups {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let hierarchies =
            detect::hierarchies(&read("/proc/self/cgroup"), &read("/proc/self/mountinfo"));
        let writable = |dir: &Path| {
            rustix::fs::access(
                dir,
                rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
            )
            .is_ok()
        };
        let place = |controller: &str| -> Option<Place> {
            let v2 = hierarchies.iter().find(|h| {
                h.unified
                    && std::fs::read_to_string(h.dir.join("cgroup.subtree_control"))
                        .is_ok_and(|s| s.split_whitespace().any(|c| c == controller))
                    && writable(&h.dir)
            });
            let v1 = || {
                hierarchies.iter().find(|h| {
                    !h.unified && h.controllers.iter().any(|c| c == controller) && writable(&h.dir)
                })
            };
            v2.or_else(v1).map(|h| Place {
                unified: h.unified,
                dir: h.dir.clone(),
            })
        };
        Cgroups {
            memory: place("memory"),
            pids: place("pids"),
            cpu: place("cpu"),
        }
    }

    /// No cgroups off Linux: any limit is refused.
    #[cfg(not(target_os = "linux"))]
    pub fn from_ambient() -> Cgroups {
        Cgroups::none()
    }

    /// One line for the log and the handle: which limits apply and how.
    pub fn describe(&self) -> String {
        let one = |name: &str, p: &Option<Place>| match p {
            Some(p) => format!(
                "{name}: cgroup {} at {}",
                if p.unified { "v2" } else { "v1" },
                p.dir.display()
            ),
            None => format!("{name}: unavailable"),
        };
        [
            one("memory", &self.memory),
            one("pids", &self.pids),
            one("cpu", &self.cpu),
        ]
        .join("; ")
    }
}

/// The cgroup of one command: made for its limits, removed at its end.
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    /// The directories made (one per hierarchy), with whether unified.
    dirs: Vec<(PathBuf, bool)>,
    /// The one holding the memory controller.
    memory: Option<(PathBuf, bool)>,
}

impl CommandCgroup {
    /// Makes the cgroup for `limits`, or `None` when no limit is set.
    /// `overhead` processes are added to a process limit: the sandbox's own
    /// (bubblewrap's, the name guard's), which count against it too.
    pub(crate) fn create(
        cgroups: &Cgroups,
        limits: &Limits,
        overhead: u32,
    ) -> Result<Option<CommandCgroup>, Error> {
        if limits.is_empty() {
            return Ok(None);
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "agent-sandbox-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let need = |limit: &'static str, p: &Option<Place>| {
            p.clone().ok_or_else(|| {
                Error::from(ErrorKind::LimitUnavailable {
                    limit,
                    reason: "no cgroup with that controller is writable by this process \
                             (cgroup v2 with the controller delegated, or a writable v1 hierarchy)"
                        .into(),
                })
            })
        };
        let mut cg = CommandCgroup {
            dirs: Vec::new(),
            memory: None,
        };
        if let Some(bytes) = limits.memory_bytes {
            let p = need("memory", &cgroups.memory)?;
            let dir = cg.make(&p, &name)?;
            if p.unified {
                write(&dir, "memory.max", &bytes.to_string())?;
                write_if_present(&dir, "memory.swap.max", "0")?;
            } else {
                write(&dir, "memory.limit_in_bytes", &bytes.to_string())?;
                // With swap accounting, swap must not extend the limit.
                write_if_present(&dir, "memory.memsw.limit_in_bytes", &bytes.to_string())?;
            }
            cg.memory = Some((dir, p.unified));
        }
        if let Some(n) = limits.max_processes {
            let p = need("processes", &cgroups.pids)?;
            let dir = cg.make(&p, &name)?;
            write(&dir, "pids.max", &n.saturating_add(overhead).to_string())?;
        }
        if let Some(millis) = limits.cpu_millis {
            let p = need("cpu", &cgroups.cpu)?;
            let dir = cg.make(&p, &name)?;
            let quota = u64::from(millis) * CPU_PERIOD_US / 1000;
            if p.unified {
                write(&dir, "cpu.max", &format!("{quota} {CPU_PERIOD_US}"))?;
            } else {
                write(&dir, "cpu.cfs_period_us", &CPU_PERIOD_US.to_string())?;
                write(&dir, "cpu.cfs_quota_us", &quota.to_string())?;
            }
        }
        Ok(Some(cg))
    }

    /// The cgroup directory under `place` (made once per hierarchy).
    fn make(&mut self, place: &Place, name: &str) -> Result<PathBuf, Error> {
        let dir = place.dir.join(name);
        if !self.dirs.iter().any(|(d, _)| *d == dir) {
            std::fs::create_dir(&dir)
                .map_err(|e| Error::io(format!("creating cgroup {}", dir.display()), e))?;
            self.dirs.push((dir.clone(), place.unified));
        }
        Ok(dir)
    }

    /// The `cgroup.procs` files the command's first process writes itself
    /// into before it runs.
    pub(crate) fn procs_files(&self) -> Vec<CString> {
        self.dirs
            .iter()
            .filter_map(|(d, _)| {
                CString::new(d.join("cgroup.procs").into_os_string().into_encoded_bytes()).ok()
            })
            .collect()
    }

    /// Whether the kernel's out-of-memory killer ended a process in it.
    pub(crate) fn oom_killed(&self) -> bool {
        let Some((dir, unified)) = &self.memory else {
            return false;
        };
        let file = if *unified {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        std::fs::read_to_string(dir.join(file)).is_ok_and(|text| oom_kills(&text) > 0)
    }

    /// Kills whatever is left in it and removes it, waiting up to a second
    /// for the killed processes to be gone.
    pub(crate) async fn remove(mut self) {
        for _ in 0..100 {
            self.kill_all();
            self.dirs
                .retain(|(d, _)| std::fs::remove_dir(d).is_err() && d.exists());
            if self.dirs.is_empty() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Kills every process in it. (Off Linux no cgroup is ever made, so
    /// there is none to kill.)
    fn kill_all(&self) {
        #[cfg(target_os = "linux")]
        for (dir, _) in &self.dirs {
            let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
                continue;
            };
            for pid in text.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }
}

/// A cgroup holding a whole sandbox's host processes (a gVisor sandbox,
/// whose commands run in its own kernel), whose CPU quota follows the
/// command running in it: unlimited between commands. It holds whatever
/// else runs in the sandbox too, so a command's CPU limit holds for the
/// sandbox as a whole while it runs: stricter, never weaker.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub(crate) struct SandboxCpu {
    dir: PathBuf,
    unified: bool,
}

#[cfg(target_os = "linux")]
impl SandboxCpu {
    /// Makes the cgroup where a CPU controller is writable; `None` where
    /// none is (a CPU limit is then refused).
    pub(crate) fn create(cgroups: &Cgroups) -> Result<Option<SandboxCpu>, Error> {
        let Some(place) = &cgroups.cpu else {
            return Ok(None);
        };
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let dir = place.dir.join(format!(
            "agent-sandbox-{}-sandbox-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| Error::io(format!("creating cgroup {}", dir.display()), e))?;
        let cpu = SandboxCpu {
            dir,
            unified: place.unified,
        };
        cpu.set(None)?;
        Ok(Some(cpu))
    }

    /// Moves process `pid` (all its threads) into it.
    pub(crate) fn adopt(&self, pid: u32) -> Result<(), Error> {
        write(&self.dir, "cgroup.procs", &pid.to_string())
    }

    /// Sets the quota: `millis` thousandths of a CPU, or none.
    pub(crate) fn set(&self, millis: Option<u32>) -> Result<(), Error> {
        let quota = millis.map(|m| u64::from(m) * CPU_PERIOD_US / 1000);
        if self.unified {
            let q = quota.map_or_else(|| "max".to_owned(), |q| q.to_string());
            write(&self.dir, "cpu.max", &format!("{q} {CPU_PERIOD_US}"))
        } else {
            write(&self.dir, "cpu.cfs_period_us", &CPU_PERIOD_US.to_string())?;
            let q = quota.map_or_else(|| "-1".to_owned(), |q| q.to_string());
            write(&self.dir, "cpu.cfs_quota_us", &q)
        }
    }
}

#[cfg(target_os = "linux")]
impl Drop for SandboxCpu {
    /// Removes it once the sandbox's processes are gone (waiting up to a
    /// tenth of a second for them to exit).
    fn drop(&mut self) {
        for _ in 0..10 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.kill_all();
        for (d, _) in &self.dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}

fn write(dir: &Path, file: &str, value: &str) -> Result<(), Error> {
    std::fs::write(dir.join(file), value).map_err(|e| {
        Error::from(ErrorKind::LimitUnavailable {
            limit: "cgroup",
            reason: format!("writing {value} to {}: {e}", dir.join(file).display()),
        })
    })
}

fn write_if_present(dir: &Path, file: &str, value: &str) -> Result<(), Error> {
    if dir.join(file).exists() {
        write(dir, file, value)
    } else {
        Ok(())
    }
}

/// The `oom_kill N` count of `memory.events` (v2) or `memory.oom_control`
/// (v1); 0 when absent.
fn oom_kills(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.strip_prefix("oom_kill "))
        .filter_map(|n| n.trim().parse().ok())
        .next()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_kill_counts_of_both_versions() {
        assert_eq!(
            oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"),
            2,
            "v1 memory.oom_control"
        );
        assert_eq!(
            oom_kills("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n"),
            1,
            "v2 memory.events"
        );
        assert_eq!(
            oom_kills("oom_kill_disable 0\n"),
            0,
            "oom_kill_disable is another field"
        );
        assert_eq!(oom_kills(""), 0);
    }

    #[test]
    fn without_cgroups_a_limit_is_an_error_naming_it() {
        let limits = Limits {
            max_processes: Some(10),
            ..Limits::default()
        };
        let err = CommandCgroup::create(&Cgroups::none(), &limits, 3).unwrap_err();
        assert!(err.to_string().contains("processes"), "{err}");
        assert!(
            CommandCgroup::create(&Cgroups::none(), &Limits::default(), 3)
                .unwrap()
                .is_none(),
            "no limit, no cgroup"
        );
        assert_eq!(
            Cgroups::none().describe(),
            "memory: unavailable; pids: unavailable; cpu: unavailable"
        );
    }
}
