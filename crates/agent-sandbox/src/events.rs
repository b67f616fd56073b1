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

/// Reads the next event from an event stream (a small helper so callers do
/// not need a stream utility crate).
pub async fn next_event<S>(stream: &mut S) -> Option<SandboxEvent>
where
    S: Stream<Item = SandboxEvent> + Unpin + ?Sized,
{
    std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}
