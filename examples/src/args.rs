//! The values of the shared flags, checked as they are read.

use connect_proxy::{Cidr, Host, HostPattern};
use cred_broker::{Credential, HeaderTemplate, PushRuleSpec, Secret};
use std::ffi::OsStr;
use std::fmt;
use std::net::SocketAddr;
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
    /// The value has the flag's form but was refused, for the reason the
    /// reader gave.
    Refused {
        /// The flag, such as `--allow-cidr`.
        flag: &'static str,
        /// What the flag takes, as a person would type it.
        takes: &'static str,
        /// Why the value was refused (it names the value).
        reason: String,
    },
}

impl ArgError {
    /// A [`ArgError::BadValue`] for `value` given to `flag`, which takes
    /// `takes` (such as `"on or off"`); the value is cut at 200 characters.
    pub fn bad_value(flag: &'static str, value: &str, takes: &'static str) -> ArgError {
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
            ArgError::Refused {
                flag,
                takes,
                reason,
            } => write!(f, "{flag} takes {takes}: {reason}"),
        }
    }
}

impl std::error::Error for ArgError {}

/// A clap value parser made of a reader such as [`port`] (wrapped in a
/// closure that names the flag): the value must be UTF-8, and a refusal is
/// the reader's message alone, which names the flag and what it takes,
/// followed by the usage. (clap's own wrapping would repeat the value in
/// full before it.)
pub fn checked<T, E, F>(read: F) -> Checked<F>
where
    F: Fn(&str) -> Result<T, E> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    E: fmt::Display,
{
    Checked(read)
}

/// [`checked`] for a reader of a value that need not be UTF-8, such as
/// [`utf8_path`] or a path given to [`push_rule_path`].
pub fn checked_os<T, E, F>(read: F) -> CheckedOs<F>
where
    F: Fn(&OsStr) -> Result<T, E> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    E: fmt::Display,
{
    CheckedOs(read)
}

/// The value parser [`checked`] makes.
#[derive(Clone, Copy, Debug)]
pub struct Checked<F>(F);

/// The value parser [`checked_os`] makes.
#[derive(Clone, Copy, Debug)]
pub struct CheckedOs<F>(F);

/// A usage error of `kind` whose message is `refusal`, with the usage and
/// the pointer to `--help` after it.
fn usage_error(
    cmd: &clap::Command,
    kind: clap::error::ErrorKind,
    refusal: &dyn fmt::Display,
) -> clap::Error {
    clap::Error::raw(kind, refusal).format(&mut cmd.clone())
}

impl<T, E, F> clap::builder::TypedValueParser for Checked<F>
where
    F: Fn(&str) -> Result<T, E> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    E: fmt::Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let Some(text) = value.to_str() else {
            let flag = arg.and_then(clap::Arg::get_long).unwrap_or("value");
            let given: String = value.to_string_lossy().chars().take(ECHO_LIMIT).collect();
            let refusal = format!("--{flag} takes UTF-8 text, not {given:?}");
            return Err(usage_error(
                cmd,
                clap::error::ErrorKind::InvalidUtf8,
                &refusal,
            ));
        };
        (self.0)(text).map_err(|e| usage_error(cmd, clap::error::ErrorKind::ValueValidation, &e))
    }
}

impl<T, E, F> clap::builder::TypedValueParser for CheckedOs<F>
where
    F: Fn(&OsStr) -> Result<T, E> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
    E: fmt::Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        (self.0)(value).map_err(|e| usage_error(cmd, clap::error::ErrorKind::ValueValidation, &e))
    }
}

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
    push_rule_path(flag, Path::new(path))
}

/// [`push_rule_file`] for a path that need not be UTF-8 (a refusal shows
/// it with U+FFFD in place of what is not). Reads the host's file system.
pub fn push_rule_path(flag: &'static str, path: &Path) -> Result<PushRuleSpec, ArgError> {
    let bad = |reason: String| ArgError::BadFile {
        flag,
        path: path.to_string_lossy().chars().take(ECHO_LIMIT).collect(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad(format!(
            "{e} (give a TOML push rule file, such as one with refs = [\"refs/heads/agent/{{session}}/*\"])"
        ))
    })?;
    toml::from_str(&text).map_err(|e| bad(format!("not a push rule: {}", e.message())))
}

/// A path that is UTF-8, for a flag whose path is carried on as text (in a
/// JSON line, in a Seatbelt profile).
pub fn utf8_path(flag: &'static str, value: &OsStr) -> Result<String, ArgError> {
    value
        .to_str()
        .map(str::to_owned)
        .ok_or_else(|| ArgError::bad_value(flag, &value.to_string_lossy(), "a UTF-8 path"))
}

/// A host name or IP address, such as `api.github.com`, returned as given
/// once it parses as a configuration host.
pub fn host(flag: &'static str, value: &str) -> Result<String, ArgError> {
    Host::parse_config(value)
        .map(|_| value.to_owned())
        .map_err(|e| ArgError::Refused {
            flag,
            takes: "a host name or IP address such as api.github.com",
            reason: e.to_string(),
        })
}

/// An allowlist or denylist entry (`api.example.com`, `*.example.com`,
/// `bedrock.*.amazonaws.com`, an IP literal, each with an optional
/// `:port`), returned as given once it parses as a host pattern.
pub fn host_pattern(flag: &'static str, value: &str) -> Result<String, ArgError> {
    HostPattern::parse(value)
        .map(|_| value.to_owned())
        .map_err(|e| ArgError::Refused {
            flag,
            takes: "a host or pattern such as api.example.com, *.example.com or 10.0.0.5:8443",
            reason: e.to_string(),
        })
}

/// An address block such as `10.0.0.0/8` or `fd00::/8` (a bare address
/// is a block of one).
pub fn cidr(flag: &'static str, value: &str) -> Result<Cidr, ArgError> {
    value
        .parse()
        .map_err(|e: connect_proxy::Error| ArgError::Refused {
            flag,
            takes: "an address block such as 10.0.0.0/8 or fd00::/8",
            reason: e.to_string(),
        })
}

/// A numeric IP address and port such as `127.0.0.1:8080` or
/// `[::1]:8080` (no host names: nothing is resolved).
pub fn socket_addr(flag: &'static str, value: &str) -> Result<SocketAddr, ArgError> {
    value.parse().map_err(|_| {
        ArgError::bad_value(
            flag,
            value,
            "HOST:PORT with a numeric IP address, such as 127.0.0.1:8080 or [::1]:8080",
        )
    })
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

    #[test]
    fn hosts_patterns_blocks_and_addresses_and_their_refusals() {
        assert_eq!(host("--h", "api.github.com"), Ok("api.github.com".into()));
        assert_eq!(host("--h", "10.0.0.5"), Ok("10.0.0.5".into()));
        let e = host("--h", "https://x.example").unwrap_err().to_string();
        assert!(
            e.starts_with(
                "--h takes a host name or IP address such as api.github.com: \
                 host \"https://x.example\" is refused: "
            ),
            "{e}"
        );
        for ok in [
            "api.example.com",
            "*.example.com",
            "bedrock.*.amazonaws.com",
            "[fd00::1]:443",
        ] {
            assert_eq!(host_pattern("--a", ok), Ok(ok.to_owned()));
        }
        assert_eq!(
            host_pattern("--a", "*").map_err(|e| e.to_string()),
            Err(
                "--a takes a host or pattern such as api.example.com, *.example.com or \
                 10.0.0.5:8443: entry \"*\" is a bare '*', which would match every host"
                    .into()
            )
        );
        assert_eq!(cidr("--c", "10.0.0.0/8"), Ok("10.0.0.0/8".parse().unwrap()));
        assert_eq!(
            cidr("--c", "10.0.0.0/x").map_err(|e| e.to_string()),
            Err(
                "--c takes an address block such as 10.0.0.0/8 or fd00::/8: \
                 CIDR \"10.0.0.0/x\" is refused: the prefix length is not a number"
                    .into()
            )
        );
        assert_eq!(
            socket_addr("--s", "[::1]:8080"),
            Ok("[::1]:8080".parse().unwrap())
        );
        for bad in ["localhost:8080", "127.0.0.1", "127.0.0.1:99999", ""] {
            assert_eq!(
                socket_addr("--s", bad).map_err(|e| e.to_string()),
                Err(format!(
                    "--s takes HOST:PORT with a numeric IP address, such as 127.0.0.1:8080 \
                     or [::1]:8080, not {bad:?}"
                )),
            );
        }
    }

    #[test]
    fn a_path_carried_as_text_must_be_utf8() {
        assert_eq!(utf8_path("--p", OsStr::new("/tmp/é")), Ok("/tmp/é".into()));
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            assert_eq!(
                utf8_path("--p", OsStr::from_bytes(b"/t\xff")).map_err(|e| e.to_string()),
                Err("--p takes a UTF-8 path, not \"/t\u{fffd}\"".into())
            );
        }
    }

    fn with_flag<P>(parser: P) -> clap::Command
    where
        P: clap::builder::TypedValueParser + Send + Sync + 'static,
        P::Value: Clone + Send + Sync + 'static,
    {
        clap::Command::new("t").arg(clap::Arg::new("f").long("f").value_parser(parser))
    }

    #[test]
    fn a_checked_value_is_read_and_refused_with_the_readers_message_alone() {
        let cmd = with_flag(checked(|v| port("--f", v)));
        let m = cmd.clone().try_get_matches_from(["t", "--f=8443"]).unwrap();
        assert_eq!(m.get_one::<u16>("f"), Some(&8443));
        let e = cmd
            .clone()
            .try_get_matches_from(["t", "--f", "0"])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        assert_eq!(
            e.to_string(),
            "error: --f takes a port number from 1 to 65535, not \"0\"\n\n\
             Usage: t [OPTIONS]\n\nFor more information, try '--help'.\n"
        );
        // The value is not repeated in full before the message.
        let long = "9".repeat(5000);
        let e = cmd.try_get_matches_from(["t", "--f", &long]).unwrap_err();
        assert!(e.to_string().len() < 400, "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_refused_by_flag_or_read_as_it_is() {
        use std::os::unix::ffi::OsStrExt;
        let odd = OsStr::from_bytes(b"/t\xff");
        let e = with_flag(checked(|v| host("--f", v)))
            .try_get_matches_from([OsStr::new("t"), OsStr::new("--f"), odd])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::InvalidUtf8);
        assert!(
            e.to_string()
                .starts_with("error: --f takes UTF-8 text, not \"/t\u{fffd}\"\n"),
            "{e}"
        );
        let m = with_flag(checked_os(|p: &OsStr| Ok::<_, ArgError>(p.to_owned())))
            .try_get_matches_from([OsStr::new("t"), OsStr::new("--f"), odd])
            .unwrap();
        assert_eq!(
            m.get_one::<std::ffi::OsString>("f").map(|p| p.as_os_str()),
            Some(odd)
        );
        let e = with_flag(checked_os(|p| utf8_path("--f", p)))
            .try_get_matches_from([OsStr::new("t"), OsStr::new("--f"), odd])
            .unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation);
        assert!(
            e.to_string()
                .starts_with("error: --f takes a UTF-8 path, not \"/t\u{fffd}\"\n"),
            "{e}"
        );
    }
}
