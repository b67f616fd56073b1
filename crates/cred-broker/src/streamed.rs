//! Request bodies a classifier reads itself, as they arrive, and judges
//! whole before anything of them goes upstream (a git push).

use crate::answer::Answer;
use crate::error::Error;
use std::io::Read;

/// A request body read by its classifier as it arrives: started by
/// [`RequestClassifier::start_body`](crate::RequestClassifier::start_body),
/// fed the body's bytes (the HTTP framing removed) in whatever slices
/// they come.
pub trait BodyReader: Send {
    /// Takes the next bytes of the body. An error refuses the request as
    /// malformed.
    fn feed(&mut self, part: &[u8]) -> Result<(), Error>;

    /// The body ended. An error refuses the request as malformed.
    fn finish(self: Box<Self>) -> Result<Box<dyn HeldBody>, Error>;
}

/// What a classifier decides about a whole body.
#[derive(Debug)]
#[non_exhaustive]
pub enum Judgement {
    /// Forward the request, with [`HeldBody::reader`]'s bytes as its body.
    Forward,
    /// Answer the client with this instead; nothing reaches the upstream.
    /// `why` is reported as the violation.
    Answer {
        /// What the client is sent.
        answer: Answer,
        /// Why, for the violation (never a secret).
        why: Error,
    },
}

/// A whole body read by a [`BodyReader`], held until it is judged.
pub trait HeldBody: Send {
    /// Judges the body. The broker asks only once the head passed the
    /// rules and the lease is active. An error refuses the request.
    fn judge(&mut self) -> Result<Judgement, Error>;

    /// The length of the body to forward.
    fn len(&self) -> u64;

    /// Whether the body to forward is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body to forward, from its start: [`HeldBody::len`] bytes,
    /// decoded (the broker forwards it with a `Content-Length` and no
    /// `Content-Encoding`).
    fn reader(&mut self) -> Result<Box<dyn Read + Send + '_>, Error>;
}
