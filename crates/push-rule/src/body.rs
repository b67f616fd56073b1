//! Reading a `git-receive-pack` request body as it arrives: inflating it
//! when it is gzip-encoded, parsing the command list, and spooling the
//! pack, so the push can be judged before anything is forwarded.

use crate::commands::{ReceivePack, inflate_gzip, try_parse_receive_pack};
use crate::error::{Error, ErrorKind};
use crate::limits::GitLimits;
use crate::spool::PackSpool;
use std::borrow::Cow;
use std::io::{self, Read, Write};

/// Collects the inflated body: the command section, then the pack.
#[derive(Debug)]
struct Collector {
    limits: GitLimits,
    commands: Vec<u8>,
    parsed: Option<ReceivePack>,
    spool: PackSpool,
    total: u64,
    error: Option<Error>,
}

impl Collector {
    fn take(&mut self, buf: &[u8]) -> Result<(), Error> {
        self.total = self.total.saturating_add(buf.len() as u64);
        if self.total > self.limits.max_inflated_body {
            return Err(ErrorKind::BodyTooLarge {
                limit: self.limits.max_inflated_body,
            }
            .into());
        }
        if self.parsed.is_some() {
            return self.spool.write(buf);
        }
        let from = self.commands.len().saturating_sub(3);
        self.commands.extend_from_slice(buf);
        // The command section can only be complete once a flush arrived.
        if !self.commands[from..].windows(4).any(|w| w == b"0000") {
            return self.check_section_len();
        }
        match try_parse_receive_pack(&self.commands, &self.limits)? {
            None => self.check_section_len(),
            Some(rp) => {
                let rest = self.commands.split_off(rp.pack_offset());
                self.parsed = Some(rp);
                self.spool.write(&rest)
            }
        }
    }

    fn check_section_len(&self) -> Result<(), Error> {
        if self.commands.len() > self.limits.max_command_section {
            return Err(ErrorKind::GitCommand {
                offset: self.limits.max_command_section,
                reason: "the command section exceeds its limit",
                value: String::new(),
            }
            .into());
        }
        Ok(())
    }
}

impl Write for Collector {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.error.is_some() {
            return Err(io::Error::other("refused"));
        }
        match self.take(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                self.error = Some(e);
                Err(io::Error::other("refused"))
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[derive(Debug)]
enum Decoder {
    Identity(Box<Collector>),
    Gzip(Box<flate2::write::GzDecoder<Collector>>),
    /// A `Content-Encoding` other than gzip or identity: refused.
    Refused(Box<Collector>),
}

fn refused_encoding() -> Error {
    ErrorKind::ContentEncoding {
        reason: "only gzip and identity are accepted",
    }
    .into()
}

/// Content encodings a push body may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BodyEncoding {
    /// No `Content-Encoding` (or `identity`).
    Identity,
    /// `Content-Encoding: gzip`.
    Gzip,
}

impl BodyEncoding {
    /// The encoding a `Content-Encoding` value names; `None` for any
    /// other encoding, which must be refused.
    pub fn from_header(value: Option<&[u8]>) -> Option<BodyEncoding> {
        match value {
            None => Some(BodyEncoding::Identity),
            Some(v) if v.eq_ignore_ascii_case(b"identity") => Some(BodyEncoding::Identity),
            Some(v) if v.eq_ignore_ascii_case(b"gzip") => Some(BodyEncoding::Gzip),
            Some(_) => None,
        }
    }
}

/// Reads a whole request body as its `Content-Encoding` value says: none
/// (or `identity`) as is, `gzip` inflated within `max` bytes (see
/// [`inflate_gzip`]), anything else refused.
pub fn decode_body<'a>(
    content_encoding: Option<&[u8]>,
    body: &'a [u8],
    max: u64,
) -> Result<Cow<'a, [u8]>, Error> {
    match BodyEncoding::from_header(content_encoding) {
        Some(BodyEncoding::Identity) => Ok(Cow::Borrowed(body)),
        Some(BodyEncoding::Gzip) => Ok(Cow::Owned(inflate_gzip(body, max)?)),
        None => Err(refused_encoding()),
    }
}

/// A push body read as it arrives. [`PushBody::feed`] takes the decoded
/// HTTP body (after chunked framing) in any slices; [`PushBody::finish`]
/// gives the parsed command list and the spooled pack. Every bound of
/// [`GitLimits`] applies: the command section, the inflated size, the
/// spool's memory and hard cap.
#[derive(Debug)]
pub struct PushBody {
    decoder: Decoder,
}

/// A complete push body: the parsed request, its command section exactly
/// as received (inflated), and its pack.
#[derive(Debug)]
pub struct SpooledPush {
    /// The parsed command list.
    pub request: ReceivePack,
    /// The command section's bytes (pkt-lines up to the pack).
    pub commands: Vec<u8>,
    /// The pack.
    pub pack: PackSpool,
}

impl SpooledPush {
    /// The length of the body to forward (commands and pack, identity
    /// encoded).
    pub fn len(&self) -> u64 {
        self.commands.len() as u64 + self.pack.len()
    }

    /// Whether the body is empty (never, for a parsed push).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the body to forward: the command section, then the pack.
    /// Send it with `Content-Length` [`SpooledPush::len`] and no
    /// `Content-Encoding`, only after the push was allowed.
    pub fn write_to(&mut self, out: &mut dyn Write) -> Result<(), Error> {
        let io = |e: io::Error| -> Error {
            ErrorKind::Spool {
                message: e.kind().to_string(),
            }
            .into()
        };
        out.write_all(&self.commands).map_err(io)?;
        let mut reader = self.pack.reader()?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = reader.read(&mut buf).map_err(io)?;
            if n == 0 {
                return Ok(());
            }
            out.write_all(&buf[..n]).map_err(io)?;
        }
    }
}

impl PushBody {
    /// A reader for a body with this encoding.
    pub fn new(encoding: BodyEncoding, limits: &GitLimits) -> PushBody {
        let collector = Collector {
            limits: *limits,
            commands: Vec::new(),
            parsed: None,
            spool: PackSpool::new(limits),
            total: 0,
            error: None,
        };
        let decoder = match encoding {
            BodyEncoding::Gzip => Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(collector))),
            BodyEncoding::Identity => Decoder::Identity(Box::new(collector)),
        };
        PushBody { decoder }
    }

    /// A reader for a body whose `Content-Encoding` is neither gzip nor
    /// identity: it refuses the body ([`PushBody::feed`] and
    /// [`PushBody::finish`] fail).
    pub fn refusing(limits: &GitLimits) -> PushBody {
        let PushBody { decoder } = PushBody::new(BodyEncoding::Identity, limits);
        match decoder {
            Decoder::Identity(c) | Decoder::Refused(c) => PushBody {
                decoder: Decoder::Refused(c),
            },
            Decoder::Gzip(d) => PushBody {
                decoder: Decoder::Gzip(d),
            },
        }
    }

    fn collector(&mut self) -> &mut Collector {
        match &mut self.decoder {
            Decoder::Identity(c) | Decoder::Refused(c) => c,
            Decoder::Gzip(d) => d.get_mut(),
        }
    }

    fn fail(&mut self, fallback: &'static str) -> Error {
        self.collector()
            .error
            .take()
            .unwrap_or_else(|| ErrorKind::ContentEncoding { reason: fallback }.into())
    }

    /// Takes the next bytes of the body.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), Error> {
        let r = match &mut self.decoder {
            Decoder::Identity(c) => c.write_all(data),
            Decoder::Gzip(d) => d.write_all(data),
            Decoder::Refused(_) => return Err(refused_encoding()),
        };
        r.map_err(|_| self.fail("the gzip stream is corrupt"))
    }

    /// Ends the body: refuses a body whose command list did not end, a
    /// gzip stream that did not end, and bytes after a command list that
    /// carries no pack.
    pub fn finish(self) -> Result<SpooledPush, Error> {
        let mut collector = match self.decoder {
            Decoder::Identity(c) => *c,
            Decoder::Refused(_) => return Err(refused_encoding()),
            Decoder::Gzip(mut d) => {
                if d.try_finish().is_err() {
                    return Err(d.get_mut().error.take().unwrap_or_else(|| {
                        ErrorKind::ContentEncoding {
                            reason: "the gzip stream is corrupt or incomplete",
                        }
                        .into()
                    }));
                }
                match d.finish() {
                    Ok(c) => c,
                    Err(_) => {
                        return Err(ErrorKind::ContentEncoding {
                            reason: "the gzip stream is corrupt or incomplete",
                        }
                        .into());
                    }
                }
            }
        };
        if let Some(e) = collector.error.take() {
            return Err(e);
        }
        let Some(request) = collector.parsed else {
            return Err(ErrorKind::PktLine {
                offset: collector.commands.len(),
                reason: "the body ends before the command list's flush",
            }
            .into());
        };
        if !request.expects_pack() && !collector.spool.is_empty() {
            return Err(ErrorKind::GitCommand {
                offset: request.pack_offset(),
                reason: "bytes after a command list that carries no pack",
                value: String::new(),
            }
            .into());
        }
        Ok(SpooledPush {
            request,
            commands: collector.commands,
            pack: collector.spool,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;
    use crate::commands::parse_receive_pack;
    use proptest::prelude::*;

    fn body() -> Vec<u8> {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let line = format!("{a} {b} refs/heads/x\0report-status");
        let mut out = format!("{:04x}{line}0000", line.len() + 4).into_bytes();
        out.extend_from_slice(b"PACK-DATA-0000-MORE");
        out
    }

    #[test]
    fn gzip_and_identity_agree_in_any_slices() {
        let plain = body();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        for (enc, bytes) in [(BodyEncoding::Identity, &plain), (BodyEncoding::Gzip, &gz)] {
            for step in [1, 3, 1000] {
                let mut pb = PushBody::new(enc, &GitLimits::default());
                for c in bytes.chunks(step) {
                    pb.feed(c).unwrap();
                }
                let mut done = pb.finish().unwrap();
                assert_eq!(done.request.updates().len(), 1);
                let mut out = Vec::new();
                done.write_to(&mut out).unwrap();
                assert_eq!(out, plain, "{enc:?} {step}");
            }
        }
    }

    #[test]
    fn bounds() {
        let limits = GitLimits::default().max_inflated_body(50);
        let mut pb = PushBody::new(BodyEncoding::Identity, &limits);
        assert!(pb.feed(&body()).is_err());
        let limits = GitLimits::default().max_command_section(10);
        let mut pb = PushBody::new(BodyEncoding::Identity, &limits);
        assert!(pb.feed(&body()[..50]).is_err());
        let mut pb = PushBody::new(BodyEncoding::Gzip, &GitLimits::default());
        assert!(pb.feed(b"not gzip at all").is_err() || pb.finish().is_err());
        let mut pb = PushBody::new(BodyEncoding::Identity, &GitLimits::default());
        pb.feed(&body()[..20]).unwrap();
        assert!(pb.finish().is_err());
    }

    proptest! {
        #[test]
        fn streaming_agrees_with_whole(data in proptest::collection::vec(any::<u8>(), 0..200), step in 1usize..17) {
            let whole = parse_receive_pack(&data, &GitLimits::default());
            let mut pb = PushBody::new(BodyEncoding::Identity, &GitLimits::default());
            let mut fed = Ok(());
            for c in data.chunks(step) {
                fed = fed.and_then(|()| pb.feed(c));
            }
            let streamed = fed.and_then(|()| pb.finish());
            prop_assert_eq!(whole.is_ok(), streamed.is_ok());
            if let (Ok(w), Ok(s)) = (whole, streamed) {
                prop_assert_eq!(w, s.request);
            }
        }
    }
}
