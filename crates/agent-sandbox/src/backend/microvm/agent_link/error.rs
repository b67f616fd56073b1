//! Why a guest could not be used: what QEMU, the guest or its channel
//! said, for the probe's line and the caller's error.

/// Why a guest could not be used.
#[derive(Debug)]
pub(crate) struct VmError(pub(crate) String);

impl std::fmt::Display for VmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
