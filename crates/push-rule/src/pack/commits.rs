//! What a pack says about commits: their parents, read as git reads
//! them, and the walk that proves a fast-forward.

use super::bad;
use crate::commands::{ObjectFormat, ObjectId};
use crate::error::Error;
use std::collections::{HashMap, HashSet, VecDeque};

/// What a pushed pack says about commits: each commit found in it (also
/// those rebuilt from deltas whose base is in the pack) with its parents.
#[derive(Debug, Clone, Default)]
pub struct PackCommits {
    pub(crate) parents: HashMap<ObjectId, Vec<ObjectId>>,
    pub(super) objects: u32,
    pub(super) unresolved: u32,
}

/// The result of a fast-forward proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ancestry {
    /// `old` was reached from `new` through commits in the pack (or the
    /// two are equal).
    Proven,
    /// The walk ended without reaching `old`: treated as forced.
    NotProven,
    /// The walk hit the limit of commits it reads ([`crate::GitLimits`]): treated as forced.
    LimitReached,
}

impl PackCommits {
    /// The parents of commit `id`, if the pack holds it.
    pub fn parents(&self, id: &ObjectId) -> Option<&[ObjectId]> {
        self.parents.get(id).map(Vec::as_slice)
    }

    /// How many commits were found.
    pub fn commits(&self) -> usize {
        self.parents.len()
    }

    /// How many objects the pack holds.
    pub fn objects(&self) -> u32 {
        self.objects
    }

    /// Deltas whose base is not in the pack (thin-pack bases) or could not
    /// be typed: they are not used by the walk.
    pub fn unresolved(&self) -> u32 {
        self.unresolved
    }

    /// Walks parent links from `new` through the pack's commits and says
    /// whether `old` is reached within `max_walk` commits.
    pub fn is_ancestor(&self, old: &ObjectId, new: &ObjectId, max_walk: usize) -> Ancestry {
        if old == new {
            return Ancestry::Proven;
        }
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([*new]);
        while let Some(id) = queue.pop_front() {
            if !seen.insert(id) {
                continue;
            }
            if seen.len() > max_walk {
                return Ancestry::LimitReached;
            }
            let Some(parents) = self.parents.get(&id) else {
                continue;
            };
            for p in parents {
                if p == old {
                    return Ancestry::Proven;
                }
                queue.push_back(*p);
            }
        }
        Ancestry::NotProven
    }
}

/// The `parent` ids of a commit object's header, read as git reads them:
/// the header starts with `tree <id>`, and the parents are the `parent <id>`
/// lines that follow it directly. A `parent` line anywhere later in the
/// header is something git ignores while walking history but a careless
/// reader would not, so such a commit is refused rather than read either
/// way; so is a commit that does not start with a tree line.
pub(super) fn commit_parents(
    body: &[u8],
    format: ObjectFormat,
    offset: u64,
) -> Result<Vec<ObjectId>, Error> {
    let mut lines = body.split(|&b| b == b'\n');
    match lines.next() {
        Some(first) if first.starts_with(b"tree ") => {}
        _ => return Err(bad(offset, "a commit does not start with its tree")),
    }
    let mut out = Vec::new();
    let mut in_parents = true;
    for line in lines {
        if line.is_empty() {
            break;
        }
        match line.strip_prefix(b"parent ") {
            Some(hex) if in_parents => {
                let id = ObjectId::from_hex(hex, format)
                    .ok_or_else(|| bad(offset, "a commit has a malformed parent line"))?;
                out.push(id);
            }
            Some(_) => {
                return Err(bad(
                    offset,
                    "a commit has a parent line after its other headers, which git does not read as a parent",
                ));
            }
            None => in_parents = false,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;

    #[test]
    fn parents_are_the_lines_right_after_the_tree() {
        let f = ObjectFormat::Sha1;
        let a = "1".repeat(40);
        let b = "2".repeat(40);
        let t = "3".repeat(40);
        let ok =
            format!("tree {t}\nparent {a}\nparent {b}\nauthor x\ncommitter x\n\nmsg\nparent {a}\n");
        assert_eq!(commit_parents(ok.as_bytes(), f, 0).unwrap().len(), 2);
        // A parent line after the committer: git sees a root commit.
        let late = format!("tree {t}\nauthor x\ncommitter x\nparent {a}\n\nmsg\n");
        assert!(commit_parents(late.as_bytes(), f, 0).is_err());
        let no_tree = format!("parent {a}\ntree {t}\n\nmsg\n");
        assert!(commit_parents(no_tree.as_bytes(), f, 0).is_err());
        let root = format!("tree {t}\nauthor x\n\nmsg\n");
        assert!(commit_parents(root.as_bytes(), f, 0).unwrap().is_empty());
    }
}
