//! What the Linux backends share, below all of them: the bridges' host
//! sockets, the name guard's report pipe, and the search for git
//! repositories in the writable roots. A backend imports from here, never
//! from another backend.

pub(crate) mod bridges;
pub(crate) mod host_repos;
pub(crate) mod name_guard_reports;
pub(crate) mod warm;
