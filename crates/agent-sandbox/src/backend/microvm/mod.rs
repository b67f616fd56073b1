//! The `microvm` backend: each session behind a kernel boundary
//! (R-MICROVM). One module per runtime; today gVisor (`gvisor`), which is a
//! user-space kernel and not a hardware VM. A VM runtime plugs in beside it
//! behind the same [`Runtime`] choice.

pub(crate) mod gvisor;

/// The runtime every microvm session of a manager gets.
pub(crate) enum Runtime {
    /// gVisor's `runsc`.
    Gvisor(gvisor::Config),
}
