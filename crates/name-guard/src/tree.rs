//! The guarded tree on the host (`--landlock`), where no pid namespace
//! holds it: every process the command started, found through `/proc` by
//! parent, signalled and ended by the supervisor, which is their subreaper
//! (an orphan, double-forked or `setsid`, comes back to it rather than to
//! `init`).

use crate::sys;
use std::time::{Duration, Instant};

/// How long [`end_all`] goes on killing before it gives up.
const END_DEADLINE: Duration = END_TREE_DEADLINE;

/// How long a supervisor takes at most, after
/// [`END_TREE_SIGNAL`](crate::END_TREE_SIGNAL) or its command's exit, to
/// kill and reap every process below it before it exits itself. A host that
/// waited this long, and a little more, for a supervisor that has not exited
/// (stopped, or stuck) ends the tree itself with
/// [`kill_tree_below`](crate::kill_tree_below) and then kills the
/// supervisor.
pub const END_TREE_DEADLINE: Duration = Duration::from_secs(5);
/// Most processes read from `/proc` in one pass.
const MAX_PROCESSES: usize = 1 << 20;
/// Longest `/proc/PID/stat` read: the kernel writes some 300 bytes (the
/// name at most 64); a longer one is not a stat line.
pub(crate) const MAX_STAT_LEN: usize = 4096;

/// One process as `/proc/PID/stat` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Proc {
    pub(crate) pid: i32,
    pub(crate) ppid: i32,
    pub(crate) zombie: bool,
}

/// The pid, parent and state of a `/proc/PID/stat` line: the command name
/// sits in parentheses and may hold any byte, so the fields are read after
/// the last `)`.
pub(crate) fn parse_stat(pid: i32, stat: &[u8]) -> Option<Proc> {
    if stat.len() > MAX_STAT_LEN {
        return None;
    }
    let close = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process this one can see.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .take(MAX_PROCESSES)
        .filter_map(|pid| {
            let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// The processes below `root` in `all`, parents before children.
pub(crate) fn below(root: i32, all: &[Proc]) -> Vec<Proc> {
    let mut children: std::collections::HashMap<i32, Vec<Proc>> = Default::default();
    for p in all {
        if p.pid != p.ppid {
            children.entry(p.ppid).or_default().push(*p);
        }
    }
    let mut out = Vec::new();
    let mut next = vec![root];
    let mut seen = std::collections::HashSet::from([root]);
    while let Some(pid) = next.pop() {
        for c in children.get(&pid).into_iter().flatten() {
            if seen.insert(c.pid) {
                out.push(*c);
                next.push(c.pid);
            }
        }
    }
    out
}

/// The pids of the live processes below `root`.
pub(crate) fn live_below(root: i32) -> Vec<i32> {
    below(root, &processes())
        .into_iter()
        .filter(|p| !p.zombie)
        .map(|p| p.pid)
        .collect()
}

/// Sends `sig` to every live process below `root`.
pub(crate) fn signal_all(root: i32, sig: i32) {
    for p in below(root, &processes()) {
        if !p.zombie {
            sys::kill(p.pid, sig);
        }
    }
}

/// Kills every live process below `root` until none is left or `within`
/// passed, without reaping (they are not this process's children): for a
/// host whose supervisor did not end its own tree. Whether none was left.
pub(crate) fn kill_live_below(root: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        let live: Vec<Proc> = below(root, &processes())
            .into_iter()
            .filter(|p| !p.zombie)
            .collect();
        if live.is_empty() {
            return true;
        }
        for p in &live {
            sys::kill(p.pid, libc::SIGKILL);
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Reaps the exited orphans that came to this process, leaving `main`
/// (whose status the supervisor reads itself) unreaped.
pub(crate) fn reap_orphans(main: i32) {
    while let Ok(Some(pid)) = sys::exited_child() {
        if pid == main {
            return;
        }
        sys::reap(pid);
    }
}

/// Kills every process below `root` and reaps them, until none is left:
/// what a process forks while it is being killed is found in the next
/// pass, an orphan comes to `root` (its subreaper). `false` when some are
/// still there after [`END_DEADLINE`].
pub(crate) fn end_all(root: i32) -> bool {
    let deadline = Instant::now() + END_DEADLINE;
    loop {
        signal_all(root, libc::SIGKILL);
        loop {
            match sys::exited_child() {
                Ok(Some(pid)) => sys::reap(pid),
                Ok(None) => break,
                // No child at all: nothing is left below.
                Err(_) => return true,
            }
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_last_parenthesis() {
        let p = |s: &str| parse_stat(7, s.as_bytes());
        assert_eq!(
            p("7 (sleep) S 3 7 7 0 -1"),
            Some(Proc {
                pid: 7,
                ppid: 3,
                zombie: false
            })
        );
        assert_eq!(
            p("7 (a) Z (b) Z 12 1"),
            Some(Proc {
                pid: 7,
                ppid: 12,
                zombie: true
            }),
            "a name with ') Z (' in it"
        );
        assert_eq!(p("7 (x"), None);
        assert_eq!(p("7 (x) S"), None);
        assert_eq!(p("7 (x) S notanumber"), None);
        assert_eq!(p(""), None);
        let long = format!("7 (x) S 3 {}", "0 ".repeat(MAX_STAT_LEN));
        assert_eq!(p(&long), None, "longer than any stat line");
    }

    #[test]
    fn below_finds_every_generation_and_nothing_else() {
        let q = |pid, ppid| Proc {
            pid,
            ppid,
            zombie: false,
        };
        let all = [
            q(1, 0),
            q(10, 1),
            q(11, 10),
            q(12, 11),
            q(13, 10),
            q(20, 1),
            q(21, 20),
        ];
        let mut got: Vec<i32> = below(10, &all).iter().map(|p| p.pid).collect();
        got.sort();
        assert_eq!(got, [11, 12, 13]);
        assert!(below(12, &all).is_empty());
        // A loop in what /proc said (pids reused between reads) ends.
        let looped = [q(5, 6), q(6, 5)];
        assert_eq!(below(5, &looped).len(), 1);
    }
}
