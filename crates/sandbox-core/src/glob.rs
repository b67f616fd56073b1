//! Read-deny globs (`/w/proj/certs/*.pem`, `/w/**/*.pem`): the matches
//! that exist at launch, found on the host ([`expand_read_glob`]), and the
//! one matching rule they share with the name guard, which refuses creating
//! a new match for the life of the session: `*` is any run of bytes but
//! `/`, `?` one byte but `/`, a whole component `**` (at most one, never
//! the last) any number of directories, none included; every other byte
//! literal, ASCII case ignored (a glob that fails closed: `X.PEM` is a
//! match of `*.pem`).
//!
//! # Input safety
//!
//! A glob is at most [`MAX_PATH_LEN`](crate::MAX_PATH_LEN) bytes; an
//! expansion lists at most [`MAX_GLOB_LISTINGS`] directories and gives at
//! most [`MAX_GLOB_MATCHES`] paths, or fails naming the limit. Matching is
//! O(pattern x name) per component.

use crate::host::HostView;
use crate::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// Most paths one glob may match at launch.
pub const MAX_GLOB_MATCHES: usize = 4096;

/// Most directories one glob's expansion may list.
pub const MAX_GLOB_LISTINGS: usize = 1024;

/// Checks that `glob` is a read-deny glob this crate can honour: absolute,
/// wildcards `*` and `?` inside components and one whole component `**`
/// before the last (no `[...]` classes), no NUL, within the length limit.
pub fn check_read_glob(glob: &str) -> Result<(), Error> {
    let bad = |reason: &'static str| -> Error {
        ErrorKind::BadGlob {
            glob: glob.chars().take(200).collect(),
            reason,
        }
        .into()
    };
    if glob.len() > crate::MAX_PATH_LEN {
        return Err(bad("longer than 4096 bytes"));
    }
    if glob.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    if !glob.starts_with('/') {
        return Err(bad("not absolute"));
    }
    let parts = components(glob);
    if parts.iter().any(|c| c.contains("**") && *c != "**") {
        return Err(bad(
            "** stands only as a whole name, for any number of directories (/w/**/*.pem)",
        ));
    }
    match parts.iter().filter(|c| **c == "**").count() {
        0 => {}
        1 if parts.last() != Some(&"**") => {}
        1 => {
            return Err(bad(
                "a trailing /** means the directory itself: list that directory",
            ));
        }
        _ => return Err(bad("at most one ** (any number of directories)")),
    }
    if glob.contains('[') {
        return Err(bad("character classes ([...]) are not supported"));
    }
    if glob.split('/').any(|c| c == "..") {
        return Err(bad("contains a `..` component"));
    }
    Ok(())
}

/// Whether the name `name` matches the one-component glob `pattern` (`*`
/// and `?` never match `/`; ASCII case ignored). Linear backtracking on the
/// last `*`, so O(pattern x name).
pub fn glob_matches_name(pattern: &[u8], name: &[u8]) -> bool {
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < name.len() {
        match pattern.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if (c == b'?' && name[si] != b'/') || c.eq_ignore_ascii_case(&name[si]) => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) if name[ss] != b'/' => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                _ => return false,
            },
        }
    }
    pattern[pi..].iter().all(|&c| c == b'*')
}

/// The components of an absolute path or glob, without empty ones and `.`.
fn components(p: &str) -> Vec<&str> {
    p.split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// Whether the components `pc` of a path match the components `gc` of a
/// glob (a `**` component taking any number of them, none included).
fn components_match(gc: &[&str], pc: &[&str]) -> bool {
    let name = |g: &&str, p: &&str| glob_matches_name(g.as_bytes(), p.as_bytes());
    match gc.iter().position(|c| *c == "**") {
        None => gc.len() == pc.len() && gc.iter().zip(pc).all(|(g, p)| name(g, p)),
        Some(at) => {
            let (before, after) = (&gc[..at], &gc[at + 1..]);
            pc.len() >= before.len() + after.len()
                && before.iter().zip(pc).all(|(g, p)| name(g, p))
                && after
                    .iter()
                    .zip(&pc[pc.len() - after.len()..])
                    .all(|(g, p)| name(g, p))
        }
    }
}

/// Whether `path` is a match of `glob` or lies below one (lexically, per
/// component).
pub fn within_glob_match(path: &str, glob: &str) -> bool {
    let (pc, gc) = (components(path), components(glob));
    (0..=pc.len()).any(|n| components_match(&gc, &pc[..n]))
}

/// The directory a glob's matches all lie under: its components before the
/// first one with a wildcard.
pub fn glob_base(glob: &str) -> String {
    let fixed: Vec<&str> = components(glob)
        .into_iter()
        .take_while(|c| !crate::is_glob(c))
        .collect();
    format!("/{}", fixed.join("/"))
}

/// The paths that match `glob` on `host` now, sorted (checked with
/// [`check_read_glob`] first). A directory on the way that exists but
/// cannot be listed, or more than [`MAX_GLOB_LISTINGS`] directories to
/// list or [`MAX_GLOB_MATCHES`] matches, is an error: a match that could
/// not be seen could not be hidden.
///
/// ```
/// use sandbox_core::{FakeHost, Os, glob::expand_read_glob};
/// let mut host = FakeHost::new(Os::Linux);
/// host.file("/w/certs/a.pem").file("/w/certs/B.PEM").file("/w/certs/notes.txt");
/// assert_eq!(expand_read_glob("/w/certs/*.pem", &host).unwrap(), ["/w/certs/B.PEM", "/w/certs/a.pem"]);
/// assert!(expand_read_glob("/w/none/*.pem", &host).unwrap().is_empty());
/// ```
pub fn expand_read_glob<H: HostView + ?Sized>(glob: &str, host: &H) -> Result<Vec<String>, Error> {
    check_read_glob(glob)?;
    let failed = |reason: String| -> Error {
        ErrorKind::GlobExpansion {
            glob: glob.chars().take(200).collect(),
            reason,
        }
        .into()
    };
    let mut frontier: Vec<PathBuf> = vec![PathBuf::from("/")];
    let mut listings = 0usize;
    for c in components(glob) {
        if c == "**" {
            // Every directory at or below the frontier's (symbolic links
            // not followed: what they lead to is decided where it lies).
            let mut all = Vec::new();
            let mut todo: Vec<PathBuf> = frontier.into_iter().filter(|d| host.is_dir(d)).collect();
            while let Some(dir) = todo.pop() {
                listings += 1;
                if listings > MAX_GLOB_LISTINGS {
                    return Err(failed(format!(
                        "it would list more than {MAX_GLOB_LISTINGS} directories; narrow it"
                    )));
                }
                let names = host
                    .list_dir(&dir)
                    .ok_or_else(|| failed(format!("{} cannot be listed", dir.display())))?;
                let real = host.canonicalize(&dir);
                for name in names {
                    let p = dir.join(&name);
                    // A directory whose resolved path is not its parent's
                    // plus its name is (or lies through) a symbolic link.
                    if host.is_dir(&p)
                        && real.as_ref().map(|r| r.join(&name)) == host.canonicalize(&p)
                    {
                        todo.push(p);
                    }
                }
                all.push(dir);
            }
            frontier = all;
            continue;
        }
        if !crate::is_glob(c) {
            for p in &mut frontier {
                p.push(c);
            }
            continue;
        }
        let mut next = Vec::new();
        for dir in &frontier {
            // A missing path or a file has nothing below it to match.
            if !host.is_dir(dir) {
                continue;
            }
            listings += 1;
            if listings > MAX_GLOB_LISTINGS {
                return Err(failed(format!(
                    "it would list more than {MAX_GLOB_LISTINGS} directories; narrow it"
                )));
            }
            let names = host
                .list_dir(dir)
                .ok_or_else(|| failed(format!("{} cannot be listed", dir.display())))?;
            for name in names {
                if glob_matches_name(c.as_bytes(), name.as_encoded_bytes()) {
                    if next.len() >= MAX_GLOB_MATCHES {
                        return Err(failed(format!(
                            "it matches more than {MAX_GLOB_MATCHES} paths; narrow it"
                        )));
                    }
                    next.push(dir.join(name));
                }
            }
        }
        frontier = next;
    }
    let mut out: Vec<String> = frontier
        .into_iter()
        .filter(|p| host.exists(p))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// `glob` with its fixed directory ([`glob_base`]) in its symlink-resolved
/// spelling, when that differs: the name guard matches the path it sees,
/// which is the resolved one where no mount namespace shows the literal
/// one.
pub fn resolved_glob_spelling<H: HostView + ?Sized>(glob: &str, host: &H) -> Option<String> {
    let base = glob_base(glob);
    let real = host.canonicalize(Path::new(&base))?;
    let real = real.to_string_lossy();
    if real == base {
        return None;
    }
    let parts = components(glob);
    let fixed = parts.iter().take_while(|c| !crate::is_glob(c)).count();
    let rest = parts[fixed..].join("/");
    Some(format!("{}/{rest}", real.trim_end_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FakeHost, Os};

    #[test]
    fn names_match_as_the_name_guard_matches_them() {
        for (p, n, want) in [
            ("*.pem", "a.pem", true),
            ("*.pem", "A.PEM", true),
            ("*.pem", ".pem", true),
            ("*.pem", "a.pem.bak", false),
            ("?.key", "a.key", true),
            ("?.key", "ab.key", false),
            ("id_*", "id_rsa", true),
            ("*", "anything", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
        ] {
            assert_eq!(
                glob_matches_name(p.as_bytes(), n.as_bytes()),
                want,
                "{p} {n}"
            );
        }
    }

    #[test]
    fn what_a_read_glob_may_say() {
        for ok in [
            "/w/certs/*.pem",
            "/w/*/id_?sa",
            "/home/u/.aws/*",
            "/w/**/*.pem",
            "/w/**/certs/*",
        ] {
            check_read_glob(ok).unwrap();
        }
        for (bad, why) in [
            ("certs/*.pem", "not absolute"),
            ("/w/a**/*.pem", "whole name"),
            ("/w/**/x/**/*.pem", "at most one"),
            ("/w/secrets/**", "trailing"),
            ("/w/[ab].pem", "character classes"),
            ("/w/../*.pem", ".."),
        ] {
            let e = check_read_glob(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn a_double_star_takes_any_number_of_directories() {
        let mut host = FakeHost::new(Os::Linux);
        host.file("/w/a.pem")
            .file("/w/x/b.pem")
            .file("/w/x/y/z/c.PEM")
            .file("/w/x/y/z/c.txt")
            .file("/w/certs/d.pem")
            .file("/w/other/certs/e.pem")
            .file("/elsewhere/f.pem");
        assert_eq!(
            expand_read_glob("/w/**/*.pem", &host).unwrap(),
            [
                "/w/a.pem",
                "/w/certs/d.pem",
                "/w/other/certs/e.pem",
                "/w/x/b.pem",
                "/w/x/y/z/c.PEM"
            ]
        );
        assert_eq!(
            expand_read_glob("/w/**/certs/*.pem", &host).unwrap(),
            ["/w/certs/d.pem", "/w/other/certs/e.pem"]
        );
        for (path, glob, want) in [
            ("/w/a.pem", "/w/**/*.pem", true),
            ("/w/x/y/z/c.pem", "/w/**/*.pem", true),
            ("/w/x/y/z/c.pem/inside", "/w/**/*.pem", true),
            ("/w/x/y", "/w/**/*.pem", false),
            ("/v/a.pem", "/w/**/*.pem", false),
            ("/w/certs/k/x", "/w/**/certs/*", true),
            ("/w/k/certs", "/w/**/certs/*", false),
        ] {
            assert_eq!(within_glob_match(path, glob), want, "{path} {glob}");
        }
    }

    #[test]
    fn expansion_walks_every_wildcard_component_and_refuses_what_it_cannot_list() {
        let mut host = FakeHost::new(Os::Linux);
        host.file("/w/a/certs/x.pem")
            .file("/w/b/certs/y.pem")
            .file("/w/b/certs/y.txt")
            .file("/w/c/certs")
            .dir("/w/d/certs/z.pem");
        assert_eq!(
            expand_read_glob("/w/*/certs/*.pem", &host).unwrap(),
            ["/w/a/certs/x.pem", "/w/b/certs/y.pem", "/w/d/certs/z.pem"]
        );
        // A view that cannot list refuses rather than miss a match.
        struct NoListing(FakeHost);
        impl HostView for NoListing {
            fn os(&self) -> Os {
                self.0.os()
            }
            fn var_os(&self, n: &str) -> Option<std::ffi::OsString> {
                self.0.var_os(n)
            }
            fn read_small_file(&self, p: &Path) -> Option<String> {
                self.0.read_small_file(p)
            }
            fn is_executable_file(&self, p: &Path) -> bool {
                self.0.is_executable_file(p)
            }
            fn exists(&self, p: &Path) -> bool {
                self.0.exists(p)
            }
            fn canonicalize(&self, p: &Path) -> Option<PathBuf> {
                self.0.canonicalize(p)
            }
            fn is_dir(&self, p: &Path) -> bool {
                self.0.is_dir(p)
            }
        }
        let e = expand_read_glob("/w/*/certs/*.pem", &NoListing(host.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/w cannot be listed"), "{e}");
        // Nothing to list where nothing exists.
        assert!(
            expand_read_glob("/none/*.pem", &NoListing(host))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn within_a_match_and_the_resolved_spelling() {
        assert!(within_glob_match("/w/certs/a.pem", "/w/certs/*.pem"));
        assert!(within_glob_match("/w/certs/d.pem/inner", "/w/certs/*.pem"));
        assert!(!within_glob_match("/w/certs", "/w/certs/*.pem"));
        assert!(!within_glob_match("/w/certs/a.txt", "/w/certs/*.pem"));
        assert_eq!(glob_base("/w/certs/*.pem"), "/w/certs");
        assert_eq!(glob_base("/w/*/x"), "/w");
        let mut host = FakeHost::new(Os::Linux);
        host.symlink("/tmp", "/private/tmp")
            .dir("/private/tmp/p/certs");
        assert_eq!(
            resolved_glob_spelling("/tmp/p/certs/*.pem", &host).as_deref(),
            Some("/private/tmp/p/certs/*.pem")
        );
        host.dir("/w/certs");
        assert_eq!(resolved_glob_spelling("/w/certs/*.pem", &host), None);
    }
}
