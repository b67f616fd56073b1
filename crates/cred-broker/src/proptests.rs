//! Properties of the parser: no panic on any bytes, any split of a valid
//! stream reads the same, re-framed requests read back the same.

use crate::limits::Limits;
use crate::parser::{Request, RequestParser, Status};
use net_vocab::HeaderField;
use proptest::prelude::*;

/// Feeds `input` cut at `cuts`; returns the requests read, or `None` on an
/// error.
fn read_split(input: &[u8], cuts: &[usize]) -> Option<Vec<Request>> {
    let mut parser = RequestParser::new(Limits::default());
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.push(0);
    points.push(input.len());
    points.sort_unstable();
    points.dedup();
    let mut out = Vec::new();
    for w in points.windows(2) {
        let mut rest = &input[w[0]..w[1]];
        loop {
            match parser.feed(rest).ok()? {
                Status::Incomplete => break,
                Status::Complete { request, consumed } => {
                    out.push(*request);
                    rest = &rest[consumed..];
                    if rest.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    parser.finish().ok()?;
    Some(out)
}

/// What must survive re-framing.
fn essence(r: &Request) -> (String, String, &'static str, Vec<HeaderField>, Vec<u8>) {
    (
        r.head.method().to_owned(),
        r.head.target().to_owned(),
        r.head.version().as_str(),
        r.head.forwarded_fields().cloned().collect(),
        r.body.clone(),
    )
}

#[derive(Debug, Clone)]
enum Framing {
    None,
    Length,
    Chunked(Vec<usize>),
}

fn request_bytes() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(vec!["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]);
    let path = "/([a-zA-Z0-9._~%-]{1,8}(/[a-zA-Z0-9._~%-]{0,8}){0,2})?(\\?[a-z0-9=&]{0,8})?";
    let header = ("X-[A-Za-z0-9-]{1,10}", "[ -~]{0,20}");
    let framing = prop_oneof![
        Just(Framing::None),
        Just(Framing::Length),
        prop::collection::vec(1usize..20, 0..4).prop_map(Framing::Chunked),
    ];
    (
        method,
        path,
        prop::collection::vec(header, 0..5),
        prop::collection::vec(any::<u8>(), 0..60),
        framing,
        any::<bool>(),
    )
        .prop_map(|(method, path, headers, body, framing, http10)| {
            let version = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
            let mut out = format!("{method} {path} {version}\r\nHost: api.example.com\r\n");
            for (name, value) in headers {
                out.push_str(&format!("{name}: {}\r\n", value.trim()));
            }
            let mut bytes;
            match framing {
                Framing::None => {
                    out.push_str("\r\n");
                    bytes = out.into_bytes();
                }
                Framing::Length => {
                    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                    bytes = out.into_bytes();
                    bytes.extend_from_slice(&body);
                }
                Framing::Chunked(sizes) if !http10 => {
                    out.push_str("Transfer-Encoding: chunked\r\n\r\n");
                    bytes = out.into_bytes();
                    let mut rest = body.as_slice();
                    for size in sizes.iter().cycle() {
                        if rest.is_empty() {
                            break;
                        }
                        let n = (*size).min(rest.len());
                        bytes.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                        bytes.extend_from_slice(&rest[..n]);
                        bytes.extend_from_slice(b"\r\n");
                        rest = &rest[n..];
                    }
                    bytes.extend_from_slice(b"0\r\n\r\n");
                }
                Framing::Chunked(_) => {
                    out.push_str("\r\n");
                    bytes = out.into_bytes();
                }
            }
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(
        data in prop::collection::vec(any::<u8>(), 0..400),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let _ = read_split(&data, &cuts);
    }

    #[test]
    fn never_panics_on_mutated_requests(
        req in request_bytes(),
        flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut data = req;
        for (at, byte) in flips {
            if !data.is_empty() {
                let i = at % data.len();
                data[i] = byte;
            }
        }
        let _ = read_split(&data, &[3, 17]);
    }

    #[test]
    fn any_split_reads_the_same(
        a in request_bytes(),
        b in request_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut stream = a;
        stream.extend_from_slice(&b);
        let whole = read_split(&stream, &[]);
        prop_assert!(whole.as_ref().is_some_and(|w| w.len() == 2), "valid stream refused");
        prop_assert_eq!(read_split(&stream, &cuts), whole);
    }

    #[test]
    fn reframed_reads_back_the_same(req in request_bytes()) {
        let first = read_split(&req, &[]).unwrap_or_default();
        prop_assert_eq!(first.len(), 1);
        let again = read_split(&first[0].reframe(), &[]).unwrap_or_default();
        prop_assert_eq!(again.len(), 1);
        prop_assert_eq!(essence(&again[0]), essence(&first[0]));
        // Re-framing is a fixed point.
        prop_assert_eq!(again[0].reframe(), first[0].reframe());
    }
}
