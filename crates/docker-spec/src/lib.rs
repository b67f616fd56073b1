//! A hardened `docker run` argv from a sandbox spec (R-DOCKER-1).
//!
//! A [`ContainerSpec`] is a typed, validated container description shaped
//! like the Engine API's create request: capabilities, read-only root,
//! security options, bind mounts, tmpfs, env, user, network and limits. It
//! is built from a [`sandbox_core::SandboxSpec`] and its mode with
//! [`ContainerSpec::from_sandbox_on_host`], which also protects the
//! mandatory write-deny set inside writable binds (see below), with
//! [`ContainerSpec::from_sandbox`] (or by hand with
//! [`ContainerSpec::builder`]) and rendered as `docker run` argv, one flag
//! per element in `--flag=value` form. No shell string is ever built.
//!
//! Every rendered spec has `--rm`, `--init`, `--read-only`,
//! `--cap-drop=ALL`, `--security-opt=no-new-privileges`, `--pids-limit`,
//! `--memory` equal to `--memory-swap`, a numeric non-root `--user`, a
//! `--tmpfs` at `/tmp` with `nosuid,nodev,noexec` and a size, and
//! `--network=none` or a named internal network (whose env must carry the
//! proxy variables, for example from `env-guard`). Asking for
//! [`Privileged::Yes`], a [`HostNamespace`] or a bind that exposes an
//! engine socket is a typed error.
//!
//! Bind mounts go only through `--mount`, each field quoted for the docker
//! CLI's CSV reader ([`csv_record`]); read-only binds add
//! `bind-recursive=readonly` with `bind-propagation=rprivate` (the CLI
//! requires both together). Secret variables go through an env file
//! written 0600 in a directory the caller names
//! ([`ContainerSpec::run_argv_with_env_file`]), never through argv, and
//! every variable is rendered `NAME=VALUE` (never a bare name, which the CLI
//! would fill from its own environment). [`DockerCommand`] runs the CLI with
//! a scrubbed environment.
//!
//! # Example
//!
//! ```
//! use docker_spec::{ContainerSpec, ImageRef, Network};
//! use sandbox_core::{Access, Mode, SandboxBindMount, SandboxSpec};
//!
//! let mut sandbox = SandboxSpec::new("s-1", "w-1");
//! sandbox.mode = Mode::Review;
//! sandbox.bind_mounts.push(SandboxBindMount::new("/srv/wt,1", Access::ReadWrite).unwrap());
//! let spec = ContainerSpec::from_sandbox(&sandbox, ImageRef::new("alpine:3").unwrap(), Network::None)
//!     .unwrap()
//!     .env("LANG", "C.UTF-8")
//!     .command(["sh", "-c", "id"])
//!     .build()
//!     .unwrap();
//! let argv: Vec<String> = spec
//!     .run_argv()
//!     .unwrap()
//!     .into_iter()
//!     .map(|a| a.into_string().unwrap())
//!     .collect();
//! assert_eq!(argv[..6], ["run", "--rm", "--init", "--read-only", "--cap-drop=ALL",
//!     "--security-opt=no-new-privileges"]);
//! assert!(argv.contains(&"--network=none".to_owned()));
//! // Review mode makes the mount read-only; the comma is quoted for the CSV reader.
//! assert!(argv.contains(&r#"--mount=type=bind,"source=/srv/wt,1","target=/srv/wt,1",readonly,bind-recursive=readonly,bind-propagation=rprivate"#.to_owned()));
//! assert_eq!(argv[argv.len() - 4..], ["alpine:3", "sh", "-c", "id"]);
//! ```
//!
//! # Mandatory write-deny set
//!
//! Inside a writable bind (a chat-mode bind mount or a runner state dir)
//! some entries must stay read-only, because the host runs them later
//! (R-PATHS-3): shell rc files (`.bashrc`, `.zshrc`, `.profile`, ...),
//! `.gitconfig`, `.gitmodules`, `.git/hooks` and `.git/config`, the agent's
//! own configuration (`.claude/settings.json`, `.mcp.json`, `~/.claude`),
//! editor and tool settings that run commands (`.vscode`, `.idea`,
//! `.envrc`, ...): the curated
//! [`MANDATORY_WRITE_DENY`](sandbox_core::defaults::MANDATORY_WRITE_DENY)
//! and [`AGENT_CONFIG_WRITE_DENY`](sandbox_core::defaults::AGENT_CONFIG_WRITE_DENY)
//! sets. A container that can write `.git/hooks/pre-commit` or
//! `core.hooksPath` in `.git/config` runs code on the host at its next git
//! command.
//!
//! [`ContainerSpec::from_sandbox_on_host`] enforces the set. It reads the
//! host through a [`sandbox_core::HostView`] and anchors every entry at the
//! run's home, at every writable bind and at every nested repository inside
//! one (found by the caller, for example with
//! `bwrap_spec::discover_git_repos_on_host`). For a repository whose `.git`
//! is a file (a linked worktree or a submodule), the file itself and the
//! `hooks`, `config` and `config.worktree` of the git directory it names
//! join the set. Each entry that exists is bound again read-only, from its
//! canonical host path, at its guest path inside the writable bind; the
//! engine mounts deeper destinations after shallower ones, so the
//! read-only bind always lands on top.
//!
//! A bind mount can only protect something that exists and is not a
//! symlink, so the built spec lists what it could not protect:
//! [`ContainerSpec::unprotected_missing_paths`] (entries that do not exist
//! yet: docker refuses a bind whose source is missing, so the container can
//! create them) and [`ContainerSpec::unprotected_symlinked_paths`] (entries
//! whose name goes through a symlink inside a writable bind; the name
//! stays replaceable, and a symlink leading out of every writable bind is
//! never followed into a bind). A caller that must fail closed creates
//! placeholders for the missing entries before building, or refuses to
//! start while [`ContainerSpec::unprotected_paths`] yields anything; others
//! log them. The directories between the writable bind and an entry
//! (`.git` above `.git/hooks`) get a writable bind of themselves: a mount
//! point cannot be renamed, so `.git` cannot be moved away and replaced by
//! one with other hooks (the `.git` file of a linked worktree is read-only).
//! [`ContainerSpec::from_sandbox`] reads nothing from the host and does none
//! of this.
//!
//! The filename-glob denies (no new `.env`, `*.key`, `*.pem` inside a
//! writable mount, [`FILENAME_GLOB_DENY`](sandbox_core::defaults::FILENAME_GLOB_DENY))
//! are not enforced in a container: a bind mount cannot refuse a new name.
//! [`ContainerSpec::filename_globs_unenforced`] lists them whenever the
//! spec has a writable bind, so a caller that must fail closed (R-DISPATCH-3)
//! can refuse or say so, as the native backend does.
//!
//! ```
//! use docker_spec::{ContainerSpec, ImageRef, Network};
//! use sandbox_core::{FakeHost, Os, SandboxSpec};
//! use std::path::Path;
//!
//! let sandbox: SandboxSpec = serde_json::from_str(
//!     r#"{"sessionId":"s","mode":"chat","bindMounts":[{"hostPath":"/srv/wt","guestPath":"/work"}]}"#,
//! ).unwrap();
//! let mut host = FakeHost::new(Os::Linux);
//! host.dir("/srv/wt/.git/hooks").file("/srv/wt/.git/config");
//! let spec = ContainerSpec::from_sandbox_on_host(
//!     &sandbox, ImageRef::new("alpine:3").unwrap(), Network::None,
//!     Path::new("/home/u"), &[], &host,
//! )
//! .unwrap()
//! .build()
//! .unwrap();
//! let targets: Vec<_> = spec.mounts().iter().map(|m| (m.target(), m.access())).collect();
//! use sandbox_core::Access::{ReadOnly, ReadWrite};
//! assert_eq!(targets, [
//!     ("/work", ReadWrite),
//!     ("/work/.git", ReadWrite),
//!     ("/work/.git/hooks", ReadOnly),
//!     ("/work/.git/config", ReadOnly),
//! ]);
//! // Nothing stops the container from creating a `.bashrc` that does not exist.
//! assert!(spec.unprotected_missing_paths().contains(&"/srv/wt/.bashrc".to_owned()));
//! ```
//!
//! # Input safety
//!
//! - Mount and tmpfs paths: absolute, at most [`MAX_PATH_LEN`] bytes, no
//!   `~`, `..`, NUL, CR or LF ([`ErrorKind::InvalidPath`]); tmpfs targets
//!   also refuse `:` and `,`. Bind sources that are an engine socket or an
//!   ancestor of the well-known socket directories (`/`, `/run`, `/var`,
//!   `/var/run`, `/run/docker`, ...) are refused
//!   ([`ErrorKind::EngineSocket`]).
//! - Image references: at most [`MAX_IMAGE_LEN`] bytes of
//!   `[A-Za-z0-9._/:@-]`, starting with a letter or digit, so they can never
//!   be read as a flag. Network names: at most 128 bytes, not a built-in
//!   network.
//! - Env names: `[A-Za-z_][A-Za-z0-9_]*`, at most 1024 bytes, unique; values
//!   without NUL; secret values also without CR or LF (the env file is one
//!   line per variable). The working directory follows the mount path rules;
//!   command arguments may not contain NUL.
//! - Limits: pids 1 to 1 000 000, memory 6 MiB to 1 TiB, cpus 0.001 to
//!   1024, tmpfs 1 byte to 64 GiB. User and group non-zero.
//!
//! # Crate features
//!
//! This crate has no optional features.

mod argv;
mod command;
mod envfile;
mod error;
mod image;
mod limits;
mod mandatory;
mod mount;
mod spec;

pub use command::DockerCommand;
pub use envfile::EnvFile;
pub use error::{Error, ErrorKind};
pub use image::{ImageRef, MAX_IMAGE_LEN, Network, NetworkName};
pub use limits::{Limits, User};
pub use mount::{BindMount, MAX_PATH_LEN, Tmpfs, csv_record};
pub use spec::{ContainerSpec, ContainerSpecBuilder, HostNamespace, Privileged};
