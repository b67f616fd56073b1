//! Entry points for the fuzz targets under `fuzz/`. Each one drives a
//! parser of untrusted bytes and checks the properties it promises; any
//! panic is a bug.

use crate::error::Error;
use crate::head::{HeadLimits, RequestHead};
use crate::host::Host;
use crate::pattern::{HostPattern, PatternShape};
use crate::reader::HeadReader;
use crate::target::Target;

/// The request-head reader: reading the bytes whole, one byte at a time and
/// in two pieces gives the same answer, and an accepted head written out
/// again reads back the same.
pub fn request_head(data: &[u8]) {
    let data = &data[..data.len().min(4096)];
    let Ok(limits) = HeadLimits::new(1024, 256, 16) else {
        return;
    };
    let whole = HeadReader::new(limits).read(data);
    let stepped = read_byte_at_a_time(limits, data);
    assert_eq!(stepped, whole, "byte-at-a-time reading differs");
    let mut halves = HeadReader::new(limits);
    let half = match halves.read(&data[..data.len() / 2]) {
        Ok(None) => halves.read(data),
        done => done,
    };
    assert_eq!(half, whole, "reading in two pieces differs");
    if let Ok(Some((head, len))) = whole {
        assert!(len <= data.len(), "consumed more than was given");
        // Written out, a line may grow by the space after its colon.
        let Ok(roomy) = HeadLimits::new(1 << 20, 1 << 20, limits.max_headers()) else {
            return;
        };
        let reread = HeadReader::new(roomy).read(&write_head(&head));
        assert_eq!(
            reread.ok().flatten().map(|(h, _)| h),
            Some(head),
            "a head written out again reads differently"
        );
    }
}

/// Reads `data` as if it arrived one byte at a time.
pub fn read_byte_at_a_time(
    limits: HeadLimits,
    data: &[u8],
) -> Result<Option<(RequestHead, usize)>, Error> {
    let mut reader = HeadReader::new(limits);
    for i in 1..=data.len() {
        match reader.read(&data[..i]) {
            Ok(None) => {}
            done => return done,
        }
    }
    Ok(None)
}

/// A head as bytes: the request line, one `name: value` line per field,
/// the empty line.
fn write_head(head: &RequestHead) -> Vec<u8> {
    let mut out =
        format!("{} {} {}\r\n", head.method(), head.target(), head.version()).into_bytes();
    for field in head.headers() {
        out.extend_from_slice(field.name().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(field.value());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The host, target and pattern parsers: canonical forms are fixed
/// points, displays re-parse to the same value, and a pattern matches the
/// hosts it is written for.
pub fn host(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        let _ = Host::parse_wire_bytes(data);
        return;
    };
    for h in [Host::parse_wire(text), Host::parse_config(text)]
        .into_iter()
        .flatten()
    {
        let again = Host::parse_wire(&h.to_string());
        assert_eq!(
            again.as_ref().ok(),
            Some(&h),
            "canonical form is not stable"
        );
    }
    if let Ok(t) = Target::parse_authority(text) {
        assert_eq!(
            Target::parse_authority(&t.to_string()).ok(),
            Some(t),
            "target display does not re-parse"
        );
    }
    let Ok(p) = HostPattern::parse(text) else {
        return;
    };
    let again = HostPattern::parse(&p.to_string());
    assert_eq!(
        again.as_ref().ok(),
        Some(&p),
        "entry display does not re-parse"
    );
    for example in examples(&p) {
        let host = Host::parse_wire(&example);
        assert!(
            host.as_ref().is_ok_and(|h| p.matches(h)),
            "{p} does not match its example {example:?}: {host:?}"
        );
    }
    if let PatternShape::Suffix(suffix) = p.shape() {
        let apex = Host::parse_wire(suffix);
        assert!(
            !apex.as_ref().is_ok_and(|h| p.matches(h)),
            "{p} matches its apex"
        );
    }
}

/// Hosts a pattern is written for: itself when exact, one and two labels
/// for a leading `*`, one label for a middle `*`.
pub fn examples(p: &HostPattern) -> Vec<String> {
    match p.shape() {
        PatternShape::Exact(h) => vec![h.to_string()],
        PatternShape::Suffix(s) => [format!("x.{s}"), format!("a-b.c.{s}")]
            .into_iter()
            .filter(|e| e.len() <= crate::MAX_HOST_LEN)
            .collect(),
        PatternShape::Middle { left, right } => vec![format!("{left}.x.{right}")],
    }
}
