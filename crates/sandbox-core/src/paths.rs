//! Path sets (R-PATHS-1): every deny entry in its literal and its
//! symlink-resolved spelling.

use crate::host::HostView;
use crate::spec::check_absolute;
use crate::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// Whether an entry is a glob (contains `*` or `?`). Globs are never resolved.
pub fn is_glob(entry: &str) -> bool {
    entry.contains('*') || entry.contains('?')
}

/// Whether granting `path` would reach into one of `denied` (spellings of
/// deny entries): `path` lies inside a plain entry, or inside or around the
/// directory a glob's matches lie under (what the glob matches there is
/// not known, so both ways count). Lexical: give resolved spellings.
pub fn reaches_into(path: &str, denied: &[String]) -> bool {
    let path = Path::new(path);
    denied.iter().any(|d| match d.find(['*', '?', '[']) {
        Some(first) => {
            let base = d[..first]
                .rfind('/')
                .map_or("/", |slash| &d[..slash.max(1)]);
            path.starts_with(base) || Path::new(base).starts_with(path)
        }
        None => path.starts_with(d),
    })
}

/// Expands a leading `~` or `~/` against `home`. Other entries come back
/// unchanged. `~user` is [`ErrorKind::UnsupportedTilde`].
pub fn expand_tilde(entry: &str, home: &Path) -> Result<String, Error> {
    match entry.strip_prefix('~') {
        None => Ok(entry.to_owned()),
        Some("") => Ok(home.to_string_lossy().into_owned()),
        Some(rest) if rest.starts_with('/') => {
            let home = home.to_string_lossy();
            Ok(format!("{}{}", home.trim_end_matches('/'), rest))
        }
        Some(_) => Err(ErrorKind::UnsupportedTilde {
            path: entry.to_owned(),
        }
        .into()),
    }
}

/// One entry of a [`PathSet`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathEntry {
    /// The entry after `~` expansion and removal of `.` and repeated `/`.
    pub literal: String,
    /// Where its symlinks lead, when that differs from `literal`.
    pub resolved: Option<String>,
    /// Whether the entry is a glob (never resolved).
    pub glob: bool,
    /// How many leading bytes of `literal` are a path even in a glob: the
    /// expanded home of a `~` entry, which matches itself whatever
    /// characters it holds (`*`, `?`, brackets). 0 for other entries.
    pub fixed_len: usize,
}

/// A resolved set of paths: each entry with its spellings, duplicates
/// removed, in first-seen order.
///
/// ```
/// use sandbox_core::{FakeHost, Os, PathSet};
/// use std::path::Path;
/// let mut host = FakeHost::new(Os::MacOs);
/// host.symlink("/tmp", "/private/tmp").file("/private/tmp/build");
/// let set = PathSet::resolve(["/tmp/build", "~/.ssh", "~/*.pem"], Path::new("/Users/a"), &host).unwrap();
/// assert_eq!(set.spellings(), ["/tmp/build", "/private/tmp/build", "/Users/a/.ssh", "/Users/a/*.pem"]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathSet {
    entries: Vec<PathEntry>,
}

impl PathSet {
    /// Resolves `entries` against `home` on `host`.
    ///
    /// For each entry: `~` is expanded (home must be absolute); globs are
    /// kept as written; other entries must be absolute, without NUL or `..`,
    /// and are resolved through `host`. A path that does not exist is
    /// resolved through its deepest existing ancestor (so a rule for a file
    /// not yet created still matches the kernel's spelling); one that does
    /// not resolve at all is kept as written. A resolution to `/` or to an
    /// ancestor of the entry is [`ErrorKind::WidensScope`].
    pub fn resolve<I, S, H>(entries: I, home: &Path, host: &H) -> Result<PathSet, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
        H: HostView + ?Sized,
    {
        PathSet::resolve_as(entries, home, host, Reading::GlobsAllowed)
    }

    /// As [`PathSet::resolve`], for entries that are paths and never globs
    /// (mount points, writable roots): a `*` or `?` in one is part of its
    /// name, and the entry is resolved like any other path.
    pub fn resolve_paths<I, S, H>(entries: I, home: &Path, host: &H) -> Result<PathSet, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
        H: HostView + ?Sized,
    {
        PathSet::resolve_as(entries, home, host, Reading::PathsOnly)
    }

    fn resolve_as<I, S, H>(
        entries: I,
        home: &Path,
        host: &H,
        reading: Reading,
    ) -> Result<PathSet, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
        H: HostView + ?Sized,
    {
        let home_str = home.to_string_lossy();
        check_absolute(&home_str)?;
        let mut set = PathSet::default();
        for entry in entries {
            set.push(resolve_entry(entry.as_ref(), home, host, reading)?);
        }
        Ok(set)
    }

    fn push(&mut self, entry: PathEntry) {
        let seen = self.entries.iter().any(|e| e.literal == entry.literal);
        if !seen {
            self.entries.push(entry);
        }
    }

    /// Adds the entries of `other` not already in the set.
    pub fn extend(&mut self, other: PathSet) {
        for e in other.entries {
            self.push(e);
        }
    }

    /// The entries, in first-seen order.
    pub fn entries(&self) -> &[PathEntry] {
        &self.entries
    }

    /// Every spelling, literal first then resolved, duplicates removed.
    pub fn spellings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::with_capacity(self.entries.len() * 2);
        for e in &self.entries {
            for s in std::iter::once(&e.literal).chain(e.resolved.as_ref()) {
                if !out.iter().any(|o| o == s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of entries (not spellings).
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Whether `*` and `?` make an entry a glob.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    GlobsAllowed,
    PathsOnly,
}

fn resolve_entry<H: HostView + ?Sized>(
    entry: &str,
    home: &Path,
    host: &H,
    reading: Reading,
) -> Result<PathEntry, Error> {
    let expanded = expand_tilde(entry, home)?;
    check_absolute(&expanded)?;
    let literal = normalize(&expanded);
    // The home part of a `~` entry is a path: only what follows it can make
    // the entry a glob.
    let fixed_len = match entry.starts_with('~') {
        true => normalize(&home.to_string_lossy()).len().min(literal.len()),
        false => 0,
    };
    if reading == Reading::GlobsAllowed && literal.get(fixed_len..).is_some_and(is_glob) {
        return Ok(PathEntry {
            literal,
            resolved: None,
            glob: true,
            fixed_len,
        });
    }
    let resolved = resolve_through_ancestors(Path::new(&literal), host)
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|r| *r != literal);
    if let Some(r) = &resolved {
        let lit = Path::new(&literal);
        let res = Path::new(r);
        let widens = (r == "/" && literal != "/") || (lit != res && lit.starts_with(res));
        if widens {
            return Err(ErrorKind::WidensScope {
                path: literal,
                resolved: r.clone(),
            }
            .into());
        }
    }
    Ok(PathEntry {
        literal,
        resolved,
        glob: false,
        fixed_len,
    })
}

/// Lexically removes `.` components, repeated and trailing `/`.
fn normalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        out.push('/');
        out.push_str(part);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Resolves `path`, or its deepest existing ancestor plus the rest.
fn resolve_through_ancestors<H: HostView + ?Sized>(path: &Path, host: &H) -> Option<PathBuf> {
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cursor = path;
    loop {
        if let Some(real) = host.canonicalize(cursor) {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        tail.push(cursor.file_name()?);
        cursor = cursor.parent()?;
    }
}
