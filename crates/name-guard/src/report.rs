//! Denial reports: one line per refused call, written by the supervisor to
//! the descriptor given with `--report-fd`, and parsed on the host side.
//!
//! A line is `<call> <escaped-absolute-path>\n`. `<call>` is one of the
//! names of [`DeniedCall`]. In the path, `\` is written `\\`, a newline
//! `\n`, every other byte below `0x20`, `0x7f` and every byte that is not
//! part of valid UTF-8 `\xHH` (two lowercase hex digits); every other byte
//! is written as is. A line is at most [`MAX_REPORT_LINE`] bytes, newline
//! included; a longer path is cut at an escape boundary.
//!
//! Reports are best-effort: the supervisor never blocks on the descriptor,
//! and a line that does not fit is dropped and counted in
//! [`Stats::reports_dropped`](crate::Stats::reports_dropped). A reader
//! should parse complete lines only (ending in `\n`).

use crate::PATH_MAX;
use crate::{Error, ErrorKind};

/// Longest report line, in bytes, trailing newline included.
pub const MAX_REPORT_LINE: usize = 4 * PATH_MAX + 16;

/// The name of the violation a refused name stands for, for a host that
/// records violations by action ([`DeniedCall::violation_action`] gives it
/// per call).
pub const VIOLATION_ACTION: &str = "file-write-create";

/// The kind of call that was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeniedCall {
    /// `open`, `openat` or `openat2` creating a file.
    Open,
    /// `creat`.
    Creat,
    /// `mknod` or `mknodat`.
    Mknod,
    /// `rename`, `renameat` or `renameat2`.
    Rename,
    /// `link` or `linkat`.
    Link,
    /// `symlink` or `symlinkat`.
    Symlink,
    /// `mkdir` or `mkdirat`.
    Mkdir,
    /// `bind` of a Unix socket to a path.
    Bind,
    /// `connect` to a Unix socket the guarded tree did not bind, or, on the
    /// host, to a TCP address that is not one of the session's proxies
    /// (the path is then `ADDRESS:PORT`).
    Connect,
    /// On the host: `unlink`, `unlinkat` or `rmdir` of a protected path.
    Unlink,
    /// On the host: `truncate` of a protected file.
    Truncate,
    /// On the host: `getdents` listing a read-denied directory (or one
    /// below it).
    List,
    /// On the host: `bind` of a TCP socket to an address that is not
    /// loopback or a wildcard (the path is then `ADDRESS:PORT`).
    NetworkBind,
}

const CALLS: [DeniedCall; 13] = [
    DeniedCall::Open,
    DeniedCall::Creat,
    DeniedCall::Mknod,
    DeniedCall::Rename,
    DeniedCall::Link,
    DeniedCall::Symlink,
    DeniedCall::Mkdir,
    DeniedCall::Bind,
    DeniedCall::Connect,
    DeniedCall::Unlink,
    DeniedCall::Truncate,
    DeniedCall::List,
    DeniedCall::NetworkBind,
];

impl DeniedCall {
    /// The name used in a report line.
    pub fn as_str(self) -> &'static str {
        match self {
            DeniedCall::Open => "open",
            DeniedCall::Creat => "creat",
            DeniedCall::Mknod => "mknod",
            DeniedCall::Rename => "rename",
            DeniedCall::Link => "link",
            DeniedCall::Symlink => "symlink",
            DeniedCall::Mkdir => "mkdir",
            DeniedCall::Bind => "bind",
            DeniedCall::Connect => "connect",
            DeniedCall::Unlink => "unlink",
            DeniedCall::Truncate => "truncate",
            DeniedCall::List => "list",
            DeniedCall::NetworkBind => "network-bind",
        }
    }

    /// The name of the violation this denial stands for: a refused
    /// connect is `network-outbound` (its target the socket's path), a
    /// refused listing `file-read-data` (the directory), a refused TCP
    /// bind `network-bind` (its target `ADDRESS:PORT`), every other
    /// refusal [`VIOLATION_ACTION`] (`file-write-create`).
    pub fn violation_action(self) -> &'static str {
        match self {
            DeniedCall::Connect => "network-outbound",
            DeniedCall::NetworkBind => "network-bind",
            DeniedCall::List => "file-read-data",
            _ => VIOLATION_ACTION,
        }
    }

    fn from_bytes(b: &[u8]) -> Option<Self> {
        CALLS.into_iter().find(|c| c.as_str().as_bytes() == b)
    }
}

impl std::fmt::Display for DeniedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One parsed report line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// The refused call.
    pub call: DeniedCall,
    /// The absolute path of the refused name as the supervisor saw it
    /// (unescaped, converted to UTF-8 lossily). When the supervisor could
    /// not name the parent directory, only the final component.
    pub path: String,
}

fn bad(reason: &'static str) -> Error {
    ErrorKind::BadReport { reason }.into()
}

/// Parse one report line, with or without its trailing `\n`.
///
/// Refuses (with [`ErrorKind::BadReport`]) a line longer than
/// [`MAX_REPORT_LINE`], an unknown call, a missing space, an empty path, a
/// raw control byte and a malformed escape. Never panics.
pub fn parse_denial_line(line: &[u8]) -> Result<Denial, Error> {
    if line.len() > MAX_REPORT_LINE {
        return Err(bad("line longer than the limit"));
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let Some(space) = line.iter().position(|&c| c == b' ') else {
        return Err(bad("missing space"));
    };
    let call = DeniedCall::from_bytes(&line[..space]).ok_or_else(|| bad("unknown call"))?;
    let path = unescape(&line[space + 1..])?;
    if path.is_empty() {
        return Err(bad("empty path"));
    }
    Ok(Denial {
        call,
        path: String::from_utf8_lossy(&path).into_owned(),
    })
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Undo [`escape`]; refuses raw control bytes and malformed escapes.
pub(crate) fn unescape(s: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while let Some(&c) = s.get(i) {
        if c < 0x20 || c == 0x7f {
            return Err(bad("raw control byte"));
        }
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        match s.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'n') => {
                out.push(b'\n');
                i += 2;
            }
            Some(b'x') => {
                let hi = s.get(i + 2).copied().and_then(hex_val);
                let lo = s.get(i + 3).copied().and_then(hex_val);
                match (hi, lo) {
                    (Some(h), Some(l)) => out.push(h << 4 | l),
                    _ => return Err(bad("bad escape")),
                }
                i += 4;
            }
            _ => return Err(bad("bad escape")),
        }
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex4(b: u8) -> [u8; 4] {
    [
        b'\\',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 15)],
    ]
}

/// Append the escaped form of `path` to `out`, stopping before the unit
/// that would make `out` longer than `limit` bytes.
pub(crate) fn escape_into(path: &[u8], out: &mut Vec<u8>, limit: usize) {
    let mut unit = [0u8; 4];
    for chunk in path.utf8_chunks() {
        for ch in chunk.valid().chars() {
            let hex;
            let enc: &[u8] = match ch {
                '\\' => b"\\\\",
                '\n' => b"\\n",
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    hex = hex4(c as u8);
                    &hex
                }
                c => c.encode_utf8(&mut unit).as_bytes(),
            };
            if out.len() + enc.len() > limit {
                return;
            }
            out.extend_from_slice(enc);
        }
        for &b in chunk.invalid() {
            if out.len() + 4 > limit {
                return;
            }
            out.extend_from_slice(&hex4(b));
        }
    }
}

/// The escaped form of `path`, unbounded.
#[cfg(test)]
pub(crate) fn escape(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    escape_into(path, &mut out, usize::MAX);
    out
}

/// The full report line for a refusal, newline included, at most
/// [`MAX_REPORT_LINE`] bytes (a longer path is cut at an escape boundary).
/// [`parse_denial_line`] reads it back.
pub fn format_denial_line(call: DeniedCall, path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 16);
    out.extend_from_slice(call.as_str().as_bytes());
    out.push(b' ');
    escape_into(path, &mut out, MAX_REPORT_LINE - 1);
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(line: &[u8]) -> &'static str {
        match parse_denial_line(line).unwrap_err().kind() {
            ErrorKind::BadReport { reason } => reason,
            k => panic!("unexpected error {k:?}"),
        }
    }

    #[test]
    fn escaping_of_tricky_bytes() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"/w/x.pem", b"/w/x.pem"),
            (b"a\\b", b"a\\\\b"),
            (b"a\nb", b"a\\nb"),
            (b"\r\t\x01\x1f\x7f", b"\\x0d\\x09\\x01\\x1f\\x7f"),
            ("é ü/€".as_bytes(), "é ü/€".as_bytes()),
            (b"\xff\xfe", b"\\xff\\xfe"),
            // A truncated multi-byte sequence is not valid UTF-8.
            (b"a\xc3", b"a\\xc3"),
            (b"\xe2\x82", b"\\xe2\\x82"),
            (b"\\x41", b"\\\\x41"),
            (b" lead and trail ", b" lead and trail "),
        ];
        for (raw, esc) in cases {
            assert_eq!(escape(raw), *esc, "{raw:?}");
            assert_eq!(unescape(esc).unwrap(), *raw, "{raw:?}");
            let line = format_denial_line(DeniedCall::Rename, raw);
            let d = parse_denial_line(&line).unwrap();
            assert_eq!(d.call, DeniedCall::Rename);
            assert_eq!(d.path, String::from_utf8_lossy(raw));
        }
    }

    /// Escape then parse gives back the bytes, for many pseudo-random byte
    /// strings biased towards the bytes that need escaping.
    #[test]
    fn round_trip_of_random_byte_paths() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let palette: &[u8] = b"\\\nx/ .pem\x00\x7f\xc3\xa9\xe2\x82\xac\xff\xf0\x9f";
        for _ in 0..5000 {
            let len = (next() % 40) as usize;
            let raw: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 3 == 0 {
                        r as u8 >> 1
                    } else {
                        palette[(r >> 8) as usize % palette.len()]
                    }
                })
                .collect();
            let esc = escape(&raw);
            assert!(esc.iter().all(|&c| c >= 0x20 && c != 0x7f), "{esc:?}");
            assert_eq!(unescape(&esc).unwrap(), raw);
            for call in CALLS {
                let line = format_denial_line(call, &raw);
                assert_eq!(line.iter().filter(|&&c| c == b'\n').count(), 1);
                if raw.is_empty() {
                    assert!(parse_denial_line(&line).is_err());
                    continue;
                }
                let d = parse_denial_line(&line).unwrap();
                assert_eq!(d.call, call);
                assert_eq!(d.path, String::from_utf8_lossy(&raw));
            }
        }
    }

    #[test]
    fn long_paths_are_cut_at_an_escape_boundary() {
        for fill in [&b"a"[..], b"\xff", b"\\", "€".as_bytes(), b"ab\x01"] {
            let raw: Vec<u8> = fill.iter().copied().cycle().take(5 * PATH_MAX).collect();
            let line = format_denial_line(DeniedCall::Symlink, &raw);
            assert!(line.len() <= MAX_REPORT_LINE, "{}", line.len());
            assert!(line.len() > MAX_REPORT_LINE - 8);
            let d = parse_denial_line(&line).unwrap();
            let back = unescape(&line[8..line.len() - 1]).unwrap();
            assert!(raw.starts_with(&back));
            assert_eq!(d.path, String::from_utf8_lossy(&back));
        }
        // A path that fits is kept whole.
        let raw = vec![b'\x01'; PATH_MAX];
        let line = format_denial_line(DeniedCall::Symlink, &raw);
        assert_eq!(unescape(&line[8..line.len() - 1]).unwrap(), raw);
    }

    #[test]
    fn every_call_name_parses() {
        for call in CALLS {
            let line = format!("{call} /w/x.pem\n");
            let d = parse_denial_line(line.as_bytes()).unwrap();
            assert_eq!((d.call, d.path.as_str()), (call, "/w/x.pem"));
        }
        let d = parse_denial_line(b"open a b\\x20c").unwrap();
        assert_eq!(d.path, "a b c");
    }

    #[test]
    fn malformed_lines_are_refused() {
        assert_eq!(reason(b"chmod /x.pem\n"), "unknown call");
        assert_eq!(reason(b"OPEN /x.pem"), "unknown call");
        assert_eq!(reason(b" /x.pem"), "unknown call");
        assert_eq!(reason(b"open"), "missing space");
        assert_eq!(reason(b""), "missing space");
        assert_eq!(reason(b"\n"), "missing space");
        assert_eq!(reason(b"open \n"), "empty path");
        assert_eq!(reason(b"open a\\"), "bad escape");
        assert_eq!(reason(b"open a\\t"), "bad escape");
        assert_eq!(reason(b"open a\\x4"), "bad escape");
        assert_eq!(reason(b"open a\\x4g"), "bad escape");
        assert_eq!(reason(b"open a\\xFF"), "bad escape");
        assert_eq!(reason(b"open a\nb"), "raw control byte");
        assert_eq!(reason(b"open a\n\n"), "raw control byte");
        assert_eq!(reason(b"open a\x7f"), "raw control byte");
        let mut long = b"open /".to_vec();
        long.resize(MAX_REPORT_LINE + 1, b'a');
        assert_eq!(reason(&long), "line longer than the limit");
        long.truncate(MAX_REPORT_LINE);
        assert!(parse_denial_line(&long).is_ok());
    }

    /// Arbitrary input never panics the parser.
    #[test]
    fn parse_never_panics_on_random_input() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let palette: &[u8] = b"open creat \\xn0af\n\x00\xff";
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let line: Vec<u8> = (0..len)
                .map(|_| palette[next() as usize % palette.len()])
                .collect();
            let _ = parse_denial_line(&line);
        }
    }
}
