//! The `SandboxPort` trait: the seam a host program dispatches through.

use crate::{SandboxEvent, SandboxHandle, SandboxSpec};
use futures_core::Stream;
use std::ffi::OsString;
use std::future::Future;
use std::pin::Pin;

/// The events of one `exec`, in order, ending with `exit` or `killed`.
pub type EventStream = Pin<Box<dyn Stream<Item = SandboxEvent> + Send + 'static>>;

/// A command to run inside a launched sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxCommand {
    /// The program, looked up inside the sandbox.
    pub program: OsString,
    /// Its arguments (no shell is involved).
    pub args: Vec<OsString>,
    /// Working directory inside the sandbox; the spec's `guest_workdir` when
    /// absent.
    pub workdir: Option<String>,
}

impl SandboxCommand {
    /// A command with no arguments.
    pub fn new(program: impl Into<OsString>) -> SandboxCommand {
        SandboxCommand {
            program: program.into(),
            args: Vec::new(),
            workdir: None,
        }
    }

    /// Appends one argument.
    pub fn arg(&mut self, arg: impl Into<OsString>) -> &mut SandboxCommand {
        self.args.push(arg.into());
        self
    }

    /// Sets the working directory.
    pub fn workdir(&mut self, dir: impl Into<String>) -> &mut SandboxCommand {
        self.workdir = Some(dir.into());
        self
    }
}

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

    /// Runs `command` in the sandbox of `handle` and streams its events.
    fn exec(
        &self,
        handle: &SandboxHandle,
        command: SandboxCommand,
    ) -> impl Future<Output = Result<EventStream, Self::Error>> + Send;

    /// Tears the sandbox down; afterwards the handle is `destroyed`.
    fn destroy(
        &self,
        handle: &mut SandboxHandle,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}
