//! The plan for the Landlock mechanism: the same policy as paths on the
//! host, with no mounts.

use super::BwrapBuilder;
use crate::Error;
use crate::denies::is_under;
use sandbox_core::HostView;

impl BwrapBuilder {
    /// The same policy for the Landlock mechanism, which runs the command
    /// on the host with no mounts: what must be writable, unreadable,
    /// readable again and protected, as paths, and the name guard's rules.
    /// Globs among the denies stay name rules (they are never paths here).
    pub fn host_plan<H: HostView + ?Sized>(&self, host: &H) -> Result<HostPlan, Error> {
        // The secret and write-deny sets ask for the same few directories'
        // canonical paths once per entry: ask the host once.
        let host = &sandbox_core::RememberingHost::new(host);
        let p = self.policy(host)?;
        let literal = |v: Vec<String>| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for s in v {
                if !sandbox_core::is_glob(&s) && !out.contains(&s) {
                    out.push(s);
                }
            }
            out
        };
        let in_writable = |q: &String| p.writable.iter().any(|w| is_under(q, w));
        let read_deny = literal(
            p.read_deny
                .fixed
                .spellings()
                .into_iter()
                .chain(p.read_deny.extra.spellings())
                .collect(),
        );
        let mut protect = literal(p.write_deny.spellings());
        protect.retain(|q| in_writable(q));
        // A secret inside a writable tree is written no more than read.
        for q in &read_deny {
            if in_writable(q) && !protect.contains(q) {
                protect.push(q.clone());
            }
        }
        Ok(HostPlan {
            writable: p.writable.clone(),
            read_deny,
            read_again: literal(p.read_deny.reopen.spellings()),
            protect,
            name_rules: p.guard_globs,
            state_dirs: p.state_dirs,
            tool_dirs: p.tool_dirs,
            dropped_name_rules: p.dropped,
            workdir: p.workdir,
        })
    }
}

/// The policy of a spec for the Landlock mechanism
/// ([`BwrapBuilder::host_plan`]): absolute host paths, each once.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostPlan {
    /// The writable trees: chat-mode writable mounts and runner state
    /// directories.
    pub writable: Vec<String>,
    /// Paths nothing may read: the secret set, the system secrets and the
    /// host's extra denies.
    pub read_deny: Vec<String>,
    /// Paths inside an extra deny that are readable again.
    pub read_again: Vec<String>,
    /// Paths inside the writable trees that stay unwritable, unremovable
    /// and unmovable with all below them: the mandatory write-deny set,
    /// protected paths, git's pointers and hooks, and secrets.
    pub protect: Vec<String>,
    /// The name guard's filename rules (empty when dropped by the opt-out):
    /// the name globs, the read-deny globs, then absolute paths.
    pub name_rules: Vec<String>,
    /// The runner state directories (literal and resolved spellings),
    /// where the name globs do not hold (empty when there are no rules).
    pub state_dirs: Vec<String>,
    /// The names of the directories package managers own, below which the
    /// name globs do not hold (empty when there are no rules).
    pub tool_dirs: Vec<String>,
    /// The filename rules the explicit opt-out dropped (to log).
    pub dropped_name_rules: Vec<String>,
    /// The working directory.
    pub workdir: String,
}
