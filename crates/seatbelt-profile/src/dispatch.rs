//! The dispatch profile (R-SEATBELT-1..7): what an agent run gets.

use crate::error::{Error, ErrorKind};
use crate::model::{Action, Filter, Operation, Profile, RemoteHost, RemotePort, Rule};
use crate::policy::{
    ancestors, deny_filters, device_filters, literal_filters, names_below, resolve_dirs,
    subpath_filters,
};
use crate::target_host::MacTarget;
use sandbox_core::defaults::{
    DANGEROUS_BINARIES, FILENAME_GLOB_DENY, MANDATORY_WRITE_DENY, mandatory_write_deny_paths,
    secret_read_deny_entries,
};
use sandbox_core::{Access, HostView, Mode, PathSet, SandboxSpec};
use std::path::Path;

/// The Unix socket through which macOS resolves names.
pub const DNS_SOCKET: &str = "/private/var/run/mDNSResponder";

/// Builds the dispatch profile for one run.
///
/// Rule order (Seatbelt takes the last matching rule):
///
/// 1. `(allow default)`;
/// 2. `file-read*` denied for every secret, both spellings;
/// 3. `(deny file-write*)`, then allows for the writable directories (chat
///    mode's writable bind mounts and workdir; runner state dirs and the
///    session's temp dirs in every mode) and the device files a shell uses;
/// 4. `file-write*` denied for the secrets, the mandatory write-deny set
///    (anchored at home and at each writable directory, and at any depth
///    below a writable directory), the filename globs (`.env`, `*.key`,
///    `*.pem`) below each writable directory, the protected paths, and,
///    at any depth below a writable directory, the path itself of each
///    directory holding a mandatory name (`.git` of `.git/hooks`: it can
///    be neither moved aside nor, as a linked worktree's `.git` file,
///    rewritten to point git at other hooks);
/// 5. `file-write-unlink` and `file-write-create` denied on every ancestor
///    of a denied path, so no rename of a parent moves a rule's target away;
/// 6. `process-exec*` denied below writable directories, reopened below
///    `exec_grant_roots`, and denied for the dangerous binaries;
/// 7. `network-outbound` denied except to the two proxy ports on localhost
///    and the DNS socket.
///
/// Every path is emitted as written and as its symlinks resolve on `host`.
/// A denied entry (steps 2 and 4) is a `literal` where `host` shows a
/// regular file, a `subpath` where it shows a directory, and a `regex`
/// where it is a glob. An entry that does not exist stays a `subpath`, so
/// the rule still holds if the name is later created as a directory; so
/// does every entry whose file type the host view cannot confirm (a failed
/// or timed-out lookup). The ancestor rules of step 5 are `literal` whatever the entry:
/// they deny deleting or replacing the ancestor itself, not the files
/// below it. The regexes anchored at a writable directory repeat its path,
/// so a writable directory longer than about 650 bytes is a
/// [`StringTooLong`](crate::ErrorKind::StringTooLong) error.
///
/// ```
/// use sandbox_core::{FakeHost, Os, SandboxSpec};
/// use seatbelt_profile::DispatchProfileBuilder;
/// let spec = SandboxSpec::new("s1", "w1");
/// let mut b = DispatchProfileBuilder::new(&spec);
/// b.home("/Users/dev").http_proxy_port(8080).socks_proxy_port(1080);
/// let profile = b.build(&FakeHost::new(Os::MacOs)).unwrap();
/// assert!(profile.render().unwrap().text().starts_with("(version 1)\n"));
/// ```
#[derive(Clone, Debug)]
pub struct DispatchProfileBuilder {
    spec: SandboxSpec,
    home: Option<String>,
    http_port: Option<u16>,
    socks_port: Option<u16>,
    temp_dirs: Vec<String>,
    dns_socket: String,
    unix_sockets: Vec<String>,
    read_deny: Vec<String>,
    read_again: Vec<String>,
}

impl DispatchProfileBuilder {
    /// A builder for `spec`; home and both proxy ports must still be set.
    pub fn new(spec: &SandboxSpec) -> DispatchProfileBuilder {
        DispatchProfileBuilder {
            spec: spec.clone(),
            home: None,
            http_port: None,
            socks_port: None,
            temp_dirs: Vec::new(),
            dns_socket: DNS_SOCKET.to_owned(),
            unix_sockets: Vec::new(),
            read_deny: Vec::new(),
            read_again: Vec::new(),
        }
    }

    /// The run's home directory (anchors `~` and the home deny sets).
    pub fn home(&mut self, home: impl Into<String>) -> &mut DispatchProfileBuilder {
        self.home = Some(home.into());
        self
    }

    /// The session's HTTP proxy port on 127.0.0.1.
    pub fn http_proxy_port(&mut self, port: u16) -> &mut DispatchProfileBuilder {
        self.http_port = Some(port);
        self
    }

    /// The session's SOCKS5 proxy port on 127.0.0.1.
    pub fn socks_proxy_port(&mut self, port: u16) -> &mut DispatchProfileBuilder {
        self.socks_port = Some(port);
        self
    }

    /// Adds a session temp directory, writable in every mode.
    pub fn temp_dir(&mut self, dir: impl Into<String>) -> &mut DispatchProfileBuilder {
        self.temp_dirs.push(dir.into());
        self
    }

    /// Replaces the DNS socket path ([`DNS_SOCKET`] by default).
    pub fn dns_socket(&mut self, path: impl Into<String>) -> &mut DispatchProfileBuilder {
        self.dns_socket = path.into();
        self
    }

    /// Allows connecting to the Unix socket at exactly `path` (a grant of
    /// the host program's; which sockets are safe to grant is its
    /// decision).
    pub fn allow_unix_socket(&mut self, path: impl Into<String>) -> &mut DispatchProfileBuilder {
        self.unix_sockets.push(path.into());
        self
    }

    /// The directories writable under this spec's mode, as given.
    pub fn writable_dirs(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .spec
            .mount_accesses()
            .filter(|(_, a)| *a == Access::ReadWrite)
            .map(|(m, _)| m.host_path.clone())
            .collect();
        if self.spec.mode == Mode::Chat
            && let Some(w) = &self.spec.guest_workdir
        {
            out.push(w.clone());
        }
        out.extend(self.spec.runner_state_dirs.iter().cloned());
        out.extend(self.temp_dirs.iter().cloned());
        out
    }

    /// Hides `path` (a literal path, `~` allowed; a glob is refused at
    /// build) from reading, besides the curated secret set.
    pub fn read_deny(&mut self, path: impl Into<String>) -> &mut DispatchProfileBuilder {
        self.read_deny.push(path.into());
        self
    }

    /// Makes `path`, inside a [`DispatchProfileBuilder::read_deny`] path,
    /// readable again. One reaching into the secret set (inside a secret,
    /// or around a secret pattern) is refused at build; the secrets are
    /// denied again after it besides.
    pub fn allow_read_within_denies(
        &mut self,
        path: impl Into<String>,
    ) -> &mut DispatchProfileBuilder {
        self.read_again.push(path.into());
        self
    }

    /// The extra read denies and the paths read again, resolved: literal
    /// paths only, and nothing read again inside the secret set.
    fn extra_reads<H: HostView + ?Sized>(
        &self,
        secrets: &PathSet,
        home: &Path,
        host: &H,
    ) -> Result<(PathSet, PathSet), Error> {
        for p in self.read_deny.iter().chain(&self.read_again) {
            if sandbox_core::is_glob(p) {
                return Err(ErrorKind::InvalidPath {
                    path: p.clone(),
                    reason: "an extra read deny or a path read again is a path, not a glob",
                }
                .into());
            }
        }
        let denied = resolve_dirs(&self.read_deny, home, host)?;
        let again = resolve_dirs(&self.read_again, home, host)?;
        let secret_spellings = secrets.spellings();
        for r in again.spellings() {
            if sandbox_core::reaches_into(&r, &secret_spellings) {
                return Err(ErrorKind::InvalidPath {
                    path: r,
                    reason: "a path read again cannot reach into the fixed secret set",
                }
                .into());
            }
        }
        Ok((denied, again))
    }

    /// Resolves every path on `host` and builds the profile.
    pub fn build<H: HostView + ?Sized>(&self, host: &H) -> Result<Profile, Error> {
        let host = &MacTarget(host);
        self.spec.validate()?;
        let home_s = self
            .home
            .as_deref()
            .ok_or(ErrorKind::Missing { what: "home" })?;
        let home = Path::new(home_s);
        let http = port(self.http_port, "HTTP proxy")?;
        let socks = port(self.socks_port, "SOCKS proxy")?;

        let writable = resolve_dirs(&self.writable_dirs(), home, host)?;
        let secrets = PathSet::resolve(secret_read_deny_entries(), home, host)?;
        let writable_literals: Vec<String> = writable
            .entries()
            .iter()
            .map(|e| e.literal.clone())
            .collect();
        // The mandatory denies are paths below the home and the writable
        // roots (never patterns, whatever those names hold); protected
        // paths are deny entries and may be globs (R-PATHS-1).
        let mandatory =
            mandatory_write_deny_paths(home, writable_literals.iter().map(String::as_str));
        let mut write_denied = PathSet::resolve_paths(&mandatory, home, host)?;
        write_denied.extend(PathSet::resolve(&self.spec.protected_paths, home, host)?);
        let grants = resolve_dirs(&self.spec.exec_grant_roots, home, host)?;
        let dangerous = PathSet::resolve(DANGEROUS_BINARIES.iter().map(|c| c.entry), home, host)?;

        let mut p = Profile::new();
        p.comment("Allow by default, then carve denials out (R-SEATBELT-1).");
        p.rule(Rule::new(Action::Allow, Operation::Default, Vec::new()));

        p.comment("Secrets are unreadable, in both spellings (R-SEATBELT-2).");
        p.rule_if_any(
            Action::Deny,
            &[Operation::FileReadAll],
            deny_filters(&secrets, host)?,
        );
        if !self.read_deny.is_empty() || !self.read_again.is_empty() {
            let (denied, again) = self.extra_reads(&secrets, home, host)?;
            p.comment("The host's own read denies, then what is read again inside them.");
            p.rule_if_any(
                Action::Deny,
                &[Operation::FileReadAll],
                deny_filters(&denied, host)?,
            );
            p.rule_if_any(
                Action::Allow,
                &[Operation::FileReadAll],
                subpath_filters(&again, host)?,
            );
            p.comment("The secrets stay unreadable whatever is read again (the last match wins).");
            p.rule_if_any(
                Action::Deny,
                &[Operation::FileReadAll],
                deny_filters(&secrets, host)?,
            );
        }

        p.comment("Writes: reset to deny, then the writable directories (R-SEATBELT-3).");
        p.rule(Rule::new(Action::Deny, Operation::FileWriteAll, Vec::new()));
        let mut allow = subpath_filters(&writable, host)?;
        allow.extend(device_filters()?);
        p.rule_if_any(Action::Allow, &[Operation::FileWriteAll], allow);

        p.comment("Never writable, even inside a writable directory (R-PATHS-3, R-PATHS-4).");
        let mut deny = deny_filters(&secrets, host)?;
        deny.extend(deny_filters(&write_denied, host)?);
        let names: Vec<&str> = MANDATORY_WRITE_DENY.iter().map(|c| c.entry).collect();
        let globs: Vec<&str> = FILENAME_GLOB_DENY.iter().map(|c| c.entry).collect();
        // At any depth below a writable directory, the directories holding a
        // mandatory name (`.git` of `.git/hooks`, ...) can be neither moved
        // nor, where they are files (a linked worktree's `.git` points git at
        // its hooks), rewritten.
        let holders = name_holders(&names);
        for root in writable.spellings() {
            deny.push(names_below(&root, &names, true)?);
            deny.push(names_below(&root, &globs, false)?);
            if !holders.is_empty() {
                deny.push(names_below(&root, &holders, false)?);
            }
        }
        p.rule_if_any(Action::Deny, &[Operation::FileWriteAll], deny);

        p.comment(
            "No denied path can be deleted or renamed away through an ancestor (R-SEATBELT-4).",
        );
        let anc: Vec<Filter> = ancestors(&[&secrets, &write_denied], host)?
            .into_iter()
            .map(Filter::Literal)
            .collect();
        p.rule_if_any(
            Action::Deny,
            &[Operation::FileWriteUnlink, Operation::FileWriteCreate],
            anc,
        );

        p.comment("Exec: nothing from a writable directory but the grant roots, never the dangerous binaries (R-SEATBELT-5).");
        p.rule_if_any(
            Action::Deny,
            &[Operation::ProcessExecAll],
            subpath_filters(&writable, host)?,
        );
        p.rule_if_any(
            Action::Allow,
            &[Operation::ProcessExecAll],
            subpath_filters(&grants, host)?,
        );
        p.rule_if_any(
            Action::Deny,
            &[Operation::ProcessExecAll],
            literal_filters(&dangerous),
        );

        p.comment(
            "Network: the session's proxies on localhost and DNS, nothing else (R-SEATBELT-6).",
        );
        p.rule(Rule::new(
            Action::Deny,
            Operation::NetworkOutbound,
            Vec::new(),
        ));
        let mut reachable = vec![
            Filter::RemoteIp(RemoteHost::Localhost, RemotePort::Port(http)),
            Filter::RemoteIp(RemoteHost::Localhost, RemotePort::Port(socks)),
            Filter::RemoteUnixSocket(self.dns_socket.clone()),
        ];
        reachable.extend(
            self.unix_sockets
                .iter()
                .map(|s| Filter::RemoteUnixSocket(s.clone())),
        );
        p.rule(Rule::new(
            Action::Allow,
            Operation::NetworkOutbound,
            reachable,
        ));
        Ok(p)
    }
}

/// The leading directories of multi-component names, without repeats:
/// `.git/hooks` and `.git/config` give `.git`.
fn name_holders<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for name in names {
        let mut end = 0;
        while let Some(i) = name[end..].find('/') {
            let holder = &name[..end + i];
            if !out.contains(&holder) {
                out.push(holder);
            }
            end += i + 1;
        }
    }
    out
}

fn port(p: Option<u16>, what: &'static str) -> Result<u16, Error> {
    match p {
        None => Err(ErrorKind::Missing { what }.into()),
        Some(0) => Err(ErrorKind::InvalidPort { what }.into()),
        Some(p) => Ok(p),
    }
}
