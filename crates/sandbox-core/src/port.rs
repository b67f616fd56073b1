//! The `SandboxPort` trait: the seam a host program dispatches through.

use crate::{RunningCommand, SandboxCommand, SandboxEvent, SandboxHandle, SandboxSpec};
use futures_core::Stream;
use std::future::Future;
use std::pin::Pin;

/// The events of one `exec`, in order, ending with `exit` or `killed`.
pub type EventStream = Pin<Box<dyn Stream<Item = SandboxEvent> + Send + 'static>>;

/// A sandbox implementation: launch a spec, run commands in it, tear it down.
///
/// The facade crate implements it for `native` and `none`; a host program
/// can implement it for its own backend (a microVM station, say) and keep
/// the same vocabulary.
pub trait SandboxPort: Send + Sync {
    /// The implementation's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Prepares and starts a sandbox for `spec`. The returned handle names the
    /// backend actually in use and is `warm` on success.
    fn launch(
        &self,
        spec: SandboxSpec,
    ) -> impl Future<Output = Result<SandboxHandle, Self::Error>> + Send;

    /// Starts `command` in the sandbox of `handle`: its events and controls.
    fn exec(
        &self,
        handle: &SandboxHandle,
        command: SandboxCommand,
    ) -> impl Future<Output = Result<RunningCommand, Self::Error>> + Send;

    /// Tears the sandbox down; afterwards the handle is `destroyed`.
    fn destroy(
        &self,
        handle: &mut SandboxHandle,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Checkpoints a `warm` sandbox to disk and frees its memory: its
    /// processes stop where they are and the handle is `suspended`
    /// (R-MICROVM-5). A backend that cannot answers an error saying so
    /// (for example [`crate::ErrorKind::SuspendUnsupported`]) and leaves the
    /// sandbox as it was.
    fn suspend(
        &self,
        handle: &mut SandboxHandle,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Restores a `suspended` sandbox: its processes go on where they
    /// were and the handle is `warm` again.
    fn resume(
        &self,
        handle: &mut SandboxHandle,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// A boxed future of [`DynSandboxPort`].
pub type PortFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, Box<dyn std::error::Error + Send + Sync>>> + Send + 'a>>;

/// [`SandboxPort`] behind a trait object, so a host picks the backend at
/// run time (`Arc<dyn DynSandboxPort>`: the facade's manager, or its own
/// microVM adapter). Every [`SandboxPort`] is one; errors are boxed.
pub trait DynSandboxPort: Send + Sync {
    /// [`SandboxPort::launch`].
    fn launch_dyn(&self, spec: SandboxSpec) -> PortFuture<'_, SandboxHandle>;
    /// [`SandboxPort::exec`].
    fn exec_dyn<'a>(
        &'a self,
        handle: &'a SandboxHandle,
        command: SandboxCommand,
    ) -> PortFuture<'a, RunningCommand>;
    /// [`SandboxPort::destroy`].
    fn destroy_dyn<'a>(&'a self, handle: &'a mut SandboxHandle) -> PortFuture<'a, ()>;
    /// [`SandboxPort::suspend`].
    fn suspend_dyn<'a>(&'a self, handle: &'a mut SandboxHandle) -> PortFuture<'a, ()>;
    /// [`SandboxPort::resume`].
    fn resume_dyn<'a>(&'a self, handle: &'a mut SandboxHandle) -> PortFuture<'a, ()>;
}

impl<P: SandboxPort> DynSandboxPort for P {
    fn launch_dyn(&self, spec: SandboxSpec) -> PortFuture<'_, SandboxHandle> {
        Box::pin(async move { Ok(self.launch(spec).await?) })
    }
    fn exec_dyn<'a>(
        &'a self,
        handle: &'a SandboxHandle,
        command: SandboxCommand,
    ) -> PortFuture<'a, RunningCommand> {
        Box::pin(async move { Ok(self.exec(handle, command).await?) })
    }
    fn destroy_dyn<'a>(&'a self, handle: &'a mut SandboxHandle) -> PortFuture<'a, ()> {
        Box::pin(async move { Ok(self.destroy(handle).await?) })
    }
    fn suspend_dyn<'a>(&'a self, handle: &'a mut SandboxHandle) -> PortFuture<'a, ()> {
        Box::pin(async move { Ok(self.suspend(handle).await?) })
    }
    fn resume_dyn<'a>(&'a self, handle: &'a mut SandboxHandle) -> PortFuture<'a, ()> {
        Box::pin(async move { Ok(self.resume(handle).await?) })
    }
}
