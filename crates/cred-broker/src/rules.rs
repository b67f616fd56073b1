//! Rules as data: the serialised form of a rule file.

use crate::error::{Error, ErrorKind, RulesErrorKind, truncate};
use net_vocab::HostPattern;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The longest rule file accepted, in bytes.
pub const MAX_RULE_FILE_LEN: usize = 1024 * 1024;
/// The most rules in one file.
pub const MAX_RULES: usize = 4096;
/// The most entries in one rule's list (hosts, methods, paths or classes).
pub const MAX_RULE_ENTRIES: usize = 256;
/// The longest host pattern accepted (a rule's or a credential's), in
/// bytes.
pub const MAX_HOST_PATTERN_LEN: usize = 253;

/// A rule's or a credential's host pattern: net-vocab's [`HostPattern`]
/// (R-EGRESS-2's wildcards; names through UTS #46), at most
/// [`MAX_HOST_PATTERN_LEN`] bytes, and without a port: the broker matches
/// the connection's host, and which ports reach it is the proxy's choice.
pub(crate) fn host_pattern(entry: &str) -> Result<HostPattern, Error> {
    let bad = |reason: String| {
        Error::from(RulesErrorKind::InvalidHostPattern {
            pattern: truncate(entry),
            reason,
        })
    };
    if entry.len() > MAX_HOST_PATTERN_LEN {
        return Err(bad("it is longer than 253 bytes".to_owned()));
    }
    let pattern = HostPattern::parse(entry).map_err(|e| bad(e.to_string()))?;
    if pattern.port().is_some() {
        return Err(bad(
            "give the host without a port; the broker matches the connection's host".to_owned(),
        ));
    }
    Ok(pattern)
}

/// What a rule decides when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verdict {
    /// Forward the request.
    Allow,
    /// Refuse the request.
    Deny,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
        })
    }
}

/// One rule as written. Every list that is given must match; an omitted
/// `methods`, `paths` or `classes` list matches anything. `hosts` is
/// required.
///
/// ```toml
/// [[rule]]
/// name = "read-the-api"
/// decision = "allow"
/// hosts = ["api.example.com"]
/// methods = ["GET", "HEAD"]
/// paths = ["/repos/**"]
/// classes = ["rest-read"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RuleSpec {
    /// A unique name, reported with every decision the rule makes.
    pub name: String,
    /// Allow or deny.
    pub decision: Verdict,
    /// Host patterns (`api.example.com`, `*.example.com`, `a.*.example.com`).
    pub hosts: Vec<String>,
    /// Methods, exactly as sent (upper case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// Path globs (`*` within a segment, `**` across segments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Request classes (`rest-read`, `rest-write`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<String>,
}

impl RuleSpec {
    /// A rule with a name, a decision and hosts; the other lists empty.
    pub fn new(name: &str, decision: Verdict, hosts: &[&str]) -> RuleSpec {
        RuleSpec {
            name: name.to_owned(),
            decision,
            hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
            methods: Vec::new(),
            paths: Vec::new(),
            classes: Vec::new(),
        }
    }
}

/// A rule file: `[[rule]]` tables in TOML, or `{"rule": [...]}` in JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    /// The rules, in file order (order only affects which rule is named
    /// when several of the same decision match).
    #[serde(default)]
    pub rule: Vec<RuleSpec>,
}

impl RuleFile {
    /// Reads a TOML rule file.
    pub fn from_toml(text: &str) -> Result<RuleFile, Error> {
        check_len(text)?;
        toml::from_str(text).map_err(|e| syntax(e.to_string()))
    }

    /// Reads a JSON rule file.
    pub fn from_json(text: &str) -> Result<RuleFile, Error> {
        check_len(text)?;
        serde_json::from_str(text).map_err(|e| syntax(e.to_string()))
    }
}

fn check_len(text: &str) -> Result<(), Error> {
    if text.len() > MAX_RULE_FILE_LEN {
        return Err(ErrorKind::InvalidConfig {
            name: "rule file",
            value: format!("{} bytes", text.len()),
            reason: "a rule file is at most 1 MiB",
        }
        .into());
    }
    Ok(())
}

fn syntax(message: String) -> Error {
    RulesErrorKind::RuleSyntax {
        message: message.chars().take(512).collect(),
    }
    .into()
}
