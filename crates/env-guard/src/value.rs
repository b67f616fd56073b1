//! The checked-values stage: locale, terminal and time zone variables.

use std::ffi::OsStr;

/// Longest value accepted for a checked variable, in bytes.
const MAX_CHECKED_LEN: usize = 256;

/// Whether the value check applies to `name`.
pub(crate) fn is_checked(name: &str) -> bool {
    matches!(
        name,
        "LANG" | "LANGUAGE" | "LINGUAS" | "TERM" | "COLORTERM" | "TZ"
    ) || name.starts_with("LC_")
}

/// Whether `value` is safe for the checked variable `name`.
///
/// Every checked value must be printable ASCII without spaces and at most
/// 256 bytes. `TZ` then follows sudo's rules: an optional leading `:`, an
/// absolute path only under `/usr/share/zoneinfo/`, and no `..` component.
/// The others may not contain `/`, `%` or `..`.
pub(crate) fn value_is_safe(name: &str, value: &OsStr) -> bool {
    let Some(v) = value.to_str() else {
        return false;
    };
    if v.len() > MAX_CHECKED_LEN || !v.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    if name == "TZ" {
        let v = v.strip_prefix(':').unwrap_or(v);
        if v.starts_with('/') && !v.starts_with("/usr/share/zoneinfo/") {
            return false;
        }
        return !v.split('/').any(|c| c == "..");
    }
    !(v.contains('/') || v.contains('%') || v.contains(".."))
}
