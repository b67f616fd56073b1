//! A process named so that a reused pid cannot pass for it: its pid and
//! its start time (Linux's `/proc/PID/stat` field 22, clock ticks since
//! boot). A session directory records its owner this way, and a directory
//! whose owner is gone (no such pid, or a pid now held by a process that
//! started at another time) is a crash leftover.

use std::fmt;

/// Longest stamp line read back (`"PID START\n"`).
pub const MAX_STAMP_LEN: usize = 64;
/// Longest `/proc/PID/stat` read: the kernel writes some 300 bytes (the
/// command name at most 64); a longer one is not a stat line.
pub const MAX_STAT_LEN: usize = 4096;

/// A process's pid and start time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessStamp {
    /// The pid, in the reading process's pid namespace.
    pub pid: u32,
    /// Clock ticks from boot to the process's start.
    pub start_time: u64,
}

impl ProcessStamp {
    /// The stamp of `pid` from the text of its `/proc/PID/stat`: the
    /// fields after the last `)` (the command name in parentheses may hold
    /// any byte), of which the start time is the 20th. `None` for anything
    /// longer than [`MAX_STAT_LEN`] or not shaped like a stat line.
    pub fn from_stat(pid: u32, stat: &[u8]) -> Option<ProcessStamp> {
        if stat.len() > MAX_STAT_LEN {
            return None;
        }
        let close = stat.iter().rposition(|b| *b == b')')?;
        let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
        // Field 3 (the state) is the first after the name; 22 is the 20th.
        let start_time = rest.split_ascii_whitespace().nth(19)?.parse().ok()?;
        Some(ProcessStamp { pid, start_time })
    }

    /// Reads the stamp a [`fmt::Display`] wrote: `PID START`, one line,
    /// decimal digits only. `None` for anything else or longer than
    /// [`MAX_STAMP_LEN`].
    pub fn parse(text: &[u8]) -> Option<ProcessStamp> {
        if text.len() > MAX_STAMP_LEN {
            return None;
        }
        let text = std::str::from_utf8(text).ok()?;
        let line = text.strip_suffix('\n').unwrap_or(text);
        let (pid, start) = line.split_once(' ')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(pid) || !digits(start) {
            return None;
        }
        Some(ProcessStamp {
            pid: pid.parse().ok()?,
            start_time: start.parse().ok()?,
        })
    }

    /// The stamp of the running process `pid`, read from the ambient
    /// machine's `/proc`; `None` when no such process is visible (or
    /// elsewhere than Linux).
    pub fn of_pid_from_ambient(pid: u32) -> Option<ProcessStamp> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        use std::io::Read;
        let f = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
        let mut stat = Vec::with_capacity(512);
        f.take(MAX_STAT_LEN as u64 + 1)
            .read_to_end(&mut stat)
            .ok()?;
        ProcessStamp::from_stat(pid, &stat)
    }

    /// The stamp of this process (ambient `/proc`; `None` elsewhere than
    /// Linux).
    pub fn current_from_ambient() -> Option<ProcessStamp> {
        ProcessStamp::of_pid_from_ambient(std::process::id())
    }

    /// Whether the process this stamp names is gone: its pid is not
    /// visible, or is held by a process that started at another time.
    /// Reads the ambient `/proc`; answers `false` elsewhere than Linux
    /// (nothing there can tell).
    pub fn is_gone_from_ambient(&self) -> bool {
        if !cfg!(target_os = "linux") {
            return false;
        }
        match ProcessStamp::of_pid_from_ambient(self.pid) {
            Some(now) => now.start_time != self.start_time,
            None => !std::path::Path::new(&format!("/proc/{}", self.pid)).exists(),
        }
    }
}

impl fmt::Display for ProcessStamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.pid, self.start_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &[u8] = b"4242 (sh) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 2355200 200 18446744073709551615";

    #[test]
    fn the_start_time_is_the_twenty_second_field() {
        assert_eq!(
            ProcessStamp::from_stat(4242, STAT),
            Some(ProcessStamp {
                pid: 4242,
                start_time: 987654
            })
        );
        // A name with spaces and parentheses moves nothing.
        let odd = b"7 (a) b) c (d) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert_eq!(
            ProcessStamp::from_stat(7, odd).map(|s| s.start_time),
            Some(55)
        );
        for bad in [
            &b""[..],
            b"7 (x) S 1",
            b"7 (x",
            b"7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -5",
        ] {
            assert_eq!(ProcessStamp::from_stat(7, bad), None, "{bad:?}");
        }
        let long = [b'0'; MAX_STAT_LEN + 1];
        assert_eq!(ProcessStamp::from_stat(7, &long), None);
    }

    #[test]
    fn a_stamp_reads_back_what_it_wrote_and_nothing_else() {
        let s = ProcessStamp {
            pid: 12,
            start_time: 345,
        };
        assert_eq!(ProcessStamp::parse(format!("{s}\n").as_bytes()), Some(s));
        assert_eq!(ProcessStamp::parse(s.to_string().as_bytes()), Some(s));
        for bad in [
            &b""[..],
            b"12",
            b"12 ",
            b" 345",
            b"12 345 6",
            b"12  345",
            b"+12 345",
            b"12 -345",
            b"12 345\n\n",
            b"99999999999 1",
        ] {
            assert_eq!(ProcessStamp::parse(bad), None, "{bad:?}");
        }
        assert_eq!(ProcessStamp::parse(&[b'1'; MAX_STAMP_LEN + 1]), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_not_gone_and_a_changed_start_time_is() {
        let me = ProcessStamp::current_from_ambient().unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(!me.is_gone_from_ambient());
        let reused = ProcessStamp {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(reused.is_gone_from_ambient());
        let absent = ProcessStamp {
            pid: u32::MAX - 1,
            start_time: 1,
        };
        assert!(absent.is_gone_from_ambient());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..5000)) {
            let _ = ProcessStamp::from_stat(1, &data);
            if let Some(s) = ProcessStamp::parse(&data) {
                proptest::prop_assert_eq!(ProcessStamp::parse(s.to_string().as_bytes()), Some(s));
            }
        }

        #[test]
        fn every_stamp_round_trips(pid in proptest::num::u32::ANY, start in proptest::num::u64::ANY) {
            let s = ProcessStamp { pid, start_time: start };
            proptest::prop_assert_eq!(ProcessStamp::parse(s.to_string().as_bytes()), Some(s));
        }
    }
}
