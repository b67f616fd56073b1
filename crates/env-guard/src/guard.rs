//! `EnvGuard`: the compiled pipeline, and its output `Sanitized`.

use crate::lists::{CA_NAMES, always_deleted, is_ca_managed, is_core, is_proxy_managed};
use crate::name::{is_secret_name, valid_name};
use crate::proxy::proxy_vars;
use crate::value::{is_checked, value_is_safe};
use crate::{EnvGuardBuilder, Inherit, NoProxy, ProxyAuth, ProxyEnv, Rule, SshProxyTool};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::process::Command;

/// Longest value accepted, in bytes (Linux's limit for one argument or
/// environment string).
pub const MAX_VALUE_LEN: usize = 131_072;

/// A compiled environment pipeline. Build it once with
/// [`EnvGuard::builder`], then [`apply`](EnvGuard::apply) it to as many
/// inputs as needed.
#[derive(Clone, Debug)]
pub struct EnvGuard {
    pub(crate) inherit: Inherit,
    pub(crate) set: Vec<(String, OsString)>,
    pub(crate) include: Vec<String>,
    pub(crate) proxy: Option<ProxyEnv>,
    pub(crate) proxy_auth: Option<ProxyAuth>,
    pub(crate) no_proxy: NoProxy,
    pub(crate) ssh: SshProxyTool,
    pub(crate) ca_bundle: Option<OsString>,
}

/// One dropped variable: its name and the rule that dropped it. The value
/// is never kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    /// The name exactly as it came in (possibly not UTF-8).
    pub name: OsString,
    /// The first rule, in pipeline order, that dropped it.
    pub rule: Rule,
}

/// The output of [`EnvGuard::apply`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sanitized {
    /// The variables to give the process, sorted by name, names unique.
    pub vars: Vec<(OsString, OsString)>,
    /// Every input variable that was not passed on, in input order, then
    /// those replaced by `set`, the proxy stage and the CA stage.
    pub dropped: Vec<Dropped>,
}

impl Sanitized {
    /// The value of `name`, if kept.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_os_str())
    }

    /// The rule that dropped `name`, if it was dropped.
    pub fn dropped_by(&self, name: &str) -> Option<Rule> {
        self.dropped.iter().find(|d| d.name == name).map(|d| d.rule)
    }

    /// Clears `command`'s environment and gives it exactly these variables.
    pub fn apply_to<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .env_clear()
            .envs(self.vars.iter().map(|(n, v)| (n, v)))
    }
}

impl EnvGuard {
    /// A builder with every setting at its default: [`Inherit::Core`], no
    /// `set`/`include`, no proxy, no CA bundle.
    pub fn builder() -> EnvGuardBuilder {
        EnvGuardBuilder::default()
    }

    /// Runs the pipeline over `vars`. Never fails and never panics: every
    /// variable is either passed on or reported in [`Sanitized::dropped`].
    ///
    /// Stages, in order: inherit, always deleted, secrets, checked values,
    /// explicit `set` and `include`, proxy variables, CA trust variables.
    pub fn apply<I, K, V>(&self, vars: I) -> Sanitized
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        let input: Vec<(OsString, OsString)> = vars
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let mut counts: HashMap<&OsStr, usize> = HashMap::new();
        for (name, _) in &input {
            *counts.entry(name.as_os_str()).or_default() += 1;
        }
        let mut kept: Vec<(String, OsString)> = Vec::new();
        let mut dropped = Vec::new();
        for (name, value) in &input {
            let duplicate = counts.get(name.as_os_str()).is_some_and(|c| *c > 1);
            match self.judge(name, value, duplicate) {
                Ok(valid) => kept.push((valid.to_owned(), value.clone())),
                Err(rule) => dropped.push(Dropped {
                    name: name.clone(),
                    rule,
                }),
            }
        }
        // Stage 5: explicit `set` (`include` acted in stages 1 and 3).
        for (name, value) in &self.set {
            replace(&mut kept, &mut dropped, |n| n == name, Rule::ReplacedBySet);
            kept.push((name.clone(), value.clone()));
        }
        // Stage 6: proxy variables.
        if let Some(proxy) = &self.proxy {
            replace(
                &mut kept,
                &mut dropped,
                is_proxy_managed,
                Rule::ReplacedByProxy,
            );
            for (name, value) in
                proxy_vars(proxy, self.proxy_auth.as_ref(), self.no_proxy, self.ssh)
            {
                kept.push((name.to_owned(), value));
            }
        }
        // Stage 7: CA trust variables.
        if let Some(bundle) = &self.ca_bundle {
            replace(&mut kept, &mut dropped, is_ca_managed, Rule::ReplacedByCa);
            for name in CA_NAMES {
                kept.push(((*name).to_owned(), bundle.clone()));
            }
        }
        kept.sort_by(|a, b| a.0.cmp(&b.0));
        Sanitized {
            vars: kept
                .into_iter()
                .map(|(n, v)| (OsString::from(n), v))
                .collect(),
            dropped,
        }
    }

    /// Runs the pipeline over the current process environment. This reads
    /// ambient authority; tests pass maps to [`apply`](Self::apply).
    pub fn apply_from_ambient(&self) -> Sanitized {
        self.apply(std::env::vars_os())
    }

    /// Stages 1 to 4 for one input variable: the valid name, or the rule
    /// that drops it.
    fn judge<'n>(&self, name: &'n OsStr, value: &OsStr, duplicate: bool) -> Result<&'n str, Rule> {
        let valid = valid_name(name);
        let included = valid.is_some_and(|n| self.include.iter().any(|i| i == n));
        // Stage 1: inherit.
        let inherited = match self.inherit {
            Inherit::All => true,
            Inherit::Core => valid.is_some_and(is_core),
            Inherit::None => false,
        };
        if !inherited && !included {
            return Err(Rule::NotInherited);
        }
        // Stage 2: always deleted. Bash exports functions as
        // `BASH_FUNC_name%%`, which is not a valid name; say what it is.
        if name.as_encoded_bytes().starts_with(b"BASH_FUNC_") {
            return Err(Rule::ShellFunction);
        }
        let Some(name) = valid else {
            return Err(Rule::InvalidName);
        };
        if duplicate {
            return Err(Rule::Duplicate);
        }
        let bytes = value.as_encoded_bytes();
        if bytes.contains(&0) || bytes.len() > MAX_VALUE_LEN {
            return Err(Rule::InvalidValue);
        }
        if let Some(rule) = always_deleted(name) {
            return Err(rule);
        }
        if bytes.starts_with(b"() {") {
            return Err(Rule::ShellFunction);
        }
        // Stage 3: secrets.
        if !included && is_secret_name(name) {
            return Err(Rule::Secret);
        }
        // Stage 4: checked values.
        if is_checked(name) && !value_is_safe(name, value) {
            return Err(Rule::UnsafeValue);
        }
        Ok(name)
    }
}

/// Moves every kept variable whose name matches into `dropped` with `rule`.
fn replace(
    kept: &mut Vec<(String, OsString)>,
    dropped: &mut Vec<Dropped>,
    matches: impl Fn(&str) -> bool,
    rule: Rule,
) {
    kept.retain(|(name, _)| {
        if matches(name) {
            dropped.push(Dropped {
                name: OsString::from(name),
                rule,
            });
            false
        } else {
            true
        }
    });
}
