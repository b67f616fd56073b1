//! The evaluator: decides an operation on a target the way Seatbelt does,
//! so tests can assert what a profile means.
//!
//! Semantics: the last rule whose operation covers the query and whose
//! filters match decides; with no match the answer is deny (Seatbelt's
//! implicit default). `literal` matches the exact path, `subpath` the path
//! and everything below it, `regex` searches the path (our regexes are
//! anchored). Paths are compared as given: Seatbelt sees the kernel's
//! resolved spelling, so tests ask about every spelling they care about.

use crate::error::{Error, ErrorKind, excerpt};
use crate::model::{Action, Filter, Operation, Profile, RemoteHost, RemotePort, Rule};
use crate::reader::read_profile;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// What an operation is applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target<'a> {
    /// A file system path (absolute, as the kernel spells it).
    Path(&'a str),
    /// An IP peer.
    Ip(IpAddr, u16),
    /// A Unix socket peer, by path.
    UnixSocket(&'a str),
}

/// The answer for one query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The operation is allowed.
    Allow,
    /// The operation is denied.
    Deny,
}

#[derive(Debug)]
enum Compiled {
    Literal(String),
    Subpath(String),
    Regex(regex::Regex),
    RemoteIp(RemoteHost, RemotePort),
    RemoteUnixSocket(String),
    All(Vec<Compiled>),
    Any(Vec<Compiled>),
    Not(Box<Compiled>),
}

#[derive(Debug)]
struct CompiledRule {
    action: Action,
    operations: Vec<Operation>,
    filters: Vec<Compiled>,
}

/// A compiled profile: compile once, then ask many questions.
///
/// ```
/// use seatbelt_profile::{Decision, Evaluator, Operation, Target};
/// use std::collections::BTreeMap;
/// let mut params = BTreeMap::new();
/// params.insert("S".to_string(), "/Users/a/.ssh".to_string());
/// let ev = Evaluator::from_sbpl(
///     "(version 1)\n(allow default)\n(deny file-read* (subpath (param \"S\")))\n",
///     &params,
/// ).unwrap();
/// let q = |p| ev.decide(Operation::FileReadData, Target::Path(p));
/// assert_eq!(q("/Users/a/.ssh/id_rsa"), Decision::Deny);
/// assert_eq!(q("/Users/a/.sshx"), Decision::Allow);
/// ```
#[derive(Debug)]
pub struct Evaluator {
    rules: Vec<CompiledRule>,
}

impl Evaluator {
    /// Compiles a typed profile.
    pub fn new(profile: &Profile) -> Result<Evaluator, Error> {
        let rules = profile
            .rules()
            .map(compile_rule)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Evaluator { rules })
    }

    /// Reads SBPL text with its parameters, then compiles it.
    pub fn from_sbpl(text: &str, params: &BTreeMap<String, String>) -> Result<Evaluator, Error> {
        Evaluator::new(&read_profile(text, params)?)
    }

    /// The decision for `operation` (a concrete one such as
    /// `file-write-unlink`) on `target`.
    pub fn decide(&self, operation: Operation, target: Target<'_>) -> Decision {
        let hit = self.rules.iter().rev().find(|r| {
            r.operations.iter().any(|o| o.covers(operation))
                && (r.filters.is_empty() || r.filters.iter().any(|f| matches(f, target)))
        });
        match hit.map(|r| r.action) {
            Some(Action::Allow) => Decision::Allow,
            Some(Action::Deny) | None => Decision::Deny,
        }
    }

    /// Whether `operation` on `target` is allowed.
    pub fn allows(&self, operation: Operation, target: Target<'_>) -> bool {
        self.decide(operation, target) == Decision::Allow
    }
}

fn compile_rule(r: &Rule) -> Result<CompiledRule, Error> {
    Ok(CompiledRule {
        action: r.action,
        operations: r.operations.clone(),
        filters: r.filters.iter().map(compile).collect::<Result<_, _>>()?,
    })
}

fn compile(f: &Filter) -> Result<Compiled, Error> {
    Ok(match f {
        Filter::Literal(p) => Compiled::Literal(p.clone()),
        Filter::Subpath(p) => Compiled::Subpath(trim_slash(p).to_owned()),
        Filter::Regex(r) => {
            let syntax = r.to_regex_crate_syntax()?;
            let re = regex::Regex::new(&syntax).map_err(|_| ErrorKind::UnsupportedRegex {
                regex: excerpt(r.as_str()),
                reason: "does not compile",
            })?;
            Compiled::Regex(re)
        }
        Filter::RemoteIp(h, p) => Compiled::RemoteIp(*h, *p),
        Filter::RemoteUnixSocket(p) => Compiled::RemoteUnixSocket(p.clone()),
        Filter::RequireAll(v) => Compiled::All(v.iter().map(compile).collect::<Result<_, _>>()?),
        Filter::RequireAny(v) => Compiled::Any(v.iter().map(compile).collect::<Result<_, _>>()?),
        Filter::RequireNot(inner) => Compiled::Not(Box::new(compile(inner)?)),
    })
}

fn trim_slash(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    if t.is_empty() { "/" } else { t }
}

fn matches(f: &Compiled, target: Target<'_>) -> bool {
    match (f, target) {
        (Compiled::Literal(p), Target::Path(t)) => p == t,
        (Compiled::Subpath(p), Target::Path(t)) => {
            p == "/"
                || t == p
                || (t.len() > p.len() && t.starts_with(p.as_str()) && t.as_bytes()[p.len()] == b'/')
        }
        (Compiled::Regex(re), Target::Path(t)) => re.is_match(t),
        (Compiled::RemoteIp(host, port), Target::Ip(addr, p)) => {
            let host_ok = match host {
                RemoteHost::Localhost => addr.is_loopback(),
                RemoteHost::Any => true,
            };
            let port_ok = match port {
                RemotePort::Port(want) => *want == p,
                RemotePort::Any => true,
            };
            host_ok && port_ok
        }
        (Compiled::RemoteUnixSocket(p), Target::UnixSocket(t)) => p == t,
        (Compiled::All(v), t) => v.iter().all(|f| matches(f, t)),
        (Compiled::Any(v), t) => v.iter().any(|f| matches(f, t)),
        (Compiled::Not(inner), t) => !matches(inner, t),
        _ => false,
    }
}
