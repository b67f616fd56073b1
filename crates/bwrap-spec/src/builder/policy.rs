//! The policy both mechanisms enforce, decided from the spec and resolved
//! against the host: filename rules, read denies and write denies.

use super::{BwrapBuilder, SYSTEM_SECRETS, TERMINAL_SECRET_DIRS, expand};
use crate::denies::{ReadDenies, is_under};
use crate::plan::{FilenameRules, Profile};
use crate::{Error, ErrorKind};
use sandbox_core::defaults::{FILENAME_GLOB_DENY, secret_read_deny_entries};
use sandbox_core::{Access, HostView, PathSet};

impl BwrapBuilder {
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

    /// The policy both mechanisms enforce, resolved against the host:
    /// checks the spec, decides the filename rules, resolves the read and
    /// write denies.
    pub(super) fn policy<H: HostView + ?Sized>(&self, host: &H) -> Result<Policy, Error> {
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

        // The extra read denies: paths, and globs, whose matches now are
        // hidden like paths and whose new matches the name guard refuses.
        let mut extra_paths: Vec<String> = Vec::new();
        let mut read_globs: Vec<String> = Vec::new();
        for p in &self.extra_read_deny {
            if !sandbox_core::is_glob(p) {
                extra_paths.push(p.clone());
                continue;
            }
            let g = expand(p, home);
            extra_paths.extend(sandbox_core::glob::expand_read_glob(&g, host)?);
            let resolved = sandbox_core::glob::resolved_glob_spelling(&g, host);
            for spelling in std::iter::once(g).chain(resolved) {
                if !read_globs.contains(&spelling) {
                    read_globs.push(spelling);
                }
            }
        }

        if terminal && let Some(g) = read_globs.first() {
            return Err(ErrorKind::BadPath {
                path: g.clone(),
                reason: "a read-deny glob needs the name guard to refuse new matches, which the \
                         terminal profile does not run; list the paths",
            }
            .into());
        }

        // Filename-glob denies: needed whenever something is writable.
        let globs: Vec<String> = FILENAME_GLOB_DENY
            .iter()
            .map(|c| c.entry.to_string())
            .chain(read_globs.iter().cloned())
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
        for p in &self.read_reopen {
            if sandbox_core::is_glob(p) {
                return Err(ErrorKind::BadPath {
                    path: p.clone(),
                    reason: "a path read again is a path, not a glob",
                }
                .into());
            }
            let p = expand(p, home);
            if read_globs
                .iter()
                .any(|g| sandbox_core::glob::within_glob_match(&p, g))
            {
                return Err(ErrorKind::BadPath {
                    path: p,
                    reason: "a path read again cannot lie inside a match of a read-deny glob",
                }
                .into());
            }
        }
        let read_entries: Vec<String> = secrets
            .into_iter()
            .chain(SYSTEM_SECRETS.iter().map(|s| s.to_string()))
            .collect();
        let read_deny = ReadDenies {
            fixed: PathSet::resolve(&read_entries, home, host)?,
            extra: PathSet::resolve(&extra_paths, home, host)?,
            reopen: PathSet::resolve(&self.read_reopen, home, host)?,
        };
        if let Some(path) = read_deny.reopen_into_secrets() {
            return Err(ErrorKind::BadPath {
                path,
                reason: "a path read again cannot reach into the fixed secret set",
            }
            .into());
        }
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
            write_entries.extend(sandbox_core::git::write_denies_at_roots(
                home, anchors, host,
            ));
        }
        let write_deny = PathSet::resolve(&write_entries, home, host)?;
        let (state_dirs, tool_dirs) = if guard_globs.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            (self.state_dirs(host)?, self.tool_dirs.clone())
        };
        Ok(Policy {
            terminal,
            home_str,
            workdir,
            writable,
            dropped,
            guard_globs,
            state_dirs,
            tool_dirs,
            read_deny,
            write_deny,
        })
    }

    /// The runner state directories in their literal and resolved
    /// spellings, for the name guard: its name rules keep to the
    /// workspace and do not hold inside these. One that holds a writable
    /// mount (or is one) is refused: the rules would not hold in that
    /// mount.
    fn state_dirs<H: HostView + ?Sized>(&self, host: &H) -> Result<Vec<String>, Error> {
        let dirs: Vec<String> = self
            .spec
            .runner_state_dirs
            .iter()
            .map(|d| expand(d, &self.home))
            .collect();
        let set = PathSet::resolve(&dirs, &self.home, host)?;
        let spellings = set.spellings();
        for (m, access) in self.spec.mount_accesses() {
            if access != Access::ReadWrite {
                continue;
            }
            let mount = PathSet::resolve([m.host_path.as_str()], &self.home, host)?;
            for mp in mount.spellings() {
                if let Some(d) = spellings.iter().find(|d| is_under(&mp, d)) {
                    return Err(ErrorKind::BadPath {
                        path: d.clone(),
                        reason: "a runner state directory may not hold a writable mount: the \
                                 filename rules (.env, *.key, *.pem), which keep to the \
                                 workspace, would not hold in that mount",
                    }
                    .into());
                }
            }
        }
        Ok(spellings)
    }
}

/// What [`BwrapBuilder::policy`] decided.
pub(super) struct Policy {
    pub(super) terminal: bool,
    pub(super) home_str: String,
    pub(super) workdir: String,
    pub(super) writable: Vec<String>,
    pub(super) dropped: Vec<String>,
    pub(super) guard_globs: Vec<String>,
    pub(super) state_dirs: Vec<String>,
    pub(super) tool_dirs: Vec<String>,
    pub(super) read_deny: ReadDenies,
    pub(super) write_deny: PathSet,
}
