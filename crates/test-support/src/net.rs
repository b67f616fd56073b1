//! Sockets in states a test needs on purpose.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// A listener on `ip` whose accept queue is full, with the connections
/// that fill it: a further connect stays in flight (its SYN is dropped)
/// until the listener accepts or is dropped.
///
/// # Panics
///
/// When the listener cannot be made.
#[allow(
    clippy::unwrap_used,
    reason = "test support: a listener that cannot be made fails the test"
)]
pub async fn full_accept_queue(
    ip: IpAddr,
) -> (
    SocketAddr,
    Vec<std::net::TcpStream>,
    tokio::net::TcpListener,
) {
    let socket = match ip {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    }
    .unwrap();
    socket.bind((ip, 0).into()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let held = tokio::task::spawn_blocking(move || {
        let mut held = Vec::new();
        for _ in 0..4 {
            if let Ok(s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
                held.push(s);
            }
        }
        held
    })
    .await
    .unwrap();
    (addr, held, listener)
}
