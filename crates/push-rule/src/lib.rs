//! The git push rule: which refs a session may update, and how, judged on
//! the bytes of a `git-receive-pack` request before anything of it is
//! forwarded.
//!
//! A smart-HTTP push (`POST .../git-receive-pack`) carries a command list
//! (one `old new ref` line per ref update, capabilities on the first line,
//! optional `shallow` lines and push options) in git's pkt-line framing,
//! then a pack. This crate reads all of it strictly and decides:
//!
//! - **Pkt-lines.** [`read_pkt`] reads one packet: exactly four
//!   hexadecimal digits of length (no sign, prefix or space), `0000`
//!   flush, `0001` delimiter, `0002` response end, 4 to [`MAX_PKT_LEN`]
//!   bytes of data. [`write_pkt`] writes one.
//! - **The command list.** [`parse_receive_pack`] (or, as bytes arrive,
//!   [`try_parse_receive_pack`]) reads it into a [`ReceivePack`]: ref
//!   updates with SHA-1 or SHA-256 ids ([`ObjectId`], [`ObjectFormat`]),
//!   ref names checked as git checks them ([`check_refname`]),
//!   capabilities from every line, `shallow` lines, push options only
//!   when negotiated, `push-cert` refused.
//! - **The body.** [`PushBody`] takes the decoded HTTP body in any slices
//!   (gzip inflated within a bound), parses the command list and holds
//!   the pack in a [`PackSpool`]: in memory up to a bound, then in a
//!   private temporary file, never past a hard cap. [`decode_body`] and
//!   [`inflate_gzip`] do the same for a body already in memory.
//! - **The pack walk.** [`read_pack`] reads the pack within bounds,
//!   hashes every object itself, keeps each commit's parents (rebuilding
//!   delta-encoded commits whose base is in the pack) and gives
//!   [`PackCommits`], whose [`PackCommits::is_ancestor`] proves a
//!   fast-forward.
//! - **The rule.** A [`PushRuleSpec`] (TOML or JSON: ref patterns with
//!   `*` and a last `**`, `{session}` substituted; deletes, tags, forced
//!   updates and duplicate refs refused unless allowed) compiled by
//!   [`PushRule::compile`] for one session. [`PushRule::check_spooled`]
//!   gives a [`PushDecision`]: a [`RefVerdict`] per ref, with its
//!   [`Refusal`]; one refused ref refuses the push. What the fast-forward
//!   proof proves, and what it does not, is set out on [`PushRule`].
//! - **The answer.** [`report_status`] writes the refusal in git's own
//!   report format (side-band wrapped when negotiated), so `git push`
//!   prints `! [remote rejected] <ref> (<reason>)`; send it as
//!   [`RECEIVE_PACK_RESULT`]. [`report_refused`] refuses every ref of a
//!   push for one reason, in the same shape.
//!
//! The crate knows nothing of HTTP framing, TLS or credentials: a caller
//! (the credential broker) removes the HTTP framing, passes the body here,
//! and forwards or refuses the push by the decision.
//!
//! # Example
//!
//! ```
//! use push_rule::{
//!     BodyEncoding, GitLimits, Pkt, PushBody, PushRule, PushRuleSpec, Refusal, Verdict,
//!     report_status, write_pkt,
//! };
//!
//! // The session may push its own branches only.
//! let spec = PushRuleSpec::from_toml(r#"refs = ["refs/heads/agent/{session}/**"]"#).unwrap();
//! let rule = PushRule::compile(&spec, "s1").unwrap();
//! let limits = GitLimits::default();
//!
//! // The body of `POST .../git-receive-pack`: a create of the session's
//! // branch and an update of main, then the pack (none here).
//! let (a, b) = ("a".repeat(40), "b".repeat(40));
//! let mut body = Vec::new();
//! for line in [
//!     format!("{} {b} refs/heads/agent/s1/work\0report-status", "0".repeat(40)),
//!     format!("{a} {b} refs/heads/main"),
//! ] {
//!     write_pkt(&mut body, Pkt::Data(line.as_bytes())).unwrap();
//! }
//! write_pkt(&mut body, Pkt::Flush).unwrap();
//!
//! // Read as it arrives, in any slices.
//! let mut push = PushBody::new(BodyEncoding::Identity, &limits);
//! for part in body.chunks(7) {
//!     push.feed(part).unwrap();
//! }
//! let mut push = push.finish().unwrap();
//!
//! let decision = rule.check_spooled(&push.request, &mut push.pack, &limits);
//! assert_eq!(decision.verdict(), Verdict::Deny);
//! assert_eq!(decision.refs()[0].refusal(), Some(&Refusal::WithTheRest));
//! assert_eq!(decision.refs()[1].refusal(), Some(&Refusal::RefNotAllowed));
//!
//! // What the client is told, in git's report format.
//! let report = report_status(&decision, &push.request).unwrap();
//! assert!(report.starts_with(b"000eunpack ok\n"));
//! assert!(report.ends_with(b"ng refs/heads/main ref not allowed by the push rule\n0000"));
//! ```
//!
//! # Input safety
//!
//! - Pkt-lines are exactly four hex digits of length and at most
//!   [`MAX_PKT_LEN`] bytes (payload [`MAX_PKT_PAYLOAD`]).
//! - [`GitLimits`] bounds ref updates (1000), `shallow` lines (1000), push
//!   options (100), the command section (4 MiB), the inflated body
//!   (512 MiB), the spool (8 MiB in memory, then a private temporary
//!   file, 512 MiB hard cap), pack objects (1 000 000), one object
//!   (64 MiB) and one commit (1 MiB) inflated, delta chains (64) and
//!   commits walked (100 000); rebuilding delta-encoded commits is bounded
//!   by 16 times the pack cap of work.
//! - At most [`MAX_CAPABILITIES`] capabilities, ref names of at most
//!   [`MAX_REFNAME_LEN`] bytes, at most [`MAX_REF_PATTERNS`] ref patterns
//!   in a rule; session names are 1 to 128 of `[A-Za-z0-9._-]`.
//! - Ref patterns match by a two-pointer wildcard match, never by
//!   backtracking. Nothing recurses.
//! - Error messages echo offending values truncated to 256 characters;
//!   report lines are cut to 200 characters, with control characters
//!   replaced.
//! - Nothing here panics on input; the fuzz targets under `fuzz/`
//!   (`broker_pktline`, `broker_commands`, `broker_pack_walk`) call
//!   [`fuzzing`] to check it.
//!
//! # Crate features
//!
//! None.

mod body;
mod commands;
mod error;
pub mod fuzzing;
mod limits;
mod pack;
mod pktline;
#[doc(hidden)]
mod ref_files;
mod report;
mod rule;
mod spool;

pub use body::{BodyEncoding, PushBody, SpooledPush, decode_body};
pub use commands::{
    MAX_CAPABILITIES, MAX_REFNAME_LEN, ObjectFormat, ObjectId, ReceivePack, RefUpdate, UpdateKind,
    check_refname, inflate_gzip, parse_receive_pack, try_parse_receive_pack,
};
pub use error::{Error, ErrorKind};
pub use limits::GitLimits;
pub use pack::{Ancestry, PackCommits, apply_delta, read_pack};
pub use pktline::{MAX_PKT_LEN, MAX_PKT_PAYLOAD, Pkt, PktRead, read_all, read_pkt, write_pkt};
pub use ref_files::{RefFileError, loose_ref_id, packed_ref_id};
pub use report::{RECEIVE_PACK_RESULT, report_refused, report_status};
pub use rule::{
    MAX_REF_PATTERNS, Permission, PushDecision, PushRule, PushRuleSpec, RefVerdict, Refusal,
    Verdict,
};
pub use spool::{PackSpool, SpoolReader};
