//! `agent-run --events`: every event of the run as one JSON object per
//! line (the serde form of [`SandboxEvent`]), and the count of violations
//! by action for the summary line at exit.

use crate::ArgError;
use sandbox_core::SandboxEvent;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Where `--events` writes the run's events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsTo {
    /// `json:FD`: a descriptor this program was started with (3 or above),
    /// such as a pipe of the program driving it. Unix only.
    Descriptor(u32),
    /// `json=FILE`: a file, created or truncated.
    File(PathBuf),
}

const EVENTS_TAKES: &str = "json:FD (a descriptor of 3 or above this program was started with, \
such as json:3 with 3>events.jsonl) or json=FILE";

#[cfg(unix)]
const DESCRIPTORS: bool = true;
#[cfg(not(unix))]
const DESCRIPTORS: bool = false;

impl EventsTo {
    /// Reads `json:FD` or `json=FILE`.
    pub fn parse(value: &str) -> Result<EventsTo, ArgError> {
        let bad = || ArgError::bad_value("--events", value, EVENTS_TAKES);
        if let Some(file) = value.strip_prefix("json=") {
            if file.is_empty() {
                return Err(bad());
            }
            return Ok(EventsTo::File(PathBuf::from(file)));
        }
        let fd = value
            .strip_prefix("json:")
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u32>().ok())
            .filter(|fd| *fd >= 3 && i32::try_from(*fd).is_ok())
            .ok_or_else(bad)?;
        if !DESCRIPTORS {
            return Err(ArgError::bad_value(
                "--events",
                value,
                "json=FILE on this platform (descriptors are passed on Unix only)",
            ));
        }
        Ok(EventsTo::Descriptor(fd))
    }

    /// Opens the log. Reads the ambient process: a descriptor it was
    /// started with, or the file system. Call it before anything else
    /// opens descriptors, so that a descriptor number the caller did not
    /// pass cannot name one of this program's own.
    pub fn open(&self) -> Result<EventLog, String> {
        match self {
            EventsTo::File(path) => std::fs::File::create(path).map(EventLog::new).map_err(|e| {
                format!(
                    "--events json={}: {e} (give a file in a directory that exists)",
                    path.display()
                )
            }),
            EventsTo::Descriptor(fd) => open_descriptor(*fd).map(EventLog::new).map_err(|e| {
                format!(
                    "--events json:{fd}: descriptor {fd} is not open for writing ({e}); \
                     start agent-run with {fd}>FILE or a pipe on {fd}, or use --events json=FILE"
                )
            }),
        }
    }
}

/// The descriptor `fd` reopened through the process's descriptor directory
/// (the same pipe, or the same file, appended to), so no descriptor is
/// taken over by number.
#[cfg(target_os = "linux")]
fn open_descriptor(fd: u32) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(format!("/proc/self/fd/{fd}"))
}

/// The descriptor `fd`, duplicated through `/dev/fd`.
#[cfg(all(unix, not(target_os = "linux")))]
fn open_descriptor(fd: u32) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(format!("/dev/fd/{fd}"))
}

/// No descriptors are passed by number here; `EventsTo::parse` refuses
/// them.
#[cfg(not(unix))]
fn open_descriptor(_fd: u32) -> std::io::Result<std::fs::File> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// The open event log: one JSON object per line, each written with one
/// write, unbuffered.
#[derive(Debug)]
pub struct EventLog {
    out: std::fs::File,
}

impl EventLog {
    fn new(out: std::fs::File) -> EventLog {
        EventLog { out }
    }

    /// Writes `event` as one line.
    pub fn write(&mut self, event: &SandboxEvent) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        self.out.write_all(&line)
    }
}

/// Violations counted by action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViolationTally {
    counts: BTreeMap<String, usize>,
}

impl ViolationTally {
    /// Counts one violation of `action`.
    pub fn add(&mut self, action: &str) {
        *self.counts.entry(action.to_owned()).or_default() += 1;
    }

    /// `no violations`, or `violations: ` and each action with its count,
    /// the most frequent first (ties by name).
    pub fn summary(&self) -> String {
        if self.counts.is_empty() {
            return "no violations".to_owned();
        }
        let mut counts: Vec<(&String, &usize)> = self.counts.iter().collect();
        counts.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let parts: Vec<String> = counts.iter().map(|(a, n)| format!("{a} {n}")).collect();
        format!("violations: {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_values() {
        let takes = "--events takes json:FD (a descriptor of 3 or above this program was started \
                     with, such as json:3 with 3>events.jsonl) or json=FILE";
        let cases: &[(&str, Result<EventsTo, String>)] = &[
            (
                "json=events.jsonl",
                Ok(EventsTo::File("events.jsonl".into())),
            ),
            ("json=/tmp/a=b:c", Ok(EventsTo::File("/tmp/a=b:c".into()))),
            ("json", Err(format!("{takes}, not \"json\""))),
            ("json=", Err(format!("{takes}, not \"json=\""))),
            ("json:", Err(format!("{takes}, not \"json:\""))),
            ("json:0", Err(format!("{takes}, not \"json:0\""))),
            ("json:1", Err(format!("{takes}, not \"json:1\""))),
            ("json:2", Err(format!("{takes}, not \"json:2\""))),
            ("json:-3", Err(format!("{takes}, not \"json:-3\""))),
            ("json:+3", Err(format!("{takes}, not \"json:+3\""))),
            ("json:3x", Err(format!("{takes}, not \"json:3x\""))),
            (
                "json:4294967296",
                Err(format!("{takes}, not \"json:4294967296\"")),
            ),
            (
                "json:3000000000",
                Err(format!("{takes}, not \"json:3000000000\"")),
            ),
            ("yaml:3", Err(format!("{takes}, not \"yaml:3\""))),
            ("3", Err(format!("{takes}, not \"3\""))),
        ];
        for (value, want) in cases {
            let got = EventsTo::parse(value).map_err(|e| e.to_string());
            assert_eq!(&got, want, "{value:?}");
        }
        #[cfg(unix)]
        assert_eq!(EventsTo::parse("json:3"), Ok(EventsTo::Descriptor(3)));
        #[cfg(not(unix))]
        assert!(EventsTo::parse("json:3").is_err());
    }

    #[test]
    fn each_event_is_one_line_of_its_serde_form() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, "stale contents\n".repeat(10)).unwrap();
        let mut log = EventsTo::File(path.clone()).open().unwrap();
        let events = [
            SandboxEvent::Starting,
            SandboxEvent::Stdout {
                data: b"hi\n".to_vec(),
            },
            SandboxEvent::Exit { exit_code: 3 },
        ];
        for e in &events {
            log.write(e).unwrap();
        }
        drop(log);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"type":"starting"}"#,
                r#"{"type":"stdout","text":"hi\n"}"#,
                r#"{"type":"exit","exitCode":3}"#,
            ]
        );
    }

    #[test]
    fn an_unwritable_file_names_what_to_give_instead() {
        let e = EventsTo::File("/nonexistent-dir/events.jsonl".into())
            .open()
            .unwrap_err();
        assert!(
            e.starts_with("--events json=/nonexistent-dir/events.jsonl: ")
                && e.ends_with("(give a file in a directory that exists)"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_descriptor_that_is_not_open_says_how_to_pass_one() {
        // Far above anything a test process has open.
        let e = EventsTo::Descriptor(999_999).open().unwrap_err();
        assert!(
            e.starts_with("--events json:999999: descriptor 999999 is not open for writing")
                && e.ends_with(
                    "start agent-run with 999999>FILE or a pipe on 999999, or use --events json=FILE"
                ),
            "{e}"
        );
    }

    #[test]
    fn the_summary_counts_by_action_most_first() {
        let mut t = ViolationTally::default();
        assert_eq!(t.summary(), "no violations");
        for a in ["file-write-create", "network-outbound", "network-outbound"] {
            t.add(a);
        }
        assert_eq!(
            t.summary(),
            "violations: network-outbound 2, file-write-create 1"
        );
        t.add("file-write-create");
        t.add("broker-deny");
        assert_eq!(
            t.summary(),
            "violations: file-write-create 2, network-outbound 2, broker-deny 1"
        );
    }
}
