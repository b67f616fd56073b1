//! The git repositories nested in a session's writable roots, searched on
//! the host at launch (their config and hooks get denies of their own) and
//! again at the end (one the sandboxed run created is logged for review).
//! The manager keeps the latest search of each set of roots, so a search
//! reads again only the directories that changed.

use crate::settings::Settings;
use bwrap_spec::{RepoSearchEnd, RepoSearchRecord, search_git_repos_on_host_since};
use sandbox_core::{Access, SandboxSpec};
use std::sync::{Arc, Mutex};

/// The host paths of the spec's writable mounts: the roots searched.
pub(crate) fn writable_roots(spec: &SandboxSpec) -> Vec<String> {
    spec.mount_accesses()
        .filter(|(_, a)| *a == Access::ReadWrite)
        .map(|(m, _)| m.host_path.clone())
        .collect()
}

/// The git repositories found in the writable roots at launch, and the
/// record of that search, so that the search at the end reads again only
/// the directories that changed.
#[derive(Debug, Default)]
pub(crate) struct ReposAtLaunch {
    pub(crate) repos: Vec<String>,
    record: Arc<RepoSearchRecord>,
    /// The repositories whose denies the session's sandbox has by now, and
    /// the search that found them (see [`ReposAtLaunch::made_since_last`]).
    latest: Mutex<Latest>,
}

#[derive(Debug, Default)]
struct Latest {
    repos: Vec<String>,
    record: Arc<RepoSearchRecord>,
}

/// The repositories a search found that the session's denies do not
/// cover yet, to be confirmed once they do.
pub(crate) struct NewRepos {
    pub(crate) new: Vec<String>,
    /// Every repository found, the new ones included.
    pub(crate) all: Vec<String>,
    record: Arc<RepoSearchRecord>,
}

impl ReposAtLaunch {
    /// Searches the writable roots again (reading only the directories
    /// that changed since the latest search) for repositories made since
    /// the session's denies were last brought up to date: `None` when
    /// there is none. Once their denies are in force, [`Self::covered`]
    /// records them; until then every search finds them again (so a
    /// failure to protect them is never forgotten).
    pub(crate) fn made_since_last(&self, writable: &[String]) -> Option<NewRepos> {
        if writable.is_empty() {
            return None;
        }
        let latest = self.latest.lock().ok()?;
        let (search, record) = search_git_repos_on_host_since(writable, &latest.record);
        let new: Vec<String> = search
            .repos
            .iter()
            .filter(|r| !latest.repos.contains(r))
            .cloned()
            .collect();
        if new.is_empty() {
            drop(latest);
            // Nothing to protect: the search is the latest all the same.
            if let Ok(mut l) = self.latest.lock() {
                l.record = Arc::new(record);
            }
            return None;
        }
        Some(NewRepos {
            new,
            all: search.repos,
            record: Arc::new(record),
        })
    }

    /// The session's denies now cover `found`.
    pub(crate) fn covered(&self, found: NewRepos) {
        if let Ok(mut l) = self.latest.lock() {
            l.repos = found.all;
            l.record = found.record;
        }
    }
}

/// The git repositories in the writable roots at launch, whose config and
/// hooks get denies of their own. Logs when the search stopped at its
/// directory limit: a repository among the directories it left unread is
/// protected only where a root's own denies reach. The search reads again
/// only the directories that changed since the manager's latest search of
/// the same roots, and becomes the latest.
pub(crate) fn repos_in_writable_roots(
    settings: &Settings,
    session_id: &str,
    writable: &[String],
) -> ReposAtLaunch {
    let earlier = settings.repo_records.get(writable);
    let (search, record) = search_git_repos_on_host_since(writable, &earlier);
    let record = Arc::new(record);
    settings.repo_records.put(writable, record.clone());
    if let RepoSearchEnd::DirectoryLimit { unread } = search.end {
        (settings.log)(&format!(
            "session {session_id}: the search for git repositories nested in the writable roots stopped after {} directories with {unread} more in reach unread; a repository in those gets no denies of its own for its config and hooks",
            bwrap_spec::REPO_SEARCH_MAX_DIRS
        ));
    }
    ReposAtLaunch {
        latest: Mutex::new(Latest {
            repos: search.repos.clone(),
            record: record.clone(),
        }),
        repos: search.repos,
        record,
    }
}

/// Logs the git repositories that appeared in the writable roots during a
/// session: each has the config and hooks the sandboxed process wrote, and
/// a parent's `git status` on the host may run them (a populated gitlink is
/// recursed into). The search reads again only the directories that
/// changed since the launch's search, and becomes the manager's latest.
pub(crate) fn log_repos_made_inside(
    settings: &Settings,
    session_id: &str,
    writable: &[String],
    at_launch: &ReposAtLaunch,
) {
    let (search, record) = search_git_repos_on_host_since(writable, &at_launch.record);
    settings.repo_records.put(writable, Arc::new(record));
    let now = search.repos;
    let new: Vec<&str> = now
        .iter()
        .filter(|r| !at_launch.repos.contains(r))
        .map(|r| r.as_str())
        .collect();
    if !new.is_empty() {
        (settings.log)(&format!(
            "session {session_id}: git repositories created inside the sandbox (their config and hooks came from the sandboxed run; review before running git there on the host): {}",
            new.join(" ")
        ));
    }
}

/// The session's notes from its name guards: each guard of the session
/// writes a byte whenever a name `.git` is made or a directory is moved
/// (`--notify-fd`), so the writable roots are searched again before a
/// command only after something that may have made a repository, not
/// before every command (a search that reads nothing new still `stat`s
/// every directory: about 9 ms for 3,321 of them).
#[cfg(unix)]
pub(crate) struct RepoNotes {
    read: rustix::fd::OwnedFd,
    write: rustix::fd::OwnedFd,
    /// Notes taken whose search has not yet succeeded.
    pending: std::sync::atomic::AtomicBool,
}

#[cfg(unix)]
impl RepoNotes {
    pub(crate) fn new() -> Result<RepoNotes, crate::Error> {
        let err =
            |e: rustix::io::Errno| crate::Error::io("creating the guard's notes pipe", e.into());
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(err)?;
        rustix::fs::fcntl_setfl(&read, rustix::fs::OFlags::NONBLOCK).map_err(err)?;
        Ok(RepoNotes {
            read,
            write,
            pending: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The descriptor each guard of the session writes to, inherited at
    /// the same number.
    pub(crate) fn guard_fd(&self) -> i32 {
        rustix::fd::AsRawFd::as_raw_fd(&self.write)
    }

    /// Whether a guard wrote since the search last succeeded (see
    /// [`RepoNotes::settled`]).
    pub(crate) fn pending(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.drain() {
            self.pending.store(true, Ordering::SeqCst);
        }
        self.pending.load(Ordering::SeqCst)
    }

    /// The search after the notes taken so far succeeded (and every
    /// repository it found has its denies).
    pub(crate) fn settled(&self) {
        self.pending
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a guard wrote since the last call (the bytes are taken).
    /// A pipe that cannot be read counts as a note (search again).
    fn drain(&self) -> bool {
        let mut buf = [0u8; 4096];
        let mut noted = false;
        loop {
            match rustix::io::read(&self.read, &mut buf) {
                Ok(0) => return true,
                Ok(n) => noted |= n > 0,
                Err(rustix::io::Errno::AGAIN) => return noted,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return true,
            }
        }
    }
}

/// The repositories a session's denies must cover before its next command:
/// searched for only after its guards noted something (or `always`, when
/// no guard notes anything); `None` when there is none, the notes then
/// settled.
#[cfg(unix)]
pub(crate) fn repos_to_protect(
    at_launch: &ReposAtLaunch,
    notes: &RepoNotes,
    writable: &[String],
    always: bool,
) -> Option<NewRepos> {
    if !always && !notes.pending() {
        return None;
    }
    let found = at_launch.made_since_last(writable);
    if found.is_none() {
        notes.settled();
    }
    found
}

/// `found` now has its denies: logged, recorded, the notes settled.
#[cfg(unix)]
pub(crate) fn repos_protected(
    settings: &Settings,
    session_id: &str,
    at_launch: &ReposAtLaunch,
    notes: &RepoNotes,
    found: NewRepos,
) {
    (settings.log)(&format!(
        "session {session_id}: git repositories made in the session get the denies of one found at launch from the next command on: {}",
        found.new.join(" ")
    ));
    at_launch.covered(found);
    notes.settled();
}
