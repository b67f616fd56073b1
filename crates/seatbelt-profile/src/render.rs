//! Rendering a [`Profile`] to SBPL text plus `-D` parameters.
//!
//! Host paths never appear in the text: each becomes `(param "KEY")` and
//! its value travels as `-DKEY=VALUE`. What must be spliced (regexes, the
//! ports of `remote ip`, comments) is validated first.

use crate::error::{Error, ErrorKind, excerpt};
use crate::model::{Action, Filter, Item, Operation, Profile, RemoteHost, RemotePort, Rule};
use crate::regex::check_string;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Rule entries (operations times leaf filters) a profile may hold unless
/// a different budget is given to [`Profile::render_with_budget`].
pub const DEFAULT_RULE_BUDGET: usize = 4096;

/// A rendered profile: the SBPL text and the parameters it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderedProfile {
    text: String,
    params: Vec<(String, String)>,
}

impl RenderedProfile {
    /// The SBPL text, for `sandbox-exec -p`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parameters, in the order they first appear in the text.
    pub fn params(&self) -> &[(String, String)] {
        &self.params
    }

    /// The parameters as a sorted map.
    pub fn params_map(&self) -> BTreeMap<String, String> {
        self.params.iter().cloned().collect()
    }

    /// `{"profile": TEXT, "params": {KEY: VALUE, ...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let params: serde_json::Map<String, serde_json::Value> = self
            .params_map()
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        serde_json::json!({ "profile": self.text, "params": params })
    }
}

impl Profile {
    /// Renders with [`DEFAULT_RULE_BUDGET`].
    pub fn render(&self) -> Result<RenderedProfile, Error> {
        self.render_with_budget(DEFAULT_RULE_BUDGET)
    }

    /// Renders, refusing a profile with more than `budget` rule entries.
    pub fn render_with_budget(&self, budget: usize) -> Result<RenderedProfile, Error> {
        let rules = self.rule_entries();
        if rules > budget {
            return Err(ErrorKind::RuleBudget { rules, budget }.into());
        }
        let mut r = Renderer::default();
        r.text.push_str("(version 1)\n");
        for item in self.items() {
            match item {
                Item::Comment(c) => r.comment(c)?,
                Item::Rule(rule) => r.rule(rule, self.denial_tag())?,
            }
        }
        Ok(RenderedProfile {
            text: r.text,
            params: r.params,
        })
    }

    /// The number of rule entries: for each rule, its operations times its
    /// leaf filters (at least one).
    pub fn rule_entries(&self) -> usize {
        self.rules()
            .map(|r| {
                let leaves: usize = r.filters.iter().map(leaf_count).sum();
                r.operations.len().saturating_mul(leaves.max(1))
            })
            .fold(0usize, usize::saturating_add)
    }
}

fn leaf_count(f: &Filter) -> usize {
    match f {
        Filter::RequireAll(v) | Filter::RequireAny(v) => {
            v.iter().map(leaf_count).fold(0, usize::saturating_add)
        }
        Filter::RequireNot(inner) => leaf_count(inner),
        _ => 1,
    }
}

#[derive(Default)]
struct Renderer {
    text: String,
    params: Vec<(String, String)>,
    /// (prefix, value) -> key: a value repeats its key within one kind of rule.
    by_value: BTreeMap<(String, String), String>,
    counters: BTreeMap<String, usize>,
}

impl Renderer {
    fn comment(&mut self, c: &str) -> Result<(), Error> {
        check_string("comment", c)?;
        if c.chars().any(char::is_control) {
            return Err(ErrorKind::InvalidComment { text: excerpt(c) }.into());
        }
        let _ = writeln!(self.text, ";; {c}");
        Ok(())
    }

    fn rule(&mut self, rule: &Rule, tag: Option<&str>) -> Result<(), Error> {
        let prefix = param_prefix(rule);
        let mut filters = Vec::with_capacity(rule.filters.len());
        for f in &rule.filters {
            check_widening(f, rule.action == Action::Deny)?;
            let mut s = String::new();
            self.filter(&prefix, f, &mut s)?;
            filters.push(s);
        }
        if let (Action::Deny, Some(tag)) = (rule.action, tag) {
            // Checked when it was set (letters, digits, '-', '_').
            filters.push(format!("(with message \"{tag}\")"));
        }
        let ops: Vec<&str> = rule.operations.iter().map(|o| o.as_str()).collect();
        let head = format!("({} {}", rule.action.as_str(), ops.join(" "));
        match filters.as_slice() {
            [] => {
                let _ = writeln!(self.text, "{head})");
            }
            [one] => {
                let _ = writeln!(self.text, "{head} {one})");
            }
            many => {
                self.text.push_str(&head);
                for f in many {
                    let _ = write!(self.text, "\n  {f}");
                }
                self.text.push_str(")\n");
            }
        }
        Ok(())
    }

    fn param(&mut self, prefix: &str, value: &str) -> Result<String, Error> {
        check_path(value)?;
        let slot = (prefix.to_owned(), value.to_owned());
        if let Some(key) = self.by_value.get(&slot) {
            return Ok(key.clone());
        }
        let n = self.counters.entry(prefix.to_owned()).or_insert(0);
        let key = format!("{prefix}_{n:03}");
        *n += 1;
        self.by_value.insert(slot, key.clone());
        self.params.push((key.clone(), value.to_owned()));
        Ok(key)
    }

    fn filter(&mut self, prefix: &str, f: &Filter, out: &mut String) -> Result<(), Error> {
        match f {
            Filter::Literal(p) => {
                let k = self.param(prefix, p)?;
                let _ = write!(out, "(literal (param \"{k}\"))");
            }
            Filter::Subpath(p) => {
                let k = self.param(prefix, p)?;
                let _ = write!(out, "(subpath (param \"{k}\"))");
            }
            Filter::Regex(r) => {
                // Validated at construction; re-checked so that no path
                // around the constructor can splice an unchecked string.
                let checked = crate::regex::SbplRegex::new(r.as_str())?;
                let _ = write!(out, "(regex #\"{}\")", checked.as_str());
            }
            Filter::RemoteIp(host, port) => {
                let host = match host {
                    RemoteHost::Localhost => "localhost",
                    RemoteHost::Any => "*",
                };
                let port = match port {
                    RemotePort::Port(0) => {
                        return Err(ErrorKind::InvalidPort { what: "remote ip" }.into());
                    }
                    RemotePort::Port(p) => p.to_string(),
                    RemotePort::Any => "*".to_owned(),
                };
                let _ = write!(out, "(remote ip \"{host}:{port}\")");
            }
            Filter::RemoteUnixSocket(p) => {
                let k = self.param(prefix, p)?;
                let _ = write!(out, "(remote unix-socket (path-literal (param \"{k}\")))");
            }
            Filter::RequireAll(v) | Filter::RequireAny(v) => {
                let name = if matches!(f, Filter::RequireAll(_)) {
                    "require-all"
                } else {
                    "require-any"
                };
                let _ = write!(out, "({name}");
                for inner in v {
                    out.push(' ');
                    self.filter(prefix, inner, out)?;
                }
                out.push(')');
            }
            Filter::RequireNot(inner) => {
                out.push_str("(require-not ");
                self.filter(prefix, inner, out)?;
                out.push(')');
            }
        }
        Ok(())
    }
}

/// `DENY_FILE_READ`, `ALLOW_PROCESS_EXEC`, ...: names parameters after the
/// rule that first uses them, so the params file reads like the profile.
fn param_prefix(rule: &Rule) -> String {
    let op = rule
        .operations
        .first()
        .copied()
        .unwrap_or(Operation::Default);
    let op: String = op
        .as_str()
        .chars()
        .filter(|c| *c != '*')
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    format!("{}_{op}", rule.action.as_str().to_ascii_uppercase())
}

/// A path value must be absolute and fit in an SBPL string.
fn check_path(p: &str) -> Result<(), Error> {
    check_string("path", p)?;
    if p.is_empty() {
        return Err(ErrorKind::InvalidPath {
            path: String::new(),
            reason: "it is empty",
        }
        .into());
    }
    if !p.starts_with('/') {
        return Err(ErrorKind::InvalidPath {
            path: excerpt(p),
            reason: "it is not absolute",
        }
        .into());
    }
    Ok(())
}

/// A widened regex may only make a denial wider: it must sit in a deny
/// rule under an even number of `require-not`.
fn check_widening(f: &Filter, widens_denial: bool) -> Result<(), Error> {
    match f {
        Filter::Regex(r) if r.is_widened() && !widens_denial => Err(ErrorKind::WidenedAllow {
            regex: excerpt(r.as_str()),
        }
        .into()),
        Filter::RequireAll(v) | Filter::RequireAny(v) => {
            v.iter().try_for_each(|i| check_widening(i, widens_denial))
        }
        Filter::RequireNot(inner) => check_widening(inner, !widens_denial),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Operation;

    #[test]
    fn paths_become_params_named_after_their_rule() {
        let mut p = Profile::new();
        p.rule(Rule::new(
            Action::Deny,
            Operation::FileReadAll,
            vec![
                Filter::Subpath("/a\")(allow default)".into()),
                Filter::Literal("/b".into()),
            ],
        ));
        p.rule(Rule::new(
            Action::Deny,
            Operation::FileWriteAll,
            vec![Filter::Subpath("/a\")(allow default)".into())],
        ));
        let r = p.render().unwrap();
        assert_eq!(
            r.text(),
            "(version 1)\n(deny file-read*\n  (subpath (param \"DENY_FILE_READ_000\"))\n  \
             (literal (param \"DENY_FILE_READ_001\")))\n\
             (deny file-write* (subpath (param \"DENY_FILE_WRITE_000\")))\n"
        );
        assert_eq!(r.params().len(), 3);
    }

    #[test]
    fn limits_are_typed() {
        let mut p = Profile::new();
        p.rule(Rule::new(
            Action::Deny,
            Operation::FileReadAll,
            vec![Filter::Subpath(format!("/{}", "a".repeat(1025)))],
        ));
        assert!(matches!(
            p.render().unwrap_err().kind(),
            ErrorKind::StringTooLong { len: 1026, .. }
        ));
        let mut p = Profile::new();
        p.rule(Rule::new(
            Action::Deny,
            Operation::FileReadAll,
            (0..10).map(|i| Filter::Literal(format!("/{i}"))).collect(),
        ));
        assert!(matches!(
            p.render_with_budget(9).unwrap_err().kind(),
            ErrorKind::RuleBudget {
                rules: 10,
                budget: 9
            }
        ));
        let mut p = Profile::new();
        p.comment("two\nlines");
        assert!(p.render().is_err());
    }
}
