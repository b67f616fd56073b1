//! The git smart-HTTP classifier.

use crate::classify::{Classification, ClassifyInput, RequestClass, RequestClassifier};
use crate::error::Error;
use crate::head::RequestHead;
use crate::path_glob::normal_path;
use crate::streamed::BodyReader;
use push_rule::{GitLimits, PushRule, ReceivePack, parse_receive_pack};
use std::borrow::Cow;
use std::sync::Arc;

/// `git-fetch`: the class of ref discovery for `git-upload-pack` and of an
/// upload-pack request.
pub const GIT_FETCH: &str = "git-fetch";
/// `git-push`: the class of ref discovery for `git-receive-pack` and of a
/// receive-pack request (which the push rule must then pass).
pub const GIT_PUSH: &str = "git-push";

/// A class by name, or a refusal if the name were not a class name.
pub(crate) fn class(name: &str) -> Classification {
    match RequestClass::new(name) {
        Ok(c) => Classification::Class(c),
        Err(e) => Classification::Refused {
            reason: e.to_string(),
        },
    }
}

/// What a git smart-HTTP request is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GitRequest {
    /// `GET .../info/refs?service=git-upload-pack` or
    /// `POST .../git-upload-pack`.
    Fetch,
    /// `GET .../info/refs?service=git-receive-pack`.
    PushDiscovery,
    /// `POST .../git-receive-pack`; the parsed commands when the body was
    /// given.
    Push(Option<Box<ReceivePack>>),
}

/// Classifies git's smart-HTTP protocol: fetches as [`GIT_FETCH`], pushes
/// as [`GIT_PUSH`]. Any other request on a git path (the dumb protocol,
/// `git-upload-archive`, a wrong method, protocol v2 on a push, an
/// unreadable push body) is refused; other paths are not its business.
///
/// Paths are matched in the rules' normal form and without regard to
/// case, so a differently spelled endpoint is still classified here. When
/// the input carries the body of a push, the command list is parsed (after
/// inflating a gzip body) and the push is refused if it does not parse;
/// the push rule still has to pass it.
///
/// In a [`Broker`](crate::Broker), the classifier also reads each push
/// itself ([`RequestClassifier::streams_body`]): the body goes into a
/// [`push_rule::PushBody`] (the pack spooled within [`GitLimits`]) and is
/// judged by the push rule given with [`GitClassifier::with_push_rule`];
/// without one every ref of every push is refused, answered in git's
/// report format like any refused push.
#[derive(Debug, Clone, Default)]
pub struct GitClassifier {
    limits: GitLimits,
    push_rule: Option<Arc<PushRule>>,
}

fn is_git_path(path: &str) -> bool {
    path.split('/').any(|s| s.ends_with(".git"))
        || path.ends_with("/info/refs")
        || path.ends_with("/git-upload-pack")
        || path.ends_with("/git-receive-pack")
        || path.ends_with("/git-upload-archive")
        || path.contains("/objects/info/")
}

/// Reads a request body as its `Content-Encoding` says: none (or
/// `identity`) as is, `gzip` inflated within `max` bytes, anything else
/// refused (see [`push_rule::decode_body`]).
pub fn decoded_body<'a>(
    input: &ClassifyInput<'_>,
    body: &'a [u8],
    max: u64,
) -> Result<Cow<'a, [u8]>, Error> {
    Ok(push_rule::decode_body(
        input.head.header("content-encoding"),
        body,
        max,
    )?)
}

/// Whether `head` is a push (`POST .../git-receive-pack`) as
/// [`GitClassifier`] sees it.
pub(crate) fn is_push(head: &RequestHead) -> bool {
    // Only a POST is ever a push: anything else needs no path work.
    head.method() == "POST"
        && matches!(
            GitClassifier::default().classify_git(&ClassifyInput::head(head)),
            Some(Ok(GitRequest::Push(None)))
        )
}

impl GitClassifier {
    /// A classifier with these limits.
    pub fn new(limits: GitLimits) -> GitClassifier {
        GitClassifier {
            limits,
            push_rule: None,
        }
    }

    /// Judges the pushes this classifier reads in a broker with `rule`.
    pub fn with_push_rule(mut self, rule: PushRule) -> GitClassifier {
        self.push_rule = Some(Arc::new(rule));
        self
    }

    /// The push rule, if one was given.
    pub fn push_rule(&self) -> Option<&PushRule> {
        self.push_rule.as_deref()
    }

    /// The limits.
    pub fn limits(&self) -> &GitLimits {
        &self.limits
    }

    /// `None` when the request is not on a git path; otherwise what it is,
    /// or why it is refused.
    pub fn classify_git(&self, input: &ClassifyInput<'_>) -> Option<Result<GitRequest, String>> {
        let head = input.head;
        // Matched in the rules' normal form, ignoring case, so that no
        // spelling of a git endpoint escapes this classifier.
        let norm = normal_path(head.path())
            .unwrap_or_else(|_| head.path().to_owned())
            .to_ascii_lowercase();
        let path = norm.trim_end_matches('/');
        if !is_git_path(path) {
            return None;
        }
        let method = head.method();
        let service = head.query().and_then(|q| {
            let mut found = None;
            for pair in q.split('&') {
                if let Some(v) = pair.strip_prefix("service=") {
                    if found.is_some() {
                        return Some("");
                    }
                    found = Some(v);
                }
            }
            found
        });
        let v2 = head
            .header("git-protocol")
            .is_some_and(|v| v.windows(9).any(|w| w == b"version=2"));
        let answer = if path.ends_with("/info/refs") && method == "GET" {
            match service {
                Some("git-upload-pack") => Ok(GitRequest::Fetch),
                Some("git-receive-pack") => Ok(GitRequest::PushDiscovery),
                _ => Err(
                    "info/refs without a smart-HTTP service (the dumb protocol is refused)"
                        .to_owned(),
                ),
            }
        } else if path.ends_with("/git-upload-pack") && method == "POST" && head.query().is_none() {
            Ok(GitRequest::Fetch)
        } else if path.ends_with("/git-receive-pack") && method == "POST" && head.query().is_none()
        {
            if v2 {
                Err("protocol v2 has no push".to_owned())
            } else {
                match input.body {
                    None => Ok(GitRequest::Push(None)),
                    Some(body) => push_rule::decode_body(
                        head.header("content-encoding"),
                        body,
                        self.limits.inflated_body_limit(),
                    )
                    .and_then(|b| parse_receive_pack(&b, &self.limits))
                    .map(|rp| GitRequest::Push(Some(Box::new(rp))))
                    .map_err(|e| e.to_string()),
                }
            }
        } else {
            Err(format!("{method} {path} is not a smart-HTTP fetch or push"))
        };
        Some(answer)
    }
}

impl RequestClassifier for GitClassifier {
    fn name(&self) -> &str {
        "git"
    }

    fn classify(&self, input: &ClassifyInput<'_>) -> Classification {
        match self.classify_git(input) {
            None => Classification::NotMine,
            Some(Ok(GitRequest::Fetch)) => class(GIT_FETCH),
            Some(Ok(_)) => class(GIT_PUSH),
            Some(Err(reason)) => Classification::Refused { reason },
        }
    }

    fn streams_body(&self, head: &RequestHead) -> Option<u64> {
        is_push(head).then(|| self.limits.inflated_body_limit())
    }

    fn start_body(&self, head: &RequestHead) -> Result<Box<dyn BodyReader>, Error> {
        Ok(super::push::reader(
            head,
            self.push_rule.as_ref().map(Arc::clone),
            self.limits,
        ))
    }
}
