//! The host's side of the agent inside a `microvm` sandbox (R-MICROVM-4):
//! one channel per session ([`channel`]), carrying every command
//! ([`command`]) and the TCP streams towards the session's proxies. Both
//! runtimes speak it: QEMU's guest over a virtio-serial port, gVisor's
//! sandbox over its first process's stdio.

pub(crate) mod channel;
pub(crate) mod command;
pub(crate) mod error;

use channel::Channel;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// What a running command needs of its sandbox's agent.
pub(crate) struct Link {
    pub(crate) channel: Arc<Channel>,
    pub(crate) next_id: AtomicU64,
    /// Ends the sandbox at once (its agent no longer ends a command):
    /// every command's replies end with it.
    pub(crate) kill: Box<dyn Fn() + Send + Sync>,
}

impl Link {
    pub(crate) fn new(channel: Arc<Channel>, kill: Box<dyn Fn() + Send + Sync>) -> Link {
        Link {
            channel,
            next_id: AtomicU64::new(1),
            kill,
        }
    }
}
