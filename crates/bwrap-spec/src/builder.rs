//! From a spec and its resolved path sets to the bubblewrap argv: the
//! builder, and the order of the options (namespaces, system directories,
//! mounts, write denies, read denies, the launcher, the working directory).

mod host_plan;
mod policy;

pub use host_plan::HostPlan;

use crate::args::Args;
use crate::bridge::{BRIDGE_GUEST_DIR, BridgePlan};
use crate::denies::{WriteDenies, depth, read_denies, write_denies};
use crate::name_guard_launcher::{MAX_NAME_GUARD_RULES, NAME_GUARD_GUEST_PATH, NameGuardLauncher};
use crate::plan::{
    ArgvDelivery, BwrapPlan, FilenameRules, MAX_ARGS_FD_BYTES, MAX_ARGV_BYTES, Profile,
};
use crate::{Error, ErrorKind};
use policy::Policy;
use sandbox_core::{Access, HostView, SandboxSpec};
use std::path::{Path, PathBuf};

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
    read_reopen: Vec<String>,
    filename_rules: FilenameRules,
    bridges: Option<BridgePlan>,
    workdir: Option<String>,
    nested_repos: Vec<String>,
    profile: Profile,
    launcher: Option<NameGuardLauncher>,
    launcher_always: bool,
    delivery: ArgvDelivery,
    unix_sockets: Vec<String>,
    tool_dirs: Vec<String>,
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
            read_reopen: Vec::new(),
            filename_rules: FilenameRules::Refuse,
            bridges: None,
            workdir: None,
            nested_repos: Vec::new(),
            profile: Profile::Dispatch,
            launcher: None,
            launcher_always: false,
            delivery: ArgvDelivery::CommandLine,
            unix_sockets: Vec::new(),
            tool_dirs: sandbox_core::defaults::TOOL_OWNED_DIRS
                .iter()
                .map(|c| c.entry.to_string())
                .collect(),
        }
    }

    /// The names of the directories package managers own, below which the
    /// name guard's filename globs do not hold (the path rules still do):
    /// replaces the default set, [`sandbox_core::defaults::TOOL_OWNED_DIRS`]
    /// (`site-packages`, `dist-packages`, `node_modules`); an empty list
    /// makes the globs hold everywhere. Each is one directory name.
    pub fn tool_owned_dirs<I, S>(&mut self, names: I) -> &mut BwrapBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tool_dirs = names.into_iter().map(Into::into).collect();
        self
    }

    /// Grants the sandbox the Unix socket at `path` (absolute, on the host):
    /// it is bound read-only into the sandbox at the same path, nothing else
    /// of its directory, and under the name guard it is the one host
    /// socket the command may connect to besides its own. Which sockets
    /// are safe to grant is the caller's decision.
    pub fn allow_unix_socket(&mut self, path: impl Into<String>) -> &mut BwrapBuilder {
        self.unix_sockets.push(path.into());
        self
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

    /// Binds the launcher at [`crate::NAME_GUARD_GUEST_PATH`] even when no
    /// command needs the guard, so that the program can run inside as a
    /// warm session's init ([`BwrapPlan::bound_launcher`]). Whether
    /// commands run under the guard does not change.
    pub fn bind_launcher_always(&mut self) -> &mut BwrapBuilder {
        self.launcher_always = true;
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

    /// Adds read-deny entries beyond the curated secret set: paths, or
    /// globs (`*` and `?` within one name, `~` allowed; see
    /// [`sandbox_core::glob`]). A glob's matches that exist when the plan
    /// is built are hidden like paths, and, wherever something is writable,
    /// the name guard refuses creating a new match (the glob joins its
    /// rules, or the dropped ones under the explicit opt-out), so that no
    /// match can be read. A glob whose matches cannot all be found is an
    /// error at build.
    pub fn read_deny<I, S>(&mut self, entries: I) -> &mut BwrapBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.extra_read_deny
            .extend(entries.into_iter().map(Into::into));
        self
    }

    /// Makes paths readable again inside the extra read denies of
    /// [`BwrapBuilder::read_deny`] (a denied directory with some of its
    /// subdirectories or files allowed back), read-only. Never into the
    /// curated secret set: a path inside a secret, or around a secret
    /// pattern, is refused at build, and never inside a match of a
    /// read-deny glob (refused too). Literal paths only (a glob is
    /// refused).
    pub fn read_reopen<I, S>(&mut self, entries: I) -> &mut BwrapBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.read_reopen.extend(entries.into_iter().map(Into::into));
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

    /// Builds the plan, reading the host through `host`.
    pub fn build<H: HostView + ?Sized>(&self, host: &H) -> Result<BwrapPlan, Error> {
        // As in `host_plan`: one answer per canonical path.
        let host = &sandbox_core::RememberingHost::new(host);
        let Policy {
            terminal,
            home_str,
            workdir,
            writable,
            mut dropped,
            mut guard_globs,
            state_dirs,
            tool_dirs,
            read_deny,
            write_deny,
        } = self.policy(host)?;
        let home = &self.home;

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
        let WriteDenies {
            placeholders,
            unenforced,
        } = write_denies(&mut a, &write_deny, &exposed, home, host);

        // Read denies, last, so that no later bind can uncover them.
        read_denies(&mut a, &read_deny, &exposed, host);

        match self.filename_rules {
            FilenameRules::Refuse => {}
            FilenameRules::EnforcedByNameGuard => guard_globs.extend(unenforced),
            FilenameRules::DropFilenameGlobDenies => dropped.extend(unenforced),
        }
        // The guard runs whenever a rule needs it, and also, when it was
        // given, wherever something is writable: it alone keeps the command
        // from reaching a Unix socket a host process made there (it takes
        // `connect`), filename rules or not.
        let supervise_sockets = !writable.is_empty() && self.launcher.is_some();
        let guarded = !guard_globs.is_empty() || supervise_sockets;
        let launcher = if !(guarded || self.launcher_always && self.launcher.is_some()) {
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

        for s in &self.unix_sockets {
            if !s.starts_with('/') {
                return Err(ErrorKind::BadPath {
                    path: s.clone(),
                    reason: "a granted Unix socket must be an absolute path",
                }
                .into());
            }
            // After every other mount (a secret directory is an empty
            // tmpfs by now): only the socket itself appears, and nothing
            // covers it.
            a.triple("--ro-bind", s, s);
        }

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
            state_dirs,
            tool_dirs,
            bound_launcher: launcher.clone(),
            launcher: launcher.filter(|_| guarded),
            unix_sockets: self.unix_sockets.clone(),
        })
    }
}

fn expand(entry: &str, home: &Path) -> String {
    sandbox_core::expand_tilde(entry, home).unwrap_or_else(|_| entry.to_string())
}
