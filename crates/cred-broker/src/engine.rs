//! The compiled rule engine: compile once, decide per request, fail closed.

use crate::classify::{
    Classification, ClassifyInput, RequestClass, RequestClassifier, RestClassifier,
};
use crate::error::{Error, ErrorKind, RulesErrorKind, truncate};
use crate::head::RequestHead;
use crate::inject::wire_host;
use crate::path_glob::{PathGlob, PathProblem, normal_path};
use crate::rules::{MAX_RULE_ENTRIES, MAX_RULES, RuleFile, RuleSpec, Verdict, host_pattern};
use net_vocab::{Host, HostPattern, is_token};
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

/// Why a request got its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecisionReason {
    /// The named rule matched (for a deny: the first matching deny rule;
    /// for an allow: the first matching allow rule, and no deny matched).
    Rule {
        /// The rule's name.
        name: String,
    },
    /// No rule matched: denied.
    NoMatch,
    /// No classifier could classify the request: denied.
    Unclassified {
        /// What the classifiers said.
        reason: String,
    },
    /// The path cannot be matched safely: denied.
    AmbiguousPath(PathProblem),
}

/// The engine's answer for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    verdict: Verdict,
    reason: DecisionReason,
    class: Option<RequestClass>,
}

impl Decision {
    fn deny(reason: DecisionReason, class: Option<RequestClass>) -> Decision {
        Decision {
            verdict: Verdict::Deny,
            reason,
            class,
        }
    }

    /// Allow or deny.
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// Why.
    pub fn reason(&self) -> &DecisionReason {
        &self.reason
    }

    /// The name of the rule that decided, if a rule did.
    pub fn rule(&self) -> Option<&str> {
        match &self.reason {
            DecisionReason::Rule { name } => Some(name),
            _ => None,
        }
    }

    /// The request's class, if it was classified.
    pub fn class(&self) -> Option<&RequestClass> {
        self.class.as_ref()
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.verdict, &self.reason) {
            (Verdict::Allow, DecisionReason::Rule { name }) => {
                write!(f, "allowed by rule {name:?}")
            }
            (_, DecisionReason::Rule { name }) => write!(f, "denied by rule {name:?}"),
            (_, DecisionReason::NoMatch) => f.write_str("denied: no rule matches"),
            (_, DecisionReason::Unclassified { reason }) => {
                write!(f, "denied: the request cannot be classified: {reason}")
            }
            (_, DecisionReason::AmbiguousPath(p)) => write!(f, "denied: {p}"),
        }
    }
}

/// Whether the default REST classifier is asked after the added ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum RestFallback {
    /// Ask [`RestClassifier`] last (the default).
    #[default]
    Enabled,
    /// Only the added classifiers.
    Disabled,
}

#[derive(Debug, Clone)]
struct Compiled {
    name: String,
    verdict: Verdict,
    hosts: Vec<HostPattern>,
    methods: Vec<String>,
    paths: Vec<PathGlob>,
    classes: Vec<RequestClass>,
}

impl Compiled {
    fn matches(&self, host: Option<&Host>, method: &str, path: &str, class: &RequestClass) -> bool {
        host.is_some_and(|host| self.hosts.iter().any(|h| h.matches(host)))
            && (self.methods.is_empty() || self.methods.iter().any(|m| m == method))
            && (self.paths.is_empty() || self.paths.iter().any(|p| p.matches(path)))
            && (self.classes.is_empty() || self.classes.contains(class))
    }
}

/// The compiled rules and classifiers. Build with [`RuleEngine::builder`];
/// ask with [`RuleEngine::decide`].
///
/// Deny beats allow; no match is deny; a request that cannot be classified
/// or whose path is ambiguous is denied before any rule is asked.
#[derive(Clone)]
pub struct RuleEngine {
    rules: Arc<[Compiled]>,
    classifiers: Arc<[Arc<dyn RequestClassifier>]>,
}

impl fmt::Debug for RuleEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.classifiers.iter().map(|c| c.name()).collect();
        f.debug_struct("RuleEngine")
            .field("rules", &self.rules.len())
            .field("classifiers", &names)
            .finish()
    }
}

impl RuleEngine {
    /// A builder with no rules and the REST fallback enabled.
    pub fn builder() -> RuleEngineBuilder {
        RuleEngineBuilder {
            rules: Vec::new(),
            classifiers: Vec::new(),
            fallback: RestFallback::Enabled,
        }
    }

    /// The number of compiled rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules (every request is then denied).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Classifies the request, then asks the rules. `host` is the
    /// connection's target host (the authoritative one), as sent on the
    /// wire, with or without a port; a host that does not parse
    /// ([`Host::parse_wire`]) matches no rule.
    ///
    /// ```
    /// use cred_broker::{ClassifyInput, Limits, RequestParser, RuleEngine, RuleFile, Status, Verdict};
    /// let rules = RuleFile::from_toml(
    ///     "[[rule]]\nname = \"cdn\"\ndecision = \"allow\"\nhosts = [\"*.cdn.example.com\"]\n",
    /// )
    /// .unwrap();
    /// let engine = RuleEngine::builder().rules(rules).build().unwrap();
    /// let wire = b"GET / HTTP/1.1\r\nHost: a.cdn.example.com\r\n\r\n";
    /// let Ok(Status::Complete { request, .. }) = RequestParser::new(Limits::default()).feed(wire)
    /// else {
    ///     unreachable!("a complete request")
    /// };
    /// let input = ClassifyInput::head(request.head());
    /// assert_eq!(engine.decide(&input, "A.CDN.example.com:443").verdict(), Verdict::Allow);
    /// assert_eq!(engine.decide(&input, "cdn.example.com").verdict(), Verdict::Deny); // never the apex
    /// assert_eq!(engine.decide(&input, "-a.cdn.example.com").verdict(), Verdict::Deny); // no host
    /// ```
    pub fn decide(&self, input: &ClassifyInput<'_>, host: &str) -> Decision {
        self.decide_for(input, wire_host(host).as_ref())
    }

    /// [`RuleEngine::decide`] for a canonical host (`None`: no rule
    /// matches).
    pub(crate) fn decide_for(&self, input: &ClassifyInput<'_>, host: Option<&Host>) -> Decision {
        let class = match self.classify(input) {
            Ok(c) => c,
            Err(reason) => return Decision::deny(DecisionReason::Unclassified { reason }, None),
        };
        let path = match normal_path(input.head.path()) {
            Ok(p) => p,
            Err(problem) => {
                return Decision::deny(DecisionReason::AmbiguousPath(problem), Some(class));
            }
        };
        let method = input.head.method();
        let mut allow: Option<&Compiled> = None;
        for rule in self.rules.iter() {
            if !rule.matches(host, method, &path, &class) {
                continue;
            }
            match rule.verdict {
                Verdict::Deny => {
                    let name = rule.name.clone();
                    return Decision::deny(DecisionReason::Rule { name }, Some(class));
                }
                Verdict::Allow => {
                    allow.get_or_insert(rule);
                }
            }
        }
        match allow {
            Some(rule) => Decision {
                verdict: Verdict::Allow,
                reason: DecisionReason::Rule {
                    name: rule.name.clone(),
                },
                class: Some(class),
            },
            None => Decision::deny(DecisionReason::NoMatch, Some(class)),
        }
    }

    /// Shorthand for [`RuleEngine::decide`] on a head without a body.
    pub fn decide_head(&self, head: &RequestHead, host: &str) -> Decision {
        self.decide(&ClassifyInput::head(head), host)
    }

    fn classify(&self, input: &ClassifyInput<'_>) -> Result<RequestClass, String> {
        for c in self.classifiers.iter() {
            match c.classify(input) {
                Classification::Class(class) => return Ok(class),
                Classification::NotMine => {}
                Classification::Refused { reason } => {
                    return Err(format!("{}: {reason}", c.name()));
                }
            }
        }
        Err("no classifier takes this request".to_owned())
    }
}

/// Builds a [`RuleEngine`]; [`RuleEngineBuilder::build`] compiles and
/// checks every rule.
pub struct RuleEngineBuilder {
    rules: Vec<RuleSpec>,
    classifiers: Vec<Arc<dyn RequestClassifier>>,
    fallback: RestFallback,
}

impl fmt::Debug for RuleEngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleEngineBuilder")
            .field("rules", &self.rules.len())
            .field("classifiers", &self.classifiers.len())
            .field("fallback", &self.fallback)
            .finish()
    }
}

impl RuleEngineBuilder {
    /// Adds every rule of a file.
    pub fn rules(&mut self, file: RuleFile) -> &mut RuleEngineBuilder {
        self.rules.extend(file.rule);
        self
    }

    /// Adds one rule.
    pub fn rule(&mut self, rule: RuleSpec) -> &mut RuleEngineBuilder {
        self.rules.push(rule);
        self
    }

    /// Adds a classifier, asked after those added before it and before the
    /// REST fallback.
    pub fn classifier(&mut self, c: Arc<dyn RequestClassifier>) -> &mut RuleEngineBuilder {
        self.classifiers.push(c);
        self
    }

    /// Whether [`RestClassifier`] is asked last.
    pub fn rest_fallback(&mut self, fallback: RestFallback) -> &mut RuleEngineBuilder {
        self.fallback = fallback;
        self
    }

    /// Compiles the rules.
    pub fn build(&self) -> Result<RuleEngine, Error> {
        if self.rules.len() > MAX_RULES {
            return Err(ErrorKind::InvalidConfig {
                name: "rules",
                value: self.rules.len().to_string(),
                reason: "give at most 4096 rules",
            }
            .into());
        }
        let mut names = HashSet::new();
        let mut rules = Vec::with_capacity(self.rules.len());
        for spec in &self.rules {
            if !names.insert(spec.name.as_str()) {
                return Err(rule_error(
                    spec,
                    "name",
                    &spec.name,
                    "the name is used twice",
                ));
            }
            rules.push(compile(spec)?);
        }
        let mut classifiers = self.classifiers.clone();
        if self.fallback == RestFallback::Enabled {
            classifiers.push(Arc::new(RestClassifier));
        }
        Ok(RuleEngine {
            rules: rules.into(),
            classifiers: classifiers.into(),
        })
    }
}

fn rule_error(spec: &RuleSpec, field: &'static str, value: &str, reason: &'static str) -> Error {
    RulesErrorKind::InvalidRule {
        rule: truncate(&spec.name),
        field,
        value: truncate(value),
        reason,
    }
    .into()
}

fn compile(spec: &RuleSpec) -> Result<Compiled, Error> {
    if spec.name.is_empty() || spec.name.len() > 128 || spec.name.chars().any(char::is_control) {
        return Err(rule_error(
            spec,
            "name",
            &spec.name,
            "give 1 to 128 printable characters",
        ));
    }
    for (field, list) in [
        ("hosts", &spec.hosts),
        ("methods", &spec.methods),
        ("paths", &spec.paths),
        ("classes", &spec.classes),
    ] {
        if list.len() > MAX_RULE_ENTRIES {
            return Err(rule_error(spec, field, "", "give at most 256 entries"));
        }
    }
    if spec.hosts.is_empty() {
        return Err(rule_error(spec, "hosts", "", "name at least one host"));
    }
    let hosts = spec
        .hosts
        .iter()
        .map(|h| host_pattern(h))
        .collect::<Result<Vec<_>, _>>()?;
    for m in &spec.methods {
        if !is_token(m.as_bytes()) || m.bytes().any(|b| b.is_ascii_lowercase()) {
            return Err(rule_error(
                spec,
                "methods",
                m,
                "methods are case-sensitive tokens; write them in upper case",
            ));
        }
    }
    let paths = spec
        .paths
        .iter()
        .map(|p| {
            PathGlob::parse(p).map_err(|_| {
                rule_error(
                    spec,
                    "paths",
                    p,
                    "a glob starts with '/' and is visible ASCII",
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let classes = spec
        .classes
        .iter()
        .map(|c| {
            RequestClass::new(c).map_err(|_| {
                rule_error(spec, "classes", c, "use lower-case letters, digits and '-'")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Compiled {
        name: spec.name.clone(),
        verdict: spec.decision,
        hosts,
        methods: spec.methods.clone(),
        paths,
        classes,
    })
}
