//! sandbox-runtime's settings (its `srt-settings.json`) read as a policy of
//! ours: [`SrtPolicy::parse`]. Every key the file may hold is either
//! honoured with the same meaning or refused with an error naming it and
//! why ([`SrtError`]); nothing is dropped or made looser. Where our policy
//! is stricter than sandbox-runtime's (reads only of the mounts and system
//! paths, the fixed secret and write-deny sets, filename rules at
//! creation, no unknown keys), the README's table lists it.
//!
//! Paths: `~` and `~/...` are the home, a relative path is the working
//! directory's, `.` components go, and a trailing `/**` is the directory
//! itself (as sandbox-runtime reads it). Globs (`*` and `?` within one
//! name) are taken in `denyWrite` and `denyRead`; a `denyRead` glob may
//! also hold one `**` component for any number of directories
//! (`**/*.pem`); it hides the matches that exist at launch and the name
//! guard refuses creating new ones (see [`crate::glob`]). The other lists
//! take literal paths; `**` elsewhere and `[...]` are refused.
//!
//! # Input safety
//!
//! At most [`MAX_SRT_SETTINGS_BYTES`] of JSON, nested at most as deep as
//! `serde_json` allows (128), each list at most [`MAX_SRT_LIST`] entries;
//! never panics on any input (a fuzz target and properties check it).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Largest settings text read, in bytes.
pub const MAX_SRT_SETTINGS_BYTES: usize = 64 * 1024;

/// Most entries of one list.
pub const MAX_SRT_LIST: usize = 1024;

/// A sandbox-runtime settings file as our policy: what to allow, deny,
/// mount and hide. Every path is absolute.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SrtPolicy {
    /// Allowlist entries (our grammar; the baseline sets are not added).
    pub allow: Vec<String>,
    /// Deny entries, which beat the allow entries.
    pub deny: Vec<String>,
    /// `false` when `deniedDomains` holds `*`: no network at all.
    pub network: bool,
    /// Writable mounts (`allowWrite`).
    pub writable: Vec<String>,
    /// The working directory, mounted read-only unless a writable mount
    /// holds it (sandbox-runtime reads it; so do we).
    pub read_only: Vec<String>,
    /// Unwritable paths inside the writable mounts (`denyWrite`; globs
    /// allowed).
    pub protect: Vec<String>,
    /// Hidden from reading (`denyRead`): paths, or globs whose existing
    /// matches are hidden and whose new matches cannot be created.
    pub read_deny: Vec<String>,
    /// Read again inside those (`allowRead` entries under a `denyRead`
    /// path; the others are readable already).
    pub read_again: Vec<String>,
    /// Unix sockets the command may connect to (`allowUnixSockets`).
    pub unix_sockets: Vec<String>,
    /// The working directory the paths were resolved against.
    pub workdir: String,
}

/// Why a settings file was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SrtError {
    /// Over [`MAX_SRT_SETTINGS_BYTES`].
    #[error("the settings are {bytes} bytes, over the limit of {limit}")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// Empty, as sandbox-runtime refuses it too.
    #[error("the settings file is empty; delete it or put a config in it")]
    Empty,
    /// Not JSON, a key that is not sandbox-runtime's, or a value of the
    /// wrong type.
    #[error("not a sandbox-runtime settings file: {0}")]
    Invalid(String),
    /// A key is honoured by no policy of ours with the same meaning.
    #[error("{key}: {why}")]
    Refused {
        /// The key, as `network.httpProxyPort`.
        key: &'static str,
        /// Why, and what to do instead.
        why: &'static str,
    },
    /// One entry of a list cannot be honoured.
    #[error("{key}: {entry:?}: {why}")]
    BadEntry {
        /// The key, as `filesystem.allowWrite`.
        key: &'static str,
        /// The entry (cut at 200 characters).
        entry: String,
        /// Why.
        why: &'static str,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    network: Network,
    filesystem: Filesystem,
    credentials: Option<serde_json::Value>,
    ignore_violations: Option<BTreeMap<String, Vec<String>>>,
    enable_weaker_nested_sandbox: Option<bool>,
    enable_weaker_network_isolation: Option<bool>,
    allow_apple_events: Option<bool>,
    ripgrep: Option<Ripgrep>,
    mandatory_deny_search_depth: Option<u8>,
    allow_pty: Option<bool>,
    seccomp: Option<serde_json::Value>,
    bwrap_path: Option<serde_json::Value>,
    socat_path: Option<serde_json::Value>,
    java_agent_jar_path: Option<serde_json::Value>,
    windows: Option<serde_json::Value>,
    git: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Ripgrep {
    #[serde(rename = "command")]
    _command: String,
    #[serde(default, rename = "args")]
    _args: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Network {
    allowed_domains: Vec<String>,
    denied_domains: Vec<String>,
    denied_domain_reasons: Option<BTreeMap<String, String>>,
    strict_allowlist: Option<bool>,
    denied_resolved_addresses: Option<Vec<String>>,
    allow_unix_sockets: Option<Vec<String>>,
    allow_all_unix_sockets: Option<bool>,
    allow_local_binding: Option<bool>,
    allow_mach_lookup: Option<Vec<String>>,
    http_proxy_port: Option<serde_json::Value>,
    socks_proxy_port: Option<serde_json::Value>,
    mitm_proxy: Option<serde_json::Value>,
    filter_request: Option<serde_json::Value>,
    tls_terminate: Option<serde_json::Value>,
    parent_proxy: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Filesystem {
    disabled: Option<bool>,
    deny_read: Vec<String>,
    allow_read: Option<Vec<String>>,
    allow_write: Vec<String>,
    deny_write: Vec<String>,
    allow_git_config: Option<bool>,
}

fn refused(key: &'static str, why: &'static str) -> SrtError {
    SrtError::Refused { key, why }
}

fn bad(key: &'static str, entry: &str, why: &'static str) -> SrtError {
    SrtError::BadEntry {
        key,
        entry: entry.chars().take(200).collect(),
        why,
    }
}

impl SrtPolicy {
    /// Reads `text` (a settings file's contents) with relative paths taken
    /// against `workdir` and `~` against `home` (both absolute).
    pub fn parse(text: &str, workdir: &Path, home: &Path) -> Result<SrtPolicy, SrtError> {
        if text.len() > MAX_SRT_SETTINGS_BYTES {
            return Err(SrtError::TooLarge {
                bytes: text.len(),
                limit: MAX_SRT_SETTINGS_BYTES,
            });
        }
        if text.trim().is_empty() {
            return Err(SrtError::Empty);
        }
        let f: File = serde_json::from_str(text).map_err(|e| SrtError::Invalid(e.to_string()))?;
        refuse_the_unhonoured(&f)?;
        let paths = Paths { workdir, home };
        let mut p = SrtPolicy {
            network: true,
            workdir: paths.clean(workdir),
            ..SrtPolicy::default()
        };
        network(&f.network, &mut p, &paths)?;
        filesystem(&f.filesystem, &mut p, &paths)?;
        Ok(p)
    }
}

/// The keys we cannot honour with the same meaning, refused when set to
/// anything that would change what runs.
fn refuse_the_unhonoured(f: &File) -> Result<(), SrtError> {
    let n = &f.network;
    let checks: [(bool, &'static str, &'static str); 20] = [
        (
            f.credentials.is_some(),
            "credentials",
            "credentials are lent through the broker here: use --broker HOST with \
             --broker-credential-env NAME",
        ),
        (
            f.ignore_violations.as_ref().is_some_and(|m| !m.is_empty()),
            "ignoreViolations",
            "every violation is reported here; filter them where you read the events",
        ),
        (
            f.enable_weaker_nested_sandbox == Some(true),
            "enableWeakerNestedSandbox",
            "a weaker sandbox is never chosen by a setting",
        ),
        (
            f.enable_weaker_network_isolation == Some(true),
            "enableWeakerNetworkIsolation",
            "a weaker network isolation is never chosen by a setting",
        ),
        (
            f.allow_apple_events == Some(true),
            "allowAppleEvents",
            "Apple events are not granted by this policy",
        ),
        (
            f.mandatory_deny_search_depth
                .is_some_and(|d| !(1..=10).contains(&d)),
            "mandatoryDenySearchDepth",
            "takes a whole number from 1 to 10 (the filename rules here hold at any depth)",
        ),
        (
            f.seccomp.is_some(),
            "seccomp",
            "the system call filters here are built in, not loaded from files",
        ),
        (
            f.bwrap_path.is_some(),
            "bwrapPath",
            "bubblewrap is found on PATH; put the one to use first there",
        ),
        (
            f.socat_path.is_some(),
            "socatPath",
            "socat is found on PATH; put the one to use first there",
        ),
        (
            f.java_agent_jar_path.is_some(),
            "javaAgentJarPath",
            "no Java agent is injected here",
        ),
        (
            f.windows.is_some(),
            "windows",
            "the Windows settings are not supported",
        ),
        (
            f.git.is_some(),
            "git",
            "git configuration is not injected through the sandbox's environment",
        ),
        (
            n.denied_domain_reasons
                .as_ref()
                .is_some_and(|m| !m.is_empty()),
            "network.deniedDomainReasons",
            "refusals are reported as violation events, without custom reasons",
        ),
        (
            n.denied_resolved_addresses
                .as_ref()
                .is_some_and(|v| !v.is_empty()),
            "network.deniedResolvedAddresses",
            "loopback, private and link-local addresses are refused already; other ranges \
             cannot be listed",
        ),
        (
            n.allow_all_unix_sockets == Some(true),
            "network.allowAllUnixSockets",
            "Unix sockets are granted one by one: list them in allowUnixSockets",
        ),
        (
            n.allow_mach_lookup.as_ref().is_some_and(|v| !v.is_empty()),
            "network.allowMachLookup",
            "Mach services are not granted by this policy",
        ),
        (
            n.http_proxy_port.is_some() || n.socks_proxy_port.is_some(),
            "network.httpProxyPort/socksProxyPort",
            "the session's own proxies enforce the allowlist; an outside proxy is not used",
        ),
        (
            n.mitm_proxy.is_some() || n.parent_proxy.is_some(),
            "network.mitmProxy/parentProxy",
            "traffic is not routed through another proxy",
        ),
        (
            n.filter_request.is_some() || n.tls_terminate.is_some(),
            "network.filterRequest/tlsTerminate",
            "requests are inspected by the credential broker only, for brokered hosts",
        ),
        (
            f.filesystem.disabled == Some(true) || f.filesystem.allow_git_config == Some(true),
            "filesystem.disabled/allowGitConfig",
            "the file policy is never switched off, and .git/config stays unwritable (a new \
             remote or hooks path would run code on the host)",
        ),
    ];
    for (set, key, why) in checks {
        if set {
            return Err(refused(key, why));
        }
    }
    // Honoured as they are: strictAllowlist (nothing is ever asked),
    // allowLocalBinding (binding happens in the sandbox's own network),
    // allowPty (terminals are the sandbox's own), ripgrep (no scan is
    // needed: the filename rules hold at creation).
    let _ = (
        n.strict_allowlist,
        n.allow_local_binding,
        f.allow_pty,
        &f.ripgrep,
    );
    Ok(())
}

fn limit<'a>(key: &'static str, list: &'a [String]) -> Result<&'a [String], SrtError> {
    if list.len() > MAX_SRT_LIST {
        return Err(refused(key, "over 1024 entries"));
    }
    Ok(list)
}

fn network(n: &Network, p: &mut SrtPolicy, paths: &Paths<'_>) -> Result<(), SrtError> {
    for e in limit("network.allowedDomains", &n.allowed_domains)? {
        // `localhost` and loopback or private literals stay entries; our IP
        // policy still refuses those addresses unless a range is granted
        // (as sandbox-runtime's own run does not reach them either).
        domain(e, "network.allowedDomains", false)?;
        p.allow.push(e.clone());
    }
    for e in limit("network.deniedDomains", &n.denied_domains)? {
        if e == "*" {
            p.network = false;
            continue;
        }
        domain(e, "network.deniedDomains", true)?;
        p.deny.push(e.clone());
    }
    for s in limit(
        "network.allowUnixSockets",
        n.allow_unix_sockets.as_deref().unwrap_or_default(),
    )? {
        p.unix_sockets
            .push(paths.literal("network.allowUnixSockets", s)?);
    }
    Ok(())
}

/// Checks one domain entry against sandbox-runtime's grammar (a name with
/// a dot, `localhost`, `*.` and at least two labels, a bracketed IPv6
/// literal, an optional `:port`) and gives its host part.
fn domain<'e>(e: &'e str, key: &'static str, denied: bool) -> Result<&'e str, SrtError> {
    let why = "not a domain of sandbox-runtime's grammar (example.com, *.example.com, \
               localhost or [::1], with an optional :port)";
    let (host, port) = match e.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, tail)) => (&e[..v6.len() + 2], tail.strip_prefix(':')),
            None => return Err(bad(key, e, why)),
        },
        None => match e.split_once(':') {
            Some((h, port)) => (h, Some(port)),
            None => (e, None),
        },
    };
    if let Some(port) = port
        && port.parse::<u16>().ok().filter(|p| *p != 0).is_none()
    {
        return Err(bad(key, e, why));
    }
    if host.starts_with('[') {
        let ok = host
            .trim_matches(['[', ']'])
            .parse::<std::net::Ipv6Addr>()
            .is_ok();
        return if ok { Ok(host) } else { Err(bad(key, e, why)) };
    }
    if host == "*" && denied {
        return Err(bad(
            key,
            e,
            "a deny of every host on one port is not supported; deny the hosts one by one",
        ));
    }
    let name = host.strip_prefix("*.").unwrap_or(host);
    if name.contains('*') {
        return Err(bad(
            key,
            e,
            "only a leading *. is a wildcard in sandbox-runtime's grammar",
        ));
    }
    // A name with a dot (after `*.`, at least two labels: `*.com` is too
    // broad), or localhost.
    let labels: Vec<&str> = name.split('.').collect();
    let ok = host == "localhost"
        || (labels.len() >= 2 && labels.iter().all(|l| !l.is_empty()) && !name.contains('/'));
    if ok { Ok(host) } else { Err(bad(key, e, why)) }
}

fn filesystem(f: &Filesystem, p: &mut SrtPolicy, paths: &Paths<'_>) -> Result<(), SrtError> {
    for w in limit("filesystem.allowWrite", &f.allow_write)? {
        p.writable.push(paths.literal("filesystem.allowWrite", w)?);
    }
    if !p.writable.iter().any(|w| is_under(&p.workdir, w)) {
        p.read_only.push(p.workdir.clone());
    }
    for d in limit("filesystem.denyWrite", &f.deny_write)? {
        let d = paths.resolve("filesystem.denyWrite", d)?;
        // Outside every writable mount a path is unwritable already.
        if p.writable.iter().any(|w| is_under(&d, w)) {
            p.protect.push(d);
        }
    }
    for d in limit("filesystem.denyRead", &f.deny_read)? {
        p.read_deny.push(paths.read_glob("filesystem.denyRead", d)?);
    }
    for r in limit(
        "filesystem.allowRead",
        f.allow_read.as_deref().unwrap_or_default(),
    )? {
        let r = paths.literal("filesystem.allowRead", r)?;
        if p.read_deny
            .iter()
            .any(|d| crate::is_glob(d) && crate::glob::within_glob_match(&r, d))
        {
            return Err(bad(
                "filesystem.allowRead",
                &r,
                "lies inside a match of a denyRead glob, which cannot be read again; narrow \
                 the glob instead",
            ));
        }
        // allowRead takes precedence inside denyRead; elsewhere the path is
        // as readable as it was.
        if p.read_deny.iter().any(|d| is_under(&r, d)) {
            p.read_again.push(r);
        }
    }
    Ok(())
}

/// `entry` without a trailing `/**` (any number of them): sandbox-runtime
/// reads `dir/**` as `dir`, everything below it. A lone `**` is the working
/// directory.
fn directory_itself(entry: &str) -> &str {
    let mut e = entry;
    while let Some(dir) = e.strip_suffix("/**") {
        e = if dir.is_empty() { "/" } else { dir };
    }
    if e == "**" { "." } else { e }
}

fn is_under(p: &str, root: &str) -> bool {
    Path::new(p).starts_with(root)
}

/// How relative and `~` paths are read.
struct Paths<'a> {
    workdir: &'a Path,
    home: &'a Path,
}

impl Paths<'_> {
    /// A literal path (globs refused), absolute.
    fn literal(&self, key: &'static str, entry: &str) -> Result<String, SrtError> {
        let entry = directory_itself(entry);
        if crate::is_glob(entry) || entry.contains('[') {
            return Err(bad(
                key,
                entry,
                "a glob is not supported here (as in sandbox-runtime on Linux); list the \
                 paths themselves",
            ));
        }
        self.resolve(key, entry)
    }

    /// A path or a read-deny glob (`*` and `?` within one name), absolute.
    fn read_glob(&self, key: &'static str, entry: &str) -> Result<String, SrtError> {
        let entry = directory_itself(entry);
        if !crate::is_glob(entry) && !entry.contains('[') {
            return self.resolve(key, entry);
        }
        let glob = self.resolve(key, entry)?;
        crate::glob::check_read_glob(&glob).map_err(|e| match e.into_kind() {
            crate::ErrorKind::BadGlob { reason, .. } => bad(key, entry, reason),
            _ => bad(key, entry, "not a glob that can be honoured"),
        })?;
        Ok(glob)
    }

    /// Any path, absolute.
    fn resolve(&self, key: &'static str, entry: &str) -> Result<String, SrtError> {
        let entry = directory_itself(entry);
        if entry.is_empty() || entry.contains('\0') {
            return Err(bad(key, entry, "an empty path, or one with a NUL byte"));
        }
        let joined = if entry == "~" {
            self.home.to_path_buf()
        } else if let Some(rest) = entry.strip_prefix("~/") {
            self.home.join(rest)
        } else if entry.starts_with('~') {
            return Err(bad(key, entry, "~user is not supported; write the path"));
        } else {
            self.workdir.join(entry)
        };
        Ok(self.clean(&joined))
    }

    /// `p` without `.` components, `..` taken back lexically, no trailing
    /// slash.
    fn clean(&self, p: &Path) -> String {
        let mut out = PathBuf::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop();
                }
                other => out.push(other.as_os_str()),
            }
        }
        out.display().to_string()
    }
}
