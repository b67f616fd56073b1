//! From a spec and its resolved path sets to the bubblewrap argv.

use crate::bridge::{BRIDGE_GUEST_DIR, BridgePlan};
use crate::guard::{MAX_NAME_GUARD_RULES, NAME_GUARD_GUEST_PATH, NameGuardLauncher, guarded_argv};
use crate::{Error, ErrorKind, Placeholder, PlaceholderKind};
use sandbox_core::defaults::{
    FILENAME_GLOB_DENY, mandatory_write_deny_paths, secret_read_deny_entries,
};
use sandbox_core::{Access, HostView, PathSet, SandboxSpec};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to do about filename-glob write denies (`.env`, `*.key`, `*.pem`),
/// which bubblewrap cannot enforce (R-DISPATCH-3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilenameRules {
    /// Refuse to build a plan whose policy needs them (the default).
    #[default]
    Refuse,
    /// A creation-time guard enforces them inside the sandbox: the plan
    /// binds the launcher set with [`BwrapBuilder::name_guard_launcher`]
    /// read-only into the sandbox and runs every command under it (see
    /// [`BwrapPlan::guarded_command`]).
    EnforcedByNameGuard,
    /// Explicit, logged opt-out: drop only the filename-glob denies and keep
    /// every other denial.
    DropFilenameGlobDenies,
}

/// Which fixed profile a plan follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Profile {
    /// An agent dispatch: network only through the proxies, the full deny
    /// sets, mounts per mode (the default).
    #[default]
    Dispatch,
    /// A server-driven terminal (R-TERMINAL-1, the Linux form of
    /// R-SEATBELT-8): the home directory and the working directory writable,
    /// the host network shared, the five secret directories unreadable,
    /// protected paths read-only. No filename-glob rules apply.
    Terminal,
}

/// The secret directories the terminal profile hides.
pub use sandbox_core::defaults::TERMINAL_SECRET_DIRS;

/// System directories bound read-only by default.
pub const DEFAULT_SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Host files under the system directories that are masked even so.
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
];

/// Mandatory write-deny entries that are directories (the rest are files),
/// used when a placeholder must be created for a missing entry.
const DIR_ENTRIES: &[&str] = &[
    ".git/hooks",
    ".config/fish",
    ".config/git",
    ".local/bin",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".claude/commands",
    ".claude/agents",
    ".vscode",
    ".idea",
    ".claude",
];

/// Mandatory write-deny entries that may not be given an empty placeholder
/// when missing, because git reads an empty one as an error.
const NO_PLACEHOLDER: &[&str] = &["/.git/commondir"];

/// The longest argv passed on the command line; longer plans use `--args FD`.
pub const MAX_ARGV_BYTES: usize = 128 * 1024;
/// The longest plan built at all, with [`ArgvDelivery::ArgsFd`].
pub const MAX_ARGS_FD_BYTES: usize = 16 * 1024 * 1024;

/// How the caller passes the options to bubblewrap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgvDelivery {
    /// On the command line: a plan over [`MAX_ARGV_BYTES`] is refused
    /// ([`ErrorKind::TooManyArguments`]). The default.
    #[default]
    CommandLine,
    /// The caller passes a plan that does not
    /// [fit the command line](BwrapPlan::fits_command_line) through
    /// `bwrap --args FD` ([`BwrapPlan::args_fd_payload`]); plans up to
    /// [`MAX_ARGS_FD_BYTES`] are built.
    ArgsFd,
}

/// Builds a [`BwrapPlan`] for one spec.
///
/// Setters take `&mut self`; [`BwrapBuilder::build`] checks everything and
/// reads the host (existence, file type, symlinks) only through the
/// [`HostView`] it is given.
#[derive(Clone, Debug)]
pub struct BwrapBuilder {
    spec: SandboxSpec,
    home: PathBuf,
    system_paths: Vec<String>,
    extra_read_deny: Vec<String>,
    filename_rules: FilenameRules,
    bridges: Option<BridgePlan>,
    workdir: Option<String>,
    nested_repos: Vec<String>,
    profile: Profile,
    launcher: Option<NameGuardLauncher>,
    delivery: ArgvDelivery,
}

/// A built plan: the argv for bubblewrap (everything between `bwrap` and the
/// command), the placeholders to create before the launch and remove after,
/// and what was dropped by an opt-out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BwrapPlan {
    args: Vec<OsString>,
    placeholders: Vec<Placeholder>,
    dropped_filename_globs: Vec<String>,
    name_guard_globs: Vec<String>,
    launcher: Option<NameGuardLauncher>,
}

impl BwrapPlan {
    /// The bubblewrap options, ending with `--`.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The full argv: `bwrap_path`, the options, then `command` (under the
    /// name guard when the plan has one, see [`BwrapPlan::guarded_command`]).
    pub fn command_line<I, S>(&self, bwrap_path: &Path, command: I) -> Vec<OsString>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut out = Vec::with_capacity(self.args.len() + 4);
        out.push(bwrap_path.as_os_str().to_owned());
        out.extend(self.args.iter().cloned());
        out.extend(self.guarded_command(command, None));
        out
    }

    /// What to run after the options so that `command` runs under the plan's
    /// creation-time rules: `command` itself when the plan has none, else
    /// the launcher (at [`crate::NAME_GUARD_GUEST_PATH`]) with one `--deny`
    /// per rule and, with `report_fd`, `--report-fd N` so that each refusal
    /// is reported on that descriptor (which must then be open in
    /// bubblewrap).
    pub fn guarded_command<I, S>(&self, command: I, report_fd: Option<i32>) -> Vec<OsString>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        match &self.launcher {
            Some(l) if !self.name_guard_globs.is_empty() => {
                guarded_argv(l, &self.name_guard_globs, report_fd, command)
            }
            _ => command.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether commands run under the name guard.
    pub fn is_guarded(&self) -> bool {
        self.launcher.is_some() && !self.name_guard_globs.is_empty()
    }

    /// Whether the options fit on the command line ([`MAX_ARGV_BYTES`]);
    /// when they do not, pass [`BwrapPlan::args_fd_payload`] with
    /// `bwrap --args FD --`.
    pub fn fits_command_line(&self) -> bool {
        self.args.iter().map(|s| s.len() + 1).sum::<usize>() <= MAX_ARGV_BYTES
    }

    /// The options as the NUL-separated payload of `bwrap --args FD`
    /// (without the final `--`, which must follow `--args FD` on the command
    /// line).
    pub fn args_fd_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for a in self.args.iter().take(self.args.len().saturating_sub(1)) {
            out.extend_from_slice(a.as_encoded_bytes());
            out.push(0);
        }
        out
    }

    /// Paths that must exist on the host before launch (created by
    /// [`crate::PlaceholderGuard::create_on_host`]) so that a missing denied
    /// file can be mounted read-only instead of created by the agent.
    pub fn placeholders(&self) -> &[Placeholder] {
        &self.placeholders
    }

    /// The creation-time rules dropped by
    /// [`FilenameRules::DropFilenameGlobDenies`]: the filename globs, then the
    /// not-yet-existing mandatory denies in worktrees that bubblewrap could
    /// only enforce by leaving a placeholder file there. The caller must log
    /// them.
    pub fn dropped_filename_globs(&self) -> &[String] {
        &self.dropped_filename_globs
    }

    /// The creation-time rules a name guard must enforce
    /// ([`FilenameRules::EnforcedByNameGuard`]): globs, then absolute paths.
    pub fn name_guard_globs(&self) -> &[String] {
        &self.name_guard_globs
    }
}

impl BwrapBuilder {
    /// A builder for `spec`, whose run has its home directory at `home` (the
    /// same path inside and outside).
    pub fn new(spec: &SandboxSpec, home: impl Into<PathBuf>) -> BwrapBuilder {
        BwrapBuilder {
            spec: spec.clone(),
            home: home.into(),
            system_paths: DEFAULT_SYSTEM_PATHS.iter().map(|s| s.to_string()).collect(),
            extra_read_deny: Vec::new(),
            filename_rules: FilenameRules::Refuse,
            bridges: None,
            workdir: None,
            nested_repos: Vec::new(),
            profile: Profile::Dispatch,
            launcher: None,
            delivery: ArgvDelivery::CommandLine,
        }
    }

    /// How the caller will pass the options (default
    /// [`ArgvDelivery::CommandLine`]).
    pub fn argv_delivery(&mut self, delivery: ArgvDelivery) -> &mut BwrapBuilder {
        self.delivery = delivery;
        self
    }

    /// The name-guard launcher that [`FilenameRules::EnforcedByNameGuard`]
    /// runs in front of every command; bound read-only at
    /// [`crate::NAME_GUARD_GUEST_PATH`]. Without it, a plan that needs the
    /// guard is refused ([`ErrorKind::NameGuardLauncherMissing`]).
    pub fn name_guard_launcher(&mut self, launcher: NameGuardLauncher) -> &mut BwrapBuilder {
        self.launcher = Some(launcher);
        self
    }

    /// Replaces the read-only system directories.
    pub fn system_paths<I, S>(&mut self, paths: I) -> &mut BwrapBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.system_paths = paths.into_iter().map(Into::into).collect();
        self
    }

    /// Adds read-deny entries beyond the curated secret set.
    pub fn read_deny<I, S>(&mut self, entries: I) -> &mut BwrapBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_read_deny
            .extend(entries.into_iter().map(Into::into));
        self
    }

    /// Sets how filename-glob denies are handled.
    pub fn filename_rules(&mut self, rules: FilenameRules) -> &mut BwrapBuilder {
        self.filename_rules = rules;
        self
    }

    /// Repositories nested inside writable roots (see
    /// [`crate::discover_git_repos_on_host`]); the mandatory write denies
    /// (`.git/hooks`, `.git/config`, ...) are anchored at each of them too.
    pub fn nested_repos<I, S>(&mut self, repos: I) -> &mut BwrapBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.nested_repos.extend(repos.into_iter().map(Into::into));
        self
    }

    /// Chooses the profile (default [`Profile::Dispatch`]).
    pub fn profile(&mut self, profile: Profile) -> &mut BwrapBuilder {
        self.profile = profile;
        self
    }

    /// Binds the bridge socket directory into the sandbox.
    pub fn bridges(&mut self, plan: BridgePlan) -> &mut BwrapBuilder {
        self.bridges = Some(plan);
        self
    }

    /// The working directory inside (defaults to the spec's `guest_workdir`,
    /// then the home directory).
    pub fn workdir(&mut self, dir: impl Into<String>) -> &mut BwrapBuilder {
        self.workdir = Some(dir.into());
        self
    }

    /// The writable roots: chat-mode writable mounts and runner state dirs.
    fn writable_roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = self
            .spec
            .mount_accesses()
            .filter(|(_, a)| *a == Access::ReadWrite)
            .map(|(m, _)| m.host_path.clone())
            .collect();
        roots.extend(
            self.spec
                .runner_state_dirs
                .iter()
                .map(|d| expand(d, &self.home)),
        );
        roots
    }

    /// Builds the plan, reading the host through `host`.
    pub fn build<H: HostView + ?Sized>(&self, host: &H) -> Result<BwrapPlan, Error> {
        self.spec.validate()?;
        for m in &self.spec.bind_mounts {
            if m.guest_path != m.host_path {
                return Err(ErrorKind::BadPath {
                    path: m.guest_path.clone(),
                    reason: "with the native sandbox the guest path must equal the host path",
                }
                .into());
            }
        }
        let home = &self.home;
        let terminal = self.profile == Profile::Terminal;
        let home_str = home.to_string_lossy().into_owned();
        let workdir = self
            .workdir
            .clone()
            .or_else(|| self.spec.guest_workdir.clone())
            .unwrap_or_else(|| home_str.clone());
        let writable = if terminal {
            Vec::new()
        } else {
            self.writable_roots()
        };

        // Filename-glob denies: needed whenever something is writable.
        let globs: Vec<String> = FILENAME_GLOB_DENY
            .iter()
            .map(|c| c.entry.to_string())
            .collect();
        let mut dropped = Vec::new();
        let mut guard_globs = Vec::new();
        if !writable.is_empty() {
            match self.filename_rules {
                FilenameRules::Refuse => {
                    return Err(ErrorKind::FilenameRulesUnenforceable {
                        globs,
                        roots: writable,
                    }
                    .into());
                }
                FilenameRules::DropFilenameGlobDenies => dropped = globs,
                FilenameRules::EnforcedByNameGuard => guard_globs = globs,
            }
        }

        let secrets: Vec<String> = if terminal {
            TERMINAL_SECRET_DIRS.iter().map(|s| s.to_string()).collect()
        } else {
            secret_read_deny_entries().map(str::to_string).collect()
        };
        let read_entries: Vec<String> = secrets
            .into_iter()
            .chain(SYSTEM_SECRETS.iter().map(|s| s.to_string()))
            .chain(self.extra_read_deny.iter().cloned())
            .collect();
        let read_deny = PathSet::resolve(&read_entries, home, host)?;
        let mut write_entries: Vec<String> = self.spec.protected_paths.clone();
        let anchors: Vec<&str> = writable
            .iter()
            .map(String::as_str)
            .chain(
                self.nested_repos
                    .iter()
                    .map(String::as_str)
                    .filter(|r| writable.iter().any(|w| is_under(r, w))),
            )
            .collect();
        if !terminal {
            for a in &anchors {
                for p in sandbox_core::linked_git_dir_entries(a, host) {
                    if !write_entries.contains(&p) {
                        write_entries.push(p);
                    }
                }
            }
            write_entries.extend(mandatory_write_deny_paths(home, anchors));
        }
        let write_deny = PathSet::resolve(&write_entries, home, host)?;

        let mut a = Args::default();
        a.flag("--new-session").flag("--die-with-parent");
        for ns in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
        ] {
            if !(terminal && ns == "--unshare-net") {
                a.flag(ns);
            }
        }
        a.flag("--unshare-cgroup-try")
            .flag("--disable-userns")
            .pair("--cap-drop", "ALL");

        // The root is an empty tmpfs; only what follows is visible.
        let mut exposed: Vec<(String, Access)> = Vec::new();
        for sys in &self.system_paths {
            let p = Path::new(sys);
            if !host.exists(p) {
                continue;
            }
            match host.canonicalize(p) {
                Some(real) if real != p => {
                    // usrmerge: /bin -> /usr/bin is recreated as a symlink.
                    a.triple("--symlink", real.as_os_str(), sys);
                }
                _ => {
                    a.triple("--ro-bind", sys, sys);
                    exposed.push((sys.clone(), Access::ReadOnly));
                }
            }
        }
        a.pair("--proc", "/proc")
            .pair("--dev", "/dev")
            .pair("--tmpfs", "/tmp");
        a.pair("--dir", "/var").pair("--tmpfs", "/var/tmp");
        a.pair("--dir", "/run");
        if terminal {
            // The terminal works in the real home and working directory.
            a.triple("--bind", &home_str, &home_str);
            exposed.push((home_str.clone(), Access::ReadWrite));
            if workdir != home_str {
                a.triple("--bind", &workdir, &workdir);
                exposed.push((workdir.clone(), Access::ReadWrite));
            }
        } else {
            a.pair("--tmpfs", &home_str);
        }

        let mut mounts: Vec<(String, Access)> = self
            .spec
            .mount_accesses()
            .map(|(m, acc)| (m.host_path.clone(), acc))
            .collect();
        mounts.sort_by_key(|(p, _)| depth(p));
        for (path, access) in &mounts {
            let flag = if *access == Access::ReadWrite {
                "--bind"
            } else {
                "--ro-bind"
            };
            a.triple(flag, path, path);
            exposed.push((path.clone(), *access));
        }
        for dir in &self.spec.runner_state_dirs {
            let dir = expand(dir, home);
            a.triple("--bind-try", &dir, &dir);
            exposed.push((dir, Access::ReadWrite));
        }
        if let Some(b) = &self.bridges {
            let dir = b.host_dir().to_string_lossy().into_owned();
            a.triple("--ro-bind", &dir, BRIDGE_GUEST_DIR);
        }

        // Write denies: pin every ancestor inside a writable root so
        // it cannot be renamed away, then re-bind the path read-only.
        let mut pins: Vec<String> = Vec::new();
        let mut ro: Vec<String> = Vec::new();
        let mut placeholders: Vec<Placeholder> = Vec::new();
        let mut unenforced: Vec<String> = Vec::new();
        for p in write_deny.spellings() {
            if sandbox_core::is_glob(&p) || !is_under_any(&p, &exposed) {
                continue;
            }
            let root = writable_root_of(&p, &exposed);
            let path = Path::new(&p);
            if !host.exists(path) {
                let Some(root) = root else { continue };
                // A missing denied path inside a writable root must exist to
                // be mounted read-only. Inside `.git/` and the home directory
                // it gets a placeholder (removed at teardown); elsewhere a
                // placeholder would show up in the worktree (and in the next
                // `git add -A`), so it is a creation-time rule like the
                // filename globs: enforced by a name guard or dropped by the
                // same opt-out.
                let git_at = p.find("/.git/");
                let in_git =
                    git_at.is_some_and(|i| host.is_dir(Path::new(&p[..i + "/.git".len()])));
                let in_home = path.starts_with(home) && git_at.is_none();
                // An empty `.git/commondir` makes every git command fail:
                // never a placeholder, always a creation-time rule.
                let placeholder_breaks_git = NO_PLACEHOLDER.iter().any(|e| p.ends_with(e));
                if !(in_git || in_home) || placeholder_breaks_git {
                    if !unenforced.contains(&p) {
                        unenforced.push(p);
                    }
                    continue;
                }
                let kind = if DIR_ENTRIES.iter().any(|d| p.ends_with(d)) {
                    PlaceholderKind::Dir
                } else {
                    PlaceholderKind::File
                };
                placeholders.push(Placeholder {
                    path: PathBuf::from(&p),
                    kind,
                    root: PathBuf::from(root),
                });
            }
            if let Some(root) = root {
                for anc in ancestors_between(root, &p) {
                    if !pins.contains(&anc) {
                        pins.push(anc);
                    }
                }
            }
            if !ro.contains(&p) {
                ro.push(p);
            }
        }
        pins.sort_by_key(|p| depth(p));
        // Shallow first; a path under one already re-bound read-only needs
        // nothing more.
        ro.sort_by_key(|p| depth(p));
        let mut kept: Vec<String> = Vec::new();
        for p in ro {
            if !kept.iter().any(|k| is_under(&p, k)) {
                kept.push(p);
            }
        }
        let ro = kept;
        pins.retain(|p| !ro.iter().any(|r| is_under(p, r)));
        for p in &pins {
            a.triple("--bind", p, p);
        }
        for p in &ro {
            a.triple("--ro-bind", p, p);
        }

        // Read denies, last, so that no later bind can uncover them:
        // directories become an empty read-only tmpfs, files /dev/null. Only
        // paths visible inside need a mask.
        for p in read_deny.spellings() {
            if sandbox_core::is_glob(&p) || !is_under_any(&p, &exposed) {
                continue;
            }
            let path = Path::new(&p);
            if host.is_dir(path) {
                a.pair("--tmpfs", &p).pair("--remount-ro", &p);
            } else if host.exists(path) {
                a.triple("--ro-bind", "/dev/null", &p);
            }
        }

        match self.filename_rules {
            FilenameRules::Refuse => {}
            FilenameRules::EnforcedByNameGuard => guard_globs.extend(unenforced),
            FilenameRules::DropFilenameGlobDenies => dropped.extend(unenforced),
        }
        let launcher = if guard_globs.is_empty() {
            None
        } else {
            let Some(l) = self.launcher.clone() else {
                return Err(ErrorKind::NameGuardLauncherMissing.into());
            };
            if guard_globs.len() > MAX_NAME_GUARD_RULES {
                return Err(ErrorKind::TooManyNameGuardRules {
                    count: guard_globs.len(),
                    limit: MAX_NAME_GUARD_RULES,
                }
                .into());
            }
            if !l.host_path().is_absolute() {
                return Err(ErrorKind::BadPath {
                    path: l.host_path().to_string_lossy().into_owned(),
                    reason: "the name-guard launcher must be an absolute path",
                }
                .into());
            }
            // After every other mount: nothing can cover it, and it sits in
            // the sandbox's own /run, outside every host path.
            a.triple(
                "--ro-bind",
                l.host_path().as_os_str(),
                NAME_GUARD_GUEST_PATH,
            );
            Some(l)
        };

        a.pair("--chdir", &workdir);
        a.flag("--");

        let bytes: usize = a.0.iter().map(|s| s.len() + 1).sum();
        let limit = match self.delivery {
            ArgvDelivery::CommandLine => MAX_ARGV_BYTES,
            ArgvDelivery::ArgsFd => MAX_ARGS_FD_BYTES,
        };
        if bytes > limit {
            return Err(ErrorKind::TooManyArguments {
                count: a.0.len(),
                bytes,
                limit,
            }
            .into());
        }
        Ok(BwrapPlan {
            args: a.0,
            placeholders,
            dropped_filename_globs: dropped,
            name_guard_globs: guard_globs,
            launcher,
        })
    }
}

fn expand(entry: &str, home: &Path) -> String {
    sandbox_core::expand_tilde(entry, home).unwrap_or_else(|_| entry.to_string())
}

fn depth(p: &str) -> usize {
    p.split('/').filter(|s| !s.is_empty()).count()
}

fn is_under(p: &str, root: &str) -> bool {
    Path::new(p).starts_with(root)
}

fn is_under_any(p: &str, exposed: &[(String, Access)]) -> bool {
    exposed.iter().any(|(r, _)| is_under(p, r))
}

/// The deepest exposed root containing `p`, if that root is writable.
fn writable_root_of<'a>(p: &str, exposed: &'a [(String, Access)]) -> Option<&'a str> {
    exposed
        .iter()
        .filter(|(r, _)| is_under(p, r))
        .max_by_key(|(r, _)| depth(r))
        .filter(|(_, acc)| *acc == Access::ReadWrite)
        .map(|(r, _)| r.as_str())
}

/// Directories strictly between `root` and `p`.
fn ancestors_between(root: &str, p: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = Path::new(p).parent();
    while let Some(dir) = cur {
        if dir == Path::new(root) || !dir.starts_with(root) {
            break;
        }
        out.push(dir.to_string_lossy().into_owned());
        cur = dir.parent();
    }
    out.reverse();
    out
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flag(&mut self, f: &str) -> &mut Args {
        self.0.push(f.into());
        self
    }
    fn pair(&mut self, f: &str, v: impl AsRef<std::ffi::OsStr>) -> &mut Args {
        self.0.push(f.into());
        self.0.push(v.as_ref().to_owned());
        self
    }
    fn triple(
        &mut self,
        f: &str,
        a: impl AsRef<std::ffi::OsStr>,
        b: impl AsRef<std::ffi::OsStr>,
    ) -> &mut Args {
        self.0.push(f.into());
        self.0.push(a.as_ref().to_owned());
        self.0.push(b.as_ref().to_owned());
        self
    }
}
