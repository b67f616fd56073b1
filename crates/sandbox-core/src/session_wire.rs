//! The framing between a host and the session init that runs inside a warm
//! native session: the host asks it to start a command or signal one, and
//! it answers when a command started, could not start, or ended.
//!
//! Each frame is a 4-byte little-endian body length, then the body: a tag
//! byte and the tag's fields. Numbers are little-endian; a byte string is
//! its 4-byte length, then its bytes. Descriptors (a command's stdio and
//! cgroup files) travel beside the bytes as `SCM_RIGHTS`; a request says
//! how many it takes, in order.
//!
//! Both directions cross the sandbox's boundary: the init reads what the
//! host sends, and the host reads what a process inside the sandbox could
//! have written (a command of the same user may take over the init). So
//! both decoders keep hard limits ([`MAX_REQUEST_LEN`], [`MAX_REPLY_LEN`],
//! [`MAX_ITEMS`]), refuse a NUL inside a path, argument or variable, and
//! never panic; [`FrameReader`] buffers at most one frame.

pub use crate::wire_codec::{FrameReader, MAX_ITEMS, WireError};
use crate::wire_codec::{Reader, frame, put_bytes, put_list};

/// Largest request body (argv, environment and working directory
/// together): twice Linux's default argument space.
pub const MAX_REQUEST_LEN: usize = 4 << 20;
/// Largest reply body: replies are a few numbers.
pub const MAX_REPLY_LEN: usize = 64;
/// Most cgroup files one command joins.
pub const MAX_CGROUPS: u8 = 8;

/// How a command's stdio is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdio {
    /// Three descriptors: stdin, stdout, stderr.
    Pipes,
    /// One descriptor, a terminal's slave: stdio and controlling terminal.
    Terminal,
}

impl Stdio {
    /// How many descriptors this stdio takes.
    pub fn fds(self) -> usize {
        match self {
            Stdio::Pipes => 3,
            Stdio::Terminal => 1,
        }
    }
}

/// A command to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exec {
    /// The host's number for the command, echoed in every reply.
    pub id: u64,
    /// Program and arguments (at least the program); no NUL in any.
    pub argv: Vec<Vec<u8>>,
    /// The whole environment as `KEY=VALUE` entries; no NUL in any.
    pub env: Vec<Vec<u8>>,
    /// The working directory; no NUL.
    pub cwd: Vec<u8>,
    /// How stdio is given.
    pub stdio: Stdio,
    /// How many `cgroup.procs` descriptors follow the stdio's.
    pub cgroups: u8,
}

impl Exec {
    /// How many descriptors travel with this request.
    pub fn fds(&self) -> usize {
        self.stdio.fds() + usize::from(self.cgroups)
    }
}

/// What the host asks the init.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Starts a command.
    Exec(Exec),
    /// Sends `signal` to the process group of command `id`.
    #[allow(missing_docs, reason = "the variant's line says what each field is")]
    Signal { id: u64, signal: i32 },
}

/// What the init answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs, reason = "each variant's line says what its fields are")]
pub enum Reply {
    /// Command `id` runs, as `pid` in the sandbox's pid namespace.
    Started { id: u64, pid: u32 },
    /// Command `id` could not start: the system error number.
    Failed { id: u64, errno: i32 },
    /// Command `id` ended with this wait status (as `waitpid` gives it).
    Ended { id: u64, wait_status: i32 },
}

const TAG_EXEC: u8 = 1;
const TAG_SIGNAL: u8 = 2;
const TAG_STARTED: u8 = 11;
const TAG_FAILED: u8 = 12;
const TAG_ENDED: u8 = 13;

impl Request {
    /// The request as one frame. The host checks its own limits first
    /// ([`Request::check`]): a frame the init would refuse is never sent.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Request::Exec(e) => {
                b.push(TAG_EXEC);
                b.extend_from_slice(&e.id.to_le_bytes());
                put_list(&mut b, &e.argv);
                put_list(&mut b, &e.env);
                put_bytes(&mut b, &e.cwd);
                b.push(match e.stdio {
                    Stdio::Pipes => 0,
                    Stdio::Terminal => 1,
                });
                b.push(e.cgroups);
            }
            Request::Signal { id, signal } => {
                b.push(TAG_SIGNAL);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&signal.to_le_bytes());
            }
        }
        let mut out = Vec::with_capacity(b.len() + 4);
        frame(&mut out, &b);
        out
    }

    /// Whether the init would take this request: within the limits, no
    /// NUL inside a string, a program given.
    pub fn check(&self) -> Result<(), WireError> {
        let encoded = self.encode();
        let body = encoded.get(4..).unwrap_or_default();
        Request::decode(body).map(|_| ())
    }

    /// Reads one request body (the frame's length already taken off).
    pub fn decode(body: &[u8]) -> Result<Request, WireError> {
        if body.len() > MAX_REQUEST_LEN {
            return Err(WireError::TooLong {
                len: body.len(),
                limit: MAX_REQUEST_LEN,
            });
        }
        let mut r = Reader(body);
        let req = match r.u8()? {
            TAG_EXEC => {
                let id = r.u64()?;
                let argv = r.list()?;
                let env = r.list()?;
                let cwd = r.bytes()?.to_vec();
                let stdio = match r.u8()? {
                    0 => Stdio::Pipes,
                    1 => Stdio::Terminal,
                    t => return Err(WireError::UnknownTag(t)),
                };
                let cgroups = r.u8()?;
                if cgroups > MAX_CGROUPS {
                    return Err(WireError::TooMany);
                }
                let nul = |s: &Vec<u8>| s.contains(&0);
                if argv.is_empty() || argv.iter().any(nul) || env.iter().any(nul) || nul(&cwd) {
                    return Err(WireError::BadString);
                }
                Request::Exec(Exec {
                    id,
                    argv,
                    env,
                    cwd,
                    stdio,
                    cgroups,
                })
            }
            TAG_SIGNAL => Request::Signal {
                id: r.u64()?,
                signal: r.i32()?,
            },
            t => return Err(WireError::UnknownTag(t)),
        };
        r.end()?;
        Ok(req)
    }
}

impl Reply {
    /// The reply as one frame.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(17);
        let (tag, id, n) = match *self {
            Reply::Started { id, pid } => (TAG_STARTED, id, pid.to_le_bytes()),
            Reply::Failed { id, errno } => (TAG_FAILED, id, errno.to_le_bytes()),
            Reply::Ended { id, wait_status } => (TAG_ENDED, id, wait_status.to_le_bytes()),
        };
        b.push(tag);
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&n);
        let mut out = Vec::with_capacity(b.len() + 4);
        frame(&mut out, &b);
        out
    }

    /// Reads one reply body (the frame's length already taken off).
    pub fn decode(body: &[u8]) -> Result<Reply, WireError> {
        if body.len() > MAX_REPLY_LEN {
            return Err(WireError::TooLong {
                len: body.len(),
                limit: MAX_REPLY_LEN,
            });
        }
        let mut r = Reader(body);
        let tag = r.u8()?;
        let id = r.u64()?;
        let reply = match tag {
            TAG_STARTED => Reply::Started { id, pid: r.u32()? },
            TAG_FAILED => Reply::Failed {
                id,
                errno: r.i32()?,
            },
            TAG_ENDED => Reply::Ended {
                id,
                wait_status: r.i32()?,
            },
            t => return Err(WireError::UnknownTag(t)),
        };
        r.end()?;
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exec() -> Exec {
        Exec {
            id: 7,
            argv: vec![b"/bin/true".to_vec()],
            env: vec![b"PATH=/usr/bin".to_vec()],
            cwd: b"/work".to_vec(),
            stdio: Stdio::Pipes,
            cgroups: 1,
        }
    }

    #[test]
    fn what_each_decoder_refuses() {
        let body = |r: &Request| r.encode()[4..].to_vec();
        let mut nul = exec();
        nul.argv.push(b"a\0b".to_vec());
        let mut empty = exec();
        empty.argv.clear();
        let mut many = exec();
        many.cgroups = MAX_CGROUPS + 1;
        let good = body(&Request::Exec(exec()));
        let cases: Vec<(&str, Vec<u8>, WireError)> = vec![
            (
                "a NUL inside an argument",
                body(&Request::Exec(nul)),
                WireError::BadString,
            ),
            (
                "no program",
                body(&Request::Exec(empty)),
                WireError::BadString,
            ),
            (
                "too many cgroups",
                body(&Request::Exec(many)),
                WireError::TooMany,
            ),
            ("an unknown tag", vec![99], WireError::UnknownTag(99)),
            (
                "a cut body",
                good[..good.len() - 1].to_vec(),
                WireError::Truncated,
            ),
            (
                "a body with a byte too many",
                [good.clone(), vec![0]].concat(),
                WireError::Trailing,
            ),
            (
                "a count the body cannot hold",
                [vec![TAG_EXEC], vec![0; 8], u32::MAX.to_le_bytes().to_vec()].concat(),
                WireError::TooMany,
            ),
            (
                "a count within the limit the body cannot hold",
                [vec![TAG_EXEC], vec![0; 8], 1000u32.to_le_bytes().to_vec()].concat(),
                WireError::Truncated,
            ),
        ];
        for (intent, bytes, want) in cases {
            assert_eq!(Request::decode(&bytes), Err(want), "{intent}");
        }
        assert_eq!(
            Reply::decode(&[0; MAX_REPLY_LEN + 1]),
            Err(WireError::TooLong {
                len: MAX_REPLY_LEN + 1,
                limit: MAX_REPLY_LEN
            }),
            "a reply longer than any reply"
        );
    }

    #[test]
    fn a_length_over_the_limit_is_refused_before_the_body_arrives() {
        let mut r = FrameReader::new(MAX_REPLY_LEN);
        r.push(&1000u32.to_le_bytes());
        assert!(matches!(r.next_body(), Err(WireError::TooLong { .. })));
    }

    fn string() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(1u8..=255, 0..40)
    }

    fn request() -> impl Strategy<Value = Request> {
        let exec = (
            any::<u64>(),
            proptest::collection::vec(string(), 1..6),
            proptest::collection::vec(string(), 0..6),
            string(),
            any::<bool>(),
            0..=MAX_CGROUPS,
        )
            .prop_map(|(id, argv, env, cwd, pty, cgroups)| {
                Request::Exec(Exec {
                    id,
                    argv,
                    env,
                    cwd,
                    stdio: if pty { Stdio::Terminal } else { Stdio::Pipes },
                    cgroups,
                })
            });
        let signal =
            (any::<u64>(), any::<i32>()).prop_map(|(id, signal)| Request::Signal { id, signal });
        prop_oneof![exec, signal]
    }

    fn reply() -> impl Strategy<Value = Reply> {
        prop_oneof![
            (any::<u64>(), any::<u32>()).prop_map(|(id, pid)| Reply::Started { id, pid }),
            (any::<u64>(), any::<i32>()).prop_map(|(id, errno)| Reply::Failed { id, errno }),
            (any::<u64>(), any::<i32>())
                .prop_map(|(id, wait_status)| Reply::Ended { id, wait_status }),
        ]
    }

    proptest! {
        #[test]
        fn frames_read_back_whatever_the_reads_cut(
            reqs in proptest::collection::vec(request(), 1..5),
            replies in proptest::collection::vec(reply(), 1..5),
            cut in 1usize..23,
        ) {
            let stream: Vec<u8> = reqs.iter().flat_map(Request::encode).collect();
            let mut r = FrameReader::new(MAX_REQUEST_LEN);
            let mut got = Vec::new();
            for chunk in stream.chunks(cut) {
                r.push(chunk);
                while let Some(b) = r.next_body().unwrap() {
                    got.push(Request::decode(&b).unwrap());
                }
            }
            prop_assert_eq!(got, reqs);
            prop_assert!(!r.has_partial());
            let stream: Vec<u8> = replies.iter().flat_map(Reply::encode).collect();
            let mut r = FrameReader::new(MAX_REPLY_LEN);
            let mut got = Vec::new();
            for chunk in stream.chunks(cut) {
                r.push(chunk);
                while let Some(b) = r.next_body().unwrap() {
                    got.push(Reply::decode(&b).unwrap());
                }
            }
            prop_assert_eq!(got, replies);
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panicking(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Request::decode(&data);
            let _ = Reply::decode(&data);
            let mut r = FrameReader::new(MAX_REPLY_LEN);
            r.push(&data);
            while let Ok(Some(b)) = r.next_body() {
                let _ = Reply::decode(&b);
            }
        }
    }
}
