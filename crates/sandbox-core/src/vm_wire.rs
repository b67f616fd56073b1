//! The channel between the host and the agent inside a `microvm` guest
//! (R-MICROVM): one byte stream (a virtio-serial port), carrying every
//! command's start, input, output, signals and end, and the TCP streams
//! the guest opens towards the session's proxies, as multiplexed frames.
//!
//! Frames as in [`crate::session_wire`]: a 4-byte little-endian body
//! length, then the body, a tag byte and the tag's fields. Unlike there,
//! no descriptor travels: a command's stdio is carried as data frames of
//! at most [`MAX_DATA`] bytes, numbered by the host's command id.
//!
//! The host reads what the guest writes, and a guest's kernel or agent may
//! be taken over by what runs in it: [`FromGuest::decode`] keeps the limits
//! ([`MAX_FROM_GUEST_LEN`], [`MAX_DATA`]), never panics and never reserves
//! more than the body holds. The agent reads what the host writes with
//! [`ToGuest::decode`] under [`MAX_TO_GUEST_LEN`] and [`MAX_ITEMS`].

pub use crate::wire_codec::{FrameReader, MAX_ITEMS, WireError};
use crate::wire_codec::{Reader, frame, put_bytes, put_list};

/// Most bytes of output, input or a TCP stream in one frame.
pub const MAX_DATA: usize = 64 << 10;
/// Largest body the guest may send: a data frame with its header, or a
/// hello with the guest's kernel release.
pub const MAX_FROM_GUEST_LEN: usize = MAX_DATA + 64;
/// Largest body the host sends: a command with its arguments and
/// environment (twice Linux's default argument space).
pub const MAX_TO_GUEST_LEN: usize = 4 << 20;
/// The protocol's version, in the agent's hello.
pub const VERSION: u32 = 2;

/// How a command's stdio is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmStdio {
    /// Three pipes: input from [`ToGuest::Stdin`], output as
    /// [`FromGuest::Stdout`] and [`FromGuest::Stderr`].
    Pipes,
    /// A terminal of this size in the guest, its output as
    /// [`FromGuest::Stdout`].
    #[allow(missing_docs, reason = "rows and columns")]
    Terminal { rows: u16, cols: u16 },
}

/// A command to start in the guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmExec {
    /// The host's number for the command, in every frame about it.
    pub id: u64,
    /// Program and arguments (at least the program); no NUL in any.
    pub argv: Vec<Vec<u8>>,
    /// The whole environment as `KEY=VALUE` entries; no NUL in any.
    pub env: Vec<Vec<u8>>,
    /// The working directory; no NUL.
    pub cwd: Vec<u8>,
    /// How stdio is given.
    pub stdio: VmStdio,
    /// The limits the agent holds the command (and what it starts) to.
    pub limits: VmLimits,
}

/// A command's limits inside the guest, each absent or a bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmLimits {
    /// Most bytes of memory; past it the command ends, reported by
    /// [`FromGuest::OutOfMemory`] before its [`FromGuest::Ended`].
    pub memory_bytes: Option<u64>,
    /// Most processes and threads at once.
    pub max_processes: Option<u32>,
    /// CPU time per wall-clock second, in thousandths of a CPU.
    pub cpu_millis: Option<u32>,
}

impl VmLimits {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        self.memory_bytes.is_none() && self.max_processes.is_none() && self.cpu_millis.is_none()
    }
}

/// What the host sends the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs, reason = "each variant's line says what its fields are")]
pub enum ToGuest {
    /// Starts a command.
    Exec(VmExec),
    /// Input for command `id`; empty: its input ends.
    Stdin { id: u64, data: Vec<u8> },
    /// Command `id`'s terminal has a new size.
    Resize { id: u64, rows: u16, cols: u16 },
    /// Sends `signal` to command `id`'s process group.
    Signal { id: u64, signal: i32 },
    /// Bytes for the guest's end of TCP stream `conn`.
    TcpData { conn: u64, data: Vec<u8> },
    /// The host's end of stream `conn` is closed (or never opened).
    TcpClose { conn: u64 },
    /// Ends every process and powers the guest off.
    PowerOff,
    /// Listens on `port` of the guest's loopback: each connection there
    /// becomes a stream ([`FromGuest::TcpOpen`]) the host relays (to a
    /// session's proxy).
    Listen { port: u16 },
    /// Asks for [`FromGuest::Synced`] with the same `n` once every message
    /// before this one was taken (the host pauses its side of the channel
    /// before a checkpoint with it).
    Sync { n: u64 },
}

/// What the agent sends the host.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs, reason = "each variant's line says what its fields are")]
pub enum FromGuest {
    /// The agent is up: its protocol version and the guest's kernel
    /// release (`uname -r`, at most 256 bytes).
    Hello { version: u32, kernel: Vec<u8> },
    /// Command `id` runs as `pid` (in the guest).
    Started { id: u64, pid: u32 },
    /// Command `id` could not start.
    Failed { id: u64, errno: i32 },
    /// Output of command `id` (a terminal's too).
    Stdout { id: u64, data: Vec<u8> },
    /// Error output of command `id`.
    Stderr { id: u64, data: Vec<u8> },
    /// Command `id` ended with this wait status; no frame about it follows.
    Ended { id: u64, wait_status: i32 },
    /// A process in the guest connected to `port` on the guest's loopback
    /// (a proxy's address there): stream `conn` is open.
    TcpOpen { conn: u64, port: u16 },
    /// Bytes from the guest's end of stream `conn`.
    TcpData { conn: u64, data: Vec<u8> },
    /// The guest's end of stream `conn` is closed.
    TcpClose { conn: u64 },
    /// Every message the host sent before its [`ToGuest::Sync`] `n` was
    /// taken.
    Synced { n: u64 },
    /// Command `id` went past its memory limit and was ended; its
    /// [`FromGuest::Ended`] follows.
    OutOfMemory { id: u64 },
}

const EXEC: u8 = 1;
const STDIN: u8 = 2;
const RESIZE: u8 = 3;
const SIGNAL: u8 = 4;
const TCP_DATA_IN: u8 = 5;
const TCP_CLOSE_IN: u8 = 6;
const POWER_OFF: u8 = 7;
const LISTEN: u8 = 8;
const SYNC: u8 = 9;
const HELLO: u8 = 21;
const STARTED: u8 = 22;
const FAILED: u8 = 23;
const STDOUT: u8 = 24;
const STDERR: u8 = 25;
const ENDED: u8 = 26;
const TCP_OPEN: u8 = 27;
const TCP_DATA_OUT: u8 = 28;
const TCP_CLOSE_OUT: u8 = 29;
const SYNCED: u8 = 30;
const OUT_OF_MEMORY: u8 = 31;

/// Longest kernel release in a hello.
const MAX_KERNEL_LEN: usize = 256;

fn framed(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len() + 4);
    frame(&mut out, b);
    out
}

fn id_and_data(b: &mut Vec<u8>, tag: u8, id: u64, data: &[u8]) {
    b.push(tag);
    b.extend_from_slice(&id.to_le_bytes());
    put_bytes(b, data);
}

fn data(r: &mut Reader<'_>) -> Result<Vec<u8>, WireError> {
    let d = r.bytes()?;
    if d.len() > MAX_DATA {
        return Err(WireError::TooLong {
            len: d.len(),
            limit: MAX_DATA,
        });
    }
    Ok(d.to_vec())
}

/// An optional field: a presence byte (0 or 1, nothing else), then the
/// value when present.
fn put_optional<const N: usize>(b: &mut Vec<u8>, v: Option<[u8; N]>) {
    match v {
        None => b.push(0),
        Some(bytes) => {
            b.push(1);
            b.extend_from_slice(&bytes);
        }
    }
}

/// Whether an optional field's value follows.
fn optional(r: &mut Reader<'_>) -> Result<bool, WireError> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        t => Err(WireError::UnknownTag(t)),
    }
}

fn u16_of(r: &mut Reader<'_>) -> Result<u16, WireError> {
    Ok(u16::from_le_bytes(r.array()?))
}

fn too_long(body: &[u8], limit: usize) -> Result<(), WireError> {
    if body.len() > limit {
        return Err(WireError::TooLong {
            len: body.len(),
            limit,
        });
    }
    Ok(())
}

impl ToGuest {
    /// The message as one frame. Data over [`MAX_DATA`] is the sender's to
    /// split: [`ToGuest::check`] refuses it, as the agent would.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            ToGuest::Exec(e) => {
                b.push(EXEC);
                b.extend_from_slice(&e.id.to_le_bytes());
                put_list(&mut b, &e.argv);
                put_list(&mut b, &e.env);
                put_bytes(&mut b, &e.cwd);
                match e.stdio {
                    VmStdio::Pipes => b.push(0),
                    VmStdio::Terminal { rows, cols } => {
                        b.push(1);
                        b.extend_from_slice(&rows.to_le_bytes());
                        b.extend_from_slice(&cols.to_le_bytes());
                    }
                }
                put_optional(&mut b, e.limits.memory_bytes.map(|v| v.to_le_bytes()));
                put_optional(&mut b, e.limits.max_processes.map(|v| v.to_le_bytes()));
                put_optional(&mut b, e.limits.cpu_millis.map(|v| v.to_le_bytes()));
            }
            ToGuest::Stdin { id, data } => id_and_data(&mut b, STDIN, *id, data),
            ToGuest::Resize { id, rows, cols } => {
                b.push(RESIZE);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&rows.to_le_bytes());
                b.extend_from_slice(&cols.to_le_bytes());
            }
            ToGuest::Signal { id, signal } => {
                b.push(SIGNAL);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&signal.to_le_bytes());
            }
            ToGuest::TcpData { conn, data } => id_and_data(&mut b, TCP_DATA_IN, *conn, data),
            ToGuest::TcpClose { conn } => {
                b.push(TCP_CLOSE_IN);
                b.extend_from_slice(&conn.to_le_bytes());
            }
            ToGuest::PowerOff => b.push(POWER_OFF),
            ToGuest::Listen { port } => {
                b.push(LISTEN);
                b.extend_from_slice(&port.to_le_bytes());
            }
            ToGuest::Sync { n } => {
                b.push(SYNC);
                b.extend_from_slice(&n.to_le_bytes());
            }
        }
        framed(&b)
    }

    /// Whether the agent would take this message.
    pub fn check(&self) -> Result<(), WireError> {
        let encoded = self.encode();
        ToGuest::decode(encoded.get(4..).unwrap_or_default()).map(|_| ())
    }

    /// Reads one message body (the frame's length already taken off).
    pub fn decode(body: &[u8]) -> Result<ToGuest, WireError> {
        too_long(body, MAX_TO_GUEST_LEN)?;
        let mut r = Reader(body);
        let msg = match r.u8()? {
            EXEC => {
                let id = r.u64()?;
                let argv = r.list()?;
                let env = r.list()?;
                let cwd = r.bytes()?.to_vec();
                let stdio = match r.u8()? {
                    0 => VmStdio::Pipes,
                    1 => VmStdio::Terminal {
                        rows: u16_of(&mut r)?,
                        cols: u16_of(&mut r)?,
                    },
                    t => return Err(WireError::UnknownTag(t)),
                };
                let limits = VmLimits {
                    memory_bytes: optional(&mut r)?.then(|| r.u64()).transpose()?,
                    max_processes: optional(&mut r)?.then(|| r.u32()).transpose()?,
                    cpu_millis: optional(&mut r)?.then(|| r.u32()).transpose()?,
                };
                let nul = |s: &Vec<u8>| s.contains(&0);
                if argv.is_empty() || argv.iter().any(nul) || env.iter().any(nul) || nul(&cwd) {
                    return Err(WireError::BadString);
                }
                ToGuest::Exec(VmExec {
                    id,
                    argv,
                    env,
                    cwd,
                    stdio,
                    limits,
                })
            }
            STDIN => ToGuest::Stdin {
                id: r.u64()?,
                data: data(&mut r)?,
            },
            RESIZE => ToGuest::Resize {
                id: r.u64()?,
                rows: u16_of(&mut r)?,
                cols: u16_of(&mut r)?,
            },
            SIGNAL => ToGuest::Signal {
                id: r.u64()?,
                signal: r.i32()?,
            },
            TCP_DATA_IN => ToGuest::TcpData {
                conn: r.u64()?,
                data: data(&mut r)?,
            },
            TCP_CLOSE_IN => ToGuest::TcpClose { conn: r.u64()? },
            POWER_OFF => ToGuest::PowerOff,
            LISTEN => ToGuest::Listen {
                port: u16_of(&mut r)?,
            },
            SYNC => ToGuest::Sync { n: r.u64()? },
            t => return Err(WireError::UnknownTag(t)),
        };
        r.end()?;
        Ok(msg)
    }
}

impl FromGuest {
    /// The message as one frame (data over [`MAX_DATA`] is the sender's to
    /// split; the host refuses it).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            FromGuest::Hello { version, kernel } => {
                b.push(HELLO);
                b.extend_from_slice(&version.to_le_bytes());
                put_bytes(&mut b, kernel);
            }
            FromGuest::Started { id, pid } => {
                b.push(STARTED);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&pid.to_le_bytes());
            }
            FromGuest::Failed { id, errno } => {
                b.push(FAILED);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&errno.to_le_bytes());
            }
            FromGuest::Stdout { id, data } => id_and_data(&mut b, STDOUT, *id, data),
            FromGuest::Stderr { id, data } => id_and_data(&mut b, STDERR, *id, data),
            FromGuest::Ended { id, wait_status } => {
                b.push(ENDED);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&wait_status.to_le_bytes());
            }
            FromGuest::TcpOpen { conn, port } => {
                b.push(TCP_OPEN);
                b.extend_from_slice(&conn.to_le_bytes());
                b.extend_from_slice(&port.to_le_bytes());
            }
            FromGuest::TcpData { conn, data } => id_and_data(&mut b, TCP_DATA_OUT, *conn, data),
            FromGuest::TcpClose { conn } => {
                b.push(TCP_CLOSE_OUT);
                b.extend_from_slice(&conn.to_le_bytes());
            }
            FromGuest::Synced { n } => {
                b.push(SYNCED);
                b.extend_from_slice(&n.to_le_bytes());
            }
            FromGuest::OutOfMemory { id } => {
                b.push(OUT_OF_MEMORY);
                b.extend_from_slice(&id.to_le_bytes());
            }
        }
        framed(&b)
    }

    /// Reads one message body (the frame's length already taken off).
    pub fn decode(body: &[u8]) -> Result<FromGuest, WireError> {
        too_long(body, MAX_FROM_GUEST_LEN)?;
        let mut r = Reader(body);
        let msg = match r.u8()? {
            HELLO => {
                let version = r.u32()?;
                let kernel = r.bytes()?;
                if kernel.len() > MAX_KERNEL_LEN {
                    return Err(WireError::TooLong {
                        len: kernel.len(),
                        limit: MAX_KERNEL_LEN,
                    });
                }
                FromGuest::Hello {
                    version,
                    kernel: kernel.to_vec(),
                }
            }
            STARTED => FromGuest::Started {
                id: r.u64()?,
                pid: r.u32()?,
            },
            FAILED => FromGuest::Failed {
                id: r.u64()?,
                errno: r.i32()?,
            },
            STDOUT => FromGuest::Stdout {
                id: r.u64()?,
                data: data(&mut r)?,
            },
            STDERR => FromGuest::Stderr {
                id: r.u64()?,
                data: data(&mut r)?,
            },
            ENDED => FromGuest::Ended {
                id: r.u64()?,
                wait_status: r.i32()?,
            },
            TCP_OPEN => FromGuest::TcpOpen {
                conn: r.u64()?,
                port: u16_of(&mut r)?,
            },
            TCP_DATA_OUT => FromGuest::TcpData {
                conn: r.u64()?,
                data: data(&mut r)?,
            },
            TCP_CLOSE_OUT => FromGuest::TcpClose { conn: r.u64()? },
            SYNCED => FromGuest::Synced { n: r.u64()? },
            OUT_OF_MEMORY => FromGuest::OutOfMemory { id: r.u64()? },
            t => return Err(WireError::UnknownTag(t)),
        };
        r.end()?;
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_decoder_refuses() {
        // An output frame over the data limit, from the guest.
        let big = FromGuest::Stdout {
            id: 1,
            data: vec![b'x'; MAX_DATA + 1],
        }
        .encode();
        assert!(matches!(
            FromGuest::decode(&big[4..]),
            Err(WireError::TooLong { .. })
        ));
        // A limit's presence byte is 0 or 1, nothing else.
        let mut exec = ToGuest::Exec(VmExec {
            id: 1,
            argv: vec![b"true".to_vec()],
            env: Vec::new(),
            cwd: b"/".to_vec(),
            stdio: VmStdio::Pipes,
            limits: VmLimits {
                memory_bytes: Some(1 << 20),
                max_processes: None,
                cpu_millis: Some(500),
            },
        })
        .encode();
        assert!(ToGuest::decode(&exec[4..]).is_ok());
        let at = exec.len() - 15; // the memory limit's presence byte
        exec[at] = 2;
        assert_eq!(ToGuest::decode(&exec[4..]), Err(WireError::UnknownTag(2)));
        // A host message is not a guest's.
        let e = ToGuest::PowerOff.encode();
        assert_eq!(
            FromGuest::decode(&e[4..]),
            Err(WireError::UnknownTag(POWER_OFF))
        );
        // An empty argv, a NUL in the environment.
        let exec = |argv: Vec<Vec<u8>>, env: Vec<Vec<u8>>| {
            ToGuest::Exec(VmExec {
                id: 1,
                argv,
                env,
                cwd: b"/".to_vec(),
                stdio: VmStdio::Pipes,
                limits: VmLimits::default(),
            })
        };
        assert_eq!(exec(vec![], vec![]).check(), Err(WireError::BadString));
        assert_eq!(
            exec(vec![b"sh".to_vec()], vec![b"A=\0".to_vec()]).check(),
            Err(WireError::BadString)
        );
        // A list count the body cannot hold reserves nothing.
        let mut body = vec![EXEC];
        body.extend_from_slice(&1u64.to_le_bytes());
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(ToGuest::decode(&body).is_err());
        // Trailing bytes.
        let mut t = ToGuest::TcpClose { conn: 3 }.encode();
        t.push(0);
        assert_eq!(ToGuest::decode(&t[4..]), Err(WireError::Trailing));
    }
}
