//! The `microvm` backend: each session behind a kernel boundary
//! (R-MICROVM). One module per runtime, neither importing the other:
//! gVisor (`gvisor`), a user-space kernel and not a hardware VM; and QEMU
//! (`qemu`), a VM with a kernel of its own, on KVM or emulated. Both read
//! the session's file system from its bubblewrap plan (`layout`).

pub(crate) mod agent_link;
pub(crate) mod dispatch_plan;
pub(crate) mod gvisor;
pub(crate) mod layout;
pub(crate) mod qemu;

/// The runtime every microvm session of a manager gets.
pub(crate) enum Runtime {
    /// gVisor's `runsc`.
    Gvisor(gvisor::Config),
    /// QEMU's `microvm` machine.
    Qemu(Box<qemu::session::Config>),
}
