//! The violation log parser (R-SEATBELT-9).

use sandbox_core::SandboxViolation;

/// Longest log line the parser looks at, in bytes; longer lines give `None`.
pub const MAX_LOG_LINE: usize = 16 * 1024;

/// Parses one sandbox violation line from the macOS unified log, such as
/// `Sandbox: bash(123) deny(1) file-read-data /Users/x/.ssh/id_rsa`, with or
/// without the timestamp and process columns `log stream --style compact`
/// puts in front.
///
/// The action is the operation Seatbelt names (`file-read-data`,
/// `network-outbound`, ...) and the target the rest of the line (a path,
/// `host:port`, or empty for operations without one); the raw line is kept.
/// Lines of any other shape, `allow` lines, and lines over
/// [`MAX_LOG_LINE`] bytes give `None`. Never panics.
///
/// ```
/// use seatbelt_profile::parse_violation_line;
/// let v = parse_violation_line("Sandbox: bash(123) deny(1) network-outbound 1.2.3.4:443").unwrap();
/// assert_eq!((v.action.as_str(), v.target.as_str()), ("network-outbound", "1.2.3.4:443"));
/// ```
pub fn parse_violation_line(line: &str) -> Option<SandboxViolation> {
    if line.len() > MAX_LOG_LINE {
        return None;
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let mut search = line;
    while let Some(at) = search.find("Sandbox: ") {
        let rest = &search[at + "Sandbox: ".len()..];
        if let Some(v) = parse_after_marker(rest) {
            return Some(v.with_raw(line));
        }
        search = rest;
    }
    None
}

/// `NAME(PID) deny(N) ACTION TARGET`.
fn parse_after_marker(rest: &str) -> Option<SandboxViolation> {
    let deny_at = rest.find(") deny(")?;
    let process = &rest[..=deny_at];
    let open = process.rfind('(')?;
    let pid = &process[open + 1..process.len() - 1];
    if open == 0 || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let after = &rest[deny_at + ") deny(".len()..];
    let close = after.find(')')?;
    let count = &after[..close];
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let after = after[close + 1..].strip_prefix(' ')?;
    let (action, target) = match after.split_once(' ') {
        Some((a, t)) => (a, t.trim()),
        None => (after, ""),
    };
    let action_ok = !action.is_empty()
        && action
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'*');
    if !action_ok {
        return None;
    }
    Some(SandboxViolation::new(action, target))
}
