//! Skipping a bracketed group (selection set, arguments, variables) in one
//! tight loop: the same lexical rules as [`Lexer::next_token`], without
//! building tokens, and brackets counted on an explicit, bounded stack.

use crate::error::{Error, ErrorKind};
use crate::lexer::{CLASS, DIGIT, IGNORED, Lexer, NAME, PUNCT, Token, is_name_continue};

fn closer(open: u8) -> u8 {
    match open {
        b'{' => b'}',
        b'(' => b')',
        _ => b']',
    }
}

impl Lexer<'_> {
    /// Skips from the open bracket `open` (just lexed) to its matching
    /// close, leaving the lexer after it. `stack` is scratch space; nesting
    /// deeper than `max_depth` is refused.
    pub(crate) fn skip_group(
        &mut self,
        open: Token,
        max_depth: usize,
        stack: &mut Vec<u8>,
    ) -> Result<(), Error> {
        let src = self.src;
        stack.clear();
        let mut i = open.start;
        loop {
            let Some(&b) = src.get(i) else {
                let open_char = char::from(src.get(open.start).copied().unwrap_or(b'{'));
                let kind = ErrorKind::UnclosedBracket {
                    offset: open.start,
                    open: open_char,
                };
                return Err(self.err(kind, open.start));
            };
            match CLASS[b as usize] {
                IGNORED => {
                    i += 1;
                    while src.get(i..i + 8) == Some(b"        ") {
                        i += 8;
                    }
                    while src.get(i).is_some_and(|&c| CLASS[c as usize] == IGNORED) {
                        i += 1;
                    }
                }
                NAME => {
                    self.count(i)?;
                    i += 1;
                    while src.get(i).is_some_and(|&c| is_name_continue(c)) {
                        i += 1;
                    }
                }
                DIGIT => {
                    self.count(i)?;
                    self.number(i)?;
                    i = self.pos;
                }
                PUNCT => {
                    // The open bracket itself was counted when it was lexed.
                    if i != open.start {
                        self.count(i)?;
                    }
                    match b {
                        b'{' | b'(' | b'[' => {
                            if stack.len() >= max_depth {
                                let kind = ErrorKind::TooDeep {
                                    offset: i,
                                    limit: max_depth,
                                };
                                return Err(self.err(kind, i));
                            }
                            stack.push(b);
                        }
                        b'}' | b')' | b']' => {
                            let want = stack.pop().map_or(b']', closer);
                            if b != want {
                                let kind = ErrorKind::MismatchedBracket {
                                    offset: i,
                                    found: char::from(b),
                                    expected: char::from(want),
                                };
                                return Err(self.err(kind, i));
                            }
                            if stack.is_empty() {
                                self.pos = i + 1;
                                return Ok(());
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                _ => match b {
                    b'"' => {
                        self.count(i)?;
                        self.string(i)?;
                        i = self.pos;
                    }
                    b'#' => {
                        self.pos = i;
                        self.comment()?;
                        i = self.pos;
                    }
                    b'\r' if src.get(i + 1) == Some(&b'\n') => i += 2,
                    b'-' => {
                        self.count(i)?;
                        self.number(i)?;
                        i = self.pos;
                    }
                    b'.' => {
                        self.count(i)?;
                        if src.get(i + 1..i + 3) != Some(b"..") || src.get(i + 3) == Some(&b'.') {
                            let kind = ErrorKind::UnexpectedCharacter { offset: i, ch: '.' };
                            return Err(self.err(kind, i));
                        }
                        i += 3;
                    }
                    _ => {
                        if b != b'\r' {
                            self.count(i)?;
                        }
                        return Err(self.stray(i));
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The group skipper against the token-by-token reference.

    use super::*;
    use crate::lexer::Tok;
    use proptest::prelude::*;

    /// The reference: lex token by token, matching brackets on a stack.
    fn reference(lx: &mut Lexer<'_>, open: Token, max_depth: usize) -> Result<(), Error> {
        let mut stack = Vec::new();
        let mut t = open;
        loop {
            match t.kind {
                Tok::Punct(b @ (b'{' | b'(' | b'[')) => {
                    if stack.len() >= max_depth {
                        let kind = ErrorKind::TooDeep {
                            offset: t.start,
                            limit: max_depth,
                        };
                        return Err(lx.err(kind, t.start));
                    }
                    stack.push(b);
                }
                Tok::Punct(b @ (b'}' | b')' | b']')) => {
                    let want = stack.pop().map_or(b']', closer);
                    if b != want {
                        let kind = ErrorKind::MismatchedBracket {
                            offset: t.start,
                            found: char::from(b),
                            expected: char::from(want),
                        };
                        return Err(lx.err(kind, t.start));
                    }
                    if stack.is_empty() {
                        return Ok(());
                    }
                }
                Tok::Eof => {
                    let open_char = char::from(lx.src[open.start]);
                    let kind = ErrorKind::UnclosedBracket {
                        offset: open.start,
                        open: open_char,
                    };
                    return Err(lx.err(kind, open.start));
                }
                _ => {}
            }
            t = lx.next_token()?;
        }
    }

    fn both(text: &str, max_tokens: usize, max_depth: usize) {
        let mut fast = Lexer::new(text, max_tokens);
        let mut slow = Lexer::new(text, max_tokens);
        let (Ok(open_fast), Ok(open_slow)) = (fast.next_token(), slow.next_token()) else {
            return;
        };
        if !matches!(open_fast.kind, Tok::Punct(b'{' | b'(' | b'[')) {
            return;
        }
        let a = fast.skip_group(open_fast, max_depth, &mut Vec::new());
        let b = reference(&mut slow, open_slow, max_depth);
        assert_eq!(a, b, "{text:?}");
        if a.is_ok() {
            assert_eq!(fast.pos, slow.pos, "{text:?}");
            assert_eq!(fast.next_token(), slow.next_token(), "{text:?}");
        }
    }

    #[test]
    fn known_groups_agree() {
        for text in [
            "{ a }",
            "{ a(x: [1, -2.5e3, \"s\", \"\"\"b\"\"\"]) { ...F ... on T { b } } } rest",
            "{ a .. }",
            "{ a ....F }",
            "{ a .",
            "{ a ..",
            "{ 12ab }",
            "{ a \r b }",
            "{ a \r\n b }",
            "{ a # c }\n }",
            "{ [ ( ) ] }",
            "{ [ ) }",
            "{ \u{e9} }",
            "{ a; }",
            "{{{{{{",
            "{        a        }",
        ] {
            for depth in [1, 2, 64] {
                for tokens in [1, 3, 100] {
                    both(text, tokens, depth);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn groups_agree_on_noise(parts in prop::collection::vec(prop::sample::select(vec![
            "{", "}", "(", ")", "[", "]", "a", "on", "1", "-", "-1", ".", "..", "...", "\"", "\"\"\"",
            "\\", "\\\"\"\"", "#", "\n", "\r", "\r\n", " ", "        ", ",", "e", "x\u{e9}", "\u{85}", ";", "$", "@",
        ]), 1..40), depth in 1usize..6, tokens in 1usize..50) {
            let text = format!("{{{}", parts.concat());
            both(&text, tokens, depth);
        }
    }
}
