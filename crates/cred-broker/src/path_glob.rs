//! Path globs for rules, and the one normal form of a request path they are
//! matched against.

use crate::error::{Error, ErrorKind, truncate};
use std::fmt;
use std::fmt::Write as _;

/// The longest path glob accepted, in bytes.
pub const MAX_GLOB_LEN: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Token {
    /// One byte, compared ignoring ASCII case.
    Byte(u8),
    /// `?`: one byte other than `/`.
    One,
    /// `*`: any run of bytes without `/`.
    Star,
    /// `**`: any run of bytes.
    DoubleStar,
}

/// A compiled path glob: `*` matches within one segment, `**` across
/// segments, `?` one byte other than `/`; everything else is literal.
/// Matching ignores ASCII case, so a deny rule cannot be passed by changing
/// the case of a path on a server that ignores it.
///
/// ```
/// use cred_broker::PathGlob;
/// let g = PathGlob::parse("/repos/*/*/pulls/**").unwrap();
/// assert!(g.matches("/repos/o/r/pulls/1/files"));
/// assert!(!g.matches("/repos/o/pulls/1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PathGlob {
    text: String,
    tokens: Vec<Token>,
}

impl PathGlob {
    /// Parses a glob; it must start with `/`.
    pub fn parse(glob: &str) -> Result<PathGlob, Error> {
        let bad = |reason| {
            Err(Error::from(ErrorKind::InvalidConfig {
                name: "path glob",
                value: truncate(glob),
                reason,
            }))
        };
        if glob.len() > MAX_GLOB_LEN {
            return bad("it is longer than 1024 bytes");
        }
        if !glob.starts_with('/') {
            return bad("a path glob starts with '/'");
        }
        if !glob.bytes().all(|b| (0x21..0x7f).contains(&b)) {
            return bad("use visible ASCII only");
        }
        let bytes = glob.as_bytes();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'*' if bytes.get(i + 1) == Some(&b'*') => {
                    if bytes.get(i + 2) == Some(&b'*') {
                        return bad("three '*' in a row; use '*' or '**'");
                    }
                    tokens.push(Token::DoubleStar);
                    i += 2;
                }
                b'*' => {
                    tokens.push(Token::Star);
                    i += 1;
                }
                b'?' => {
                    tokens.push(Token::One);
                    i += 1;
                }
                b => {
                    tokens.push(Token::Byte(b.to_ascii_lowercase()));
                    i += 1;
                }
            }
        }
        Ok(PathGlob {
            text: glob.to_owned(),
            tokens,
        })
    }

    /// Whether `path` matches. Linear in `path.len() * glob.len()`: the
    /// glob runs as a set of positions, never by backtracking.
    pub fn matches(&self, path: &str) -> bool {
        let n = self.tokens.len();
        let mut cur = vec![false; n + 1];
        let mut next = vec![false; n + 1];
        cur[0] = true;
        self.close(&mut cur);
        for &b in path.as_bytes() {
            next.iter_mut().for_each(|x| *x = false);
            for (i, tok) in self.tokens.iter().enumerate() {
                if !cur[i] {
                    continue;
                }
                match *tok {
                    Token::Byte(c) if c == b.to_ascii_lowercase() => next[i + 1] = true,
                    Token::One if b != b'/' => next[i + 1] = true,
                    Token::Star if b != b'/' => next[i] = true,
                    Token::DoubleStar => next[i] = true,
                    _ => {}
                }
            }
            self.close(&mut next);
            std::mem::swap(&mut cur, &mut next);
            if !cur.contains(&true) {
                return false;
            }
        }
        cur[n]
    }

    /// Stars may match nothing: a position before a star also stands after it.
    fn close(&self, set: &mut [bool]) {
        for (i, tok) in self.tokens.iter().enumerate() {
            if set[i] && matches!(tok, Token::Star | Token::DoubleStar) {
                set[i + 1] = true;
            }
        }
    }
}

impl fmt::Display for PathGlob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a request path cannot be matched safely.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathProblem {
    /// A `.` or `..` segment (also when percent-encoded).
    DotSegment,
    /// An empty segment (`//`).
    EmptySegment,
    /// An encoded `/`, `\`, NUL or other control byte, an encoded space
    /// ending the path, or a `%` not followed by two hex digits.
    Encoding,
    /// A backslash or a `;` (servers split paths on them differently).
    Separator,
    /// Not an origin path (empty or not starting with `/`).
    NotAPath,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathProblem::DotSegment => "the path has a '.' or '..' segment",
            PathProblem::EmptySegment => "the path has an empty segment ('//')",
            PathProblem::Encoding => {
                "the path has an encoded '/', '\\' or control byte, ends in an encoded space, or has a bad '%'"
            }
            PathProblem::Separator => "the path has a '\\' or ';'",
            PathProblem::NotAPath => "the target has no path",
        })
    }
}

/// The normal form rules see: percent-encoded unreserved bytes decoded,
/// other escapes upper-cased. Paths that servers read in different ways are
/// refused.
pub(crate) fn normal_path(path: &str) -> Result<String, PathProblem> {
    if !path.starts_with('/') {
        return Err(PathProblem::NotAPath);
    }
    let b = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < b.len() {
        // Ordinary bytes go over in one run, up to the next byte that
        // needs a look (all three are ASCII, so `run` is a char boundary).
        let run = b[i..]
            .iter()
            .position(|&c| matches!(c, b'%' | b'\\' | b';'))
            .map_or(b.len(), |p| i + p);
        out.push_str(&path[i..run]);
        i = run;
        if i == b.len() {
            break;
        }
        if b[i] != b'%' {
            return Err(PathProblem::Separator);
        }
        let hex = |c: u8| (c as char).to_digit(16);
        let (Some(h), Some(l)) = (
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) else {
            return Err(PathProblem::Encoding);
        };
        let v = (h * 16 + l) as u8;
        // Control bytes (tab, CR, LF, ...) are trimmed or split on by some
        // servers: the path they see is not the one decided on.
        if v == b'/' || v == b'\\' || v < 0x20 || v == 0x7f {
            return Err(PathProblem::Encoding);
        }
        if v.is_ascii_alphanumeric() || b"-._~".contains(&v) {
            out.push(v as char);
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{v:02X}");
        }
        i += 3;
    }
    // A trailing encoded space is trimmed by some servers: `/admin%20`
    // would be `/admin` there.
    if out.ends_with("%20") {
        return Err(PathProblem::Encoding);
    }
    let mut segments = out[1..].split('/').peekable();
    while let Some(seg) = segments.next() {
        match seg {
            "." | ".." => return Err(PathProblem::DotSegment),
            // Only the last segment may be empty (a trailing `/`).
            "" if segments.peek().is_some() => return Err(PathProblem::EmptySegment),
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The byte-at-a-time form `normal_path` had before it copied runs:
    /// the oracle of the property below.
    fn normal_path_bytewise(path: &str) -> Result<String, PathProblem> {
        if !path.starts_with('/') {
            return Err(PathProblem::NotAPath);
        }
        let b = path.as_bytes();
        let mut out = String::with_capacity(path.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'%' => {
                    let hex = |c: u8| (c as char).to_digit(16);
                    let (Some(h), Some(l)) = (
                        b.get(i + 1).copied().and_then(hex),
                        b.get(i + 2).copied().and_then(hex),
                    ) else {
                        return Err(PathProblem::Encoding);
                    };
                    let v = (h * 16 + l) as u8;
                    // Control bytes (tab, CR, LF, ...) are trimmed or split on
                    // by some servers: the path they see is not the one decided
                    // on.
                    if v == b'/' || v == b'\\' || v < 0x20 || v == 0x7f {
                        return Err(PathProblem::Encoding);
                    }
                    if v.is_ascii_alphanumeric() || b"-._~".contains(&v) {
                        out.push(v as char);
                    } else {
                        out.push_str(&format!("%{v:02X}"));
                    }
                    i += 3;
                }
                b'\\' | b';' => return Err(PathProblem::Separator),
                c => {
                    out.push(c as char);
                    i += 1;
                }
            }
        }
        // A trailing encoded space is trimmed by some servers: `/admin%20`
        // would be `/admin` there.
        if out.ends_with("%20") {
            return Err(PathProblem::Encoding);
        }
        let segments: Vec<&str> = out[1..].split('/').collect();
        for (i, seg) in segments.iter().enumerate() {
            match *seg {
                "." | ".." => return Err(PathProblem::DotSegment),
                // Only the last segment may be empty (a trailing `/`).
                "" if i + 1 < segments.len() => return Err(PathProblem::EmptySegment),
                _ => {}
            }
        }
        Ok(out)
    }

    #[test]
    fn paths_a_server_may_trim_are_refused() {
        for p in [
            "/admin%20",
            "/admin%09",
            "/a%0Ab",
            "/a%0d",
            "/a%7F",
            "/x/y%20",
        ] {
            assert_eq!(normal_path(p), Err(PathProblem::Encoding), "{p}");
        }
        for p in ["/my%20file.txt", "/a%20b/c", "/repos/o/r"] {
            assert!(normal_path(p).is_ok(), "{p}");
        }
    }

    /// The same glob as a regular expression, as the oracle.
    fn oracle(glob: &str) -> regex::Regex {
        let mut re = String::from("(?is)^");
        let b = glob.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'*' && b.get(i + 1) == Some(&b'*') {
                re.push_str(".*");
                i += 2;
                continue;
            }
            match b[i] {
                b'*' => re.push_str("[^/]*"),
                b'?' => re.push_str("[^/]"),
                c => re.push_str(&regex::escape(&(c as char).to_string())),
            }
            i += 1;
        }
        re.push('$');
        regex::Regex::new(&re).unwrap()
    }

    proptest! {
        #[test]
        fn glob_agrees_with_a_regex(glob in "/[ab/*?.A]{0,10}", path in "/[abAB/.]{0,14}") {
            if let Ok(g) = PathGlob::parse(&glob) {
                prop_assert_eq!(g.matches(&path), oracle(&glob).is_match(&path), "{} on {}", glob, path);
            }
        }

        #[test]
        fn normal_path_agrees_with_the_bytewise_form(path in "[/a-z%0-9A-Fa-f/.;~\\\\_ -]{0,24}") {
            prop_assert_eq!(normal_path(&path), normal_path_bytewise(&path), "{}", path);
        }

        #[test]
        fn normal_paths_are_fixed_points(path in "/[a-z%0-9A-F/.;~-]{0,16}") {
            if let Ok(n) = normal_path(&path) {
                prop_assert_eq!(normal_path(&n), Ok(n.clone()));
            }
        }
    }
}
