//! Pieces shared by the dispatch and terminal profiles: path sets turned
//! into filters, ancestors, the device files a shell writes.

use crate::error::Error;
use crate::model::Filter;
use crate::regex::RegexText;
use sandbox_core::{HostView, PathEntry, PathSet};
use std::collections::BTreeSet;
use std::path::Path;

/// Device files any shell writes to, allowed after the write reset.
pub const DEVICE_WRITE_LITERALS: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/tty",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/dtracehelper",
];

/// Device files matched by pattern: numbered descriptors and pseudo-terminals.
pub const DEVICE_WRITE_REGEXES: &[&str] = &["^/dev/fd/[0-9]+$", "^/dev/ttys[0-9]+$"];

/// The filters for the device files.
pub(crate) fn device_filters() -> Result<Vec<Filter>, Error> {
    let mut out: Vec<Filter> = DEVICE_WRITE_LITERALS
        .iter()
        .map(|p| Filter::Literal((*p).to_owned()))
        .collect();
    for r in DEVICE_WRITE_REGEXES {
        out.push(Filter::Regex(crate::regex::SbplRegex::new(*r)?));
    }
    Ok(out)
}

/// One `subpath` per spelling of each plain entry and one `regex` per
/// spelling of each glob (matching what the glob matches and everything
/// below it). For directories a rule opens or confines (writable roots,
/// exec grants).
pub(crate) fn subpath_filters<H: HostView + ?Sized>(
    set: &PathSet,
    host: &H,
) -> Result<Vec<Filter>, Error> {
    let mut out = Vec::new();
    for e in set.entries() {
        if e.glob {
            glob_filters(e, host, &mut out)?;
        } else {
            out.extend(spellings(e).map(|s| Filter::Subpath(s.to_owned())));
        }
    }
    Ok(out)
}

/// The filters of a deny rule over `set`, both spellings of each entry
/// (R-SEATBELT-2..4): `literal` for an entry `host` shows to be a regular
/// file, `subpath` for a directory, `regex` for a glob (as in
/// [`subpath_filters`]).
///
/// Anything else stays `subpath`, the reading that denies more: an entry
/// that does not exist (it may be created as a directory later), one whose
/// spellings disagree, and every entry whose lookup failed or timed out, or
/// of a host that cannot say (`HostView::is_file` answers only a positive
/// "regular file"; its provided answer is `false`). A path below a regular file cannot exist,
/// so for a file `literal` denies exactly what `subpath` would, and a
/// sibling with a longer name (`~/.netrc2` next to `~/.netrc`) is matched
/// by neither.
pub(crate) fn deny_filters<H: HostView + ?Sized>(
    set: &PathSet,
    host: &H,
) -> Result<Vec<Filter>, Error> {
    let mut out = Vec::new();
    for e in set.entries() {
        if e.glob {
            glob_filters(e, host, &mut out)?;
            continue;
        }
        // Only a positive answer narrows the rule: a lookup that failed or
        // timed out keeps `subpath`.
        let file = spellings(e).all(|s| host.is_file(Path::new(s)));
        out.extend(spellings(e).map(|s| {
            if file {
                Filter::Literal(s.to_owned())
            } else {
                Filter::Subpath(s.to_owned())
            }
        }));
    }
    Ok(out)
}

/// The literal spelling of a plain entry, then its resolved one if it
/// differs.
fn spellings(e: &PathEntry) -> impl Iterator<Item = &str> {
    std::iter::once(e.literal.as_str()).chain(e.resolved.as_deref())
}

/// One `regex` per spelling of a glob, matching what the glob matches and
/// everything below it.
fn glob_filters<H: HostView + ?Sized>(
    entry: &PathEntry,
    host: &H,
    out: &mut Vec<Filter>,
) -> Result<(), Error> {
    for (prefix, rest) in glob_spellings(&entry.literal, entry.fixed_len, host)? {
        let mut b = RegexText::anchored();
        b.push_literal(&prefix)?;
        b.push_path_glob(&rest)?;
        b.push_raw("(/.*)?");
        out.push(Filter::Regex(b.finish()?));
    }
    Ok(())
}

/// A glob split at its fixed leading directory, in that directory's literal
/// and resolved spellings: `/var/h/.cargo/credentials*` on a host where
/// `/var -> /private/var` gives `("/var/h/.cargo", "/credentials*")` and
/// `("/private/var/h/.cargo", "/credentials*")`. `sandbox-core` leaves globs
/// unresolved; the kernel matches resolved paths, so both are needed.
fn glob_spellings<H: HostView + ?Sized>(
    glob: &str,
    fixed_len: usize,
    host: &H,
) -> Result<Vec<(String, String)>, Error> {
    let Some(prefix) = glob_fixed_prefix(glob, fixed_len) else {
        return Ok(vec![(String::new(), glob.to_owned())]);
    };
    let rest = &glob[prefix.len()..];
    let mut out = vec![(prefix.to_owned(), rest.to_owned())];
    let resolved = PathSet::resolve([prefix], Path::new("/"), host)?;
    if let Some(r) = resolved.entries().first().and_then(|e| e.resolved.clone()) {
        out.push((r, rest.to_owned()));
    }
    Ok(out)
}

/// One `literal` per spelling of each entry (globs refused).
pub(crate) fn literal_filters(set: &PathSet) -> Vec<Filter> {
    set.spellings().into_iter().map(Filter::Literal).collect()
}

/// Resolves directories that are paths, never globs (writable roots, exec
/// grants): a `*` or `?` in one is part of its name. They reach the profile
/// as `-D` parameters, so their bytes are never read as syntax.
pub(crate) fn resolve_dirs<H: HostView + ?Sized>(
    entries: &[String],
    home: &Path,
    host: &H,
) -> Result<PathSet, Error> {
    Ok(PathSet::resolve_paths(entries, home, host)?)
}

/// The ancestors (never `/`) of every spelling in `sets`, in a stable order.
/// For a glob, its fixed leading directory counts too: renaming that away
/// would move every match out of the rule's reach.
pub(crate) fn ancestors<H: HostView + ?Sized>(
    sets: &[&PathSet],
    host: &H,
) -> Result<Vec<String>, Error> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |start: Option<&str>| {
        let mut cur = start;
        while let Some(p) = cur {
            if seen.insert(p.to_owned()) {
                out.push(p.to_owned());
            }
            cur = parent(p);
        }
    };
    for set in sets {
        for e in set.entries() {
            if e.glob {
                for (prefix, _) in glob_spellings(&e.literal, e.fixed_len, host)? {
                    add(Some(prefix.as_str()).filter(|p| !p.is_empty()));
                }
            } else {
                add(parent(&e.literal));
                if let Some(r) = &e.resolved {
                    add(parent(r));
                }
            }
        }
    }
    Ok(out)
}

/// The parent of an absolute path, or `None` at `/` (or just below it, whose
/// parent is `/`).
fn parent(p: &str) -> Option<&str> {
    let trimmed = p.trim_end_matches('/');
    let idx = trimmed.rfind('/')?;
    if idx == 0 {
        None
    } else {
        Some(&trimmed[..idx])
    }
}

/// The directory made of the components before the first one holding a
/// glob character; `None` if that is `/`.
fn glob_fixed_prefix(glob: &str, fixed_len: usize) -> Option<&str> {
    // Only `*` and `?` make a path-set entry a glob (a `[` is part of a
    // name), and only after its fixed part (an expanded home may hold any
    // character).
    let first = fixed_len + glob.get(fixed_len..)?.find(['*', '?'])?;
    let slash = glob[..first].rfind('/')?;
    if slash == 0 {
        None
    } else {
        Some(&glob[..slash])
    }
}

/// `^ROOT/(.*/)?(NAME|NAME...)(/.*)?$`: any of `names` at any depth below
/// `root`, with everything below them. `names` may be globs.
pub(crate) fn names_below(root: &str, names: &[&str], subtree: bool) -> Result<Filter, Error> {
    let mut b = RegexText::anchored();
    b.push_literal(root.trim_end_matches('/'))?;
    b.push_raw("/(.*/)?(");
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            b.push_raw("|");
        }
        b.push_glob(name)?;
    }
    b.push_raw(")");
    if subtree {
        b.push_raw("(/.*)?");
    }
    Ok(Filter::Regex(b.finish()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_stop_below_root() {
        assert_eq!(parent("/a/b/c"), Some("/a/b"));
        assert_eq!(parent("/a"), None);
        assert_eq!(
            glob_fixed_prefix("/u/.cargo/credentials*", 0),
            Some("/u/.cargo")
        );
        assert_eq!(glob_fixed_prefix("/*.pem", 0), None);
        assert_eq!(
            glob_fixed_prefix("/Users/a*b/.cargo/credentials*", "/Users/a*b".len()),
            Some("/Users/a*b/.cargo"),
            "the home part is fixed, whatever it holds"
        );
    }

    use sandbox_core::{FakeHost, Os};
    use std::ffi::OsString;
    use std::path::PathBuf;

    /// A host view that keeps the trait's provided `is_dir` (always false).
    struct NoDirs(FakeHost);

    impl HostView for NoDirs {
        fn os(&self) -> Os {
            self.0.os()
        }
        fn var_os(&self, name: &str) -> Option<OsString> {
            self.0.var_os(name)
        }
        fn read_small_file(&self, path: &Path) -> Option<String> {
            self.0.read_small_file(path)
        }
        fn is_executable_file(&self, path: &Path) -> bool {
            self.0.is_executable_file(path)
        }
        fn exists(&self, path: &Path) -> bool {
            self.0.exists(path)
        }
        fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
            self.0.canonicalize(path)
        }
    }

    fn host() -> FakeHost {
        let mut h = FakeHost::new(Os::MacOs);
        h.symlink("/Users", "/private/Users")
            .file("/private/Users/a/.netrc")
            .file("/private/Users/a/.ssh/id_rsa")
            .dir("/private/Users/a/.aws");
        h
    }

    fn kinds<H: HostView>(host: &H) -> Vec<Filter> {
        let set = PathSet::resolve(
            [
                "~/.netrc",
                "~/.ssh",
                "~/.aws",
                "~/.pgpass",
                "~/.cargo/credentials*",
            ],
            Path::new("/Users/a"),
            host,
        )
        .unwrap();
        deny_filters(&set, host).unwrap()
    }

    #[test]
    fn deny_filters_follow_the_entry_kind_in_both_spellings() {
        let got = kinds(&host());
        let lit = |p: &str| Filter::Literal(p.to_owned());
        let sub = |p: &str| Filter::Subpath(p.to_owned());
        assert_eq!(
            got[..8],
            [
                lit("/Users/a/.netrc"),
                lit("/private/Users/a/.netrc"),
                sub("/Users/a/.ssh"),
                sub("/private/Users/a/.ssh"),
                sub("/Users/a/.aws"),
                sub("/private/Users/a/.aws"),
                // Missing: a subpath, in case it is created as a directory.
                sub("/Users/a/.pgpass"),
                sub("/private/Users/a/.pgpass"),
            ]
        );
        assert_eq!(got.len(), 10);
        assert!(got[8..].iter().all(|f| matches!(f, Filter::Regex(_))));
    }

    #[test]
    fn a_host_that_cannot_say_what_is_a_file_gets_subpaths() {
        // As a host whose lookups time out: `is_file` and `is_dir` are
        // both false, and nothing is narrowed to `literal`.
        let got = kinds(&NoDirs(host()));
        assert!(
            got.iter()
                .all(|f| matches!(f, Filter::Subpath(_) | Filter::Regex(_))),
            "{got:?}"
        );
    }
}
