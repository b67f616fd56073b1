//! `agent-run --settings FILE`: a TOML file with one key per flag, named as
//! the flag without its dashes (`allow-cidr = ["10.0.0.0/8"]`,
//! `no-filename-rules = true`, `timeout = 30`). The file becomes flags put
//! before the command line's, so a single value given on the command line
//! replaces the file's and lists (`allow`, `mount`, ...) add up. A key that
//! is not a flag, or a value of the wrong type, is an error naming it;
//! nothing in the file is skipped.

use crate::args::ArgError;
use sandbox_core::srt::SrtPolicy;
use serde::Deserialize;
use std::path::Path;

/// Largest settings file read, in bytes.
pub const MAX_SETTINGS_BYTES: u64 = 64 * 1024;

/// A number as TOML writes it: whole or with a fraction.
#[derive(Deserialize)]
#[serde(untagged)]
enum Number {
    Whole(i64),
    Fraction(f64),
}

impl Number {
    fn text(&self) -> String {
        match self {
            Number::Whole(n) => n.to_string(),
            Number::Fraction(f) => f.to_string(),
        }
    }
}

/// A size: bytes as a number, or text with a K, M or G suffix.
#[derive(Deserialize)]
#[serde(untagged)]
enum Size {
    Bytes(u64),
    Text(String),
}

/// The keys: every flag of agent-run that a file may set.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Keys {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    no_baseline: Option<bool>,
    #[serde(default)]
    allow_cidr: Vec<String>,
    no_filename_rules: Option<bool>,
    no_name_guard: Option<bool>,
    network: Option<String>,
    mode: Option<String>,
    #[serde(default)]
    mount: Vec<String>,
    #[serde(default)]
    protect: Vec<String>,
    #[serde(default)]
    runner_state_dir: Vec<String>,
    #[serde(default)]
    read_deny: Vec<String>,
    #[serde(default)]
    allow_read_within_denies: Vec<String>,
    workdir: Option<String>,
    timeout: Option<Number>,
    memory: Option<Size>,
    pids: Option<u64>,
    cpus: Option<Number>,
    sandbox: Option<String>,
    backend: Option<String>,
    terminal: Option<bool>,
    events: Option<String>,
    audit: Option<String>,
    log_format: Option<String>,
    #[serde(default)]
    allow_unix_socket: Vec<String>,
    #[serde(default)]
    allow_root_equivalent_unix_socket: Vec<String>,
    #[serde(default)]
    broker: Vec<String>,
    broker_rules: Option<String>,
    broker_credential_env: Option<String>,
    broker_template: Option<String>,
    #[serde(default)]
    broker_phantom_env: Vec<String>,
    #[serde(default)]
    broker_port: Vec<u16>,
    broker_push_rule: Option<String>,
    #[serde(default)]
    upstream_ca: Vec<String>,
    mechanism: Option<String>,
    microvm_runtime: Option<String>,
    require_hardware_vm: Option<bool>,
    workspace: Option<String>,
    workspace_branch: Option<String>,
}

/// The flags a settings file's text stands for, in the order of the keys
/// above (each list in its own order). Flags set to `false` stand for
/// nothing (a flag cannot be unset).
pub fn settings_args(text: &str) -> Result<Vec<String>, String> {
    let k: Keys = toml::from_str(text).map_err(|e| e.message().to_owned())?;
    let mut out = Vec::new();
    let o = &mut out;
    all(o, "allow", k.allow);
    all(o, "deny", k.deny);
    all(o, "allow-cidr", k.allow_cidr);
    one(o, "network", k.network);
    one(o, "mode", k.mode);
    all(o, "mount", k.mount);
    all(o, "protect", k.protect);
    all(o, "runner-state-dir", k.runner_state_dir);
    all(o, "read-deny", k.read_deny);
    all(o, "allow-read-within-denies", k.allow_read_within_denies);
    one(o, "workdir", k.workdir);
    one(o, "timeout", k.timeout.as_ref().map(Number::text));
    one(
        o,
        "memory",
        k.memory.map(|m| match m {
            Size::Bytes(b) => b.to_string(),
            Size::Text(t) => t,
        }),
    );
    one(o, "pids", k.pids.map(|p| p.to_string()));
    one(o, "cpus", k.cpus.as_ref().map(Number::text));
    one(o, "sandbox", k.sandbox);
    one(o, "backend", k.backend);
    one(o, "events", k.events);
    one(o, "audit", k.audit);
    one(o, "log-format", k.log_format);
    all(o, "allow-unix-socket", k.allow_unix_socket);
    all(
        o,
        "allow-root-equivalent-unix-socket",
        k.allow_root_equivalent_unix_socket,
    );
    all(o, "broker", k.broker);
    one(o, "broker-rules", k.broker_rules);
    one(o, "broker-credential-env", k.broker_credential_env);
    one(o, "broker-template", k.broker_template);
    all(o, "broker-phantom-env", k.broker_phantom_env);
    all(
        o,
        "broker-port",
        k.broker_port.iter().map(u16::to_string).collect(),
    );
    one(o, "broker-push-rule", k.broker_push_rule);
    all(o, "upstream-ca", k.upstream_ca);
    one(o, "mechanism", k.mechanism);
    one(o, "microvm-runtime", k.microvm_runtime);
    one(o, "workspace", k.workspace);
    one(o, "workspace-branch", k.workspace_branch);
    let flags = [
        ("no-filename-rules", k.no_filename_rules),
        ("no-name-guard", k.no_name_guard),
        ("no-baseline", k.no_baseline),
        ("terminal", k.terminal),
        ("require-hardware-vm", k.require_hardware_vm),
    ];
    for (flag, on) in flags {
        if on == Some(true) {
            out.push(format!("--{flag}"));
        }
    }
    Ok(out)
}

/// `--FLAG=VALUE`, when there is a value.
fn one(out: &mut Vec<String>, flag: &str, value: Option<String>) {
    all(out, flag, value.into_iter().collect());
}

/// `--FLAG=VALUE` for each value, in order (one argument each, so that a
/// value starting with `-` is never read as a flag).
fn all(out: &mut Vec<String>, flag: &str, values: Vec<String>) {
    for v in values {
        out.push(format!("--{flag}={v}"));
    }
}

/// The flags a sandbox-runtime settings file (its `srt-settings.json`)
/// stands for, read with [`sandbox_core::srt::SrtPolicy`]: relative paths
/// are `workdir`'s and `~` is `home`. The baseline allow sets are left out
/// (the file lists every host it allows); the fixed deny sets still apply.
pub fn srt_settings_args(text: &str, workdir: &Path, home: &Path) -> Result<Vec<String>, String> {
    let p = SrtPolicy::parse(text, workdir, home).map_err(|e| e.to_string())?;
    let mut out = vec!["--no-baseline".to_owned()];
    let o = &mut out;
    all(o, "allow", p.allow);
    all(o, "deny", p.deny);
    if !p.network {
        one(o, "network", Some("off".into()));
    }
    all(o, "mount", p.writable);
    all(
        o,
        "mount",
        p.read_only.into_iter().map(|r| format!("{r}:ro")).collect(),
    );
    all(o, "protect", p.protect);
    all(o, "read-deny", p.read_deny);
    all(o, "allow-read-within-denies", p.read_again);
    all(o, "allow-unix-socket", p.unix_sockets);
    one(o, "workdir", Some(p.workdir));
    Ok(out)
}

/// Reads the settings file at `path` (at most [`MAX_SETTINGS_BYTES`]) into
/// the flags it stands for: our TOML, or sandbox-runtime's JSON when the
/// name ends in `.json` or the text starts with `{` (see [`srt_settings_args`], which reads its paths
/// against `workdir` and `home`).
pub fn read_settings(path: &Path, workdir: &Path, home: &Path) -> Result<Vec<String>, ArgError> {
    let bad = |reason: String| ArgError::BadFile {
        flag: "--settings",
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.len() > MAX_SETTINGS_BYTES {
        return Err(bad(format!(
            "{} bytes, over the limit of {MAX_SETTINGS_BYTES}",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let json = path.extension().is_some_and(|e| e == "json");
    if json || text.trim_start().starts_with('{') {
        return srt_settings_args(&text, workdir, home)
            .map_err(|e| bad(format!("{e} (read as sandbox-runtime settings)")));
    }
    settings_args(&text).map_err(|e| {
        bad(format!(
            "{}; a key is a flag without its dashes, such as allow-cidr or no-filename-rules",
            e.trim()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The working directory and home the sandbox-runtime files are read
    /// against.
    fn w() -> &'static Path {
        Path::new("/w")
    }
    fn h() -> &'static Path {
        Path::new("/home/u")
    }

    /// (intent, file text, the flags it stands for or a part of the error).
    type Case<'a> = (&'a str, &'a str, Result<&'a [&'a str], &'a str>);

    #[test]
    fn settings_table() {
        let cases: [Case<'_>; 12] = [
            ("nothing", "", Ok(&[])),
            (
                "lists in order, then single values",
                "allow = [\"a.test\", \"*.b.test\"]\nmode = \"review\"\n",
                Ok(&["--allow=a.test", "--allow=*.b.test", "--mode=review"]),
            ),
            (
                "switch flags only when true",
                "no-filename-rules = true\nterminal = false\n",
                Ok(&["--no-filename-rules"]),
            ),
            (
                "numbers whole or with a fraction, sizes as numbers or text",
                "timeout = 30\ncpus = 0.5\nmemory = \"512M\"\npids = 64\n",
                Ok(&["--timeout=30", "--memory=512M", "--pids=64", "--cpus=0.5"]),
            ),
            (
                "the backend's keys",
                "mechanism = \"landlock\"\nmicrovm-runtime = \"qemu\"\nrequire-hardware-vm = true\nworkspace = \"/r\"\nworkspace-branch = \"t\"\n",
                Ok(&[
                    "--mechanism=landlock",
                    "--microvm-runtime=qemu",
                    "--workspace=/r",
                    "--workspace-branch=t",
                    "--require-hardware-vm",
                ]),
            ),
            (
                "memory in bytes",
                "memory = 1048576\n",
                Ok(&["--memory=1048576"]),
            ),
            (
                "broker keys",
                "broker = [\"api.example.com\"]\nbroker-template = \"header:x-api-key\"\nbroker-port = [8443]\n",
                Ok(&[
                    "--broker=api.example.com",
                    "--broker-template=header:x-api-key",
                    "--broker-port=8443",
                ]),
            ),
            (
                "a key that is no flag",
                "allow-everything = true\n",
                Err("unknown field `allow-everything`"),
            ),
            ("a wrong type", "allow = \"a.test\"\n", Err("invalid type")),
            (
                "a value starting with a dash stays a value",
                "workdir = \"-x\"\n",
                Ok(&["--workdir=-x"]),
            ),
            ("not TOML", "allow = [\n", Err("")),
            (
                "runner state directories and read-deny globs",
                "runner-state-dir = [\"/s/agent\"]\nread-deny = [\"certs/*.pem\"]\n",
                Ok(&["--runner-state-dir=/s/agent", "--read-deny=certs/*.pem"]),
            ),
        ];
        for (intent, text, want) in cases {
            match (settings_args(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{intent}"),
                (Err(e), Err(part)) => assert!(e.contains(part), "{intent}: {e}"),
                (got, want) => panic!("{intent}: {got:?} against {want:?}"),
            }
        }
    }

    #[test]
    fn a_sandbox_runtime_file_becomes_flags_without_the_baseline() {
        let text = r#"{
            "network": {"allowedDomains": ["localhost", "*.example.com"], "deniedDomains": ["x.example.com"]},
            "filesystem": {"denyRead": ["secrets"], "allowRead": ["secrets/pub"],
                           "allowWrite": ["out"], "denyWrite": ["out/keep"]}
        }"#;
        assert_eq!(
            srt_settings_args(text, w(), h()).unwrap(),
            [
                "--no-baseline",
                "--allow=localhost",
                "--allow=*.example.com",
                "--deny=x.example.com",
                "--mount=/w/out",
                "--mount=/w:ro",
                "--protect=/w/out/keep",
                "--read-deny=/w/secrets",
                "--allow-read-within-denies=/w/secrets/pub",
                "--workdir=/w",
            ]
        );
        // What a migrating user's file says: the directory under a
        // trailing /**, and a read-deny glob.
        let text = r#"{
            "network": {"allowedDomains": [], "deniedDomains": []},
            "filesystem": {"denyRead": ["./certs/*.pem"], "allowWrite": ["./out/**"], "denyWrite": []}
        }"#;
        assert_eq!(
            srt_settings_args(text, w(), h()).unwrap(),
            [
                "--no-baseline",
                "--mount=/w/out",
                "--mount=/w:ro",
                "--read-deny=/w/certs/*.pem",
                "--workdir=/w",
            ]
        );
        let e = srt_settings_args(r#"{"network":{}}"#, w(), h()).unwrap_err();
        assert!(e.contains("missing field"), "{e}");
    }

    #[test]
    fn a_missing_or_oversized_file_names_itself() {
        let e = read_settings(Path::new("/no/such/settings.toml"), w(), h()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--settings /no/such/settings.toml: "),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.toml");
        std::fs::write(&big, "#".repeat(MAX_SETTINGS_BYTES as usize + 1)).unwrap();
        assert!(
            read_settings(&big, w(), h())
                .unwrap_err()
                .to_string()
                .contains("over the limit")
        );
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "allow-everything = true\n").unwrap();
        let e = read_settings(&bad, w(), h()).unwrap_err().to_string();
        assert!(
            e.contains("allow-everything") && e.contains("without its dashes"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
