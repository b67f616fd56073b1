//! A push read by the broker: the body into a [`PushBody`] as it arrives,
//! then judged by the push rule; a refusal is answered in git's report
//! format, as `git-receive-pack` itself would. Without a push rule every
//! ref of every push is refused, in the same format.

use crate::answer::Answer;
use crate::error::{Error, RulesErrorKind, truncate};
use crate::head::RequestHead;
use crate::streamed::{BodyReader, HeldBody, Judgement};
use push_rule::{
    BodyEncoding, GitLimits, PushBody, PushRule, RECEIVE_PACK_RESULT, SpooledPush, Verdict,
    report_refused, report_status,
};
use std::io::{Cursor, Read};
use std::sync::Arc;

/// Starts reading a push with this head's `Content-Encoding` (one other
/// than gzip and identity refuses the body), to be judged by `rule`, or,
/// without one, refused whole.
pub(super) fn reader(
    head: &RequestHead,
    rule: Option<Arc<PushRule>>,
    limits: GitLimits,
) -> Box<dyn BodyReader> {
    let body = match BodyEncoding::from_header(head.header("content-encoding")) {
        Some(encoding) => PushBody::new(encoding, &limits),
        None => PushBody::refusing(&limits),
    };
    Box::new(PushReader { body, rule, limits })
}

/// A push body being read.
struct PushReader {
    body: PushBody,
    rule: Option<Arc<PushRule>>,
    limits: GitLimits,
}

impl BodyReader for PushReader {
    fn feed(&mut self, part: &[u8]) -> Result<(), Error> {
        Ok(self.body.feed(part)?)
    }

    fn finish(self: Box<Self>) -> Result<Box<dyn HeldBody>, Error> {
        let PushReader { body, rule, limits } = *self;
        Ok(Box::new(HeldPush {
            push: body.finish()?,
            rule,
            limits,
        }))
    }
}

/// A whole push: the command list and the spooled pack.
struct HeldPush {
    push: SpooledPush,
    rule: Option<Arc<PushRule>>,
    limits: GitLimits,
}

impl HeldBody for HeldPush {
    fn judge(&mut self) -> Result<Judgement, Error> {
        let push = &mut self.push;
        let Some(rule) = &self.rule else {
            // Every ref refused, with the reason git prints next to it.
            let why: Error = RulesErrorKind::NoPushRule.into();
            let report = report_refused(&push.request, &why.to_string())?;
            return Ok(Judgement::Answer {
                answer: report_answer(report),
                why,
            });
        };
        let decision = rule.check_spooled(&push.request, &mut push.pack, &self.limits);
        if decision.verdict() == Verdict::Allow {
            return Ok(Judgement::Forward);
        }
        let refs: Vec<String> = decision
            .refs()
            .iter()
            .filter_map(|r| r.refusal().map(|why| format!("{}: {why}", r.refname())))
            .collect();
        let why = RulesErrorKind::PushRefused {
            rule: truncate(&rule.patterns().join(", ")),
            refs: truncate(&refs.join("; ")),
        }
        .into();
        let report = report_status(&decision, &push.request)?;
        Ok(Judgement::Answer {
            answer: report_answer(report),
            why,
        })
    }

    fn len(&self) -> u64 {
        self.push.len()
    }

    fn reader(&mut self) -> Result<Box<dyn Read + Send + '_>, Error> {
        let commands = Cursor::new(self.push.commands.as_slice());
        Ok(Box::new(commands.chain(self.push.pack.reader()?)))
    }
}

/// A report as `git-receive-pack` answers: `200 OK`, its content type,
/// not to be cached.
fn report_answer(report: Vec<u8>) -> Answer {
    Answer::new(200, RECEIVE_PACK_RESULT, report).field("Cache-Control", "no-cache")
}
