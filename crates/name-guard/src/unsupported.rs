//! The guarded run where there is none: the filter and the supervisor are
//! Linux only.

use crate::outcome::Outcome;
use crate::{Error, ErrorKind, Invocation};

/// See [`crate::run`].
pub(crate) fn run(_inv: &Invocation) -> Result<Outcome, Error> {
    Err(ErrorKind::UnsupportedPlatform.into())
}
