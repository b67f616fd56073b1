//! The fixed terminal profile (R-SEATBELT-8, R-TERMINAL-1).

use crate::error::{Error, ErrorKind};
use crate::model::{Action, Filter, Operation, Profile, Rule};
use crate::policy::{ancestors, deny_filters, device_filters, resolve_dirs, subpath_filters};
use crate::target_host::MacTarget;
use sandbox_core::{HostView, PathSet};
use std::path::Path;

/// The secret directories a sandboxed terminal cannot read (shared with the
/// Linux terminal profile through sandbox-core).
pub use sandbox_core::defaults::TERMINAL_SECRET_DIRS;

/// Builds the terminal profile: `$HOME` and the session workdir writable,
/// the network open, the five [`TERMINAL_SECRET_DIRS`] unreadable and
/// unwritable (both spellings), and none of them (nor an ancestor) can be
/// deleted or renamed away, since a writable home would otherwise let a
/// shell move `~/.ssh` out of the rule's reach. Each secret is a `subpath`
/// unless `host` shows it to be a regular file (then a `literal`), as in
/// [`DispatchProfileBuilder`](crate::DispatchProfileBuilder).
///
/// ```
/// use sandbox_core::{FakeHost, Os};
/// use seatbelt_profile::TerminalProfileBuilder;
/// let mut b = TerminalProfileBuilder::new();
/// b.home("/Users/dev").workdir("/Users/dev/src/app");
/// let text = b.build(&FakeHost::new(Os::MacOs)).unwrap().render().unwrap();
/// assert!(text.text().contains("(deny file-read*"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct TerminalProfileBuilder {
    home: Option<String>,
    workdir: Option<String>,
    temp_dirs: Vec<String>,
}

impl TerminalProfileBuilder {
    /// A builder; the home directory must still be set.
    pub fn new() -> TerminalProfileBuilder {
        TerminalProfileBuilder::default()
    }

    /// The user's home directory (writable).
    pub fn home(&mut self, home: impl Into<String>) -> &mut TerminalProfileBuilder {
        self.home = Some(home.into());
        self
    }

    /// The session's working directory (writable).
    pub fn workdir(&mut self, dir: impl Into<String>) -> &mut TerminalProfileBuilder {
        self.workdir = Some(dir.into());
        self
    }

    /// Adds a temp directory the shell may write.
    pub fn temp_dir(&mut self, dir: impl Into<String>) -> &mut TerminalProfileBuilder {
        self.temp_dirs.push(dir.into());
        self
    }

    /// Resolves the paths on `host` and builds the profile.
    pub fn build<H: HostView + ?Sized>(&self, host: &H) -> Result<Profile, Error> {
        let host = &MacTarget(host);
        let home_s = self
            .home
            .as_deref()
            .ok_or(ErrorKind::Missing { what: "home" })?;
        let home = Path::new(home_s);
        let mut dirs = vec![home_s.to_owned()];
        dirs.extend(self.workdir.iter().cloned());
        dirs.extend(self.temp_dirs.iter().cloned());
        let writable = resolve_dirs(&dirs, home, host)?;
        let secrets = PathSet::resolve(TERMINAL_SECRET_DIRS, home, host)?;

        let mut p = Profile::new();
        p.comment("Terminal profile (R-SEATBELT-8): allow by default, network open.");
        p.rule(Rule::new(Action::Allow, Operation::Default, Vec::new()));
        p.comment("The secret directories are unreadable, in both spellings.");
        p.rule_if_any(
            Action::Deny,
            &[Operation::FileReadAll],
            deny_filters(&secrets, host)?,
        );
        p.comment("Writes: reset, then home, the workdir and the temp dirs.");
        p.rule(Rule::new(Action::Deny, Operation::FileWriteAll, Vec::new()));
        let mut allow = subpath_filters(&writable, host)?;
        allow.extend(device_filters()?);
        p.rule_if_any(Action::Allow, &[Operation::FileWriteAll], allow);
        p.comment("The secret directories stay unwritable and cannot be moved away.");
        p.rule_if_any(
            Action::Deny,
            &[Operation::FileWriteAll],
            deny_filters(&secrets, host)?,
        );
        p.rule_if_any(
            Action::Deny,
            &[Operation::FileWriteUnlink, Operation::FileWriteCreate],
            ancestors(&[&secrets], host)?
                .into_iter()
                .map(Filter::Literal)
                .collect(),
        );
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::TERMINAL_SECRET_DIRS;
    use sandbox_core::defaults::SECRET_READ_DENY;

    #[test]
    fn terminal_dirs_are_curated_secrets() {
        for dir in TERMINAL_SECRET_DIRS {
            assert!(SECRET_READ_DENY.iter().any(|c| c.entry == *dir), "{dir}");
        }
    }
}
