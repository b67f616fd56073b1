//! The SBPL reader: parses the SBPL this crate emits back into a
//! [`Profile`], substituting parameters.
//!
//! It reads `(version 1)`, `(allow|deny OP... FILTER...)` and `;` comments;
//! filters are `literal`, `subpath` (a string or `(param "K")`), `regex`
//! (`#"..."` in the supported subset), `remote ip "HOST:PORT"`,
//! `remote unix-socket (path-literal V)` and `require-all|any|not`, and on
//! deny rules the modifier `(with message "TAG")` (the denial tag).
//! Everything else is refused with the byte offset.

use crate::error::{Error, ErrorKind};
use crate::model::{Action, Filter, Operation, Profile, RemoteHost, RemotePort, Rule};
use crate::regex::SbplRegex;
use std::collections::BTreeMap;

/// Largest SBPL text the reader accepts, in bytes.
pub const MAX_SBPL_BYTES: usize = 4 * 1024 * 1024;
/// Deepest list nesting the reader accepts.
pub const MAX_SBPL_DEPTH: usize = 32;
/// Longest symbol, in bytes.
const MAX_SYMBOL: usize = 256;

/// A parsed s-expression with the byte offset where it starts.
#[derive(Debug)]
enum Sx {
    List(Vec<Sx>, usize),
    Sym(String, usize),
    Str(String, usize),
    Regex(String, usize),
}

impl Sx {
    fn offset(&self) -> usize {
        match self {
            Sx::List(_, o) | Sx::Sym(_, o) | Sx::Str(_, o) | Sx::Regex(_, o) => *o,
        }
    }
}

fn err(offset: usize, reason: impl Into<String>) -> Error {
    ErrorKind::Parse {
        offset,
        reason: reason.into(),
    }
    .into()
}

/// Reads SBPL `text`, substituting `(param "K")` from `params`.
///
/// ```
/// use seatbelt_profile::{Profile, read_profile};
/// let rendered = Profile::new().render().unwrap();
/// let back = read_profile(rendered.text(), &rendered.params_map()).unwrap();
/// assert_eq!(back.rules().count(), 0);
/// ```
pub fn read_profile(text: &str, params: &BTreeMap<String, String>) -> Result<Profile, Error> {
    if text.len() > MAX_SBPL_BYTES {
        return Err(ErrorKind::ReaderLimit {
            what: "input bytes",
            limit: MAX_SBPL_BYTES,
        }
        .into());
    }
    let forms = Parser {
        src: text.as_bytes(),
        text,
        pos: 0,
    }
    .forms()?;
    let mut iter = forms.into_iter();
    match iter.next() {
        Some(Sx::List(items, o)) => match items.as_slice() {
            [Sx::Sym(v, _), Sx::Sym(n, _)] if v == "version" && n == "1" => {}
            _ => return Err(err(o, "the profile must start with (version 1)")),
        },
        Some(other) => {
            return Err(err(
                other.offset(),
                "the profile must start with (version 1)",
            ));
        }
        None => return Err(err(0, "empty profile")),
    }
    let mut profile = Profile::new();
    let mut denial_tags = Vec::new();
    for form in iter {
        let (r, tag) = rule(form, params)?;
        denial_tags.push((r.action, tag));
        profile.rule(r);
    }
    // `(with message "TAG")` is the profile's denial tag: on every deny
    // rule, the same one, or on none (so a profile reads back as it was
    // rendered).
    let tags: Vec<&Option<(String, usize)>> = denial_tags
        .iter()
        .filter(|(a, _)| *a == Action::Deny)
        .map(|(_, t)| t)
        .collect();
    if let Some(Some((first, _))) = tags.first() {
        if let Some(Some((other, o))) = tags
            .iter()
            .find(|t| t.as_ref().map(|x| &x.0) != Some(first))
        {
            return Err(err(
                *o,
                format!("the denial tag {other:?} differs from {first:?}"),
            ));
        }
        if tags.iter().any(|t| t.is_none()) {
            return Err(err(0, "a deny rule lacks the profile's denial tag"));
        }
        profile.tag_denials(first)?;
    }
    Ok(profile)
}

/// A rule, and the tag of its `(with message "TAG")` with its offset.
fn rule(
    form: Sx,
    params: &BTreeMap<String, String>,
) -> Result<(Rule, Option<(String, usize)>), Error> {
    let Sx::List(items, offset) = form else {
        return Err(err(form.offset(), "expected a rule"));
    };
    let mut it = items.into_iter();
    let action = match it.next() {
        Some(Sx::Sym(s, _)) if s == "allow" => Action::Allow,
        Some(Sx::Sym(s, _)) if s == "deny" => Action::Deny,
        _ => return Err(err(offset, "a rule starts with allow or deny")),
    };
    let mut operations = Vec::new();
    let mut filters = Vec::new();
    let mut tag = None;
    for item in it {
        match item {
            Sx::Sym(s, o) => {
                if !filters.is_empty() {
                    return Err(err(o, "operation after a filter"));
                }
                let op = Operation::from_name(&s)
                    .ok_or_else(|| err(o, format!("unknown operation {s:?}")))?;
                operations.push(op);
            }
            Sx::List(items, o) if matches!(items.first(), Some(Sx::Sym(w, _)) if w == "with") => {
                if action != Action::Deny || tag.is_some() {
                    return Err(err(o, "(with message ...) goes once on a deny rule"));
                }
                match items.as_slice() {
                    [_, Sx::Sym(m, _), Sx::Str(t, _)] if m == "message" => {
                        tag = Some((t.clone(), o));
                    }
                    _ => return Err(err(o, "the only modifier read is (with message \"TAG\")")),
                }
            }
            list @ Sx::List(..) => {
                if tag.is_some() {
                    return Err(err(list.offset(), "a filter after (with message ...)"));
                }
                filters.push(filter(list, params)?)
            }
            other => return Err(err(other.offset(), "expected an operation or a filter")),
        }
    }
    if operations.is_empty() {
        return Err(err(offset, "a rule needs at least one operation"));
    }
    Ok((
        Rule {
            action,
            operations,
            filters,
        },
        tag,
    ))
}

fn filter(form: Sx, params: &BTreeMap<String, String>) -> Result<Filter, Error> {
    let Sx::List(items, offset) = form else {
        return Err(err(form.offset(), "expected a filter"));
    };
    let mut it = items.into_iter();
    let head = match it.next() {
        Some(Sx::Sym(s, _)) => s,
        _ => return Err(err(offset, "a filter starts with its name")),
    };
    let args: Vec<Sx> = it.collect();
    let one = |args: Vec<Sx>| -> Result<Sx, Error> {
        let mut a = args.into_iter();
        match (a.next(), a.next()) {
            (Some(x), None) => Ok(x),
            _ => Err(err(offset, format!("({head} ...) takes one argument"))),
        }
    };
    Ok(match head.as_str() {
        "literal" => Filter::Literal(value(one(args)?, params)?),
        "subpath" => Filter::Subpath(value(one(args)?, params)?),
        "regex" => match one(args)? {
            Sx::Regex(r, _) | Sx::Str(r, _) => Filter::Regex(SbplRegex::new(r)?),
            other => return Err(err(other.offset(), "regex takes #\"...\"")),
        },
        "remote" => remote(args, offset, params)?,
        "require-all" | "require-any" => {
            let inner = args
                .into_iter()
                .map(|a| filter(a, params))
                .collect::<Result<Vec<_>, _>>()?;
            if head == "require-all" {
                Filter::RequireAll(inner)
            } else {
                Filter::RequireAny(inner)
            }
        }
        "require-not" => Filter::RequireNot(Box::new(filter(one(args)?, params)?)),
        other => return Err(err(offset, format!("unknown filter {other:?}"))),
    })
}

fn remote(
    args: Vec<Sx>,
    offset: usize,
    params: &BTreeMap<String, String>,
) -> Result<Filter, Error> {
    let mut a = args.into_iter();
    match (a.next(), a.next(), a.next()) {
        (Some(Sx::Sym(kind, _)), Some(Sx::Str(addr, o)), None) if kind == "ip" => {
            let (host, port) = addr
                .rsplit_once(':')
                .ok_or_else(|| err(o, "remote ip needs HOST:PORT"))?;
            let host = match host {
                "localhost" => RemoteHost::Localhost,
                "*" => RemoteHost::Any,
                _ => return Err(err(o, "remote ip host must be localhost or *")),
            };
            let port = match port {
                "*" => RemotePort::Any,
                p => RemotePort::Port(
                    p.parse::<u16>()
                        .ok()
                        .filter(|p| *p != 0)
                        .ok_or_else(|| err(o, "remote ip port must be 1-65535 or *"))?,
                ),
            };
            Ok(Filter::RemoteIp(host, port))
        }
        (Some(Sx::Sym(kind, _)), Some(Sx::List(inner, o)), None) if kind == "unix-socket" => {
            let mut i = inner.into_iter();
            match (i.next(), i.next(), i.next()) {
                (Some(Sx::Sym(pl, _)), Some(v), None) if pl == "path-literal" => {
                    Ok(Filter::RemoteUnixSocket(value(v, params)?))
                }
                _ => Err(err(o, "remote unix-socket takes (path-literal V)")),
            }
        }
        _ => Err(err(
            offset,
            "remote takes ip \"HOST:PORT\" or unix-socket (path-literal V)",
        )),
    }
}

/// A string, or `(param "K")` looked up in `params`.
fn value(form: Sx, params: &BTreeMap<String, String>) -> Result<String, Error> {
    match form {
        Sx::Str(s, _) => Ok(s),
        Sx::List(items, o) => match items.as_slice() {
            [Sx::Sym(p, _), Sx::Str(name, _)] if p == "param" => {
                params.get(name).cloned().ok_or_else(|| {
                    ErrorKind::UnknownParam {
                        name: crate::error::excerpt(name),
                    }
                    .into()
                })
            }
            _ => Err(err(o, "expected a string or (param \"NAME\")")),
        },
        other => Err(err(other.offset(), "expected a string or (param \"NAME\")")),
    }
}

struct Parser<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn forms(mut self) -> Result<Vec<Sx>, Error> {
        let mut out = Vec::new();
        loop {
            self.skip_space();
            if self.pos >= self.src.len() {
                return Ok(out);
            }
            out.push(self.form(0)?);
        }
    }

    fn skip_space(&mut self) {
        while let Some(&b) = self.src.get(self.pos) {
            if b.is_ascii_whitespace() {
                self.pos += 1;
            } else if b == b';' {
                while let Some(&c) = self.src.get(self.pos) {
                    if c == b'\n' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn form(&mut self, depth: usize) -> Result<Sx, Error> {
        let start = self.pos;
        match self.src.get(self.pos) {
            None => Err(err(start, "unexpected end of input")),
            Some(b'(') => {
                if depth >= MAX_SBPL_DEPTH {
                    return Err(ErrorKind::ReaderLimit {
                        what: "list nesting",
                        limit: MAX_SBPL_DEPTH,
                    }
                    .into());
                }
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    match self.src.get(self.pos) {
                        None => return Err(err(start, "unclosed `(`")),
                        Some(b')') => {
                            self.pos += 1;
                            return Ok(Sx::List(items, start));
                        }
                        Some(_) => items.push(self.form(depth + 1)?),
                    }
                }
            }
            Some(b')') => Err(err(start, "unexpected `)`")),
            Some(b'"') => {
                self.pos += 1;
                self.string(start).map(|s| Sx::Str(s, start))
            }
            Some(b'#') if self.src.get(self.pos + 1) == Some(&b'"') => {
                self.pos += 2;
                let body_start = self.pos;
                while let Some(&b) = self.src.get(self.pos) {
                    if b == b'"' {
                        let body = self.slice(body_start, self.pos)?;
                        self.pos += 1;
                        return Ok(Sx::Regex(body, start));
                    }
                    self.pos += 1;
                }
                Err(err(start, "unterminated #\""))
            }
            Some(_) => {
                while let Some(&b) = self.src.get(self.pos) {
                    if b.is_ascii_whitespace() || matches!(b, b'(' | b')' | b'"' | b';') {
                        break;
                    }
                    self.pos += 1;
                }
                if self.pos - start > MAX_SYMBOL {
                    return Err(err(start, "symbol longer than 256 bytes"));
                }
                Ok(Sx::Sym(self.slice(start, self.pos)?, start))
            }
        }
    }

    fn slice(&self, from: usize, to: usize) -> Result<String, Error> {
        self.text
            .get(from..to)
            .map(str::to_owned)
            .ok_or_else(|| err(from, "not on a character boundary"))
    }

    /// A `"` string after its opening quote: `\\`, `\"`, `\n`, `\t` escapes.
    fn string(&mut self, start: usize) -> Result<String, Error> {
        let mut out = String::new();
        let mut run = self.pos;
        while let Some(&b) = self.src.get(self.pos) {
            match b {
                b'"' => {
                    out.push_str(&self.slice(run, self.pos)?);
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(&self.slice(run, self.pos)?);
                    let c = match self.src.get(self.pos + 1) {
                        Some(b'\\') => '\\',
                        Some(b'"') => '"',
                        Some(b'n') => '\n',
                        Some(b't') => '\t',
                        _ => return Err(err(self.pos, "unknown string escape")),
                    };
                    out.push(c);
                    self.pos += 2;
                    run = self.pos;
                }
                0 => return Err(err(self.pos, "NUL in a string")),
                _ => self.pos += 1,
            }
        }
        Err(err(start, "unterminated string"))
    }
}
