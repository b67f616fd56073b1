//! Reading what a session wrote in its layer, from the host: untrusted
//! bytes in a tree the session may still change. Every path is walked one
//! component at a time from a directory of ours with `O_NOFOLLOW`, so a
//! symbolic link planted anywhere (even swapped in while we read) leads
//! nowhere; only regular files are read, each within a size bound, and
//! every listing within a count bound.

use rustix::fs::{Dir, FileType, Mode, OFlags, fstat, openat};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// Most entries read from one directory of a layer.
pub(crate) const MAX_DIR_ENTRIES: usize = 100_000;

/// Why a file of the layer could not be read.
#[derive(Debug)]
pub(crate) enum LayerRead {
    /// No such file (or a component is not a directory).
    Missing,
    /// A component is a symbolic link, or the file is not a regular file.
    NotPlain,
    /// Larger than the bound.
    TooLarge,
    /// Another error.
    Io(std::io::Error),
}

impl std::fmt::Display for LayerRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayerRead::Missing => f.write_str("missing"),
            LayerRead::NotPlain => f.write_str("not a plain file (a link or a special file)"),
            LayerRead::TooLarge => f.write_str("larger than its bound"),
            LayerRead::Io(e) => write!(f, "{e}"),
        }
    }
}

fn errno(e: rustix::io::Errno) -> LayerRead {
    match e {
        rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR => LayerRead::Missing,
        rustix::io::Errno::LOOP | rustix::io::Errno::MLINK => LayerRead::NotPlain,
        other => LayerRead::Io(other.into()),
    }
}

/// Opens the directory `base` (ours: followed as given).
pub(crate) fn open_base(base: &Path) -> Result<OwnedFd, LayerRead> {
    rustix::fs::open(
        base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno)
}

/// Opens the directory at `rel` (components separated by `/`) below `dir`,
/// following no link.
pub(crate) fn open_dir(dir: impl AsFd, rel: &str) -> Result<OwnedFd, LayerRead> {
    let mut cur: Option<OwnedFd> = None;
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        if part == "." || part == ".." {
            return Err(LayerRead::NotPlain);
        }
        let next = match &cur {
            Some(fd) => openat(fd, part, dir_flags(), Mode::empty()),
            None => openat(&dir, part, dir_flags(), Mode::empty()),
        }
        .map_err(errno)?;
        cur = Some(next);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => rustix::io::dup(&dir).map_err(errno),
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Opens the regular file `name` in `dir`, following no link.
pub(crate) fn open_file(dir: impl AsFd, name: &str) -> Result<(File, u64), LayerRead> {
    if name.contains('/') || name == "." || name == ".." {
        return Err(LayerRead::NotPlain);
    }
    let fd = openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno)?;
    let st = fstat(&fd).map_err(errno)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(LayerRead::NotPlain);
    }
    Ok((File::from(fd), u64::try_from(st.st_size).unwrap_or(0)))
}

/// Reads the regular file at `rel` below `dir`, at most `limit` bytes.
pub(crate) fn read_file(dir: impl AsFd, rel: &str, limit: u64) -> Result<Vec<u8>, LayerRead> {
    let (parent, name) = match rel.rsplit_once('/') {
        Some((p, n)) => (open_dir(&dir, p)?, n),
        None => (rustix::io::dup(&dir).map_err(errno)?, rel),
    };
    let (file, size) = open_file(&parent, name)?;
    if size > limit {
        return Err(LayerRead::TooLarge);
    }
    let mut out = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(LayerRead::Io)?;
    if out.len() as u64 > limit {
        return Err(LayerRead::TooLarge);
    }
    Ok(out)
}

/// The names of the entries of `dir` whose type `keep` accepts (`.` and
/// `..` left out), at most [`MAX_DIR_ENTRIES`].
pub(crate) fn list(
    dir: impl AsFd,
    keep: impl Fn(FileType) -> bool,
) -> Result<Vec<String>, LayerRead> {
    let fd = rustix::io::dup(&dir).map_err(errno)?;
    let listing = Dir::read_from(&fd).map_err(errno)?;
    let mut names = Vec::new();
    for (n, entry) in listing.enumerate() {
        if n >= MAX_DIR_ENTRIES + 2 {
            return Err(LayerRead::TooLarge);
        }
        let entry = entry.map_err(errno)?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." || !keep(entry.file_type()) {
            continue;
        }
        names.push(name.to_owned());
    }
    Ok(names)
}
