//! The `git-receive-pack` request: shallow lines, ref-update commands,
//! capabilities and push options, read the way git's `receive-pack` reads
//! them, and stricter where git would accept something two readers could
//! see differently.

use crate::error::{Error, ErrorKind, truncate_bytes};
use crate::limits::GitLimits;
use crate::pktline::{Pkt, PktRead, read_pkt};
use std::fmt;
use std::io::Read;

/// At most this many capabilities in all the lines of one request.
pub const MAX_CAPABILITIES: usize = 64;

/// At most this many bytes in a ref name.
pub const MAX_REFNAME_LEN: usize = 1024;

/// The hash function of a repository's object ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ObjectFormat {
    /// SHA-1: 20 bytes, 40 hexadecimal digits (git's default).
    Sha1,
    /// SHA-256: 32 bytes, 64 hexadecimal digits.
    Sha256,
}

impl ObjectFormat {
    /// The raw length of an id.
    pub fn raw_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 20,
            ObjectFormat::Sha256 => 32,
        }
    }

    /// The length of an id in hexadecimal.
    pub fn hex_len(self) -> usize {
        self.raw_len() * 2
    }

    fn from_name(name: &[u8]) -> Option<ObjectFormat> {
        match name {
            b"sha1" => Some(ObjectFormat::Sha1),
            b"sha256" => Some(ObjectFormat::Sha256),
            _ => None,
        }
    }
}

/// A git object id (SHA-1 or SHA-256).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    raw: [u8; 32],
    len: u8,
}

impl ObjectId {
    /// Wraps raw bytes of length 20 or 32.
    pub fn from_raw(raw: &[u8]) -> Option<ObjectId> {
        if raw.len() != 20 && raw.len() != 32 {
            return None;
        }
        let mut id = ObjectId {
            raw: [0; 32],
            len: raw.len() as u8,
        };
        id.raw[..raw.len()].copy_from_slice(raw);
        Some(id)
    }

    /// Parses lower-case hexadecimal of exactly `format.hex_len()` digits
    /// (git writes ids in lower case; upper case is refused).
    pub fn from_hex(hex: &[u8], format: ObjectFormat) -> Option<ObjectId> {
        if hex.len() != format.hex_len() {
            return None;
        }
        let digit = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        let mut raw = [0u8; 32];
        for (i, pair) in hex.chunks_exact(2).enumerate() {
            raw[i] = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        ObjectId::from_raw(&raw[..format.raw_len()])
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.raw[..usize::from(self.len)]
    }

    /// The id's format.
    pub fn format(&self) -> ObjectFormat {
        if self.len == 20 {
            ObjectFormat::Sha1
        } else {
            ObjectFormat::Sha256
        }
    }

    /// Whether this is the all-zero id (no object: a create's old side or
    /// a delete's new side).
    pub fn is_zero(&self) -> bool {
        self.as_bytes().iter().all(|&b| b == 0)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

/// Checks a ref name as `receive-pack` does: it starts with `refs/` and
/// passes git's `check-ref-format` rules, and is UTF-8 besides.
pub fn check_refname(name: &[u8]) -> Result<&str, Error> {
    let bad = |reason: &'static str| -> Error {
        ErrorKind::InvalidRefName {
            refname: truncate_bytes(name),
            reason,
        }
        .into()
    };
    if name.len() > MAX_REFNAME_LEN {
        return Err(bad("longer than 1024 bytes"));
    }
    let Ok(text) = std::str::from_utf8(name) else {
        return Err(bad("not UTF-8"));
    };
    if !text.starts_with("refs/") {
        return Err(bad("does not start with refs/"));
    }
    if let Some(b) = name
        .iter()
        .find(|&&b| b < 0x20 || b == 0x7f || b" ~^:?*[\\".contains(&b))
    {
        let _ = b;
        return Err(bad(
            "contains a control character, space or one of ~^:?*[\\",
        ));
    }
    if text.contains("..") {
        return Err(bad("contains '..'"));
    }
    if text.contains("@{") {
        return Err(bad("contains '@{'"));
    }
    if text.ends_with('/') || text.ends_with('.') {
        return Err(bad("ends with '/' or '.'"));
    }
    for part in text.split('/') {
        if part.is_empty() {
            return Err(bad("has an empty component ('//')"));
        }
        if part.starts_with('.') {
            return Err(bad("has a component starting with '.'"));
        }
        if part.starts_with('-') {
            return Err(bad("has a component starting with '-'"));
        }
        if part.ends_with(".lock") {
            return Err(bad("has a component ending with '.lock'"));
        }
        if part == "@" {
            return Err(bad("has the component '@'"));
        }
    }
    Ok(text)
}

/// What one command does to its ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UpdateKind {
    /// `old` is zero: the ref is created.
    Create,
    /// `new` is zero: the ref is deleted.
    Delete,
    /// Both are set: the ref moves from `old` to `new`.
    Update,
}

/// One ref-update command: `old SP new SP refname`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    old: ObjectId,
    new: ObjectId,
    refname: String,
}

impl RefUpdate {
    /// The id the client believes the ref has (zero for a create).
    pub fn old(&self) -> ObjectId {
        self.old
    }

    /// The id the ref is to get (zero for a delete).
    pub fn new_id(&self) -> ObjectId {
        self.new
    }

    /// The checked ref name.
    pub fn refname(&self) -> &str {
        &self.refname
    }

    /// Create, delete or update.
    pub fn kind(&self) -> UpdateKind {
        if self.old.is_zero() {
            UpdateKind::Create
        } else if self.new.is_zero() {
            UpdateKind::Delete
        } else {
            UpdateKind::Update
        }
    }
}

/// A parsed `git-receive-pack` request body, up to the start of its pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivePack {
    format: ObjectFormat,
    capabilities: Vec<String>,
    shallow: Vec<ObjectId>,
    updates: Vec<RefUpdate>,
    push_options: Vec<String>,
    pack_offset: usize,
}

impl ReceivePack {
    /// The object format the client declared (`object-format=`), SHA-1 when
    /// it declared none.
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// Every capability sent, from every line, in order.
    pub fn capabilities(&self) -> &[String] {
        &self.capabilities
    }

    /// Whether the client sent the capability `name` (a bare word or
    /// `name=value`).
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.iter().any(|c| {
            c == name
                || c.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    }

    /// The `shallow` ids.
    pub fn shallow(&self) -> &[ObjectId] {
        &self.shallow
    }

    /// The ref updates, in order.
    pub fn updates(&self) -> &[RefUpdate] {
        &self.updates
    }

    /// The push options (read only when `push-options` was negotiated).
    pub fn push_options(&self) -> &[String] {
        &self.push_options
    }

    /// Where the pack starts in the body.
    pub fn pack_offset(&self) -> usize {
        self.pack_offset
    }

    /// Whether a pack follows: git sends one unless every command is a
    /// delete (or there is none).
    pub fn expects_pack(&self) -> bool {
        self.updates.iter().any(|u| u.kind() != UpdateKind::Delete)
    }
}

fn command_error(offset: usize, reason: &'static str, value: &[u8]) -> Error {
    ErrorKind::GitCommand {
        offset,
        reason,
        value: truncate_bytes(value),
    }
    .into()
}

/// Parses a whole request body (already inflated): the command list and,
/// when negotiated, the push options. A body that ends early is refused;
/// a body that has no pack to carry must end there.
pub fn parse_receive_pack(body: &[u8], limits: &GitLimits) -> Result<ReceivePack, Error> {
    match try_parse_receive_pack(body, limits)? {
        Some(rp) => {
            if !rp.expects_pack() && rp.pack_offset != body.len() {
                return Err(command_error(
                    rp.pack_offset,
                    "bytes after a command list that carries no pack",
                    &body[rp.pack_offset..],
                ));
            }
            Ok(rp)
        }
        None => Err(ErrorKind::PktLine {
            offset: body.len(),
            reason: "the body ends before the command list's flush",
        }
        .into()),
    }
}

/// Parses the command list from the start of `buf`: `Ok(None)` when more
/// bytes are needed, the request when its command list (and push options)
/// are complete.
pub fn try_parse_receive_pack(
    buf: &[u8],
    limits: &GitLimits,
) -> Result<Option<ReceivePack>, Error> {
    // First the raw lines up to the flush.
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut at = 0;
    loop {
        let start = at;
        let (pkt, next) = match read_pkt(buf, at)? {
            PktRead::Incomplete => return Ok(None),
            PktRead::Packet(p, n) => (p, n),
        };
        at = next;
        match pkt {
            Pkt::Flush => break,
            Pkt::Delim | Pkt::ResponseEnd => {
                return Err(command_error(
                    start,
                    "a delimiter packet in the command list; end it with 0000",
                    &buf[start..next],
                ));
            }
            Pkt::Data(d) => {
                if d.is_empty() {
                    return Err(command_error(start, "an empty packet (0004)", d));
                }
                if lines.len() >= limits.max_commands + limits.max_shallow {
                    return Err(command_error(start, "too many command lines", b""));
                }
                let d = d.strip_suffix(b"\n").unwrap_or(d);
                lines.push((start, d));
            }
        }
    }
    // Capabilities from every line, as git honours them.
    let mut capabilities = Vec::new();
    let mut format: Option<ObjectFormat> = None;
    for &(offset, line) in &lines {
        let Some(nul) = line.iter().position(|&b| b == 0) else {
            continue;
        };
        let caps = &line[nul + 1..];
        let mut line_format = ObjectFormat::Sha1;
        for cap in caps.split(|&b| b == b' ').filter(|c| !c.is_empty()) {
            if capabilities.len() >= MAX_CAPABILITIES {
                return Err(command_error(offset, "too many capabilities", cap));
            }
            let Ok(text) = std::str::from_utf8(cap) else {
                return Err(command_error(offset, "a capability that is not UTF-8", cap));
            };
            if text.bytes().any(|b| b.is_ascii_control()) {
                return Err(command_error(offset, "a control byte in a capability", cap));
            }
            if let Some(name) = cap.strip_prefix(b"object-format=") {
                line_format = ObjectFormat::from_name(name)
                    .ok_or_else(|| command_error(offset, "an unknown object format", cap))?;
            }
            capabilities.push(text.to_owned());
        }
        if format.is_some_and(|f| f != line_format) {
            return Err(command_error(
                offset,
                "capability lists disagree on the object format",
                caps,
            ));
        }
        format = Some(line_format);
    }
    let format = format.unwrap_or(ObjectFormat::Sha1);
    let hex = format.hex_len();
    let mut shallow = Vec::new();
    let mut updates: Vec<RefUpdate> = Vec::new();
    for &(offset, line) in &lines {
        let cmd = line
            .iter()
            .position(|&b| b == 0)
            .map_or(line, |n| &line[..n]);
        if line.starts_with(b"push-cert") {
            return Err(command_error(
                offset,
                "signed pushes (push-cert) are refused",
                cmd,
            ));
        }
        if line.starts_with(b"ERR ") {
            return Err(command_error(offset, "an error packet", cmd));
        }
        if let Some(id) = line.strip_prefix(b"shallow ") {
            if shallow.len() >= limits.max_shallow {
                return Err(command_error(offset, "too many shallow lines", b""));
            }
            let id = ObjectId::from_hex(id, format)
                .ok_or_else(|| command_error(offset, "a malformed shallow line", line))?;
            shallow.push(id);
            continue;
        }
        if updates.len() >= limits.max_commands {
            return Err(command_error(offset, "too many ref updates", b""));
        }
        let malformed = || command_error(offset, "expected `old SP new SP refname`", cmd);
        if cmd.len() < 2 * hex + 3 || cmd[hex] != b' ' || cmd[2 * hex + 1] != b' ' {
            return Err(malformed());
        }
        let old = ObjectId::from_hex(&cmd[..hex], format).ok_or_else(malformed)?;
        let new = ObjectId::from_hex(&cmd[hex + 1..2 * hex + 1], format).ok_or_else(malformed)?;
        let refname = check_refname(&cmd[2 * hex + 2..])?.to_owned();
        if old.is_zero() && new.is_zero() {
            return Err(command_error(offset, "both ids are zero", cmd));
        }
        updates.push(RefUpdate { old, new, refname });
    }
    let mut push_options = Vec::new();
    let negotiated = capabilities.iter().any(|c| c == "push-options");
    if negotiated && !lines.is_empty() {
        loop {
            let start = at;
            let (pkt, next) = match read_pkt(buf, at)? {
                PktRead::Incomplete => return Ok(None),
                PktRead::Packet(p, n) => (p, n),
            };
            at = next;
            match pkt {
                Pkt::Flush => break,
                Pkt::Data(d) if !d.is_empty() => {
                    if push_options.len() >= limits.max_push_options {
                        return Err(command_error(start, "too many push options", b""));
                    }
                    let d = d.strip_suffix(b"\n").unwrap_or(d);
                    match std::str::from_utf8(d) {
                        Ok(t) if !t.bytes().any(|b| b.is_ascii_control()) => {
                            push_options.push(t.to_owned());
                        }
                        _ => {
                            return Err(command_error(start, "a malformed push option", d));
                        }
                    }
                }
                _ => {
                    return Err(command_error(
                        start,
                        "push options end with 0000 only",
                        &buf[start..next],
                    ));
                }
            }
        }
    }
    Ok(Some(ReceivePack {
        format,
        capabilities,
        shallow,
        updates,
        push_options,
        pack_offset: at,
    }))
}

/// Inflates a `Content-Encoding: gzip` body, refusing more than `max`
/// inflated bytes, a corrupt stream, and bytes after the gzip member.
pub fn inflate_gzip(body: &[u8], max: u64) -> Result<Vec<u8>, Error> {
    let refuse = |reason| -> Error { ErrorKind::ContentEncoding { reason }.into() };
    let mut decoder = flate2::bufread::GzDecoder::new(body);
    let mut out = Vec::new();
    (&mut decoder)
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|_| refuse("the gzip stream is corrupt"))?;
    if out.len() as u64 > max {
        return Err(refuse("the inflated body exceeds its bound"));
    }
    if !decoder.into_inner().is_empty() {
        return Err(refuse("bytes after the gzip stream"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;
    use crate::pktline::write_pkt;
    use proptest::prelude::*;

    fn wire(lines: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines {
            write_pkt(&mut out, Pkt::Data(l)).unwrap();
        }
        write_pkt(&mut out, Pkt::Flush).unwrap();
        out
    }

    #[test]
    fn refname_rules() {
        assert!(check_refname(b"refs/heads/agent/s1/x").is_ok());
        for bad in [
            &b"refs/heads/a..b"[..],
            b"refs/heads/a@{1}",
            b"refs/heads/x.lock",
            b"refs/heads/-x",
            b"refs/heads/\xff",
            b"refs/heads/a b",
            b"refs/heads//a",
            b"refs/heads/.a",
            b"heads/a",
            b"refs/heads/a/",
        ] {
            assert!(check_refname(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn capabilities_and_options() {
        let a = "1".repeat(40);
        let b = "2".repeat(40);
        let first = format!("{a} {b} refs/heads/x\0report-status push-options");
        let mut body = wire(&[first.as_bytes()]);
        body.extend(wire(&[b"ci.skip"]));
        body.extend_from_slice(b"PACK");
        let rp = parse_receive_pack(&body, &GitLimits::default()).unwrap();
        assert_eq!(rp.push_options(), ["ci.skip"]);
        assert!(rp.has_capability("report-status"));
        assert_eq!(&body[rp.pack_offset()..], b"PACK");
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_receive_pack(&data, &GitLimits::default());
        }

        #[test]
        fn updates_round_trip(names in proptest::collection::vec("[a-z]{1,8}", 1..5)) {
            let a = "a".repeat(40);
            let b = "b".repeat(40);
            let lines: Vec<String> = names
                .iter()
                .map(|n| format!("{a} {b} refs/heads/{n}"))
                .collect();
            let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
            let body = wire(&refs);
            let rp = try_parse_receive_pack(&body, &GitLimits::default()).unwrap().unwrap();
            let got: Vec<String> =
                rp.updates().iter().map(|u| u.refname()["refs/heads/".len()..].to_owned()).collect();
            prop_assert_eq!(got, names);
        }
    }
}
