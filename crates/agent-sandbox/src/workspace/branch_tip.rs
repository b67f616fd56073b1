//! The commit a session's branch names, read from its layer's git
//! directory without git: a loose ref (`refs/heads/BRANCH`, one id and a
//! newline) or, when there is none, the line of `packed-refs` that names
//! it. Anything else (a symbolic ref, a link, a malformed or oversized
//! file) is an error naming what was found.

use super::checkout::ObjectFormat;
use super::layer_files::{LayerRead, read_file};
use std::os::fd::AsFd;

/// Most bytes of a loose ref read.
const MAX_LOOSE_REF: u64 = 256;
/// Most bytes of a `packed-refs` read.
pub(crate) const MAX_PACKED_REFS: u64 = 32 << 20;

/// Why the branch's commit could not be read.
#[derive(Debug)]
pub(crate) enum TipError {
    /// Neither a loose ref nor a packed one names the branch.
    Gone,
    /// What was found is not an id of the repository's format.
    Malformed(&'static str),
    /// The file could not be read safely.
    Unreadable(&'static str, LayerRead),
}

impl std::fmt::Display for TipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TipError::Gone => f.write_str("the branch no longer exists in the workspace"),
            TipError::Malformed(what) => write!(f, "{what} is not an object id"),
            TipError::Unreadable(what, why) => write!(f, "{what}: {why}"),
        }
    }
}

/// The commit `refs/heads/BRANCH` names in the git directory `git_dir`.
pub(crate) fn branch_tip(
    git_dir: impl AsFd,
    branch: &str,
    format: ObjectFormat,
) -> Result<String, TipError> {
    let loose = format!("refs/heads/{branch}");
    match read_file(&git_dir, &loose, MAX_LOOSE_REF) {
        Ok(bytes) => return parse_loose(&bytes, format),
        Err(LayerRead::Missing) => {}
        Err(e) => return Err(TipError::Unreadable("the branch's ref", e)),
    }
    let packed = match read_file(&git_dir, "packed-refs", MAX_PACKED_REFS) {
        Ok(bytes) => bytes,
        Err(LayerRead::Missing) => return Err(TipError::Gone),
        Err(e) => return Err(TipError::Unreadable("packed-refs", e)),
    };
    find_packed(&packed, &loose, format)
}

/// A loose ref's contents: exactly one id, then a newline (or none).
pub(crate) fn parse_loose(bytes: &[u8], format: ObjectFormat) -> Result<String, TipError> {
    match push_rule::loose_ref_id(bytes, format.into()) {
        Ok(id) => Ok(id.to_owned()),
        Err(push_rule::RefFileError::Symbolic) => {
            Err(TipError::Malformed("the branch's ref (a symbolic ref)"))
        }
        Err(_) => Err(TipError::Malformed("the branch's ref")),
    }
}

/// The id `refname` has in a `packed-refs` file (comment and peeled lines
/// skipped); the last line naming it wins, as none should repeat.
pub(crate) fn find_packed(
    bytes: &[u8],
    refname: &str,
    format: ObjectFormat,
) -> Result<String, TipError> {
    match push_rule::packed_ref_id(bytes, refname, format.into()) {
        Ok(Some(id)) => Ok(id.to_owned()),
        Ok(None) => Err(TipError::Gone),
        Err(_) => Err(TipError::Malformed("the branch's packed ref")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_refs_are_one_id() {
        let id = "a".repeat(40);
        assert_eq!(
            parse_loose(format!("{id}\n").as_bytes(), ObjectFormat::Sha1).unwrap(),
            id
        );
        for bad in [
            "ref: refs/heads/main\n".to_owned(),
            format!("{id}\n\n"),
            format!("{id} "),
            "A".repeat(40),
            "a".repeat(64),
            String::new(),
        ] {
            assert!(
                parse_loose(bad.as_bytes(), ObjectFormat::Sha1).is_err(),
                "{bad:?}"
            );
        }
        assert!(parse_loose(&[0xff; 40], ObjectFormat::Sha1).is_err());
    }

    #[test]
    fn packed_refs_give_the_named_line() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let text =
            format!("# pack-refs with: peeled\n{a} refs/heads/main\n^{b}\n{b} refs/heads/task\n");
        let got = find_packed(text.as_bytes(), "refs/heads/task", ObjectFormat::Sha1).unwrap();
        assert_eq!(got, b);
        assert!(matches!(
            find_packed(text.as_bytes(), "refs/heads/gone", ObjectFormat::Sha1),
            Err(TipError::Gone)
        ));
        assert!(matches!(
            find_packed(
                b"zz refs/heads/task\n",
                "refs/heads/task",
                ObjectFormat::Sha1
            ),
            Err(TipError::Malformed(_))
        ));
    }
}
