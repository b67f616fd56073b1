//! Git smart HTTP: the pkt-line reader, the `git-receive-pack` command
//! list, the pushed pack, the push rule and git's report format.

pub(crate) mod classifier;
pub(crate) mod commands;
pub(crate) mod limits;
pub(crate) mod pack;
pub(crate) mod pktline;
pub(crate) mod push_body;
pub(crate) mod push_rule;
pub(crate) mod report;
pub(crate) mod spool;
