//! The strict lexer: one token at a time, never recursing, refusing every
//! spelling that two plausible readers could split differently.

use crate::error::{Error, ErrorKind};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name (keywords are names too).
    Name,
    /// An integer or float literal.
    Number,
    /// A string or block string.
    Str,
    /// One of `! $ & ( ) : = @ [ ] { | }`.
    Punct(u8),
    /// `...`.
    Spread,
    /// The end of the document.
    Eof,
}

/// A token and where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: Tok,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

// Byte classes for the dispatch table.
const OTHER: u8 = 0;
pub(crate) const IGNORED: u8 = 1;
pub(crate) const NAME: u8 = 2;
pub(crate) const DIGIT: u8 = 3;
pub(crate) const PUNCT: u8 = 4;

const fn classes() -> [u8; 256] {
    let mut t = [OTHER; 256];
    t[b' ' as usize] = IGNORED;
    t[b'\t' as usize] = IGNORED;
    t[b'\n' as usize] = IGNORED;
    t[b',' as usize] = IGNORED;
    let mut c = b'a';
    while c <= b'z' {
        t[c as usize] = NAME;
        t[(c - b'a' + b'A') as usize] = NAME;
        c += 1;
    }
    t[b'_' as usize] = NAME;
    let mut d = b'0';
    while d <= b'9' {
        t[d as usize] = DIGIT;
        d += 1;
    }
    let p = b"!$&():=@[]{|}";
    let mut i = 0;
    while i < p.len() {
        t[p[i] as usize] = PUNCT;
        i += 1;
    }
    t
}

pub(crate) static CLASS: [u8; 256] = CLASS_TABLE;

const fn name_continue_table() -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = matches!(CLASS_TABLE[i], NAME | DIGIT);
        i += 1;
    }
    t
}

const CLASS_TABLE: [u8; 256] = classes();
static NAME_CONTINUE: [bool; 256] = name_continue_table();

pub(crate) fn is_name_continue(b: u8) -> bool {
    NAME_CONTINUE[b as usize]
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `w` is zero.
fn has_zero(w: u64) -> bool {
    w.wrapping_sub(ONES) & !w & HIGHS != 0
}

/// Whether any byte of `w` is below 0x20, is 0x7f, or is not ASCII.
fn has_unusual(w: u64) -> bool {
    (w.wrapping_sub(ONES * 0x20) & !w & HIGHS != 0) || w & HIGHS != 0 || has_zero(w ^ (ONES * 0x7f))
}

/// Skips whole 8-byte chunks from `i` made only of printable ASCII (and,
/// when `in_string`, holding no quote or backslash). The byte-by-byte loop
/// after it sees every byte that matters.
fn skip_plain(src: &[u8], mut i: usize, in_string: bool) -> usize {
    while let Some(chunk) = src.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let w = u64::from_le_bytes(bytes);
        if has_unusual(w)
            || (in_string && (has_zero(w ^ (ONES * 0x22)) || has_zero(w ^ (ONES * 0x5c))))
        {
            break;
        }
        i += 8;
    }
    i
}

/// The lexer over one document.
pub(crate) struct Lexer<'a> {
    pub(crate) src: &'a [u8],
    text: &'a str,
    pub(crate) pos: usize,
    tokens: usize,
    max_tokens: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str, max_tokens: usize) -> Self {
        Self {
            src: text.as_bytes(),
            text,
            pos: 0,
            tokens: 0,
            max_tokens,
        }
    }

    /// The document's bytes.
    pub(crate) fn source(&self) -> &'a [u8] {
        self.src
    }

    /// The text of a token.
    pub(crate) fn text(&self, t: Token) -> &'a str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    pub(crate) fn err(&self, kind: ErrorKind, offset: usize) -> Error {
        Error::at(kind, self.src, offset)
    }

    fn byte(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn char_at(&self, i: usize) -> char {
        self.text
            .get(i..)
            .and_then(|s| s.chars().next())
            .unwrap_or('\u{FFFD}')
    }

    /// The error for a byte that may not appear outside strings and
    /// comments.
    pub(crate) fn stray(&self, i: usize) -> Error {
        let b = self.byte(i);
        let ch = self.char_at(i);
        let kind = if b == b'\r' {
            ErrorKind::LoneCarriageReturn { offset: i }
        } else if ch == '\u{FEFF}' {
            ErrorKind::ByteOrderMark { offset: i }
        } else if ch.is_control() {
            ErrorKind::ControlCharacter { offset: i, ch }
        } else if !ch.is_ascii() {
            ErrorKind::NonAscii { offset: i, ch }
        } else {
            ErrorKind::UnexpectedCharacter { offset: i, ch }
        };
        self.err(kind, i)
    }

    /// Counts a token starting at `start` against the limit.
    #[inline(always)]
    pub(crate) fn count(&mut self, start: usize) -> Result<(), Error> {
        self.tokens += 1;
        if self.tokens > self.max_tokens {
            let kind = ErrorKind::TooManyTokens {
                offset: start,
                limit: self.max_tokens,
            };
            return Err(self.err(kind, start));
        }
        Ok(())
    }

    /// The next token.
    #[inline(always)]
    pub(crate) fn next_token(&mut self) -> Result<Token, Error> {
        self.skip_ignored()?;
        let start = self.pos;
        let Some(&b) = self.src.get(start) else {
            return Ok(Token {
                kind: Tok::Eof,
                start,
                end: start,
            });
        };
        self.count(start)?;
        let kind = match CLASS[b as usize] {
            NAME => {
                let mut i = start + 1;
                while i < self.src.len() && is_name_continue(self.src[i]) {
                    i += 1;
                }
                self.pos = i;
                Tok::Name
            }
            PUNCT => {
                self.pos = start + 1;
                Tok::Punct(b)
            }
            DIGIT => self.number(start)?,
            _ => match b {
                b'-' => self.number(start)?,
                b'"' => self.string(start)?,
                b'.' => {
                    if self.byte(start + 1) == b'.'
                        && self.byte(start + 2) == b'.'
                        && self.byte(start + 3) != b'.'
                    {
                        self.pos = start + 3;
                        Tok::Spread
                    } else {
                        return Err(self.err(
                            ErrorKind::UnexpectedCharacter {
                                offset: start,
                                ch: '.',
                            },
                            start,
                        ));
                    }
                }
                _ => return Err(self.stray(start)),
            },
        };
        Ok(Token {
            kind,
            start,
            end: self.pos,
        })
    }

    /// Skips white space, line ends, commas and comments.
    #[inline(always)]
    fn skip_ignored(&mut self) -> Result<(), Error> {
        let src = self.src;
        let mut i = self.pos;
        loop {
            // Runs of eight spaces (indentation) at a time, then byte by byte.
            while src.get(i..i + 8) == Some(b"        ") {
                i += 8;
            }
            while let Some(&b) = src.get(i) {
                if CLASS[b as usize] != IGNORED {
                    break;
                }
                i += 1;
            }
            match src.get(i) {
                Some(b'#') => {
                    self.pos = i;
                    self.comment()?;
                    i = self.pos;
                }
                Some(b'\r') if src.get(i + 1) == Some(&b'\n') => i += 2,
                Some(b'\r') => return Err(self.stray(i)),
                _ => {
                    self.pos = i;
                    return Ok(());
                }
            }
        }
    }

    /// Skips a comment, up to (not including) its line end.
    pub(crate) fn comment(&mut self) -> Result<(), Error> {
        let mut i = self.pos + 1;
        while i < self.src.len() {
            i = skip_plain(self.src, i, false);
            let Some(&b) = self.src.get(i) else { break };
            match b {
                b'\n' => break,
                b'\r' => {
                    if self.byte(i + 1) == b'\n' {
                        break;
                    }
                    return Err(self.stray(i));
                }
                b'\t' => {}
                0..=0x1f | 0x7f => {
                    return Err(self.err(
                        ErrorKind::ControlCharacter {
                            offset: i,
                            ch: char::from(b),
                        },
                        i,
                    ));
                }
                0xc2 if (0x80..=0x9f).contains(&self.byte(i + 1)) => {
                    let ch = self.char_at(i);
                    return Err(self.err(ErrorKind::ControlCharacter { offset: i, ch }, i));
                }
                0xe2 if self.byte(i + 1) == 0x80 && matches!(self.byte(i + 2), 0xa8 | 0xa9) => {
                    let ch = self.char_at(i);
                    return Err(self.err(ErrorKind::LineSeparatorInComment { offset: i, ch }, i));
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = i;
        Ok(())
    }

    fn bad_number(&self, start: usize, reason: &'static str) -> Error {
        self.err(
            ErrorKind::InvalidNumber {
                offset: start,
                reason,
            },
            start,
        )
    }

    /// An integer or float, which must not be glued to a name, digit or dot.
    pub(crate) fn number(&mut self, start: usize) -> Result<Tok, Error> {
        let mut i = start;
        if self.byte(i) == b'-' {
            i += 1;
        }
        if !is_digit(self.byte(i)) {
            return Err(self.bad_number(start, "a minus sign needs a digit after it"));
        }
        if self.byte(i) == b'0' {
            i += 1;
            if is_digit(self.byte(i)) {
                return Err(self.bad_number(start, "a leading zero"));
            }
        } else {
            while is_digit(self.byte(i)) {
                i += 1;
            }
        }
        if self.byte(i) == b'.' {
            i += 1;
            if !is_digit(self.byte(i)) {
                return Err(self.bad_number(start, "a dot needs a digit after it"));
            }
            while is_digit(self.byte(i)) {
                i += 1;
            }
        }
        if matches!(self.byte(i), b'e' | b'E') {
            i += 1;
            if matches!(self.byte(i), b'+' | b'-') {
                i += 1;
            }
            if !is_digit(self.byte(i)) {
                return Err(self.bad_number(start, "an exponent needs a digit"));
            }
            while is_digit(self.byte(i)) {
                i += 1;
            }
        }
        let next = self.byte(i);
        if next == b'.' || is_name_continue(next) {
            return Err(self.bad_number(start, "a number glued to a name or a dot"));
        }
        self.pos = i;
        Ok(Tok::Number)
    }

    /// How many quotes start at `i`, counting up to four.
    fn quote_run(&self, i: usize) -> usize {
        let mut n = 0;
        while n < 4 && self.byte(i + n) == b'"' {
            n += 1;
        }
        n
    }

    fn ambiguous(&self, offset: usize, reason: &'static str) -> Error {
        self.err(ErrorKind::AmbiguousQuotes { offset, reason }, offset)
    }

    /// A string or block string starting at the quote at `start`.
    pub(crate) fn string(&mut self, start: usize) -> Result<Tok, Error> {
        match self.quote_run(start) {
            4 => Err(self.ambiguous(start, "four or more quotes in a row")),
            3 => self.block_string(start),
            2 => {
                self.pos = start + 2;
                Ok(Tok::Str)
            }
            _ => self.plain_string(start),
        }
    }

    fn unterminated(&self, start: usize) -> Error {
        self.err(ErrorKind::UnterminatedString { offset: start }, start)
    }

    fn plain_string(&mut self, start: usize) -> Result<Tok, Error> {
        let mut i = start + 1;
        loop {
            i = skip_plain(self.src, i, true);
            let Some(&b) = self.src.get(i) else {
                return Err(self.unterminated(start));
            };
            match b {
                b'"' => {
                    if self.byte(i + 1) == b'"' {
                        return Err(self.ambiguous(i, "a string directly followed by a quote"));
                    }
                    self.pos = i + 1;
                    return Ok(Tok::Str);
                }
                b'\\' => i = self.escape(i)?,
                b'\n' | b'\r' => return Err(self.unterminated(start)),
                b'\t' => i += 1,
                0..=0x1f => {
                    return Err(self.err(
                        ErrorKind::ControlCharacter {
                            offset: i,
                            ch: char::from(b),
                        },
                        i,
                    ));
                }
                _ => i += 1,
            }
        }
    }

    fn bad_escape(&self, offset: usize, reason: &'static str) -> Error {
        self.err(ErrorKind::InvalidEscape { offset, reason }, offset)
    }

    /// Four hex digits at `i`, as a number.
    fn hex4(&self, i: usize) -> Option<u32> {
        let mut v = 0u32;
        for k in 0..4 {
            let d = char::from(self.byte(i + k)).to_digit(16)?;
            v = v * 16 + d;
        }
        Some(v)
    }

    /// Checks the escape whose backslash is at `i`; returns the offset after
    /// it.
    fn escape(&self, i: usize) -> Result<usize, Error> {
        match self.byte(i + 1) {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(i + 2),
            b'u' if self.byte(i + 2) == b'{' => {
                let mut j = i + 3;
                let mut v: u32 = 0;
                while let Some(d) = char::from(self.byte(j)).to_digit(16) {
                    v = v.saturating_mul(16).saturating_add(d);
                    j += 1;
                }
                if j == i + 3 || self.byte(j) != b'}' {
                    return Err(self.bad_escape(i, "\\u{ needs hex digits and a closing brace"));
                }
                if char::from_u32(v).is_none() {
                    return Err(self.bad_escape(i, "not a Unicode scalar value"));
                }
                Ok(j + 1)
            }
            b'u' => {
                let Some(v) = self.hex4(i + 2) else {
                    return Err(self.bad_escape(i, "\\u needs four hex digits"));
                };
                match v {
                    0xD800..=0xDBFF => {
                        let pair = if self.byte(i + 6) == b'\\' && self.byte(i + 7) == b'u' {
                            self.hex4(i + 8)
                        } else {
                            None
                        };
                        match pair {
                            Some(0xDC00..=0xDFFF) => Ok(i + 12),
                            _ => Err(self.bad_escape(i, "a leading surrogate without its pair")),
                        }
                    }
                    0xDC00..=0xDFFF => Err(self.bad_escape(i, "a trailing surrogate alone")),
                    _ => Ok(i + 6),
                }
            }
            _ => Err(self.bad_escape(i, "unknown escape")),
        }
    }

    fn block_string(&mut self, start: usize) -> Result<Tok, Error> {
        let mut i = start + 3;
        loop {
            i = skip_plain(self.src, i, true);
            let Some(&b) = self.src.get(i) else {
                return Err(self.unterminated(start));
            };
            match b {
                b'"' => match self.quote_run(i) {
                    4 => return Err(self.ambiguous(i, "four or more quotes in a row")),
                    3 => {
                        self.pos = i + 3;
                        return Ok(Tok::Str);
                    }
                    n => i += n,
                },
                b'\\' => {
                    if self.quote_run(i + 1) >= 3 {
                        if self.byte(i + 4) == b'"' {
                            return Err(self.ambiguous(i, "\\\"\"\" followed by another quote"));
                        }
                        if i > 0 && self.byte(i - 1) == b'\\' {
                            return Err(self.ambiguous(i - 1, "a backslash before \\\"\"\""));
                        }
                        i += 4;
                    } else {
                        i += 1;
                    }
                }
                b'\r' => {
                    if self.byte(i + 1) == b'\n' {
                        i += 2;
                    } else {
                        return Err(self.stray(i));
                    }
                }
                b'\t' | b'\n' => i += 1,
                0..=0x1f => {
                    return Err(self.err(
                        ErrorKind::ControlCharacter {
                            offset: i,
                            ch: char::from(b),
                        },
                        i,
                    ));
                }
                _ => i += 1,
            }
        }
    }
}
