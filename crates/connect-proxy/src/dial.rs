//! One TCP connect to an upstream address, with `TCP_NODELAY` set.
//!
//! On Linux a non-blocking connect to a nearby address (loopback, a local
//! bridge) has often finished by the time the call returns, since the
//! kernel handles the peer's answer before it gives the socket back. The
//! connect here asks the socket (`getpeername`) in that case and hands the
//! stream over at once; only a connect still in flight waits for the
//! runtime's writable event, as tokio's own `TcpStream::connect` always
//! does. That saves the connection's task one wake-up and one poll of its
//! whole future per tunnel. Elsewhere tokio's connect is used.

use std::io;
use std::net::SocketAddr;
use tokio::net::TcpStream;

/// Connects to `addr`; `TCP_NODELAY` is set on the stream.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    use rustix::io::Errno;
    use rustix::net::{AddressFamily, SocketFlags, SocketType, sockopt};

    let family = match addr {
        SocketAddr::V4(_) => AddressFamily::INET,
        SocketAddr::V6(_) => AddressFamily::INET6,
    };
    let fd = rustix::net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    // Best effort, as on every stream the proxies hold: a refusal only
    // costs latency.
    let _ = sockopt::set_tcp_nodelay(&fd, true);
    let finished = match rustix::net::connect(&fd, &addr) {
        Ok(()) => true,
        Err(Errno::INPROGRESS) => match rustix::net::getpeername(&fd) {
            Ok(_) => true,
            // Still in flight, or failed: the socket's pending error says.
            Err(Errno::NOTCONN) => match sockopt::socket_error(&fd)? {
                Ok(()) => false,
                Err(e) => return Err(e.into()),
            },
            Err(e) => return Err(e.into()),
        },
        Err(e) => return Err(e.into()),
    };
    let stream = TcpStream::from_std(std::net::TcpStream::from(fd))?;
    if !finished {
        stream.writable().await?;
        if let Some(e) = stream.take_error()? {
            return Err(e);
        }
    }
    Ok(stream)
}

/// Connects to `addr`; `TCP_NODELAY` is set on the stream.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) async fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr).await?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_finished_connect_carries_bytes_both_ways() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stream, accepted) = tokio::join!(connect(addr), listener.accept());
        let mut stream = stream.unwrap();
        let (mut peer, _) = accepted.unwrap();
        assert!(stream.nodelay().unwrap());
        assert_eq!(stream.peer_addr().unwrap(), addr);
        stream.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        peer.write_all(b"pong").await.unwrap();
        stream.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"pong");
    }

    #[tokio::test]
    async fn a_closed_port_is_refused() {
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let err = connect(addr).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
    }

    #[tokio::test]
    async fn a_connect_still_in_flight_waits_for_the_answer() {
        // A listener whose accept queue is full drops further SYNs, so the
        // connect below is still in flight when the call returns.
        let (addr, held, listener) =
            test_support::net::full_accept_queue("127.0.0.1".parse().unwrap()).await;
        let mut pending = Box::pin(connect(addr));
        let early = tokio::time::timeout(std::time::Duration::from_millis(300), &mut pending).await;
        assert!(early.is_err(), "the connect finished against a full queue");
        // Room in the queue: the SYN sent again (after about a second) is
        // answered, and the waiting connect finishes.
        while let Ok(Ok((s, _))) =
            tokio::time::timeout(std::time::Duration::from_millis(50), listener.accept()).await
        {
            drop(s);
        }
        drop(held);
        let stream = tokio::time::timeout(std::time::Duration::from_secs(10), pending)
            .await
            .expect("the connect finished once the queue had room")
            .unwrap();
        assert_eq!(stream.peer_addr().unwrap(), addr);
    }
}
