//! The violation log parser (R-SEATBELT-9).

use sandbox_core::SandboxViolation;

/// Longest log line the parser looks at, in bytes; longer lines give `None`.
pub const MAX_LOG_LINE: usize = 16 * 1024;

/// Longest deny count (`deny(N)`) accepted, in digits.
const MAX_COUNT_DIGITS: usize = 10;

/// Parses one sandbox violation line from the macOS unified log, such as
/// `Sandbox: bash(123) deny(1) file-read-data /Users/x/.ssh/id_rsa`, with or
/// without the timestamp and process columns `log stream --style compact`
/// puts in front. The form of older releases, without the count
/// (`Sandbox: bash(123) deny file-read-data /path`), parses the same way.
///
/// The action is the operation Seatbelt names (`file-read-data`,
/// `network-outbound`, ...) and the target the rest of the line (a path,
/// `host:port`, or empty for operations without one); the raw line is kept.
/// The process id must be digits, and a count, when present, one to
/// ten digits. Lines of any other shape, `allow` lines, and lines over
/// [`MAX_LOG_LINE`] bytes give `None`. Never panics.
///
/// ```
/// use seatbelt_profile::parse_violation_line;
/// let v = parse_violation_line("Sandbox: bash(123) deny(1) network-outbound 1.2.3.4:443").unwrap();
/// assert_eq!((v.action.as_str(), v.target.as_str()), ("network-outbound", "1.2.3.4:443"));
/// let old = parse_violation_line("Sandbox: bash(123) deny file-read-data /Users/x/.netrc").unwrap();
/// assert_eq!((old.action.as_str(), old.target.as_str()), ("file-read-data", "/Users/x/.netrc"));
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

/// Parses a denial line of a profile tagged with `tag`
/// ([`Profile::tag_denials`](crate::Profile::tag_denials)): macOS ends the
/// line with the rule's message, so the line must end with the tag, which
/// is not part of the target. A line without the tag (another process's
/// denial) gives `None`, as does everything [`parse_violation_line`]
/// refuses.
///
/// ```
/// use seatbelt_profile::parse_tagged_violation_line;
/// let line = "Sandbox: cat(9) deny(1) file-read-data /Users/x/.netrc agent-s1";
/// let v = parse_tagged_violation_line(line, "agent-s1").unwrap();
/// assert_eq!((v.action.as_str(), v.target.as_str()), ("file-read-data", "/Users/x/.netrc"));
/// assert!(parse_tagged_violation_line(line, "agent-s2").is_none());
/// ```
pub fn parse_tagged_violation_line(line: &str, tag: &str) -> Option<SandboxViolation> {
    if tag.is_empty() || line.len() > MAX_LOG_LINE {
        return None;
    }
    let full = line.trim_end_matches(['\r', '\n']);
    let untagged = full.strip_suffix(tag)?;
    // The tag is a word of its own: `... /path TAG`, never `/pathTAG`.
    let untagged = untagged.strip_suffix(' ')?;
    parse_violation_line(untagged).map(|v| v.with_raw(full))
}

/// Longest line of `log stream --style ndjson` that
/// [`parse_log_stream_line`] reads, in bytes (the message is at most
/// [`MAX_LOG_LINE`]; the rest is the entry's metadata).
pub const MAX_LOG_STREAM_LINE: usize = 64 * 1024;

/// Parses one line of `log stream --style ndjson`: a JSON object whose
/// string `eventMessage` is a denial of the profile tagged `tag`
/// ([`parse_tagged_violation_line`]). Lines over [`MAX_LOG_STREAM_LINE`]
/// bytes, lines that are not a JSON object with a string `eventMessage`,
/// and messages of other shapes or tags give `None`; JSON nesting is
/// bounded by serde_json's recursion limit. Never panics.
///
/// ```
/// use seatbelt_profile::parse_log_stream_line;
/// let line = br#"{"eventMessage":"Sandbox: cat(9) deny(1) file-read-data /Users/x/.netrc t-1","processID":0}"#;
/// let v = parse_log_stream_line(line, "t-1").unwrap();
/// assert_eq!((v.action.as_str(), v.target.as_str()), ("file-read-data", "/Users/x/.netrc"));
/// assert!(parse_log_stream_line(b"[1,2]", "t-1").is_none());
/// ```
pub fn parse_log_stream_line(line: &[u8], tag: &str) -> Option<SandboxViolation> {
    if line.len() > MAX_LOG_STREAM_LINE {
        return None;
    }
    let entry: serde_json::Value = serde_json::from_slice(line).ok()?;
    let message = entry.as_object()?.get("eventMessage")?.as_str()?;
    parse_tagged_violation_line(message, tag)
}

/// `NAME(PID) deny(N) ACTION TARGET` or `NAME(PID) deny ACTION TARGET`.
///
/// The first `) deny` followed by `(` or a space ends the process column;
/// if what surrounds it is not of this shape the line is not a violation.
fn parse_after_marker(rest: &str) -> Option<SandboxViolation> {
    let deny_at = rest
        .match_indices(") deny")
        .map(|(i, _)| i)
        .find(|i| matches!(rest.as_bytes().get(i + ") deny".len()), Some(b'(' | b' ')))?;
    let process = &rest[..=deny_at];
    let open = process.rfind('(')?;
    let pid = &process[open + 1..process.len() - 1];
    if open == 0 || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut after = &rest[deny_at + ") deny".len()..];
    if let Some(counted) = after.strip_prefix('(') {
        let close = counted.find(')')?;
        let count = &counted[..close];
        if count.is_empty()
            || count.len() > MAX_COUNT_DIGITS
            || !count.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        after = &counted[close + 1..];
    }
    let after = after.strip_prefix(' ')?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_limit_holds_for_both_forms() {
        for head in [
            "Sandbox: bash(1) deny(1) file-read-data /",
            "Sandbox: bash(1) deny file-read-data /",
        ] {
            let fits = format!("{head}{}", "a".repeat(MAX_LOG_LINE - head.len()));
            assert!(parse_violation_line(&fits).is_some());
            let over = format!("{fits}a");
            assert_eq!(parse_violation_line(&over), None);
        }
    }

    #[test]
    fn a_tagged_line_loses_its_tag_and_other_tags_are_not_ours() {
        let cases = [
            (
                "Sandbox: sh(2) deny(1) file-read-data /a b t1",
                Some(("file-read-data", "/a b")),
            ),
            (
                "Sandbox: sh(2) deny(1) process-fork t1",
                Some(("process-fork", "")),
            ),
            (
                "Sandbox: sh(2) deny(1) file-read-data /a t1\n",
                Some(("file-read-data", "/a")),
            ),
            ("Sandbox: sh(2) deny(1) file-read-data /at1", None),
            ("Sandbox: sh(2) deny(1) file-read-data /a t2", None),
            ("Sandbox: sh(2) deny(1) file-read-data /a", None),
            ("t1", None),
            (" t1", None),
        ];
        for (line, want) in cases {
            let got = parse_tagged_violation_line(line, "t1");
            let got = got.as_ref().map(|v| (v.action.as_str(), v.target.as_str()));
            assert_eq!(got, want, "{line:?}");
        }
        assert!(parse_tagged_violation_line("Sandbox: sh(2) deny(1) x ", "").is_none());
    }

    #[test]
    fn the_first_deny_column_decides() {
        // A target that looks like another process column does not move the split.
        let v =
            parse_violation_line("Sandbox: sh(2) deny file-read-data /w/x(3) deny(1) y").unwrap();
        assert_eq!(v.action, "file-read-data");
        assert_eq!(v.target, "/w/x(3) deny(1) y");
        // `) deny` followed by anything but `(` or a space is not the column.
        let v = parse_violation_line("Sandbox: a) denyx(7) deny(1) process-fork").unwrap();
        assert_eq!((v.action.as_str(), v.target.as_str()), ("process-fork", ""));
    }
}
