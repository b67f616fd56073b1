//! The `microvm` backend: each session behind a kernel boundary
//! (R-MICROVM). One module per runtime: gVisor (`gvisor`), a user-space
//! kernel and not a hardware VM, which sessions run on; and QEMU
//! (`qemu`), a VM on KVM or emulated, which boots guests and runs commands
//! in them but serves no session yet.

pub(crate) mod gvisor;
pub(crate) mod layout;
#[cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "the VM runtime serves no session yet; its tests boot guests"
    )
)]
pub(crate) mod qemu;

/// The runtime every microvm session of a manager gets.
pub(crate) enum Runtime {
    /// gVisor's `runsc`.
    Gvisor(gvisor::Config),
}
