//! Refusing a push in git's own report format, so `git push` prints
//! `[remote rejected] <ref> (<reason>)` for each ref.

use crate::commands::ReceivePack;
use crate::error::Error;
use crate::pktline::{MAX_PKT_PAYLOAD, Pkt, write_pkt};
use crate::rule::PushDecision;

/// The `Content-Type` of a `git-receive-pack` response.
pub const RECEIVE_PACK_RESULT: &str = "application/x-git-receive-pack-result";

fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect()
}

/// The response body for `decision`: `unpack ok`, then `ok <ref>` or
/// `ng <ref> <reason>` per ref, then a flush; wrapped in side-band 1
/// packets and a final flush when the client asked for `side-band-64k`
/// (or `side-band`).
pub fn report_status(decision: &PushDecision, push: &ReceivePack) -> Result<Vec<u8>, Error> {
    let lines = decision.refs().iter().map(|r| match r.refusal() {
        Some(why) => format!("ng {} {}\n", r.refname(), clean(&why.to_string())),
        None => format!("ok {}\n", r.refname()),
    });
    report(lines, push)
}

/// The response body refusing every ref update of `push` for one
/// `reason` (a push refused as a whole, before any rule could judge its
/// refs): `unpack ok`, then `ng <ref> <reason>` per update, in the shape
/// of [`report_status`]. A push with no updates (git's probe before a
/// large push) gets `unpack ok` alone.
pub fn report_refused(push: &ReceivePack, reason: &str) -> Result<Vec<u8>, Error> {
    let why = clean(reason);
    let lines = push
        .updates()
        .iter()
        .map(|u| format!("ng {} {why}\n", u.refname()));
    report(lines, push)
}

fn report(lines: impl Iterator<Item = String>, push: &ReceivePack) -> Result<Vec<u8>, Error> {
    let mut report = Vec::new();
    write_pkt(&mut report, Pkt::Data(b"unpack ok\n"))?;
    for line in lines {
        write_pkt(&mut report, Pkt::Data(line.as_bytes()))?;
    }
    write_pkt(&mut report, Pkt::Flush)?;
    let band = if push.has_capability("side-band-64k") {
        MAX_PKT_PAYLOAD - 1
    } else if push.has_capability("side-band") {
        999
    } else {
        return Ok(report);
    };
    let mut out = Vec::new();
    for chunk in report.chunks(band) {
        let mut data = Vec::with_capacity(chunk.len() + 1);
        data.push(1);
        data.extend_from_slice(chunk);
        write_pkt(&mut out, Pkt::Data(&data))?;
    }
    write_pkt(&mut out, Pkt::Flush)?;
    Ok(out)
}
