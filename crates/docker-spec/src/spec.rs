//! `ContainerSpec` and its builder.

use crate::mount::check_path;
use crate::{BindMount, Error, ErrorKind, ImageRef, Limits, Network, Tmpfs, User};
use sandbox_core::{Access, HostView, SandboxSpec};
use std::ffi::OsString;
use std::path::Path;

/// Whether the container is privileged. Only [`Privileged::No`] builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Privileged {
    /// The hardened default.
    #[default]
    No,
    /// `--privileged`: refused by [`ContainerSpecBuilder::build`].
    Yes,
}

/// A host namespace a caller might ask to share. Every one is refused by
/// [`ContainerSpecBuilder::build`] with [`ErrorKind::HostNamespace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostNamespace {
    /// `--network=host`.
    Network,
    /// `--pid=host`.
    Pid,
    /// `--ipc=host`.
    Ipc,
    /// `--uts=host`.
    Uts,
    /// `--userns=host`.
    User,
    /// `--cgroupns=host`.
    Cgroup,
}

impl HostNamespace {
    fn name(self) -> &'static str {
        match self {
            HostNamespace::Network => "network",
            HostNamespace::Pid => "pid",
            HostNamespace::Ipc => "ipc",
            HostNamespace::Uts => "uts",
            HostNamespace::User => "user",
            HostNamespace::Cgroup => "cgroup",
        }
    }
}

/// A validated, hardened container spec, shaped like the Engine API's
/// create request. Build it with [`ContainerSpec::builder`] or
/// [`ContainerSpec::from_sandbox`]; render it with
/// [`run_argv`](ContainerSpec::run_argv) or
/// [`run_argv_with_env_file`](ContainerSpec::run_argv_with_env_file).
///
/// Always: `--rm`, `--init`, `--read-only`, `--cap-drop=ALL`,
/// `--security-opt=no-new-privileges`, pids and memory limits with
/// `--memory-swap` equal to `--memory`, a numeric non-root user, and a
/// network that is `none` or an internal one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerSpec {
    pub(crate) image: ImageRef,
    pub(crate) mounts: Vec<BindMount>,
    pub(crate) tmpfs: Vec<Tmpfs>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) secret_env: Vec<(String, String)>,
    pub(crate) user: User,
    pub(crate) network: Network,
    pub(crate) limits: Limits,
    pub(crate) workdir: Option<String>,
    pub(crate) command: Vec<OsString>,
    pub(crate) unprotected_missing: Vec<String>,
    pub(crate) unprotected_symlinked: Vec<String>,
}

impl ContainerSpec {
    /// A builder for `image` with the hardened defaults: no mounts, a
    /// 64 MiB `/tmp` tmpfs, [`User::default`], [`Network::None`],
    /// [`Limits::default`].
    pub fn builder(image: ImageRef) -> ContainerSpecBuilder {
        ContainerSpecBuilder {
            image,
            mounts: Vec::new(),
            tmpfs: Vec::new(),
            env: Vec::new(),
            secret_env: Vec::new(),
            user: User::default(),
            network: Network::None,
            limits: Limits::default(),
            workdir: None,
            command: Vec::new(),
            privileged: Privileged::No,
            host_namespaces: Vec::new(),
            unprotected_missing: Vec::new(),
            unprotected_symlinked: Vec::new(),
        }
    }

    /// A builder filled from a sandbox spec: bind mounts with the access
    /// the spec's mode gives them (chat writable unless read-only; review,
    /// plan and orchestrate read-only), runner state dirs read-write,
    /// `guest_workdir` as the working directory, and `network` when
    /// `network_enabled` is true (otherwise [`Network::None`]).
    ///
    /// Only mounted paths are visible in a container, so a protected path
    /// needs a mount only where a writable bind contains it: there it is
    /// bound again read-only, over the writable one, at the matching guest
    /// path. Protected paths outside every writable bind stay invisible.
    /// Docker refuses a bind whose source does not exist, so a protected
    /// path inside a writable bind must exist when the container starts.
    ///
    /// The spec is validated, and protected paths must be absolute (a `~`
    /// entry is refused: expand it against the run's home first); mount
    /// errors surface at [`build`](ContainerSpecBuilder::build).
    ///
    /// This constructor reads nothing from the host, so it cannot know
    /// which entries of the mandatory write-deny set exist and leaves them
    /// writable inside writable binds; a launch uses
    /// [`from_sandbox_on_host`](Self::from_sandbox_on_host).
    pub fn from_sandbox(
        spec: &SandboxSpec,
        image: ImageRef,
        network: Network,
    ) -> Result<ContainerSpecBuilder, Error> {
        spec.validate().map_err(ErrorKind::Spec)?;
        let mut builder = ContainerSpec::builder(image);
        for (mount, access) in spec.mount_accesses() {
            builder.mount(&mount.host_path, &mount.guest_path, access);
        }
        for dir in &spec.runner_state_dirs {
            builder.mount(dir, dir, Access::ReadWrite);
        }
        let writable: Vec<_> = spec
            .mount_accesses()
            .filter(|(_, a)| *a == Access::ReadWrite)
            .map(|(m, _)| (m.host_path.as_str(), m.guest_path.as_str()))
            .chain(
                spec.runner_state_dirs
                    .iter()
                    .map(|d| (d.as_str(), d.as_str())),
            )
            .collect();
        for path in &spec.protected_paths {
            // A `~` entry cannot be placed without the run's home: refuse it.
            check_path(path)?;
            for (host, guest) in &writable {
                let Ok(rest) = Path::new(path).strip_prefix(host) else {
                    continue;
                };
                if rest.as_os_str().is_empty() {
                    // The protected path is the writable bind itself.
                    for m in builder.mounts.iter_mut().filter(|m| m.1 == *guest) {
                        m.2 = Access::ReadOnly;
                    }
                } else {
                    let target = Path::new(guest).join(rest);
                    builder.mount(path, &target.to_string_lossy(), Access::ReadOnly);
                }
            }
        }
        if let Some(dir) = &spec.guest_workdir {
            builder.workdir(dir);
        }
        builder.network(if spec.network_enabled {
            network
        } else {
            Network::None
        });
        Ok(builder)
    }

    /// Like [`from_sandbox`](Self::from_sandbox), and in addition enforces
    /// the mandatory write-deny set (R-PATHS-3) inside every writable bind,
    /// reading the host through `host` (pass
    /// [`sandbox_core::AmbientHost`] for the real machine, a
    /// [`sandbox_core::FakeHost`] in tests).
    ///
    /// The set is [`sandbox_core::defaults::MANDATORY_WRITE_DENY`] (shell rc
    /// files, `.gitconfig`, `.git/hooks`, `.git/config`, `.vscode`,
    /// `.claude/settings.json`, ...) anchored at `home`, at every writable
    /// bind (chat-mode binds and runner state dirs) and at every repository
    /// of `nested_repos` that lies inside one, plus
    /// [`sandbox_core::defaults::AGENT_CONFIG_WRITE_DENY`] (`~/.claude`).
    /// For an anchor whose `.git` is a file (a linked worktree or a
    /// submodule) it also holds the `.git` file itself and, in the git
    /// directory the file names (`gitdir: PATH` on its first line, at most
    /// 4096 bytes, relative to the anchor; its `commondir` file, relative to
    /// it), the common directory's `hooks` and `config` and the worktree's
    /// `config.worktree`.
    ///
    /// Every entry that exists on the host and lies inside a writable bind
    /// is bound again read-only, over the writable bind, at its guest path;
    /// files and directories alike. A writable bind that is itself an entry
    /// becomes read-only. Entries outside every writable bind are not
    /// visible in the container and need nothing. `nested_repos` usually
    /// comes from `bwrap_spec::discover_git_repos_on_host` over the writable
    /// host paths; pass an empty slice to anchor at the binds only.
    ///
    /// Two kinds of entry cannot be protected this way, and the built spec
    /// lists them instead of failing:
    ///
    /// - [`unprotected_missing_paths`](ContainerSpec::unprotected_missing_paths):
    ///   entries inside a writable bind that do not exist on the host (or are
    ///   dangling symlinks). Docker refuses a bind whose source is missing,
    ///   so the container can create them.
    /// - [`unprotected_symlinked_paths`](ContainerSpec::unprotected_symlinked_paths):
    ///   entries whose name inside a writable bind goes through a symlink.
    ///   Docker resolves symlinks on both sides of a bind, so the name
    ///   itself cannot carry a mount and stays replaceable; what it resolves
    ///   to is bound read-only when that lies inside a writable bind, and
    ///   never bound when it lies outside every one (that would show the
    ///   container a host file it cannot otherwise see).
    ///
    /// A caller that must fail closed checks
    /// [`unprotected_paths`](ContainerSpec::unprotected_paths) and either
    /// creates placeholders for the missing entries before building (empty
    /// files or directories, created without following symlinks) or refuses
    /// to start the container.
    ///
    /// Every directory between the writable bind and a read-only entry
    /// (`.git` above `.git/hooks`, `.claude` above `.claude/settings.json`)
    /// gets a writable bind of itself: a mount point cannot be renamed or
    /// removed, so a parent cannot be moved away and replaced by one with
    /// other hooks. A `.git` file of a linked worktree is itself read-only,
    /// so its checkout cannot be repointed. Build the spec just before
    /// starting the container: the host is read now, and docker resolves
    /// the paths again at start.
    ///
    /// `home` and every `nested_repos` entry must be absolute
    /// ([`ErrorKind::InvalidPath`]); the other errors are those of
    /// [`from_sandbox`](Self::from_sandbox).
    pub fn from_sandbox_on_host<H: HostView + ?Sized>(
        spec: &SandboxSpec,
        image: ImageRef,
        network: Network,
        home: &Path,
        nested_repos: &[String],
        host: &H,
    ) -> Result<ContainerSpecBuilder, Error> {
        let mut builder = ContainerSpec::from_sandbox(spec, image, network)?;
        match home.to_str() {
            Some(h) => check_path(h)?,
            None => {
                return Err(ErrorKind::InvalidPath {
                    path: home.to_string_lossy().into_owned(),
                    reason: "is not valid UTF-8",
                }
                .into());
            }
        }
        for repo in nested_repos {
            check_path(repo)?;
        }
        let plan = crate::mandatory::plan(&builder.mounts, home, nested_repos, host);
        for i in plan.read_only {
            if let Some(m) = builder.mounts.get_mut(i) {
                m.2 = Access::ReadOnly;
            }
        }
        for (source, target) in plan.pins {
            builder.mount(&source, &target, Access::ReadWrite);
        }
        for (source, target) in plan.binds {
            builder.mount(&source, &target, Access::ReadOnly);
        }
        builder.unprotected_missing = plan.missing;
        builder.unprotected_symlinked = plan.symlinked;
        Ok(builder)
    }

    /// The image.
    pub fn image(&self) -> &ImageRef {
        &self.image
    }

    /// The bind mounts, in order.
    pub fn mounts(&self) -> &[BindMount] {
        &self.mounts
    }

    /// The tmpfs mounts (always at least `/tmp`).
    pub fn tmpfs(&self) -> &[Tmpfs] {
        &self.tmpfs
    }

    /// The plain environment, in order.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The names of the secret variables (values stay private).
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.secret_env.iter().map(|(n, _)| n.as_str())
    }

    /// The user.
    pub fn user(&self) -> User {
        self.user
    }

    /// The network.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Host paths of mandatory write-deny entries inside a writable bind
    /// that did not exist when the spec was built from the host
    /// ([`from_sandbox_on_host`](Self::from_sandbox_on_host)), so nothing
    /// stops the container from creating them. Empty for other
    /// constructors.
    pub fn unprotected_missing_paths(&self) -> &[String] {
        &self.unprotected_missing
    }

    /// Host paths of mandatory write-deny entries whose name inside a
    /// writable bind goes through a symlink, so the name stays replaceable
    /// in the container (see
    /// [`from_sandbox_on_host`](Self::from_sandbox_on_host)). Empty for
    /// other constructors.
    pub fn unprotected_symlinked_paths(&self) -> &[String] {
        &self.unprotected_symlinked
    }

    /// Every mandatory write-deny entry left unprotected: the missing ones,
    /// then the symlinked ones. A caller that must fail closed refuses to
    /// start while this yields anything.
    pub fn unprotected_paths(&self) -> impl Iterator<Item = &str> {
        self.unprotected_missing
            .iter()
            .chain(&self.unprotected_symlinked)
            .map(String::as_str)
    }

    /// The filename-glob denies (`.env`, `*.key`, `*.pem` for new files)
    /// this container does not enforce: all of them when some bind is
    /// writable (a bind mount cannot refuse a new name), none otherwise. A
    /// caller that must fail closed (R-DISPATCH-3) refuses to start, or
    /// logs the opt-out, while this is not empty.
    pub fn filename_globs_unenforced(&self) -> Vec<&'static str> {
        if self
            .mounts
            .iter()
            .any(|m| m.access() == sandbox_core::Access::ReadWrite)
        {
            sandbox_core::defaults::FILENAME_GLOB_DENY
                .iter()
                .map(|c| c.entry)
                .collect()
        } else {
            Vec::new()
        }
    }
}

/// Builds a [`ContainerSpec`]. Setters take `&mut self` and record what
/// they are given; [`build`](Self::build) validates everything and returns
/// the first error.
#[derive(Debug)]
pub struct ContainerSpecBuilder {
    image: ImageRef,
    mounts: Vec<(String, String, Access)>,
    tmpfs: Vec<Tmpfs>,
    env: Vec<(String, String)>,
    secret_env: Vec<(String, String)>,
    user: User,
    network: Network,
    limits: Limits,
    workdir: Option<String>,
    command: Vec<OsString>,
    privileged: Privileged,
    host_namespaces: Vec<HostNamespace>,
    unprotected_missing: Vec<String>,
    unprotected_symlinked: Vec<String>,
}

impl ContainerSpecBuilder {
    /// Adds a bind mount (see [`BindMount::new`] for the checks, which run
    /// in [`build`](Self::build)).
    pub fn mount(&mut self, source: &str, target: &str, access: Access) -> &mut Self {
        self.mounts
            .push((source.to_owned(), target.to_owned(), access));
        self
    }

    /// Adds a tmpfs mount. Without any, `/tmp` gets 64 MiB.
    pub fn tmpfs(&mut self, tmpfs: Tmpfs) -> &mut Self {
        self.tmpfs.push(tmpfs);
        self
    }

    /// Adds a plain variable, passed as `--env=NAME=VALUE` (visible in the
    /// host's process list; use [`secret_env`](Self::secret_env) for
    /// secrets).
    pub fn env(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Adds every pair of `vars` as a plain variable (for example a
    /// sanitised environment).
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        for (k, v) in vars {
            self.env(k, v);
        }
        self
    }

    /// Adds a secret variable, passed only through an env file written
    /// 0600 (never in argv). Its value may not contain a newline.
    pub fn secret_env(&mut self, name: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.secret_env.push((name.into(), value.into()));
        self
    }

    /// Sets the user (default `1000:1000`; root is refused).
    pub fn user(&mut self, user: User) -> &mut Self {
        self.user = user;
        self
    }

    /// Sets the network (default [`Network::None`]).
    pub fn network(&mut self, network: Network) -> &mut Self {
        self.network = network;
        self
    }

    /// Sets the limits (default [`Limits::default`]).
    pub fn limits(&mut self, limits: Limits) -> &mut Self {
        self.limits = limits;
        self
    }

    /// Sets the working directory inside the container.
    pub fn workdir(&mut self, dir: impl Into<String>) -> &mut Self {
        self.workdir = Some(dir.into());
        self
    }

    /// Sets the command run in the container (after the image).
    pub fn command<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.command = args.into_iter().map(Into::into).collect();
        self
    }

    /// Asks for a privileged container; [`build`](Self::build) refuses
    /// [`Privileged::Yes`].
    pub fn privileged(&mut self, privileged: Privileged) -> &mut Self {
        self.privileged = privileged;
        self
    }

    /// Asks to share a host namespace; [`build`](Self::build) refuses it.
    pub fn host_namespace(&mut self, namespace: HostNamespace) -> &mut Self {
        self.host_namespaces.push(namespace);
        self
    }

    /// Validates and returns the spec, or the first error found.
    pub fn build(&self) -> Result<ContainerSpec, Error> {
        if self.privileged == Privileged::Yes {
            return Err(ErrorKind::Privileged.into());
        }
        if let Some(ns) = self.host_namespaces.first() {
            return Err(ErrorKind::HostNamespace {
                namespace: ns.name(),
            }
            .into());
        }
        let mounts = self
            .mounts
            .iter()
            .map(|(s, t, a)| BindMount::new(s.as_str(), t.as_str(), *a))
            .collect::<Result<Vec<_>, _>>()?;
        self.user.check()?;
        self.limits.check()?;
        if let Some(dir) = &self.workdir {
            check_path(dir)?;
        }
        let mut seen: Vec<&str> = Vec::new();
        for (name, value) in self.env.iter().chain(&self.secret_env) {
            check_env_name(name)?;
            if seen.contains(&name.as_str()) {
                return Err(ErrorKind::DuplicateEnv { name: name.clone() }.into());
            }
            seen.push(name);
            if value.contains('\0') {
                return Err(bad_value(name, "it contains a NUL byte"));
            }
        }
        for (name, value) in &self.secret_env {
            if value.contains(['\n', '\r']) {
                return Err(bad_value(name, "a secret cannot contain a newline"));
            }
        }
        if self
            .command
            .iter()
            .any(|a| a.as_encoded_bytes().contains(&0))
        {
            return Err(bad_value("command", "an argument contains a NUL byte"));
        }
        if let Network::Internal(name) = &self.network
            && !self
                .env
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("HTTPS_PROXY"))
        {
            return Err(ErrorKind::MissingProxyEnv {
                name: name.as_str().to_owned(),
            }
            .into());
        }
        let mut tmpfs = self.tmpfs.clone();
        if tmpfs.is_empty() {
            tmpfs.push(Tmpfs::new("/tmp", 64 << 20)?);
        }
        Ok(ContainerSpec {
            image: self.image.clone(),
            mounts,
            tmpfs,
            env: self.env.clone(),
            secret_env: self.secret_env.clone(),
            user: self.user,
            network: self.network.clone(),
            limits: self.limits,
            workdir: self.workdir.clone(),
            command: self.command.clone(),
            unprotected_missing: self.unprotected_missing.clone(),
            unprotected_symlinked: self.unprotected_symlinked.clone(),
        })
    }
}

fn bad_value(name: &str, reason: &'static str) -> Error {
    ErrorKind::InvalidEnvValue {
        name: name.to_owned(),
        reason,
    }
    .into()
}

/// Checks an environment variable name: `[A-Za-z_][A-Za-z0-9_]*`, at most
/// 1024 bytes.
pub(crate) fn check_env_name(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 1024
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(ErrorKind::InvalidEnvName {
            name: name.to_owned(),
        }
        .into())
    }
}
