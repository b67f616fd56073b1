//! The typed model of an SBPL profile: rules, operations and filters.

use crate::regex::SbplRegex;

/// Whether a rule allows or denies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `(allow ...)`.
    Allow,
    /// `(deny ...)`.
    Deny,
}

impl Action {
    /// The SBPL keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
        }
    }
}

/// A Seatbelt operation. Names ending in `*` cover every operation whose
/// name starts with the part before the `*`; `default` covers everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// `default`: every operation.
    Default,
    /// `file*`: every file operation.
    FileAll,
    /// `file-read*`: every read.
    FileReadAll,
    /// `file-read-data`: reading a file's contents or listing a directory.
    FileReadData,
    /// `file-read-metadata`: `stat` and friends.
    FileReadMetadata,
    /// `file-write*`: every write, including create, unlink and rename.
    FileWriteAll,
    /// `file-write-data`: writing a file's contents.
    FileWriteData,
    /// `file-write-create`: creating a file or directory (also the target of
    /// a rename).
    FileWriteCreate,
    /// `file-write-unlink`: deleting a file or directory (also the source of
    /// a rename).
    FileWriteUnlink,
    /// `process-exec*`: executing a program, interpreters included.
    ProcessExecAll,
    /// `process-exec`: executing a program.
    ProcessExec,
    /// `network*`: every network operation.
    NetworkAll,
    /// `network-outbound`: connecting (IP or Unix socket) or sending.
    NetworkOutbound,
    /// `network-inbound`: receiving.
    NetworkInbound,
    /// `network-bind`: binding a local address.
    NetworkBind,
}

const OPERATIONS: &[(Operation, &str)] = &[
    (Operation::Default, "default"),
    (Operation::FileAll, "file*"),
    (Operation::FileReadAll, "file-read*"),
    (Operation::FileReadData, "file-read-data"),
    (Operation::FileReadMetadata, "file-read-metadata"),
    (Operation::FileWriteAll, "file-write*"),
    (Operation::FileWriteData, "file-write-data"),
    (Operation::FileWriteCreate, "file-write-create"),
    (Operation::FileWriteUnlink, "file-write-unlink"),
    (Operation::ProcessExecAll, "process-exec*"),
    (Operation::ProcessExec, "process-exec"),
    (Operation::NetworkAll, "network*"),
    (Operation::NetworkOutbound, "network-outbound"),
    (Operation::NetworkInbound, "network-inbound"),
    (Operation::NetworkBind, "network-bind"),
];

impl Operation {
    /// The SBPL name.
    pub fn as_str(self) -> &'static str {
        OPERATIONS
            .iter()
            .find(|(op, _)| *op == self)
            .map_or("default", |(_, name)| name)
    }

    /// Parses an SBPL operation name this crate knows.
    pub fn from_name(name: &str) -> Option<Operation> {
        OPERATIONS
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(op, _)| *op)
    }

    /// Whether a rule naming `self` applies to the operation `other`
    /// (`file-write*` covers `file-write-unlink`; `default` covers all).
    pub fn covers(self, other: Operation) -> bool {
        if self == other || self == Operation::Default {
            return true;
        }
        let name = self.as_str();
        match name.strip_suffix('*') {
            Some(prefix) => other.as_str().starts_with(prefix),
            None => false,
        }
    }
}

/// The host part of a `(remote ip "HOST:PORT")` filter. Seatbelt accepts
/// only `localhost` (every loopback address) and `*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RemoteHost {
    /// `localhost`: loopback addresses.
    Localhost,
    /// `*`: any address.
    Any,
}

/// The port part of a `(remote ip "HOST:PORT")` filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RemotePort {
    /// One port.
    Port(u16),
    /// `*`: any port.
    Any,
}

/// A filter: which paths or peers a rule applies to.
///
/// Path values are host paths; the renderer passes them as parameters and
/// never splices them into the profile text.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Filter {
    /// `(literal P)`: exactly this path.
    Literal(String),
    /// `(subpath P)`: this path and everything below it.
    Subpath(String),
    /// `(regex #"...")`: paths the regex matches (anchor it yourself).
    Regex(SbplRegex),
    /// `(remote ip "HOST:PORT")`: an IP peer.
    RemoteIp(RemoteHost, RemotePort),
    /// `(remote unix-socket (path-literal P))`: a Unix socket peer.
    RemoteUnixSocket(String),
    /// `(require-all F...)`: every inner filter matches.
    RequireAll(Vec<Filter>),
    /// `(require-any F...)`: at least one inner filter matches.
    RequireAny(Vec<Filter>),
    /// `(require-not F)`: the inner filter does not match.
    RequireNot(Box<Filter>),
}

/// One rule: an action on one or more operations, limited by filters.
///
/// A rule with no filters applies to every target; several filters apply
/// when any of them matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Allow or deny.
    pub action: Action,
    /// The operations (at least one).
    pub operations: Vec<Operation>,
    /// The filters, any of which may match; empty means every target.
    pub filters: Vec<Filter>,
}

impl Rule {
    /// A rule for one operation.
    pub fn new(action: Action, operation: Operation, filters: Vec<Filter>) -> Rule {
        Rule {
            action,
            operations: vec![operation],
            filters,
        }
    }
}

/// A line of a profile: a rule or a comment.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Item {
    /// A `;;` comment line (for people reading the profile).
    Comment(String),
    /// A rule.
    Rule(Rule),
}

/// A profile: `(version 1)` followed by rules in order. Seatbelt takes the
/// last rule that matches, so order is meaning.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    items: Vec<Item>,
    /// Rendered as `(with message "TAG")` on every deny rule, so that the
    /// system log's line for each denial ends with it.
    denial_tag: Option<String>,
}

/// Longest denial tag, in bytes.
pub const MAX_DENIAL_TAG: usize = 64;

impl Profile {
    /// An empty profile (which Seatbelt reads as deny-everything).
    pub fn new() -> Profile {
        Profile::default()
    }

    /// Appends a comment line.
    pub fn comment(&mut self, text: impl Into<String>) -> &mut Profile {
        self.items.push(Item::Comment(text.into()));
        self
    }

    /// Appends a rule. A rule with an empty operation list is ignored.
    pub fn rule(&mut self, rule: Rule) -> &mut Profile {
        if !rule.operations.is_empty() {
            self.items.push(Item::Rule(rule));
        }
        self
    }

    /// Appends a rule unless `filters` is empty (a rule without filters
    /// would apply to everything, which is never what a path list means).
    pub fn rule_if_any(
        &mut self,
        action: Action,
        operations: &[Operation],
        filters: Vec<Filter>,
    ) -> &mut Profile {
        if !filters.is_empty() {
            self.rule(Rule {
                action,
                operations: operations.to_vec(),
                filters,
            });
        }
        self
    }

    /// Tags every denial of this profile: each deny rule is rendered with
    /// `(with message "TAG")`, and macOS ends the log line of each denial
    /// it makes with the tag, so that one session's denials can be told
    /// from every other process's. The tag is 1 to [`MAX_DENIAL_TAG`] ASCII
    /// letters, digits, `-` or `_`; anything else is refused.
    ///
    /// ```
    /// use seatbelt_profile::{Action, Operation, Profile, Rule};
    /// let mut p = Profile::new();
    /// p.rule(Rule::new(Action::Deny, Operation::Default, vec![]));
    /// p.tag_denials("session-7").unwrap();
    /// assert!(p.render().unwrap().text().contains("(deny default (with message \"session-7\"))"));
    /// assert!(Profile::new().tag_denials("two words").is_err());
    /// ```
    pub fn tag_denials(&mut self, tag: &str) -> Result<&mut Profile, crate::Error> {
        let ok = !tag.is_empty()
            && tag.len() <= MAX_DENIAL_TAG
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(crate::error::ErrorKind::InvalidTag {
                tag: crate::error::excerpt(tag),
            }
            .into());
        }
        self.denial_tag = Some(tag.to_owned());
        Ok(self)
    }

    /// The tag of every denial, when set ([`Profile::tag_denials`]).
    pub fn denial_tag(&self) -> Option<&str> {
        self.denial_tag.as_deref()
    }

    /// Every item, comments included.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The rules, in order.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> + '_ {
        self.items.iter().filter_map(|i| match i {
            Item::Rule(r) => Some(r),
            Item::Comment(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_follows_prefixes() {
        assert!(Operation::FileWriteAll.covers(Operation::FileWriteUnlink));
        assert!(Operation::FileAll.covers(Operation::FileReadData));
        assert!(Operation::Default.covers(Operation::NetworkOutbound));
        assert!(Operation::ProcessExecAll.covers(Operation::ProcessExec));
        assert!(!Operation::FileReadAll.covers(Operation::FileWriteData));
        assert!(!Operation::FileWriteUnlink.covers(Operation::FileWriteCreate));
        for (op, name) in OPERATIONS {
            assert_eq!(Operation::from_name(name), Some(*op));
            assert_eq!(op.as_str(), *name);
        }
    }
}
