//! The latest search for nested git repositories of each set of writable
//! roots, kept by the manager: the next search of the same roots (the end
//! of a run, or the next launch in the same working directory) reads again
//! only the directories that changed since (see
//! `bwrap_spec::search_git_repos_on_host_since` for when a directory is
//! trusted to be unchanged).

use bwrap_spec::RepoSearchRecord;
use std::sync::{Arc, Mutex};

/// How many sets of roots are remembered; the oldest goes first. A record
/// holds at most `bwrap_spec::REPO_SEARCH_MAX_DIRS` directories.
const KEPT: usize = 8;

/// One set of roots and the latest search of them.
type Record = (Vec<String>, Arc<RepoSearchRecord>);

/// The records, the latest first (shared by the clones).
#[derive(Clone, Default)]
pub(crate) struct RepoRecords(Arc<Mutex<Vec<Record>>>);

impl RepoRecords {
    /// The latest record of exactly these roots; an empty one when there
    /// is none (then every directory is read).
    pub(crate) fn get(&self, roots: &[String]) -> Arc<RepoSearchRecord> {
        self.0
            .lock()
            .ok()
            .and_then(|records| {
                records
                    .iter()
                    .find(|(r, _)| r.as_slice() == roots)
                    .map(|(_, record)| record.clone())
            })
            .unwrap_or_default()
    }

    /// Keeps `record` as the latest of `roots`.
    pub(crate) fn put(&self, roots: &[String], record: Arc<RepoSearchRecord>) {
        if roots.is_empty() {
            return;
        }
        if let Ok(mut records) = self.0.lock() {
            records.retain(|(r, _)| r.as_slice() != roots);
            records.insert(0, (roots.to_vec(), record));
            records.truncate(KEPT);
        }
    }
}

impl std::fmt::Debug for RepoRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sets = self.0.lock().map_or(0, |r| r.len());
        f.debug_struct("RepoRecords").field("sets", &sets).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_latest_record_of_each_set_of_roots_up_to_a_bound() {
        let records = RepoRecords::default();
        let roots = |i: usize| vec![format!("/w{i}")];
        assert_eq!(records.get(&roots(0)).kept_directories(), 0);
        let first = Arc::new(RepoSearchRecord::default());
        records.put(&roots(0), first.clone());
        assert!(Arc::ptr_eq(&records.get(&roots(0)), &first));
        let second = Arc::new(RepoSearchRecord::default());
        records.put(&roots(0), second.clone());
        assert!(Arc::ptr_eq(&records.get(&roots(0)), &second));
        for i in 1..=KEPT {
            records.put(&roots(i), Arc::new(RepoSearchRecord::default()));
        }
        assert!(
            !Arc::ptr_eq(&records.get(&roots(0)), &second),
            "the oldest set is dropped past the bound"
        );
        assert!(records.0.lock().unwrap().len() == KEPT);
        records.put(&[], first);
        assert!(
            records.0.lock().unwrap().len() == KEPT,
            "no roots, no record"
        );
    }
}
