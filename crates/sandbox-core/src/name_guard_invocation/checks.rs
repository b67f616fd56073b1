//! Checks of single command-line values: argument length and NUL bytes,
//! tool directory names, descriptor numbers, and short previews for errors.

use super::{InvocationProblem, NameGuardInvocation};
use crate::Error;
use std::ffi::OsStr;

pub(super) fn check_arg(a: &OsStr) -> Result<(), Error> {
    let bytes = a.as_encoded_bytes();
    if bytes.len() > NameGuardInvocation::MAX_ARG_BYTES {
        return Err(InvocationProblem::ArgumentTooLong {
            bytes: bytes.len(),
            limit: NameGuardInvocation::MAX_ARG_BYTES,
        }
        .into());
    }
    if bytes.contains(&0) {
        return Err(InvocationProblem::NulByte {
            argument: preview(a, 64),
        }
        .into());
    }
    Ok(())
}

/// A `--tool-dir` value: one path component (no `/`, not `.` or `..`,
/// no NUL), 1 to [`NameGuardInvocation::MAX_TOOL_DIR_LEN`] bytes.
pub(super) fn check_tool_dir(v: &OsStr) -> Result<(), Error> {
    let b = v.as_encoded_bytes();
    if b.is_empty()
        || b.len() > NameGuardInvocation::MAX_TOOL_DIR_LEN
        || b.contains(&b'/')
        || b.contains(&0)
        || b == b"."
        || b == b".."
    {
        return Err(InvocationProblem::BadToolDir {
            name: preview(v, 64),
        }
        .into());
    }
    Ok(())
}

/// A descriptor number: decimal digits only (no sign, no space), at most
/// six, and not a standard stream (the guarded command keeps those).
pub(super) fn parse_fd(v: &OsStr) -> Option<i32> {
    let b = v.as_encoded_bytes();
    if b.is_empty() || b.len() > 6 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: i32 = v.to_str().and_then(|s| s.parse().ok())?;
    (3..NameGuardInvocation::REPORT_FD_LIMIT)
        .contains(&n)
        .then_some(n)
}

/// At most `chars` characters of `a`, lossy, for an error message.
pub(super) fn preview(a: &OsStr, chars: usize) -> String {
    a.to_string_lossy().chars().take(chars).collect()
}
