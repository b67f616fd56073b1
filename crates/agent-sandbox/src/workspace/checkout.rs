//! The registered checkout a workspace starts from: a plain checkout (its
//! `.git` a directory), read on the host, never written but by a
//! collection.

use super::host_git::{HostGit, arg};
use crate::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// Most alternates followed from the checkout's object store (all levels).
const MAX_ALTERNATES: usize = 16;
/// Most bytes of one `objects/info/alternates` read.
const MAX_ALTERNATES_FILE: u64 = 64 << 10;

/// The object id format of a repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjectFormat {
    Sha1,
    Sha256,
}

impl ObjectFormat {
    /// Hexadecimal digits of an id.
    pub(crate) fn hex_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 40,
            ObjectFormat::Sha256 => 64,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ObjectFormat::Sha1 => "sha1",
            ObjectFormat::Sha256 => "sha256",
        }
    }

    /// Whether `s` is an id of this format (lower-case hex).
    pub(crate) fn is_id(self, s: &str) -> bool {
        s.len() == self.hex_len() && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }
}

impl From<ObjectFormat> for push_rule::ObjectFormat {
    fn from(f: ObjectFormat) -> push_rule::ObjectFormat {
        match f {
            ObjectFormat::Sha1 => push_rule::ObjectFormat::Sha1,
            ObjectFormat::Sha256 => push_rule::ObjectFormat::Sha256,
        }
    }
}

/// A registered checkout, read once when a workspace is made from it.
#[derive(Clone, Debug)]
pub(crate) struct Checkout {
    /// The checkout's canonical path.
    pub(crate) root: PathBuf,
    /// Its git directory (`root/.git`).
    pub(crate) git_dir: PathBuf,
    /// Its object store and every store that one borrows from: what a
    /// session reads, read-only.
    pub(crate) object_dirs: Vec<PathBuf>,
    pub(crate) format: ObjectFormat,
    /// The commit its `HEAD` names.
    pub(crate) head: String,
}

impl Checkout {
    /// Reads the checkout at `path` (the host's file system and git).
    pub(crate) fn open(path: &Path) -> Result<Checkout, Error> {
        let refuse = |reason: &'static str| -> Error {
            ErrorKind::NotACheckout {
                path: path.display().to_string(),
                reason,
            }
            .into()
        };
        if !path.is_absolute() {
            return Err(refuse("a checkout is named by an absolute path"));
        }
        let root = std::fs::canonicalize(path).map_err(|_| refuse("it does not exist"))?;
        let git_dir = root.join(".git");
        match std::fs::symlink_metadata(&git_dir) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.is_file() => {
                return Err(refuse(
                    "its .git is a file (a linked worktree or a submodule): register the main checkout",
                ));
            }
            Ok(_) => return Err(refuse("its .git is neither a directory nor a file")),
            Err(_) => return Err(refuse("it has no .git directory")),
        }
        for entry in ["HEAD", "objects", "refs"] {
            if !git_dir.join(entry).exists() {
                return Err(refuse("its .git is not a git directory"));
            }
        }
        let git = HostGit::new(&git_dir, &root);
        let format = match git
            .ok(&[arg("rev-parse"), arg("--show-object-format")])?
            .text()
            .as_str()
        {
            "sha1" => ObjectFormat::Sha1,
            "sha256" => ObjectFormat::Sha256,
            _ => return Err(refuse("its object format is neither sha1 nor sha256")),
        };
        let head = git.run(
            &[],
            &[
                arg("rev-parse"),
                arg("--verify"),
                arg("-q"),
                arg("HEAD^{commit}"),
            ],
            None,
            None,
        )?;
        let head = head.text();
        if !format.is_id(&head) {
            return Err(refuse("its HEAD names no commit yet"));
        }
        let objects = git_dir.join("objects");
        let mut object_dirs = vec![objects.clone()];
        alternates_of(&objects, &mut object_dirs, 0)?;
        Ok(Checkout {
            root,
            git_dir,
            object_dirs,
            format,
            head,
        })
    }

    /// A git for the checkout's repository.
    pub(crate) fn git(&self) -> HostGit {
        HostGit::new(&self.git_dir, &self.root)
    }

    /// The checkout's object store.
    pub(crate) fn objects(&self) -> &Path {
        &self.object_dirs[0]
    }

    /// The commit each ref of the checkout names, `refs/sessions/` left
    /// out (other sessions' collected work): `(id, refname)`.
    pub(crate) fn refs(&self) -> Result<Vec<(String, String)>, Error> {
        let out = self.git().ok(&[
            arg("for-each-ref"),
            arg("--format=%(objectname) %(refname)"),
        ])?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Ok(text
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(id, name)| self.format.is_id(id) && !name.starts_with("refs/sessions/"))
            .map(|(id, name)| (id.to_owned(), name.to_owned()))
            .collect())
    }

    /// The id a ref of the checkout names, if it exists.
    pub(crate) fn resolve(&self, refname: &str) -> Result<Option<String>, Error> {
        let out = self.git().run(
            &[],
            &[arg("rev-parse"), arg("--verify"), arg("-q"), arg(refname)],
            None,
            None,
        )?;
        let id = out.text();
        Ok((out.status.success() && self.format.is_id(&id)).then_some(id))
    }

    /// Every id the checkout's refs name, `refs/sessions/` included:
    /// what a collection need not send again.
    pub(crate) fn all_tips(&self) -> Result<Vec<String>, Error> {
        let out = self
            .git()
            .ok(&[arg("for-each-ref"), arg("--format=%(objectname)")])?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut tips: Vec<String> = text
            .lines()
            .filter(|id| self.format.is_id(id))
            .map(str::to_owned)
            .collect();
        tips.sort();
        tips.dedup();
        Ok(tips)
    }
}

/// The stores `objects` borrows from, recursively (git's own limit is 5
/// levels), canonical and each once.
fn alternates_of(objects: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<(), Error> {
    let file = objects.join("info/alternates");
    let Ok(meta) = std::fs::metadata(&file) else {
        return Ok(());
    };
    if depth >= 5 || meta.len() > MAX_ALTERNATES_FILE {
        return Err(too_many(objects));
    }
    let text = std::fs::read_to_string(&file)
        .map_err(|e| Error::io(format!("reading {}", file.display()), e))?;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Ok(dir) = std::fs::canonicalize(objects.join(line)) else {
            continue;
        };
        if out.contains(&dir) {
            continue;
        }
        if out.len() >= MAX_ALTERNATES {
            return Err(too_many(objects));
        }
        out.push(dir.clone());
        alternates_of(&dir, out, depth + 1)?;
    }
    Ok(())
}

fn too_many(objects: &Path) -> Error {
    ErrorKind::NotACheckout {
        path: objects.display().to_string(),
        reason: "its object store borrows from too many others (at most 16, 5 levels deep)",
    }
    .into()
}
