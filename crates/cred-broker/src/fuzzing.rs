//! Entry points for the fuzz targets under `fuzz/`. Each drives a parser
//! of untrusted bytes and checks the properties it promises; any panic is
//! a bug.

use crate::chunked::ChunkedDecoder;
use crate::classify::ClassifyInput;
use crate::engine::RuleEngine;
use crate::error::Error;
use crate::limits::Limits;
use crate::parser::{Request, RequestParser, Status};
use crate::path_glob::normal_path;
use crate::rules::RuleFile;
use net_vocab::HeadLimits;

fn small_limits() -> Limits {
    Limits {
        // In range, so the default is never taken.
        head: HeadLimits::new(2048, 512, 16).unwrap_or_default(),
        max_body: 4096,
    }
}

/// Reads every request of `data`, fed in slices of `step` bytes.
fn read_all(data: &[u8], step: usize) -> Result<Vec<Request>, Error> {
    let mut parser = RequestParser::new(small_limits());
    let mut out = Vec::new();
    for slice in data.chunks(step.max(1)) {
        let mut rest = slice;
        while let Status::Complete { request, consumed } = parser.feed(rest)? {
            out.push(*request);
            rest = &rest[consumed..];
            if rest.is_empty() {
                break;
            }
        }
    }
    parser.finish()?;
    Ok(out)
}

/// The request parser (net-vocab's head reader, then the broker's checks
/// and body framing): the first byte picks a slice size; reading in
/// slices must give exactly what reading whole gives, and every request
/// read must re-frame into bytes that read back the same.
pub fn request_head(data: &[u8]) {
    let Some((&step, data)) = data.split_first() else {
        return;
    };
    let whole = read_all(data, data.len());
    let sliced = read_all(data, usize::from(step % 16) + 1);
    assert_eq!(whole, sliced, "slicing changed the result");
    for req in whole.iter().flatten() {
        let again = read_all(&req.reframe(), usize::MAX).unwrap_or_default();
        assert_eq!(again.len(), 1, "re-framed request does not read back");
        let (a, b) = (&again[0], req);
        assert_eq!(a.head.method(), b.head.method());
        assert_eq!(a.head.target(), b.head.target());
        assert_eq!(a.body, b.body);
        assert!(
            a.head.forwarded_fields().eq(b.head.forwarded_fields()),
            "re-framing changed the forwarded fields"
        );
    }
}

/// The chunked decoder: byte-at-a-time and whole decoding agree, it never
/// consumes more than it is given, and a decoded body re-encoded as one
/// chunk decodes to the same bytes.
pub fn chunked(data: &[u8]) {
    let mut whole = ChunkedDecoder::new(small_limits());
    let mut out_whole = Vec::new();
    let used_whole = whole.decode(data, &mut out_whole);
    let mut bytewise = ChunkedDecoder::new(small_limits());
    let mut out_bytes = Vec::new();
    let mut used_bytes = Ok(0);
    for b in data {
        match bytewise.decode(std::slice::from_ref(b), &mut out_bytes) {
            Ok(n) => {
                if let Ok(total) = &mut used_bytes {
                    *total += n;
                }
            }
            Err(e) => {
                used_bytes = Err(e);
                break;
            }
        }
    }
    assert_eq!(
        used_whole, used_bytes,
        "slicing changed the decoder's result"
    );
    if let Ok(n) = used_whole {
        assert!(n <= data.len());
        assert_eq!(out_whole, out_bytes);
        assert_eq!(whole.is_done(), bytewise.is_done());
        if whole.is_done() {
            let mut enc = Vec::new();
            if !out_whole.is_empty() {
                enc.extend_from_slice(format!("{:x}\r\n", out_whole.len()).as_bytes());
                enc.extend_from_slice(&out_whole);
                enc.extend_from_slice(b"\r\n");
            }
            enc.extend_from_slice(b"0\r\n\r\n");
            let mut again = ChunkedDecoder::new(small_limits());
            let mut out = Vec::new();
            assert_eq!(again.decode(&enc, &mut out).ok(), Some(enc.len()));
            assert!(again.is_done());
            assert_eq!(out, out_whole);
        }
    }
}

/// The rule-file loader: TOML and JSON; a file that loads and compiles is
/// asked a few decisions; a loaded file written back loads the same.
pub fn rules(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for file in [RuleFile::from_toml(text), RuleFile::from_json(text)]
        .into_iter()
        .flatten()
    {
        if let Ok(json) = serde_json::to_string(&file) {
            assert_eq!(RuleFile::from_json(&json).ok().as_ref(), Some(&file));
        }
        let Ok(engine) = RuleEngine::builder().rules(file).build() else {
            continue;
        };
        let mut parser = RequestParser::new(Limits::default());
        let probes: [&[u8]; 3] = [
            b"GET /repos/a/b HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
            b"POST /graphql HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 0\r\n\r\n",
            b"DELETE /%61dmin/x HTTP/1.1\r\nHost: b.a.example.com\r\n\r\n",
        ];
        for probe in probes {
            if let Ok(Status::Complete { request, .. }) = parser.feed(probe) {
                let input = ClassifyInput::head(&request.head);
                let d = engine.decide(&input, request.head.host());
                let _ = d.to_string();
            }
        }
    }
}

/// Upstream response framing: the head parser never panics, and a chunked
/// body scanned whole or in slices of any size ends at the same byte.
pub fn response(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let method = if first & 1 == 0 { "GET" } else { "HEAD" };
    let step = usize::from(first >> 1).max(1);
    let head_len = crate::response::head_end(rest).unwrap_or(rest.len());
    let (head, body) = rest.split_at(
        head_len
            .min(crate::response::MAX_RESPONSE_HEAD)
            .min(rest.len()),
    );
    let _ = crate::response::parse_head(head, method);
    let mut whole = crate::response::ChunkScanner::new();
    let whole_result = whole.scan(body);
    let mut sliced = crate::response::ChunkScanner::new();
    let mut total = 0usize;
    let mut sliced_result = Ok(0);
    for piece in body.chunks(step) {
        match sliced.scan(piece) {
            Ok(n) => {
                total += n;
                if n < piece.len() {
                    break;
                }
            }
            Err(e) => {
                sliced_result = Err(e);
                break;
            }
        }
    }
    match (whole_result, sliced_result) {
        (Ok(n), Ok(_)) => {
            assert_eq!(n, total, "slicing changed where the body ends");
            assert_eq!(whole.is_done(), sliced.is_done());
        }
        (Err(_), Err(_)) => {}
        (w, s) => assert!(
            w.is_err() == s.is_err(),
            "slicing changed the verdict: {w:?} vs {s:?}"
        ),
    }
}

/// The rules' path normal form: never longer than what it was given (it
/// only decodes), and a fixed point: a normal path normalises to itself,
/// so a rule written in the normal form matches the request it names.
pub fn rule_path(data: &[u8]) {
    let Ok(path) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(norm) = normal_path(path) {
        assert!(norm.len() <= path.len(), "{path:?} grew to {norm:?}");
        assert_eq!(normal_path(&norm).as_ref(), Ok(&norm), "{path:?}");
    }
}
