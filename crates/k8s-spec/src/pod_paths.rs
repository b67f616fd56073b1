//! The checks every path of a profile or a mount passes: a plain absolute
//! path inside the pod or on a node, and no node directory that holds the
//! secret set.

use crate::{Error, ErrorKind};
use sandbox_core::defaults::SECRET_READ_DENY;
use std::path::{Component, Path};

/// A path inside the pod (or on a node): absolute, at most 4096 bytes, no
/// NUL, `..` or `.` component, not `/`.
pub(crate) fn guest_path(what: &'static str, path: &str) -> Result<(), Error> {
    let bad = |reason| -> Error {
        ErrorKind::InvalidValue {
            what,
            value: path.chars().take(256).collect(),
            reason,
        }
        .into()
    };
    if path.len() > sandbox_core::MAX_PATH_LEN {
        return Err(bad("longer than 4096 bytes"));
    }
    if !path.starts_with('/') || path.contains('\0') {
        return Err(bad("give an absolute path without NUL bytes"));
    }
    if path.split('/').any(|c| c == ".." || c == ".") {
        return Err(bad("a path with `.` or `..` components is refused"));
    }
    if path.trim_end_matches('/').is_empty() {
        return Err(bad("the root directory cannot be mounted"));
    }
    Ok(())
}

/// Whether `inner` is `outer` or lies below it, by components.
pub(crate) fn within(inner: &str, outer: &str) -> bool {
    Path::new(inner).starts_with(Path::new(outer))
}

fn components(path: &str) -> Vec<&str> {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect()
}

/// Refuses a node directory that is a whole home (or above one), or is, or
/// holds, or lies inside an entry of the fixed secret set, by name (what a
/// directory of another name holds cannot be known here).
pub(crate) fn secret_host_path(path: &str) -> Result<(), Error> {
    let comps = components(path);
    let home_like = matches!(
        comps.as_slice(),
        [] | ["home"] | ["root"] | ["Users"] | ["home", _] | ["Users", _] | ["var"]
    );
    if home_like {
        return Err(ErrorKind::SecretPath {
            path: path.to_owned(),
            entry: "a home directory",
        }
        .into());
    }
    for c in SECRET_READ_DENY {
        let Some(rel) = c.entry.strip_prefix("~/") else {
            continue;
        };
        let want = components(rel);
        // The path is the entry, lies inside it, or ends within its
        // parents (`.config` holds `.config/gh`).
        let hit = (0..comps.len()).any(|start| {
            for (i, w) in want.iter().enumerate() {
                let Some(got) = comps.get(start + i) else {
                    return i > 0;
                };
                let same = match w.strip_suffix('*') {
                    Some(prefix) => got.starts_with(prefix),
                    None => got == w,
                };
                if !same {
                    return false;
                }
            }
            true
        });
        if hit {
            return Err(ErrorKind::SecretPath {
                path: path.to_owned(),
                entry: c.entry,
            }
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_host_paths_are_refused() {
        for bad in [
            "/",
            "/home",
            "/home/u",
            "/root",
            "/home/u/.ssh",
            "/home/u/.ssh/keys",
            "/srv/x/.aws",
            "/home/u/.config/gh",
            "/home/u/.cargo/credentials.toml",
            "/Users/me",
            "/home/u/.config",
            "/srv/.cargo",
        ] {
            assert!(secret_host_path(bad).is_err(), "{bad}");
        }
        for ok in ["/srv/work", "/home/u/src", "/home/u/.configs", "/data/ssh"] {
            assert!(secret_host_path(ok).is_ok(), "{ok}");
        }
    }
}
