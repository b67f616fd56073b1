//! The client side of a proxied connection: a TCP stream (a loopback
//! listener, or one bound inside the sandbox's network namespace) or a Unix
//! stream (a socket in the session's private directory).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A client connection of the proxies, however it arrived.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClientStream {
    /// Accepted on a TCP listener.
    Tcp(TcpStream),
    /// Accepted on a Unix socket, after its peer's uid was checked.
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl ClientStream {
    /// Disables Nagle's algorithm (TCP only; a no-op otherwise).
    pub fn set_nodelay(&self) {
        match self {
            ClientStream::Tcp(s) => {
                let _ = s.set_nodelay(true);
            }
            #[cfg(unix)]
            ClientStream::Unix(_) => {}
        }
    }

    /// Makes the coming close a reset where the stream has one (TCP), so
    /// the client sees an aborted stream, never a clean end of a truncated
    /// one. A Unix stream has no reset: its peer sees end of stream.
    pub fn abort_on_close(&self) {
        match self {
            ClientStream::Tcp(s) => {
                let _ = s.set_zero_linger();
            }
            #[cfg(unix)]
            ClientStream::Unix(_) => {}
        }
    }

    /// Borrowed read and write halves, for copying both ways at once.
    pub(crate) fn split(&mut self) -> (ReadHalf<'_>, WriteHalf<'_>) {
        match self {
            ClientStream::Tcp(s) => {
                let (r, w) = s.split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            #[cfg(unix)]
            ClientStream::Unix(s) => {
                let (r, w) = s.split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        }
    }
}

impl From<TcpStream> for ClientStream {
    fn from(s: TcpStream) -> Self {
        ClientStream::Tcp(s)
    }
}

#[cfg(unix)]
impl From<tokio::net::UnixStream> for ClientStream {
    fn from(s: tokio::net::UnixStream) -> Self {
        ClientStream::Unix(s)
    }
}

/// Forwards an I/O call to the variant's stream.
macro_rules! each {
    ($self:expr, $s:ident => $call:expr) => {
        match $self.get_mut() {
            ClientStream::Tcp($s) => $call,
            #[cfg(unix)]
            ClientStream::Unix($s) => $call,
        }
    };
}

impl AsyncRead for ClientStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => Pin::new(s).poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ClientStream::Tcp(s) => s.is_write_vectored(),
            #[cfg(unix)]
            ClientStream::Unix(s) => s.is_write_vectored(),
        }
    }
}

/// The read half of a borrowed [`ClientStream`].
pub(crate) enum ReadHalf<'a> {
    Tcp(tokio::net::tcp::ReadHalf<'a>),
    #[cfg(unix)]
    Unix(tokio::net::unix::ReadHalf<'a>),
}

/// The write half of a borrowed [`ClientStream`].
pub(crate) enum WriteHalf<'a> {
    Tcp(tokio::net::tcp::WriteHalf<'a>),
    #[cfg(unix)]
    Unix(tokio::net::unix::WriteHalf<'a>),
}

impl AsyncRead for ReadHalf<'_> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(unix)]
            ReadHalf::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf<'_> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(unix)]
            WriteHalf::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(s) => Pin::new(s).poll_flush(cx),
            #[cfg(unix)]
            WriteHalf::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(unix)]
            WriteHalf::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
