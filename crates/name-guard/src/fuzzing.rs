//! Entry points for the fuzz targets under `fuzz/`: the readers of `/proc`
//! text that a sandboxed process partly writes (its name is any 16 bytes it
//! chooses, parentheses and newlines included). Any panic is a bug.

use crate::proc_net::{MAX_LINE, listeners};
use crate::supervisor::target::parse_status;
use crate::tree::{MAX_STAT_LEN, parse_stat};

/// A `/proc/PID/stat` line: never panics, nothing longer than
/// the tree module's `MAX_STAT_LEN` is read, and the parent is the number after the state
/// that follows the last `)`.
pub fn proc_stat(data: &[u8]) -> Option<(i32, bool)> {
    let got = parse_stat(7, data)?;
    assert!(
        data.len() <= MAX_STAT_LEN,
        "read a stat line past its limit"
    );
    assert_eq!(got.pid, 7);
    let close = data.iter().rposition(|&b| b == b')');
    assert!(close.is_some(), "parsed a line without the name's end");
    Some((got.ppid, got.zombie))
}

/// A status file's start: never panics, and a `Tgid` line is needed.
pub fn proc_status(data: &[u8]) -> Option<(u32, u32)> {
    let got = parse_status(data)?;
    assert!(
        data.windows(5).any(|w| w == b"Tgid:"),
        "a thread group id without its line"
    );
    Some(got)
}

/// A `/proc/net/tcp` or `tcp6` table: never panics, and a table with a
/// line longer than the limit is refused whole.
pub fn proc_net_tcp(data: &[u8]) -> Option<usize> {
    let got = listeners(data).ok()?;
    assert!(
        data.split(|&c| c == b'\n').all(|l| l.len() <= MAX_LINE),
        "read a table with a line past the limit"
    );
    Some(got.len())
}
