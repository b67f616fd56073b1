//! Name syntax and the secret-name test.

use crate::lists::{SECRET_INFIXES, SECRET_NAMES, SECRET_PREFIXES, SECRET_SEGMENTS};
use std::ffi::OsStr;

/// Longest variable name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 1024;

/// The name as `&str` when it is `[A-Za-z_][A-Za-z0-9_]*` and at most
/// [`MAX_NAME_LEN`] bytes; `None` otherwise (including non-UTF-8 names).
pub(crate) fn valid_name(name: &OsStr) -> Option<&str> {
    let s = name.to_str()?;
    if is_valid_name(s) { Some(s) } else { None }
}

/// Whether `name` is `[A-Za-z_][A-Za-z0-9_]*` and at most [`MAX_NAME_LEN`]
/// bytes.
pub fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.first() {
        Some(b) if b.is_ascii_alphabetic() || *b == b'_' => {}
        _ => return false,
    }
    bytes.len() <= MAX_NAME_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// Splits a valid name into segments: at `_`, between a lower-case letter
/// and an upper-case one (`apiKey` -> `api`, `Key`), and between letters and
/// digits (`KEY2` -> `KEY`, `2`). Empty segments are skipped.
fn segments(name: &str) -> impl Iterator<Item = &str> {
    let bytes = name.as_bytes();
    let mut start = 0;
    let mut out = Vec::new();
    for i in 0..bytes.len() {
        let b = bytes[i];
        if b == b'_' {
            out.push(&name[start..i]);
            start = i + 1;
            continue;
        }
        if i > start {
            let prev = bytes[i - 1];
            let camel = prev.is_ascii_lowercase() && b.is_ascii_uppercase();
            let digit_edge = prev.is_ascii_digit() != b.is_ascii_digit();
            if camel || digit_edge {
                out.push(&name[start..i]);
                start = i;
            }
        }
    }
    out.push(&name[start..]);
    out.into_iter().filter(|s| !s.is_empty())
}

/// Whether a valid name looks like a secret or a credential pointer: a
/// segment equal to one of [`SECRET_SEGMENTS`] or containing one of
/// [`SECRET_INFIXES`], an exact name in [`SECRET_NAMES`], or a prefix in
/// [`SECRET_PREFIXES`]. Comparison is ASCII case-insensitive.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_NAMES.contains(&upper.as_str())
        || SECRET_PREFIXES.iter().any(|p| upper.starts_with(p))
    {
        return true;
    }
    segments(name).any(|seg| {
        let seg = seg.to_ascii_uppercase();
        SECRET_SEGMENTS.contains(&seg.as_str()) || SECRET_INFIXES.iter().any(|w| seg.contains(w))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_on_underscore_case_and_digits() {
        let got: Vec<_> = segments("my_apiKey2__X").collect();
        assert_eq!(got, ["my", "api", "Key", "2", "X"]);
    }
}
