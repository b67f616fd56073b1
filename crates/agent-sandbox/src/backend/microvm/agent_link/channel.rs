//! The host's end of a guest's channel: a reader task that hands each
//! message from the guest to the command or TCP stream it is about, a
//! writer task, and the relays of the streams the guest opens. A stream
//! the guest opens on a port the host relays is carried to that port's
//! target (a session's proxy); any other is closed at once. Nothing else
//! leaves the guest.
//!
//! What the guest sends is queued for its command or stream at most
//! [`QUEUE`] messages deep (at most 64 KiB of data each): past that the
//! reader waits, and so the guest's writes do, rather than the host
//! holding whatever a guest sends faster than it is taken. What goes to
//! the guest is queued at most [`OUT_QUEUE`] frames deep: data (input, a
//! proxy's answer) waits for room, so a guest that stops reading its port
//! holds up its own streams rather than the host's memory; a control
//! message finding no room is an error.

use super::error::VmError;
use sandbox_core::vm_wire::{FrameReader, FromGuest, MAX_DATA, ToGuest};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

/// Where the host carries a stream opened on a guest port.
#[derive(Clone, Debug)]
pub(crate) enum RelayTarget {
    /// A TCP address (the tests' services).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "sessions relay to their proxies' Unix sockets")
    )]
    Tcp(std::net::SocketAddr),
    /// A Unix socket (a session's proxies).
    Unix(PathBuf),
}

/// Guest port to what the host carries its streams to.
pub(crate) type Relays = HashMap<u16, RelayTarget>;

/// How many messages from the guest wait for one command or stream.
pub(crate) const QUEUE: usize = 64;
/// How many frames wait to be written to the guest.
pub(crate) const OUT_QUEUE: usize = 256;

type Commands = Arc<Mutex<HashMap<u64, mpsc::Sender<FromGuest>>>>;
/// A stream's bytes from the guest; `None`: the guest closed its end.
type Streams = Arc<Mutex<HashMap<u64, mpsc::Sender<Option<Vec<u8>>>>>>;

/// The running channel.
pub(crate) struct Channel {
    out: mpsc::Sender<Vec<u8>>,
    commands: Commands,
}

impl Channel {
    /// Starts the reader (from `frames`, which may hold bytes already read)
    /// and the writer over `stream`.
    pub(crate) fn start(
        stream: tokio::net::UnixStream,
        frames: FrameReader,
        relays: Relays,
    ) -> Channel {
        let (read, write) = stream.into_split();
        let (out, out_rx) = mpsc::channel(OUT_QUEUE);
        let commands: Commands = Arc::default();
        tokio::spawn(write_all(write, out_rx));
        tokio::spawn(read_all(
            read,
            frames,
            commands.clone(),
            out.clone(),
            relays,
        ));
        Channel { out, commands }
    }

    /// Sends `m` to the guest now: a control message (a command, a signal,
    /// a resize, the end of input, power-off), refused when the guest has
    /// not read what waits for it.
    pub(crate) fn send(&self, m: &ToGuest) -> Result<(), VmError> {
        self.out.try_send(m.encode()).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                VmError("the guest does not read its channel".into())
            }
            mpsc::error::TrySendError::Closed(_) => VmError("the guest's channel closed".into()),
        })
    }

    /// Sends data (`m`, a command's input) to the guest once there is room.
    pub(crate) async fn send_data(&self, m: &ToGuest) -> Result<(), VmError> {
        self.out
            .send(m.encode())
            .await
            .map_err(|_| VmError("the guest's channel closed".into()))
    }

    /// The messages about command `id` from now on (register before its
    /// `Exec` is sent). They end after its `Ended` or `Failed`, or when the
    /// channel closes.
    pub(crate) fn command(&self, id: u64) -> mpsc::Receiver<FromGuest> {
        let (tx, rx) = mpsc::channel(QUEUE);
        if let Ok(mut c) = self.commands.lock() {
            c.insert(id, tx);
        }
        rx
    }
}

async fn write_all(mut w: OwnedWriteHalf, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(frame) = rx.recv().await {
        if w.write_all(&frame).await.is_err() {
            return;
        }
    }
}

async fn read_all(
    mut r: OwnedReadHalf,
    mut frames: FrameReader,
    commands: Commands,
    out: mpsc::Sender<Vec<u8>>,
    relays: Relays,
) {
    let streams: Streams = Arc::default();
    let mut buf = vec![0u8; 64 * 1024];
    'read: loop {
        loop {
            let body = match frames.next_body() {
                Ok(Some(b)) => b,
                Ok(None) => break,
                Err(_) => break 'read,
            };
            let Ok(m) = FromGuest::decode(&body) else {
                break 'read;
            };
            dispatch(m, &commands, &streams, &out, &relays).await;
        }
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => frames.push(buf.get(..n).unwrap_or_default()),
        }
    }
    // The guest is gone (or spoke nonsense): every waiter hears the end.
    if let Ok(mut c) = commands.lock() {
        c.clear();
    }
    if let Ok(mut s) = streams.lock() {
        s.clear();
    }
}

async fn dispatch(
    m: FromGuest,
    commands: &Commands,
    streams: &Streams,
    out: &mpsc::Sender<Vec<u8>>,
    relays: &Relays,
) {
    match m {
        FromGuest::Started { id, .. }
        | FromGuest::Stdout { id, .. }
        | FromGuest::Stderr { id, .. } => {
            let tx = commands.lock().ok().and_then(|c| c.get(&id).cloned());
            if let Some(tx) = tx {
                let _ = tx.send(m).await;
            }
        }
        FromGuest::Failed { id, .. } | FromGuest::Ended { id, .. } => {
            let tx = commands.lock().ok().and_then(|mut c| c.remove(&id));
            if let Some(tx) = tx {
                let _ = tx.send(m).await;
            }
        }
        FromGuest::TcpOpen { conn, port } => {
            let Some(target) = relays.get(&port).cloned() else {
                // Without room the guest's end stays open: waiting here
                // could wait on the guest, which may wait on this reader.
                let _ = out.try_send(ToGuest::TcpClose { conn }.encode());
                return;
            };
            let (tx, rx) = mpsc::channel(QUEUE);
            if let Ok(mut s) = streams.lock() {
                s.insert(conn, tx);
            }
            tokio::spawn(relay(conn, target, rx, out.clone()));
        }
        FromGuest::TcpData { conn, data } => {
            let tx = streams.lock().ok().and_then(|s| s.get(&conn).cloned());
            if let Some(tx) = tx {
                let _ = tx.send(Some(data)).await;
            }
        }
        FromGuest::TcpClose { conn } => {
            let tx = streams.lock().ok().and_then(|mut s| s.remove(&conn));
            if let Some(tx) = tx {
                let _ = tx.send(None).await;
            }
        }
        FromGuest::Hello { .. } => {}
    }
}

/// Carries stream `conn` to `target` and back until both ends closed.
async fn relay(
    conn: u64,
    target: RelayTarget,
    rx: mpsc::Receiver<Option<Vec<u8>>>,
    out: mpsc::Sender<Vec<u8>>,
) {
    match target {
        RelayTarget::Tcp(addr) => match tokio::net::TcpStream::connect(addr).await {
            Ok(s) => {
                let (r, w) = s.into_split();
                pump(conn, r, w, rx, out).await;
            }
            Err(_) => {
                let _ = out.send(ToGuest::TcpClose { conn }.encode()).await;
            }
        },
        RelayTarget::Unix(path) => match tokio::net::UnixStream::connect(path).await {
            Ok(s) => {
                let (r, w) = s.into_split();
                pump(conn, r, w, rx, out).await;
            }
            Err(_) => {
                let _ = out.send(ToGuest::TcpClose { conn }.encode()).await;
            }
        },
    }
}

async fn pump<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    conn: u64,
    mut r: R,
    mut w: W,
    mut rx: mpsc::Receiver<Option<Vec<u8>>>,
    out: mpsc::Sender<Vec<u8>>,
) {
    let to_target = async move {
        while let Some(Some(data)) = rx.recv().await {
            if w.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = w.shutdown().await;
    };
    let from_target = async move {
        let mut buf = vec![0u8; MAX_DATA];
        loop {
            match r.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let data = buf.get(..n).unwrap_or_default().to_vec();
                    if out
                        .send(ToGuest::TcpData { conn, data }.encode())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        let _ = out.send(ToGuest::TcpClose { conn }.encode()).await;
    };
    tokio::join!(to_target, from_target);
}
