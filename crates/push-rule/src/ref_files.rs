//! A git directory's ref files as bytes, read without git: a loose ref
//! (one id, then a newline or nothing) and the line of a `packed-refs`
//! file that names a ref. Both are untrusted (a sandboxed run writes them):
//! each read is bounded by its caller, nothing here allocates more than
//! the id, and anything but an id of the repository's format is refused.

use crate::commands::ObjectFormat;

/// Why a ref file does not give an id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefFileError {
    /// The loose ref is symbolic (`ref: ...`): a branch ref must name a
    /// commit.
    #[error("a symbolic ref, not an object id")]
    Symbolic,
    /// The bytes are not one lowercase hexadecimal id of the format.
    #[error("not an object id of the repository's format")]
    NotAnId,
}

fn is_id(s: &[u8], format: ObjectFormat) -> bool {
    s.len() == format.hex_len() && s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The id a loose ref file holds: exactly one id of `format`, then one
/// newline or nothing.
///
/// ```
/// use push_rule::{ObjectFormat, loose_ref_id};
/// let id = "a".repeat(40);
/// assert_eq!(loose_ref_id(format!("{id}\n").as_bytes(), ObjectFormat::Sha1), Ok(id.as_str()));
/// assert!(loose_ref_id(b"ref: refs/heads/main\n", ObjectFormat::Sha1).is_err());
/// ```
pub fn loose_ref_id(bytes: &[u8], format: ObjectFormat) -> Result<&str, RefFileError> {
    let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if text.starts_with(b"ref:") {
        return Err(RefFileError::Symbolic);
    }
    if !is_id(text, format) {
        return Err(RefFileError::NotAnId);
    }
    std::str::from_utf8(text).map_err(|_| RefFileError::NotAnId)
}

/// The id `refname` has in a `packed-refs` file's bytes, `None` when no
/// line names it. Comment (`#`) and peeled (`^`) lines are skipped; a line
/// that names the ref with anything but an id of `format` is an error; the
/// last line naming it wins (none should repeat).
///
/// ```
/// use push_rule::{ObjectFormat, packed_ref_id};
/// let text = format!("# pack-refs with: peeled\n{} refs/heads/task\n", "b".repeat(40));
/// let got = packed_ref_id(text.as_bytes(), "refs/heads/task", ObjectFormat::Sha1);
/// assert_eq!(got, Ok(Some("b".repeat(40).as_str())));
/// ```
pub fn packed_ref_id<'a>(
    bytes: &'a [u8],
    refname: &str,
    format: ObjectFormat,
) -> Result<Option<&'a str>, RefFileError> {
    let mut found = None;
    for line in bytes.split(|b| *b == b'\n') {
        if line.first().is_some_and(|b| *b == b'#' || *b == b'^') {
            continue;
        }
        let Some(space) = line.iter().position(|b| *b == b' ') else {
            continue;
        };
        let (id, name) = (&line[..space], &line[space + 1..]);
        if name != refname.as_bytes() {
            continue;
        }
        if !is_id(id, format) {
            return Err(RefFileError::NotAnId);
        }
        found = Some(std::str::from_utf8(id).map_err(|_| RefFileError::NotAnId)?);
    }
    Ok(found)
}
