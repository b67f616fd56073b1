//! [`Stdout`]: where a command's standard output goes, as events or passed
//! on by the host into a file of its own ([`OutputSink`]).

use std::fs::File;
use std::sync::Arc;

/// Where a command's standard output goes. Either way the command writes
/// into a pipe the host holds the other end of; no host descriptor is ever
/// handed into the sandbox (a terminal would let the command type into the
/// host with `TIOCSTI`, a pipe or file could be reopened through
/// `/proc/self/fd`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stdout {
    /// As `stdout` events, in order with the command's other events (the
    /// default).
    #[default]
    Events,
    /// Passed on by the host into this file as it arrives, with no `stdout`
    /// events: for a host that only forwards output (a command-line tool
    /// writing to its own stdout). On Linux the bytes move from pipe to
    /// file in the kernel (`splice`), where the file takes that; otherwise
    /// they are read and written. The command's `exit` event comes after its
    /// last byte was written. In a warm session, what the processes it left
    /// running write after it exited is not passed on (what the pipe holds
    /// 100 ms after the exit still is). When a write fails (the reader went away), the
    /// host closes its end of the command's pipe, so the command sees a
    /// broken pipe as it would writing to that reader directly. Not on a
    /// terminal, whose output is its own stream of events
    /// ([`CommandError::PassThroughOnTerminal`](crate::CommandError::PassThroughOnTerminal)).
    PassTo(OutputSink),
}

/// A host file that a command's output is passed into
/// ([`Stdout::PassTo`]): a pipe, a regular file, a socket or a terminal of
/// the host, in blocking mode. Clones share the file; two sinks are equal
/// when they are the same file object.
#[derive(Clone)]
pub struct OutputSink(Arc<File>);

impl OutputSink {
    /// A sink writing into `file`.
    pub fn new(file: File) -> OutputSink {
        OutputSink(Arc::new(file))
    }

    /// The file written into.
    pub fn file(&self) -> &File {
        &self.0
    }
}

impl PartialEq for OutputSink {
    fn eq(&self, other: &OutputSink) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for OutputSink {}

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("OutputSink").field(&self.0).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinks_are_equal_only_when_they_share_the_file() {
        let open = || File::open(std::env::current_exe().unwrap()).unwrap();
        let (a, b) = (OutputSink::new(open()), OutputSink::new(open()));
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
        assert_eq!(Stdout::default(), Stdout::Events);
        assert_ne!(Stdout::PassTo(a.clone()), Stdout::Events);
    }
}
