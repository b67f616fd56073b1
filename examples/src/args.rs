//! The values of the shared flags, checked as they are read.

use cred_broker::{Credential, HeaderTemplate, PushRuleSpec, Secret};
use std::fmt;
use std::path::Path;

/// The longest part of a refused value a message repeats.
const ECHO_LIMIT: usize = 200;

/// Why a command-line value was refused. Its `Display` names the flag and
/// what it takes instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgError {
    /// The value does not have the form the flag takes.
    BadValue {
        /// The flag, such as `--broker-port`.
        flag: &'static str,
        /// The value as given (cut at 200 characters).
        value: String,
        /// What the flag takes, as a person would type it.
        takes: &'static str,
    },
    /// The file the flag names cannot be read or does not parse.
    BadFile {
        /// The flag, such as `--push-rule`.
        flag: &'static str,
        /// The path as given.
        path: String,
        /// What went wrong, and what the file must hold.
        reason: String,
    },
}

impl ArgError {
    pub(crate) fn bad_value(flag: &'static str, value: &str, takes: &'static str) -> ArgError {
        ArgError::BadValue {
            flag,
            value: value.chars().take(ECHO_LIMIT).collect(),
            takes,
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::BadValue { flag, value, takes } => {
                write!(f, "{flag} takes {takes}, not {value:?}")
            }
            ArgError::BadFile { flag, path, reason } => write!(f, "{flag} {path}: {reason}"),
        }
    }
}

impl std::error::Error for ArgError {}

const TEMPLATE_TAKES: &str = "bearer, token, git-basic or header:NAME \
(NAME a header name such as x-api-key, not a framing or routing header)";

/// The header template named by `value`: `bearer`, `token`, `git-basic`,
/// or `header:NAME` for the secret alone in a header of its own (an
/// API-key header such as `x-api-key`).
pub fn header_template(flag: &'static str, value: &str) -> Result<HeaderTemplate, ArgError> {
    let template = match value.strip_prefix("header:") {
        Some(name) => HeaderTemplate::Header {
            name: name.to_owned(),
        },
        None => agent_sandbox::header_template_from_name(value)
            .ok_or_else(|| ArgError::bad_value(flag, value, TEMPLATE_TAKES))?,
    };
    if !credential_accepts(&template) {
        return Err(ArgError::bad_value(flag, value, TEMPLATE_TAKES));
    }
    Ok(template)
}

/// Whether a credential may use `template`: the credential builder is what
/// checks a template (a header name must be a token and not one of the
/// headers that frame or route a request), so the check is asked of it.
fn credential_accepts(template: &HeaderTemplate) -> bool {
    let Ok(secret) = Secret::from_string("template-check".to_owned()) else {
        return false;
    };
    Credential::builder("template-check")
        .secret(secret)
        .host("example.com")
        .template(template.clone())
        .build()
        .is_ok()
}

/// An environment variable name: letters, digits and `_`, not starting
/// with a digit.
pub fn env_name(flag: &'static str, value: &str) -> Result<String, ArgError> {
    if env_guard::is_valid_name(value) {
        Ok(value.to_owned())
    } else {
        Err(ArgError::bad_value(
            flag,
            value,
            "a variable name (letters, digits and _, not starting with a digit) such as ANTHROPIC_API_KEY",
        ))
    }
}

/// A TCP port from 1 to 65535.
pub fn port(flag: &'static str, value: &str) -> Result<u16, ArgError> {
    value
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| ArgError::bad_value(flag, value, "a port number from 1 to 65535"))
}

/// The push rule in the TOML file at `path` (such as
/// `refs = ["refs/heads/agent/{session}/*"]`). Reads the host's file
/// system.
pub fn push_rule_file(flag: &'static str, path: &str) -> Result<PushRuleSpec, ArgError> {
    let bad = |reason: String| ArgError::BadFile {
        flag,
        path: path.chars().take(ECHO_LIMIT).collect(),
        reason,
    };
    let text = std::fs::read_to_string(Path::new(path)).map_err(|e| {
        bad(format!(
            "{e} (give a TOML push rule file, such as one with refs = [\"refs/heads/agent/{{session}}/*\"])"
        ))
    })?;
    toml::from_str(&text).map_err(|e| bad(format!("not a push rule: {}", e.message())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_templates_by_name_and_header_names_as_the_credential_takes_them() {
        let takes = "takes bearer, token, git-basic or header:NAME (NAME a header name such as \
                     x-api-key, not a framing or routing header)";
        let cases: &[(&str, Result<HeaderTemplate, String>)] = &[
            ("bearer", Ok(HeaderTemplate::Bearer)),
            ("token", Ok(HeaderTemplate::Token)),
            ("git-basic", Ok(HeaderTemplate::git_basic())),
            (
                "header:x-api-key",
                Ok(HeaderTemplate::Header {
                    name: "x-api-key".into(),
                }),
            ),
            (
                "header:X-Goog-Api-Key",
                Ok(HeaderTemplate::Header {
                    name: "X-Goog-Api-Key".into(),
                }),
            ),
            ("Bearer", Err(format!("--t {takes}, not \"Bearer\""))),
            ("header:", Err(format!("--t {takes}, not \"header:\""))),
            (
                "header:x api key",
                Err(format!("--t {takes}, not \"header:x api key\"")),
            ),
            (
                "header:x-api-key:",
                Err(format!("--t {takes}, not \"header:x-api-key:\"")),
            ),
            (
                "header:Host",
                Err(format!("--t {takes}, not \"header:Host\"")),
            ),
            (
                "header:content-length",
                Err(format!("--t {takes}, not \"header:content-length\"")),
            ),
            ("", Err(format!("--t {takes}, not \"\""))),
        ];
        for (value, want) in cases {
            let got = header_template("--t", value).map_err(|e| e.to_string());
            assert_eq!(&got, want, "{value:?}");
        }
    }

    #[test]
    fn variable_names_ports_and_their_refusals() {
        let takes = "takes a variable name (letters, digits and _, not starting with a digit) \
                     such as ANTHROPIC_API_KEY";
        for ok in ["ANTHROPIC_API_KEY", "_x", "a1"] {
            assert_eq!(env_name("--e", ok), Ok(ok.to_owned()));
        }
        for bad in ["", "1X", "A-B", "A B", "A=B", "é"] {
            assert_eq!(
                env_name("--e", bad).map_err(|e| e.to_string()),
                Err(format!("--e {takes}, not {bad:?}")),
            );
        }
        assert_eq!(port("--p", "8443"), Ok(8443));
        assert_eq!(port("--p", "65535"), Ok(65535));
        for bad in ["0", "65536", "-1", "", "443 ", "https"] {
            assert_eq!(
                port("--p", bad).map_err(|e| e.to_string()),
                Err(format!(
                    "--p takes a port number from 1 to 65535, not {bad:?}"
                )),
            );
        }
    }

    #[test]
    fn a_long_value_is_echoed_cut() {
        let long = "x".repeat(5000);
        let e = port("--p", &long).unwrap_err().to_string();
        assert!(e.len() < 300, "{e}");
    }

    #[test]
    fn push_rule_files_are_read_and_refused_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("push.toml");
        std::fs::write(&good, "refs = [\"refs/heads/agent/{session}/*\"]\n").unwrap();
        let good = good.display().to_string();
        push_rule_file("--push-rule", &good).unwrap();
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "refs = 3\n").unwrap();
        let bad = bad.display().to_string();
        let e = push_rule_file("--push-rule", &bad).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--push-rule {bad}: not a push rule: ")),
            "{e}"
        );
        let missing = dir.path().join("missing.toml").display().to_string();
        let e = push_rule_file("--push-rule", &missing)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("--push-rule {missing}: "))
                && e.contains("give a TOML push rule file"),
            "{e}"
        );
    }
}
