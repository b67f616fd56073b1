//! The push rule: which refs a session may update, and how.
//!
//! # What a fast-forward proof proves
//!
//! Nothing on the wire marks a forced push: git sends the ref's current
//! id as `old` either way. An update is therefore treated as forced
//! unless the pushed pack proves otherwise: [`read_pack`] hashes every
//! object itself (SHA-1 or SHA-256, as the push declared), so the ids it
//! finds are the ids the server will store, and [`PackCommits::is_ancestor`]
//! follows `parent` lines from `new` until it meets `old`. When it does,
//! `old` is an ancestor of `new`, and since `receive-pack` only moves a
//! ref whose current value is `old` (it compares under the ref's lock),
//! the ref moves forward only.
//!
//! Not proven, and so refused as forced: an update whose `new` commit is
//! not in the pack (a push of a commit the server already has), a path
//! from `new` to `old` that leaves the pack (through a commit the server
//! already has), commits rebuilt from deltas whose base is outside the
//! pack (thin packs), and walks longer than [`GitLimits::max_walk`].
//! Nothing is proven about trees, blobs or tags; a created ref proves
//! nothing and needs no walk; `shallow` lines are not consulted.

use crate::commands::{ReceivePack, UpdateKind};
use crate::error::{Error, ErrorKind, truncate};
use crate::limits::GitLimits;
use crate::pack::{Ancestry, PackCommits, read_pack};
use crate::spool::PackSpool;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;

/// At most this many ref patterns in a push rule.
pub const MAX_REF_PATTERNS: usize = 256;

/// The verdict on a whole push.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// Every ref update is allowed: the push may be forwarded.
    Allow,
    /// At least one ref update is refused, and with it the whole push.
    Deny,
}

/// Whether something is allowed; refused by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Permission {
    /// Allowed.
    Allow,
    /// Refused (the default).
    #[default]
    Deny,
}

/// A push rule as data (TOML or JSON).
///
/// ```toml
/// refs = ["refs/heads/agent/{session}/**"]
/// delete = "deny"        # the default
/// tags = "deny"          # the default
/// force = "deny"         # the default
/// duplicate-refs = "deny" # the default
/// ```
///
/// A pattern is a ref name whose components may hold `*` (any bytes but
/// `/`, possibly none); a last component `**` matches one or more
/// components. `{session}` is replaced by the session's name when the
/// rule is compiled.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
pub struct PushRuleSpec {
    /// The refs that may be updated.
    pub refs: Vec<String>,
    /// Deleting a matching ref.
    #[serde(default)]
    pub delete: Permission,
    /// Updating a ref under `refs/tags/` (it must match `refs` too).
    #[serde(default)]
    pub tags: Permission,
    /// An update not proven to be a fast-forward.
    #[serde(default)]
    pub force: Permission,
    /// Naming one ref twice in a push.
    #[serde(default)]
    pub duplicate_refs: Permission,
}

impl PushRuleSpec {
    /// A rule allowing updates of `refs` only.
    pub fn new(refs: impl IntoIterator<Item = impl Into<String>>) -> PushRuleSpec {
        PushRuleSpec {
            refs: refs.into_iter().map(Into::into).collect(),
            ..PushRuleSpec::default()
        }
    }

    /// Reads a rule from TOML.
    pub fn from_toml(text: &str) -> Result<PushRuleSpec, Error> {
        toml::from_str(text).map_err(|e| {
            ErrorKind::RuleSyntax {
                message: truncate(&e.to_string()),
            }
            .into()
        })
    }
}

/// A compiled push rule.
///
/// ```
/// use push_rule::*;
///
/// let spec = PushRuleSpec::from_toml(r#"refs = ["refs/heads/agent/{session}/**"]"#).unwrap();
/// let rule = PushRule::compile(&spec, "s1").unwrap();
/// let limits = GitLimits::default();
///
/// // One create of the session's branch, one update of main: the body of
/// // `POST .../git-receive-pack` up to its pack.
/// let (a, b) = ("a".repeat(40), "b".repeat(40));
/// let mut body = Vec::new();
/// for line in [
///     format!("{} {b} refs/heads/agent/s1/work\0report-status", "0".repeat(40)),
///     format!("{a} {b} refs/heads/main"),
/// ] {
///     write_pkt(&mut body, Pkt::Data(line.as_bytes())).unwrap();
/// }
/// write_pkt(&mut body, Pkt::Flush).unwrap();
/// let mut push = PushBody::new(BodyEncoding::Identity, &limits);
/// push.feed(&body).unwrap();
/// let mut push = push.finish().unwrap();
///
/// let decision = rule.check_spooled(&push.request, &mut push.pack, &limits);
/// assert_eq!(decision.verdict(), Verdict::Deny);
/// assert_eq!(decision.refs()[1].refusal(), Some(&Refusal::RefNotAllowed));
/// let report = report_status(&decision, &push.request).unwrap();
/// assert!(report.ends_with(b"ng refs/heads/main ref not allowed by the push rule\n0000"));
/// ```
///
/// # What a fast-forward proof proves
///
/// Nothing on the wire marks a forced push: git sends the ref's current
/// id as `old` either way. An update is therefore treated as forced
/// unless the pushed pack proves otherwise: [`read_pack`] hashes every
/// object itself (SHA-1 or SHA-256, as the push declared), so the ids it
/// finds are the ids the server will store, and [`PackCommits::is_ancestor`]
/// follows `parent` lines from `new` until it meets `old`. When it does,
/// `old` is an ancestor of `new`, and since `receive-pack` only moves a
/// ref whose current value is `old` (it compares under the ref's lock),
/// the ref moves forward only.
///
/// Not proven, and so refused as forced: an update whose `new` commit is
/// not in the pack (a push of a commit the server already has), a path
/// from `new` to `old` that leaves the pack (through a commit the server
/// already has), commits rebuilt from deltas whose base is outside the
/// pack (thin packs), and walks longer than [`GitLimits::max_walk`].
/// Nothing is proven about trees, blobs or tags; a created ref proves
/// nothing and needs no walk; `shallow` lines are not consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRule {
    refs: Vec<Vec<String>>,
    delete: Permission,
    tags: Permission,
    force: Permission,
    duplicate_refs: Permission,
}

fn invalid(value: &str, reason: &'static str) -> Error {
    ErrorKind::InvalidRule {
        rule: "push".to_owned(),
        field: "refs",
        value: truncate(value),
        reason,
    }
    .into()
}

fn component_matches(pattern: &[u8], text: &[u8]) -> bool {
    // Wildcard match with `*` only, by the two-pointer method: linear in
    // practice, never exponential.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

impl PushRule {
    /// Compiles a rule for `session` (substituted for `{session}`).
    pub fn compile(spec: &PushRuleSpec, session: &str) -> Result<PushRule, Error> {
        if session.is_empty()
            || session.len() > 128
            || !session
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            || session.starts_with(['.', '-'])
            || session.contains("..")
        {
            return Err(invalid(
                session,
                "a session name is 1 to 128 of [A-Za-z0-9._-]",
            ));
        }
        if spec.refs.len() > MAX_REF_PATTERNS {
            return Err(invalid("", "give at most 256 ref patterns"));
        }
        let mut refs = Vec::new();
        for p in &spec.refs {
            let text = p.replace("{session}", session);
            let parts: Vec<String> = text.split('/').map(str::to_owned).collect();
            let ok = text.starts_with("refs/")
                && text.len() <= 1024
                && parts.iter().all(|c| !c.is_empty())
                && parts
                    .iter()
                    .enumerate()
                    .all(|(i, c)| c != "**" || i + 1 == parts.len())
                && !text
                    .bytes()
                    .any(|b| b < 0x21 || b == 0x7f || b"~^:?[\\{}".contains(&b));
            if !ok {
                return Err(invalid(
                    p,
                    "a pattern is a ref name starting with refs/, with * and a last **",
                ));
            }
            refs.push(parts);
        }
        Ok(PushRule {
            refs,
            delete: spec.delete,
            tags: spec.tags,
            force: spec.force,
            duplicate_refs: spec.duplicate_refs,
        })
    }

    /// The ref patterns, as compiled for the session (`{session}`
    /// substituted), in the order given.
    pub fn patterns(&self) -> Vec<String> {
        self.refs.iter().map(|p| p.join("/")).collect()
    }

    /// Whether `refname` matches one of the patterns.
    pub fn matches(&self, refname: &str) -> bool {
        let parts: Vec<&str> = refname.split('/').collect();
        self.refs.iter().any(|pat| {
            let deep = pat.last().is_some_and(|l| l == "**");
            let fixed = if deep { pat.len() - 1 } else { pat.len() };
            let count_ok = if deep {
                parts.len() > fixed
            } else {
                parts.len() == fixed
            };
            count_ok
                && pat[..fixed]
                    .iter()
                    .zip(&parts)
                    .all(|(p, t)| component_matches(p.as_bytes(), t.as_bytes()))
        })
    }

    /// Whether the pack must be walked to decide `push`: some update of a
    /// ref is not already refused and forced updates are not allowed.
    pub fn needs_pack(&self, push: &ReceivePack) -> bool {
        self.force == Permission::Deny
            && push
                .updates()
                .iter()
                .any(|u| u.kind() == UpdateKind::Update && self.matches(u.refname()))
    }

    /// Decides a push. `pack` is the pushed pack's commits when it was read
    /// (see [`PushRule::check_spooled`]); without it no update is proven a
    /// fast-forward.
    pub fn check(
        &self,
        push: &ReceivePack,
        pack: Option<&PackCommits>,
        limits: &GitLimits,
    ) -> PushDecision {
        let mut seen = HashSet::new();
        let mut refs = Vec::new();
        for u in push.updates() {
            let name = u.refname();
            let dup = !seen.insert(name.to_owned());
            let refusal = if dup && self.duplicate_refs == Permission::Deny {
                Some(Refusal::DuplicateRef)
            } else if !self.matches(name) {
                Some(Refusal::RefNotAllowed)
            } else if name.starts_with("refs/tags/") && self.tags == Permission::Deny {
                Some(Refusal::Tag)
            } else if u.kind() == UpdateKind::Delete && self.delete == Permission::Deny {
                Some(Refusal::Delete)
            } else if u.kind() == UpdateKind::Update && self.force == Permission::Deny {
                match pack.map(|p| p.is_ancestor(&u.old(), &u.new_id(), limits.max_walk)) {
                    Some(Ancestry::Proven) => None,
                    Some(Ancestry::LimitReached) => Some(Refusal::WalkLimit),
                    _ => Some(Refusal::NotFastForward),
                }
            } else {
                None
            };
            refs.push(RefVerdict {
                refname: name.to_owned(),
                refusal,
            });
        }
        if refs.iter().any(|r| r.refusal.is_some()) {
            for r in &mut refs {
                r.refusal.get_or_insert(Refusal::WithTheRest);
            }
        }
        PushDecision { refs }
    }

    /// Decides a push whose pack is in `spool`: the pack is read only when
    /// [`PushRule::needs_pack`] says so. A pack that cannot be read refuses
    /// every update that needed it.
    pub fn check_spooled(
        &self,
        push: &ReceivePack,
        spool: &mut PackSpool,
        limits: &GitLimits,
    ) -> PushDecision {
        if !self.needs_pack(push) {
            return self.check(push, None, limits);
        }
        let len = spool.len();
        let commits = spool
            .reader()
            .and_then(|mut r| read_pack(&mut r, len, push.object_format(), limits));
        match commits {
            Ok(c) => self.check(push, Some(&c), limits),
            Err(e) => {
                let mut d = self.check(push, None, limits);
                for r in &mut d.refs {
                    if r.refusal == Some(Refusal::NotFastForward) {
                        r.refusal = Some(Refusal::UnreadablePack(e.to_string()));
                    }
                }
                d
            }
        }
    }
}

/// Why one ref of a push is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The ref matches no pattern.
    RefNotAllowed,
    /// Deletes are refused.
    Delete,
    /// Tags are refused.
    Tag,
    /// The ref is named twice.
    DuplicateRef,
    /// The pack does not prove a fast-forward.
    NotFastForward,
    /// The walk hit its limit.
    WalkLimit,
    /// The pack could not be read.
    UnreadablePack(String),
    /// This ref is fine, another in the same push is not.
    WithTheRest,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::RefNotAllowed => f.write_str("ref not allowed by the push rule"),
            Refusal::Delete => f.write_str("deleting refs is not allowed"),
            Refusal::Tag => f.write_str("pushing tags is not allowed"),
            Refusal::DuplicateRef => f.write_str("ref named twice in one push"),
            Refusal::NotFastForward => {
                f.write_str("not proven a fast-forward (forced updates are not allowed)")
            }
            Refusal::WalkLimit => f.write_str("history walk limit reached; push fewer commits"),
            Refusal::UnreadablePack(m) => write!(f, "pack refused: {}", truncate(m)),
            Refusal::WithTheRest => f.write_str("another ref in this push is refused"),
        }
    }
}

/// The verdict for one ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefVerdict {
    refname: String,
    refusal: Option<Refusal>,
}

impl RefVerdict {
    /// The ref.
    pub fn refname(&self) -> &str {
        &self.refname
    }

    /// Why it is refused, if it is.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.refusal.as_ref()
    }
}

/// The decision on a whole push: allowed only if every ref is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushDecision {
    refs: Vec<RefVerdict>,
}

impl PushDecision {
    /// Allow when no ref is refused (a push with no commands is allowed).
    pub fn verdict(&self) -> Verdict {
        if self.refs.iter().any(|r| r.refusal.is_some()) {
            Verdict::Deny
        } else {
            Verdict::Allow
        }
    }

    /// Each ref's verdict, in push order.
    pub fn refs(&self) -> &[RefVerdict] {
        &self.refs
    }
}
