//! The flat scanner of top-level definitions: it reads operation kinds and
//! names and skips every bracketed part by counting brackets on an explicit,
//! bounded stack. Nothing here recurses.

use crate::error::{Error, ErrorKind};
use crate::lexer::{Lexer, Tok, Token};
use crate::operation::{Operation, OperationKind};

/// Type-system keywords: a definition starting with one is not executable.
const TYPE_SYSTEM: &[&str] = &[
    "schema",
    "scalar",
    "type",
    "interface",
    "union",
    "enum",
    "input",
    "directive",
    "extend",
];

/// What the scanner found in a document.
pub(crate) struct Scanned<'a> {
    pub(crate) operations: Vec<Operation<'a>>,
    /// Offset of the first fragment definition, if any.
    pub(crate) first_fragment: Option<usize>,
}

struct Scanner<'a> {
    lx: Lexer<'a>,
    max_depth: usize,
    stack: Vec<u8>,
}

/// Scans `doc` into its operations.
pub(crate) fn scan(doc: &str, max_tokens: usize, max_depth: usize) -> Result<Scanned<'_>, Error> {
    let mut s = Scanner {
        lx: Lexer::new(doc, max_tokens),
        max_depth,
        stack: Vec::new(),
    };
    s.document()
}

fn found(lx: &Lexer<'_>, t: Token) -> String {
    match t.kind {
        Tok::Eof => "the end".to_owned(),
        Tok::Str => "a string".to_owned(),
        _ => format!("{:?}", crate::error::echo(lx.text(t))),
    }
}

impl<'a> Scanner<'a> {
    fn unexpected(&self, t: Token, expected: &'static str) -> Error {
        let kind = if t.kind == Tok::Eof {
            ErrorKind::UnexpectedEnd {
                offset: t.start,
                expected,
            }
        } else {
            ErrorKind::UnexpectedToken {
                offset: t.start,
                expected,
                found: found(&self.lx, t),
            }
        };
        Error::at(kind, self.lx.source(), t.start)
    }

    fn next(&mut self) -> Result<Token, Error> {
        self.lx.next_token()
    }

    fn document(&mut self) -> Result<Scanned<'a>, Error> {
        let mut operations = Vec::new();
        let mut first_fragment = None;
        let mut t = self.next()?;
        if t.kind == Tok::Eof {
            return Err(Error::new(ErrorKind::EmptyDocument));
        }
        while t.kind != Tok::Eof {
            let def_start = t.start;
            let described = t.kind == Tok::Str;
            if described {
                t = self.next()?;
            }
            match t.kind {
                Tok::Punct(b'{') if !described => {
                    self.skip_brackets(t)?;
                    operations.push(Operation {
                        kind: OperationKind::Query,
                        name: None,
                        offset: t.start,
                    });
                }
                Tok::Name => {
                    let word = self.lx.text(t);
                    if let Some(kind) = OperationKind::from_keyword(word) {
                        let name = self.operation_rest()?;
                        operations.push(Operation {
                            kind,
                            name,
                            offset: def_start,
                        });
                    } else if word == "fragment" {
                        self.fragment_rest()?;
                        first_fragment = first_fragment.or(Some(def_start));
                    } else if TYPE_SYSTEM.contains(&word) {
                        let kind = ErrorKind::NonExecutableDefinition {
                            offset: def_start,
                            keyword: word.to_owned(),
                        };
                        return Err(Error::at(kind, self.lx.source(), def_start));
                    } else {
                        return Err(
                            self.unexpected(t, "query, mutation, subscription, fragment or {")
                        );
                    }
                }
                _ if described => {
                    return Err(self.unexpected(t, "a definition after the description"));
                }
                _ => return Err(self.unexpected(t, "query, mutation, subscription, fragment or {")),
            }
            t = self.next()?;
        }
        Ok(Scanned {
            operations,
            first_fragment,
        })
    }

    /// After `query`/`mutation`/`subscription`: optional name, variables,
    /// directives, then the selection set. Returns the name.
    fn operation_rest(&mut self) -> Result<Option<&'a str>, Error> {
        let mut t = self.next()?;
        let mut name = None;
        if t.kind == Tok::Name {
            name = Some(self.lx.text(t));
            t = self.next()?;
        }
        if t.kind == Tok::Punct(b'(') {
            self.skip_brackets(t)?;
            t = self.next()?;
        }
        t = self.directives(t)?;
        if t.kind != Tok::Punct(b'{') {
            return Err(self.unexpected(t, "an operation name, variables, a directive or {"));
        }
        self.skip_brackets(t)?;
        Ok(name)
    }

    /// After `fragment`: `Name on Type Directives? SelectionSet`.
    fn fragment_rest(&mut self) -> Result<(), Error> {
        let t = self.next()?;
        if t.kind != Tok::Name || self.lx.text(t) == "on" {
            return Err(self.unexpected(t, "a fragment name other than `on`"));
        }
        let t = self.next()?;
        if t.kind != Tok::Name || self.lx.text(t) != "on" {
            return Err(self.unexpected(t, "`on` and a type condition"));
        }
        let t = self.next()?;
        if t.kind != Tok::Name {
            return Err(self.unexpected(t, "a type name"));
        }
        let t = self.next()?;
        let t = self.directives(t)?;
        if t.kind != Tok::Punct(b'{') {
            return Err(self.unexpected(t, "a directive or {"));
        }
        self.skip_brackets(t)
    }

    /// Skips `@name(args)?` repeatedly starting at `t`; returns the first
    /// token after them.
    fn directives(&mut self, mut t: Token) -> Result<Token, Error> {
        while t.kind == Tok::Punct(b'@') {
            let n = self.next()?;
            if n.kind != Tok::Name {
                return Err(self.unexpected(n, "a directive name"));
            }
            t = self.next()?;
            if t.kind == Tok::Punct(b'(') {
                self.skip_brackets(t)?;
                t = self.next()?;
            }
        }
        Ok(t)
    }

    /// Skips from the open bracket `open` to its matching close.
    fn skip_brackets(&mut self, open: Token) -> Result<(), Error> {
        self.lx.skip_group(open, self.max_depth, &mut self.stack)
    }
}
