//! An `mpsc` receiver as the event stream of `SandboxPort::exec`.

use futures_core::Stream;
use sandbox_core::SandboxEvent;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

pub(crate) struct ReceiverStream(pub(crate) mpsc::Receiver<SandboxEvent>);

impl Stream for ReceiverStream {
    type Item = SandboxEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SandboxEvent>> {
        self.0.poll_recv(cx)
    }
}
