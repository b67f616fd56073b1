//! The copy layer: a workspace made as a directory of the host's, where no
//! copy-on-write view can be made (a mechanism without a mount namespace,
//! or a runtime whose own kernel serves the mounts).
//!
//! The working tree is copied (`cp -a --reflink=auto`: a reflink where the
//! file system has them, else a full copy, so creation costs in proportion
//! to the tree's size there); the git directory is new and small: the
//! session's own `HEAD` on its own branch, a copy of the checkout's index,
//! its refs as a `packed-refs` of the layer's, and its object store shared
//! read-only through `objects/info/alternates`. New objects, refs and
//! everything else git writes stay in the layer; the checkout's object
//! store is mounted read-only, so `gc` or `prune` inside removes nothing
//! of it.

use super::checkout::Checkout;
use crate::{Error, ErrorKind};
use std::path::Path;
use std::process::Command;

/// Most top-level entries given to one `cp`.
pub(crate) const CP_BATCH: usize = 512;

/// Makes the workspace view at `view` (which must not exist) from
/// `checkout`, on `branch`.
pub(crate) fn make(checkout: &Checkout, view: &Path, branch: &str) -> Result<(), Error> {
    create_dir(view)?;
    copy_tree(&checkout.root, view)?;
    write_git_dir(checkout, &view.join(".git"), branch)
}

/// Makes `to` (which must not exist) a copy of the view `from`, its git
/// directory included: a fork.
pub(crate) fn fork(from: &Path, to: &Path) -> Result<(), Error> {
    cp(&[from.as_os_str().to_owned()], to, CopyHow::As)
}

fn copy_tree(root: &Path, view: &Path) -> Result<(), Error> {
    let entries =
        std::fs::read_dir(root).map_err(|e| Error::io(format!("reading {}", root.display()), e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("reading {}", root.display()), e))?;
        if entry.file_name() == ".git" {
            continue;
        }
        names.push(entry.path().into_os_string());
    }
    for batch in names.chunks(CP_BATCH) {
        cp(batch, view, CopyHow::IntoDir)?;
    }
    Ok(())
}

/// How [`cp`] places what it copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyHow {
    /// Each source into the directory `to` (`cp -a -t TO`).
    IntoDir,
    /// The one source as `to` (`cp -a --no-target-directory`).
    As,
    /// The one source as `to`, its files hard links (`cp -al`): for
    /// layers that never change again.
    #[cfg_attr(
        not(target_os = "linux"),
        allow(dead_code, reason = "only overlay forks (Linux) link their layers")
    )]
    LinkAs,
}

/// `cp -a --reflink=auto` (or `cp -al`) of `sources` to `to`, placed as
/// `how` says.
pub(crate) fn cp(sources: &[std::ffi::OsString], to: &Path, how: CopyHow) -> Result<(), Error> {
    if sources.is_empty() {
        return Ok(());
    }
    let mut c = Command::new("cp");
    match how {
        CopyHow::LinkAs => c.args(["-a", "-l"]),
        CopyHow::IntoDir | CopyHow::As => c.args(["-a", "--reflink=auto"]),
    };
    if how == CopyHow::IntoDir {
        c.arg("-t").arg(to).arg("--").args(sources);
    } else {
        c.arg("--no-target-directory")
            .arg("--")
            .args(sources)
            .arg(to);
    }
    let out = c
        .output()
        .map_err(|e| Error::io("starting cp for a workspace".to_owned(), e))?;
    if !out.status.success() {
        return Err(ErrorKind::WorkspaceSetup {
            path: to.display().to_string(),
            reason: format!(
                "copying failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
        .into());
    }
    Ok(())
}

fn create_dir(path: &Path) -> Result<(), Error> {
    std::fs::create_dir(path).map_err(|e| Error::io(format!("creating {}", path.display()), e))
}

fn write(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// The layer's git directory: see the module's documentation.
pub(crate) fn write_git_dir(checkout: &Checkout, git: &Path, branch: &str) -> Result<(), Error> {
    create_dir(git)?;
    for dir in [
        "objects",
        "objects/info",
        "objects/pack",
        "refs",
        "refs/heads",
        "refs/tags",
        "hooks",
        "info",
    ] {
        create_dir(&git.join(dir))?;
    }
    write(&git.join("HEAD"), &format!("ref: refs/heads/{branch}\n"))?;
    let mut config = String::from("[core]\n");
    match checkout.format {
        super::checkout::ObjectFormat::Sha1 => config.push_str("\trepositoryformatversion = 0\n"),
        super::checkout::ObjectFormat::Sha256 => config.push_str("\trepositoryformatversion = 1\n"),
    }
    config.push_str("\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n");
    // The copied index describes the checkout's files: the copies keep
    // their modification times and sizes (`cp -a`) but not their inode
    // numbers or change times, which git compares by default and would
    // then read and hash every file again at the first `git status`.
    config.push_str("\ttrustctime = false\n\tcheckstat = minimal\n");
    if checkout.format == super::checkout::ObjectFormat::Sha256 {
        config.push_str("[extensions]\n\tobjectformat = sha256\n");
    }
    write(&git.join("config"), &config)?;
    let alternates = checkout.objects().display().to_string();
    write(
        &git.join("objects/info/alternates"),
        &format!("{alternates}\n"),
    )?;
    // The checkout's refs, to read history by name (`git log main`); the
    // session's branch is loose and so wins over a packed one of its name.
    let mut packed = String::from("# pack-refs with: sorted\n");
    let mut refs = checkout.refs()?;
    refs.sort_by(|a, b| a.1.cmp(&b.1));
    for (id, name) in refs {
        if name == format!("refs/heads/{branch}") || name.contains('\n') {
            continue;
        }
        packed.push_str(&format!("{id} {name}\n"));
    }
    write(&git.join("packed-refs"), &packed)?;
    let branch_ref = git.join("refs/heads").join(branch);
    if let Some(parent) = branch_ref.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    }
    write(&branch_ref, &format!("{}\n", checkout.head))?;
    let index = checkout.git_dir.join("index");
    if std::fs::symlink_metadata(&index).is_ok_and(|m| m.is_file()) {
        std::fs::copy(&index, git.join("index"))
            .map_err(|e| Error::io(format!("copying {}", index.display()), e))?;
    }
    Ok(())
}
