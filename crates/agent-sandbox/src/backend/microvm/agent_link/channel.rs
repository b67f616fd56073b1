//! The host's end of an agent's channel: a reader task that hands each
//! message from the guest to the command or TCP stream it is about, a
//! writer task, and the relays of the streams the guest opens. The byte
//! stream under it may change (a gVisor sandbox restored from a checkpoint
//! speaks over new pipes): [`Channel::pause`] stops the writer once the
//! agent has taken everything sent, and [`Channel::resume`] goes on over
//! the new pair, the frames cut at the switch joined. A stream
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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// The channel's byte stream from the agent.
pub(crate) type Reader = Box<dyn AsyncRead + Unpin + Send>;
/// The channel's byte stream to the agent.
pub(crate) type Writer = Box<dyn AsyncWrite + Unpin + Send>;

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
type Syncs = Arc<Mutex<HashMap<u64, oneshot::Sender<()>>>>;
/// A stream's bytes from the guest; `None`: the guest closed its end.
type Streams = Arc<Mutex<HashMap<u64, mpsc::Sender<Option<Vec<u8>>>>>>;

/// What the writer task is told besides frames.
enum WriterControl {
    /// Write this `Sync` frame, then nothing until resumed.
    Pause(Vec<u8>),
    /// Go on over the same stream (a pause that came to nothing).
    Unpause,
    /// Go on over a new stream.
    Resume(Writer),
}

/// The running channel.
pub(crate) struct Channel {
    out: mpsc::Sender<Vec<u8>>,
    commands: Commands,
    syncs: Syncs,
    next_sync: AtomicU64,
    control: mpsc::UnboundedSender<WriterControl>,
    /// New streams from the agent, taken at the old one's end while paused.
    readers: Mutex<Option<mpsc::UnboundedSender<Reader>>>,
    paused: Arc<AtomicBool>,
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
        Channel::start_over(Box::new(read), Box::new(write), frames, relays)
    }

    /// Starts the reader and the writer over a pair of byte streams.
    pub(crate) fn start_over(
        read: Reader,
        write: Writer,
        frames: FrameReader,
        relays: Relays,
    ) -> Channel {
        let (out, out_rx) = mpsc::channel(OUT_QUEUE);
        let (control, control_rx) = mpsc::unbounded_channel();
        let (readers, readers_rx) = mpsc::unbounded_channel();
        let commands: Commands = Arc::default();
        let syncs: Syncs = Arc::default();
        let paused = Arc::new(AtomicBool::new(false));
        tokio::spawn(write_all(write, out_rx, control_rx));
        tokio::spawn(read_all(
            read,
            readers_rx,
            paused.clone(),
            frames,
            (commands.clone(), syncs.clone()),
            out.clone(),
            relays,
        ));
        Channel {
            out,
            commands,
            syncs,
            next_sync: AtomicU64::new(1),
            control,
            readers: Mutex::new(Some(readers)),
            paused,
        }
    }

    /// Stops writing once the agent has taken everything sent so far (its
    /// `Synced` came back within `wait`): nothing more reaches it until
    /// [`Channel::resume`]. The agent's stream may end meanwhile without
    /// ending the channel. Refused (and writing goes on) when the agent
    /// does not answer in time.
    pub(crate) async fn pause(&self, wait: Duration) -> Result<(), VmError> {
        let n = self.next_sync.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut s) = self.syncs.lock() {
            s.insert(n, tx);
        }
        self.paused.store(true, Ordering::SeqCst);
        let _ = self
            .control
            .send(WriterControl::Pause(ToGuest::Sync { n }.encode()));
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(())) => Ok(()),
            _ => {
                self.unpause();
                Err(VmError(
                    "the agent did not take what was sent to it in time (a command not reading                      its input holds it)"
                        .into(),
                ))
            }
        }
    }

    /// Goes on writing over the same stream after a pause.
    pub(crate) fn unpause(&self) {
        self.paused.store(false, Ordering::SeqCst);
        let _ = self.control.send(WriterControl::Unpause);
    }

    /// Goes on over a new pair of streams after a pause.
    pub(crate) fn resume(&self, read: Reader, write: Writer) {
        if let Ok(r) = self.readers.lock()
            && let Some(r) = r.as_ref()
        {
            let _ = r.send(read);
        }
        self.paused.store(false, Ordering::SeqCst);
        let _ = self.control.send(WriterControl::Resume(write));
    }

    /// Ends the channel for good where it waits for a new stream (a
    /// suspended session destroyed): every command hears the end.
    pub(crate) fn close(&self) {
        if let Ok(mut r) = self.readers.lock() {
            r.take();
        }
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

async fn write_all(
    w: Writer,
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut control: mpsc::UnboundedReceiver<WriterControl>,
) {
    let mut w = Some(w);
    let mut held: Option<Writer> = None;
    loop {
        let Some(writing) = w.as_mut() else {
            match control.recv().await {
                Some(WriterControl::Unpause) => w = held.take(),
                Some(WriterControl::Resume(new)) => {
                    held = None;
                    w = Some(new);
                }
                Some(WriterControl::Pause(_)) => {}
                None => return,
            }
            continue;
        };
        tokio::select! {
            biased;
            c = control.recv() => match c {
                Some(WriterControl::Pause(sync)) => {
                    let _ = writing.write_all(&sync).await;
                    let _ = writing.flush().await;
                    held = w.take();
                }
                Some(WriterControl::Resume(new)) => w = Some(new),
                Some(WriterControl::Unpause) => {}
                None => return,
            },
            frame = rx.recv() => match frame {
                Some(frame) => {
                    if writing.write_all(&frame).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
        }
    }
}

async fn read_all(
    mut r: Reader,
    mut readers: mpsc::UnboundedReceiver<Reader>,
    paused: Arc<AtomicBool>,
    mut frames: FrameReader,
    (commands, syncs): (Commands, Syncs),
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
            // A hello read here (an agent not waited for at its start)
            // must speak this protocol; nothing else it says is heeded.
            if let FromGuest::Hello { version, .. } = m {
                if version != sandbox_core::vm_wire::VERSION {
                    break 'read;
                }
                continue;
            }
            if let FromGuest::Synced { n } = m {
                if let Some(tx) = syncs.lock().ok().and_then(|mut s| s.remove(&n)) {
                    let _ = tx.send(());
                }
                continue;
            }
            dispatch(m, &commands, &streams, &out, &relays).await;
        }
        match r.read(&mut buf).await {
            Ok(n) if n > 0 => frames.push(buf.get(..n).unwrap_or_default()),
            // The stream ended: a new one given already, or awaited while
            // paused, carries on (a frame cut at the switch is joined);
            // else the agent is gone.
            _ => match readers.try_recv() {
                Ok(next) => r = next,
                Err(_) if paused.load(Ordering::SeqCst) => match readers.recv().await {
                    Some(next) => r = next,
                    None => break,
                },
                Err(_) => break,
            },
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
        | FromGuest::Stderr { id, .. }
        | FromGuest::OutOfMemory { id } => {
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
        FromGuest::Hello { .. } | FromGuest::Synced { .. } => {}
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

/// The next message from the agent on `stream` (before the channel runs:
/// its hello), with what `frames` holds already.
pub(crate) async fn next_message<R: AsyncRead + Unpin>(
    stream: &mut R,
    frames: &mut FrameReader,
) -> Result<FromGuest, String> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match frames.next_body() {
            Ok(Some(body)) => {
                return FromGuest::decode(&body).map_err(|e| format!("from the guest: {e}"));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("from the guest: {e}")),
        }
        let n = stream
            .read(&mut buf)
            .await
            .map_err(|e| format!("reading from the guest: {e}"))?;
        if n == 0 {
            return Err("the guest's channel closed".into());
        }
        frames.push(buf.get(..n).unwrap_or_default());
    }
}
