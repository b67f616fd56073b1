//! Git's pkt-line framing, read strictly.

use crate::error::{Error, ErrorKind};

/// The largest pkt-line git sends or accepts, length prefix included
/// (git's `LARGE_PACKET_MAX`).
pub const MAX_PKT_LEN: usize = 65520;

/// The largest payload of one pkt-line.
pub const MAX_PKT_PAYLOAD: usize = MAX_PKT_LEN - 4;

/// One packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pkt<'a> {
    /// `0000`: end of a section.
    Flush,
    /// `0001`: protocol v2 delimiter.
    Delim,
    /// `0002`: protocol v2 end of response.
    ResponseEnd,
    /// A data packet; `0004` gives an empty payload.
    Data(&'a [u8]),
}

/// What [`read_pkt`] found at an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PktRead<'a> {
    /// A whole packet and the offset just after it.
    Packet(Pkt<'a>, usize),
    /// The input ends inside the packet.
    Incomplete,
}

fn hex(b: u8) -> Option<usize> {
    match b {
        b'0'..=b'9' => Some(usize::from(b - b'0')),
        b'a'..=b'f' => Some(usize::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(usize::from(b - b'A' + 10)),
        _ => None,
    }
}

fn refuse(offset: usize, reason: &'static str) -> Error {
    ErrorKind::PktLine { offset, reason }.into()
}

/// Reads the packet starting at `offset` of `buf`.
///
/// The length is exactly four hexadecimal digits (either case; no sign,
/// `0x`, space or other byte), counts itself, and is `0000`, `0001`,
/// `0002` or 4 to [`MAX_PKT_LEN`]; `0003` and anything larger are refused.
pub fn read_pkt(buf: &[u8], offset: usize) -> Result<PktRead<'_>, Error> {
    let rest = buf.get(offset..).unwrap_or_default();
    let mut len = 0usize;
    for i in 0..4 {
        let Some(&b) = rest.get(i) else {
            // Check the digits we have before asking for more.
            return Ok(PktRead::Incomplete);
        };
        let Some(v) = hex(b) else {
            return Err(refuse(offset, "the length is not four hexadecimal digits"));
        };
        len = len * 16 + v;
    }
    let pkt = match len {
        0 => return Ok(PktRead::Packet(Pkt::Flush, offset + 4)),
        1 => return Ok(PktRead::Packet(Pkt::Delim, offset + 4)),
        2 => return Ok(PktRead::Packet(Pkt::ResponseEnd, offset + 4)),
        3 => return Err(refuse(offset, "length 0003 is not a packet")),
        n if n > MAX_PKT_LEN => {
            return Err(refuse(offset, "the length exceeds git's maximum of 65520"));
        }
        n => n,
    };
    match rest.get(4..pkt) {
        Some(data) => Ok(PktRead::Packet(Pkt::Data(data), offset + pkt)),
        None => Ok(PktRead::Incomplete),
    }
}

/// Reads every packet of `buf` up to its end; refuses a truncated last
/// packet. Mostly for tests and fuzzing: the command parser reads packets
/// one at a time with [`read_pkt`].
pub fn read_all(buf: &[u8], max_packets: usize) -> Result<Vec<Pkt<'_>>, Error> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        if out.len() >= max_packets {
            return Err(refuse(at, "too many packets"));
        }
        match read_pkt(buf, at)? {
            PktRead::Packet(p, next) => {
                out.push(p);
                at = next;
            }
            PktRead::Incomplete => return Err(refuse(at, "the input ends inside a packet")),
        }
    }
    Ok(out)
}

/// Appends `pkt` to `out` in its wire form. A payload longer than
/// [`MAX_PKT_PAYLOAD`] is refused.
pub fn write_pkt(out: &mut Vec<u8>, pkt: Pkt<'_>) -> Result<(), Error> {
    match pkt {
        Pkt::Flush => out.extend_from_slice(b"0000"),
        Pkt::Delim => out.extend_from_slice(b"0001"),
        Pkt::ResponseEnd => out.extend_from_slice(b"0002"),
        Pkt::Data(data) => {
            if data.len() > MAX_PKT_PAYLOAD {
                return Err(refuse(out.len(), "the payload exceeds 65516 bytes"));
            }
            out.extend_from_slice(format!("{:04x}", data.len() + 4).as_bytes());
            out.extend_from_slice(data);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strict_lengths() {
        assert_eq!(
            read_pkt(b"0008abcd", 0).unwrap(),
            PktRead::Packet(Pkt::Data(b"abcd"), 8)
        );
        assert_eq!(
            read_pkt(b"000A123456", 0).unwrap(),
            PktRead::Packet(Pkt::Data(b"123456"), 10)
        );
        for bad in [
            &b"+008abcd"[..],
            b"0x08",
            b" 008",
            b"-008",
            b"0003",
            b"fff1",
        ] {
            assert!(read_pkt(bad, 0).is_err(), "{bad:?}");
        }
        assert_eq!(read_pkt(b"00", 0).unwrap(), PktRead::Incomplete);
        assert_eq!(read_pkt(b"0009abc", 0).unwrap(), PktRead::Incomplete);
        assert_eq!(
            read_pkt(b"0004", 0).unwrap(),
            PktRead::Packet(Pkt::Data(b""), 4)
        );
    }

    proptest! {
        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = read_all(&data, 64);
        }

        #[test]
        fn round_trip(payloads in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..300), 0..8)) {
            let mut wire = Vec::new();
            for p in &payloads {
                write_pkt(&mut wire, Pkt::Data(p)).unwrap();
            }
            write_pkt(&mut wire, Pkt::Flush).unwrap();
            let back = read_all(&wire, 100).unwrap();
            let mut expect: Vec<Pkt<'_>> = payloads.iter().map(|p| Pkt::Data(p)).collect();
            expect.push(Pkt::Flush);
            prop_assert_eq!(back, expect);
        }
    }
}
