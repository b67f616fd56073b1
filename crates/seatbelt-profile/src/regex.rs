//! The regex subset this crate emits into `(regex #"...")`, and the one
//! glob-to-regex conversion.
//!
//! Seatbelt reads POSIX-extended regexes. We emit, and accept back, only a
//! small subset whose meaning is the same in POSIX ERE and in the `regex`
//! crate: literal characters, `\` before a metacharacter, `.`, bracket
//! classes of plain characters and alphanumeric ranges, groups, `|`, the
//! quantifiers `*`, `+`, `?`, and the anchors `^` and `$`. No bounded
//! repetition, no backreferences, no POSIX classes, no backslash inside a
//! class, and never `"` or a control character (they would end or break the
//! `#"..."` literal).

use crate::error::{Error, ErrorKind, excerpt};

/// Longest string literal Seatbelt accepts, in bytes.
pub const MAX_STRING_LEN: usize = 1025;

/// Deepest group nesting accepted in a regex.
pub const MAX_REGEX_DEPTH: usize = 16;

/// ERE metacharacters: escaped with `\` when they stand for themselves.
const META: &[char] = &[
    '.', '[', ']', '(', ')', '*', '+', '?', '{', '}', '|', '^', '$', '\\',
];

/// A validated regex in the supported subset, ready for `(regex #"...")`.
///
/// Equality compares the text only.
#[derive(Clone, Debug, Eq)]
pub struct SbplRegex {
    text: String,
    widened: bool,
}

impl PartialEq for SbplRegex {
    fn eq(&self, other: &SbplRegex) -> bool {
        self.text == other.text
    }
}

impl SbplRegex {
    /// Validates `text` against the supported subset.
    pub fn new(text: impl Into<String>) -> Result<SbplRegex, Error> {
        let text = text.into();
        tokenize(&text)?;
        Ok(SbplRegex {
            text,
            widened: false,
        })
    }

    /// The regex text, as it appears between `#"` and `"`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a character that cannot be spelled in the literal (`"`, `\`,
    /// a control character) was replaced by `.`, so the regex matches a
    /// little more than the path it came from. Such a regex is fine in a
    /// deny rule and refused in an allow rule.
    pub fn is_widened(&self) -> bool {
        self.widened
    }

    /// The same regex in the syntax of the `regex` crate, with the same
    /// meaning as Seatbelt's reading (`.` also matches a newline, classes
    /// and literals escaped for that syntax).
    ///
    /// ```
    /// use seatbelt_profile::SbplRegex;
    /// let r = SbplRegex::new(r"^/a/[^/]*\.pem$").unwrap();
    /// assert_eq!(r.to_regex_crate_syntax().unwrap(), r"(?s)^/a/[^/]*\.pem$");
    /// ```
    pub fn to_regex_crate_syntax(&self) -> Result<String, Error> {
        let toks = tokenize(&self.text)?;
        let mut out = String::from("(?s)");
        for t in toks {
            match t {
                Tok::Lit(c) => push_rust_escaped(&mut out, c, "#&-~"),
                Tok::Esc(c) => {
                    out.push('\\');
                    out.push(c);
                }
                Tok::Class { negated, items } => {
                    out.push('[');
                    if negated {
                        out.push('^');
                    }
                    for item in items {
                        match item {
                            ClassItem::Char(c) => push_rust_escaped(&mut out, c, "[]\\^-&~"),
                            ClassItem::Range(a, b) => {
                                out.push(a);
                                out.push('-');
                                out.push(b);
                            }
                        }
                    }
                    out.push(']');
                }
                Tok::Sym(c) => out.push(c),
            }
        }
        Ok(out)
    }
}

fn push_rust_escaped(out: &mut String, c: char, extra: &str) {
    if extra.contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// One token of the subset.
#[derive(Debug)]
enum Tok {
    /// A character that stands for itself.
    Lit(char),
    /// `\` followed by a metacharacter.
    Esc(char),
    /// A bracket class.
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
    /// `.`, `(`, `)`, `|`, `*`, `+`, `?`, `^`, `$`.
    Sym(char),
}

#[derive(Debug)]
enum ClassItem {
    Char(char),
    Range(char, char),
}

fn unsupported(text: &str, reason: &'static str) -> Error {
    ErrorKind::UnsupportedRegex {
        regex: excerpt(text),
        reason,
    }
    .into()
}

/// Checks `text` against the subset and splits it into tokens.
fn tokenize(text: &str) -> Result<Vec<Tok>, Error> {
    check_string("regex", text)?;
    let mut toks: Vec<Tok> = Vec::new();
    let mut chars = text.chars().peekable();
    let mut depth = 0usize;
    // Whether the previous token can carry a quantifier.
    let mut quantifiable = false;
    while let Some(c) = chars.next() {
        if c == '"' || c.is_control() {
            return Err(unsupported(text, "`\"` and control characters are refused"));
        }
        let tok = match c {
            '\\' => match chars.next() {
                Some(n) if META.contains(&n) => Tok::Esc(n),
                _ => {
                    return Err(unsupported(text, "`\\` may only escape a metacharacter"));
                }
            },
            '[' => parse_class(text, &mut chars)?,
            '(' => {
                depth += 1;
                if depth > MAX_REGEX_DEPTH {
                    return Err(unsupported(text, "groups nest deeper than 16"));
                }
                Tok::Sym(c)
            }
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| unsupported(text, "unbalanced `)`"))?;
                Tok::Sym(c)
            }
            '*' | '+' | '?' => {
                if !quantifiable {
                    return Err(unsupported(text, "a quantifier must follow an atom"));
                }
                Tok::Sym(c)
            }
            '{' | '}' | ']' => {
                return Err(unsupported(
                    text,
                    "unescaped `{`, `}` or `]` (bounded repetition is not supported)",
                ));
            }
            '.' | '|' | '^' | '$' => Tok::Sym(c),
            other => Tok::Lit(other),
        };
        quantifiable = match &tok {
            Tok::Lit(_) | Tok::Esc(_) | Tok::Class { .. } => true,
            Tok::Sym(s) => matches!(s, '.' | ')'),
        };
        toks.push(tok);
    }
    if depth != 0 {
        return Err(unsupported(text, "unbalanced `(`"));
    }
    Ok(toks)
}

fn class_char_ok(c: char) -> bool {
    !(c.is_control() || matches!(c, '[' | ']' | '\\' | '"' | '^' | '/'))
}

fn parse_class(
    text: &str,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Result<Tok, Error> {
    let negated = chars.next_if_eq(&'^').is_some();
    let mut items = Vec::new();
    loop {
        let Some(c) = chars.next() else {
            return Err(unsupported(text, "unterminated `[`"));
        };
        if c == ']' {
            break;
        }
        if negated && items.is_empty() && c == '/' {
            // `[^/` is how path components are spelled; allowed first only.
            items.push(ClassItem::Char('/'));
            continue;
        }
        if !class_char_ok(c) {
            return Err(unsupported(
                text,
                "a class may not hold `[`, `]`, `\\`, `\"`, `^`, `/` or control characters",
            ));
        }
        if chars.peek() == Some(&'-') {
            let mut ahead = chars.clone();
            ahead.next();
            match ahead.peek() {
                Some(&end) if end != ']' => {
                    if !(c.is_ascii_alphanumeric() && end.is_ascii_alphanumeric() && c <= end) {
                        return Err(unsupported(
                            text,
                            "a range must go upwards between ASCII letters or digits",
                        ));
                    }
                    chars.next();
                    chars.next();
                    items.push(ClassItem::Range(c, end));
                    continue;
                }
                _ => {}
            }
        }
        items.push(ClassItem::Char(c));
    }
    if items.is_empty() {
        return Err(unsupported(text, "empty class"));
    }
    Ok(Tok::Class { negated, items })
}

/// Checks a value that becomes an SBPL string: no NUL, at most
/// [`MAX_STRING_LEN`] bytes.
pub(crate) fn check_string(what: &'static str, value: &str) -> Result<(), Error> {
    if value.contains('\0') {
        return Err(ErrorKind::NulByte {
            what,
            value: value.replace('\0', "\\0"),
        }
        .into());
    }
    if value.len() > MAX_STRING_LEN {
        return Err(ErrorKind::StringTooLong {
            what,
            value: excerpt(value),
            len: value.len(),
            limit: MAX_STRING_LEN,
        }
        .into());
    }
    Ok(())
}

/// Converts a glob to an anchored regex.
///
/// - `*` matches within one path component (`[^/]*`), `?` one character
///   other than `/`;
/// - `**` is a whole component and matches any depth: `a/**/b` matches
///   `a/b` and `a/x/y/b`; a trailing `/**` matches the directory itself and
///   everything below it; a leading `**/` matches any leading directories;
/// - `[abc]`, `[a-z]`, `[!abc]` (or `[^abc]`) are classes, never matching `/`;
/// - every other character stands for itself: regex metacharacters are
///   escaped, and `"`, `\` and control characters, which cannot be spelled
///   inside `#"..."`, become `.` (see [`SbplRegex::is_widened`]).
///
/// ```
/// use seatbelt_profile::glob_to_regex;
/// assert_eq!(glob_to_regex("/w/**/*.pem").unwrap().as_str(), r"^/w/(.*/)?[^/]*\.pem$");
/// ```
pub fn glob_to_regex(glob: &str) -> Result<SbplRegex, Error> {
    if glob.is_empty() {
        return Err(ErrorKind::InvalidGlob {
            glob: String::new(),
            reason: "empty",
        }
        .into());
    }
    let mut b = RegexText::anchored();
    b.push_glob(glob)?;
    b.finish()
}

/// Whether `[...]` in a glob is a character class.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Classes {
    Allowed,
    Literal,
}

/// Builds an anchored regex from literal parts and glob parts.
#[derive(Debug)]
pub(crate) struct RegexText {
    text: String,
    widened: bool,
}

impl RegexText {
    /// Starts with `^`.
    pub(crate) fn anchored() -> RegexText {
        RegexText {
            text: String::from("^"),
            widened: false,
        }
    }

    /// Appends raw subset syntax (a constant of this crate).
    pub(crate) fn push_raw(&mut self, raw: &str) {
        self.text.push_str(raw);
    }

    /// Appends `s` matched literally.
    pub(crate) fn push_literal(&mut self, s: &str) -> Result<(), Error> {
        if s.contains('\0') {
            return Err(ErrorKind::NulByte {
                what: "path",
                value: s.replace('\0', "\\0"),
            }
            .into());
        }
        for c in s.chars() {
            self.push_literal_char(c);
        }
        Ok(())
    }

    fn push_literal_char(&mut self, c: char) {
        if c == '"' || c == '\\' || c.is_control() {
            self.text.push('.');
            self.widened = true;
        } else {
            if META.contains(&c) {
                self.text.push('\\');
            }
            self.text.push(c);
        }
    }

    /// Appends a glob (see [`glob_to_regex`]).
    pub(crate) fn push_glob(&mut self, glob: &str) -> Result<(), Error> {
        self.push_glob_with(glob, Classes::Allowed)
    }

    /// Appends a path-set glob: only `*`, `?` and `**` are special (the
    /// path sets' own notion of a glob, `sandbox_core::is_glob`); `[`, `]`
    /// and every other character of a host path stand for themselves.
    pub(crate) fn push_path_glob(&mut self, glob: &str) -> Result<(), Error> {
        self.push_glob_with(glob, Classes::Literal)
    }

    fn push_glob_with(&mut self, glob: &str, classes: Classes) -> Result<(), Error> {
        let bad = |reason| -> Error {
            ErrorKind::InvalidGlob {
                glob: excerpt(glob),
                reason,
            }
            .into()
        };
        if glob.contains('\0') {
            return Err(ErrorKind::NulByte {
                what: "glob",
                value: glob.replace('\0', "\\0"),
            }
            .into());
        }
        let chars: Vec<char> = glob.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                '*' if chars.get(i + 1) == Some(&'*') => {
                    let after = chars.get(i + 2).copied();
                    let starts_component = i == 0 || chars[i - 1] == '/';
                    if !starts_component || !matches!(after, None | Some('/')) {
                        return Err(bad("`**` must be a whole path component"));
                    }
                    match after {
                        Some(_) => {
                            self.text.push_str("(.*/)?");
                            i += 3;
                        }
                        None if i > 0 && self.text.ends_with('/') => {
                            self.text.pop();
                            self.text.push_str("(/.*)?");
                            i += 2;
                        }
                        None => {
                            self.text.push_str(".*");
                            i += 2;
                        }
                    }
                }
                '*' => {
                    self.text.push_str("[^/]*");
                    i += 1;
                }
                '?' => {
                    self.text.push_str("[^/]");
                    i += 1;
                }
                '[' if classes == Classes::Allowed => {
                    let mut j = i + 1;
                    let negated = matches!(chars.get(j), Some('!' | '^'));
                    if negated {
                        j += 1;
                    }
                    let start = j;
                    while j < chars.len() && chars[j] != ']' {
                        if !class_char_ok(chars[j]) {
                            return Err(bad(
                                "a class may not hold `[`, `\\`, `\"`, `^`, `/` or control characters",
                            ));
                        }
                        j += 1;
                    }
                    if j >= chars.len() {
                        return Err(bad("unterminated `[`"));
                    }
                    if j == start {
                        return Err(bad("empty class"));
                    }
                    self.text.push('[');
                    if negated {
                        self.text.push_str("^/");
                    }
                    self.text.extend(&chars[start..j]);
                    self.text.push(']');
                    i = j + 1;
                }
                other => {
                    self.push_literal_char(other);
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Appends `$` and validates the result.
    pub(crate) fn finish(mut self) -> Result<SbplRegex, Error> {
        self.text.push('$');
        tokenize(&self.text)?;
        Ok(SbplRegex {
            text: self.text,
            widened: self.widened,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subset_refuses_what_we_never_emit() {
        for bad in [
            "a{2}",
            "\\d",
            "[[:alpha:]]",
            "[a\\]]",
            "(a",
            "a)",
            "*a",
            "a**",
            "\"",
            "a\nb",
            "[]",
            "[z-a]",
        ] {
            assert!(SbplRegex::new(bad).is_err(), "{bad:?} should be refused");
        }
        for good in [
            "^/a/(.*/)?[^/]*\\.pem$",
            "^/dev/fd/[0-9]+$",
            "^(a|b)?$",
            "[-a]",
        ] {
            assert!(SbplRegex::new(good).is_ok(), "{good:?} should be accepted");
        }
    }

    #[test]
    fn widening_is_reported() {
        let mut b = RegexText::anchored();
        b.push_literal("/a\"b").unwrap();
        let r = b.finish().unwrap();
        assert_eq!(r.as_str(), "^/a.b$");
        assert!(r.is_widened());
    }
}
