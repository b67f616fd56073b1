//! Entry points for the fuzz targets and the differential tests. Not a
//! stable API.

use crate::classifier::Classifier;
use crate::error::{Error, ErrorKind};

/// Runs every entry point on `data`; must never panic.
pub fn exercise(data: &[u8]) {
    let c = Classifier::new();
    let _ = c.classify_json(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = c.classify_document(text, None);
        let _ = c.classify_get(text);
        if let Some((name, doc)) = text.split_once('\n') {
            let _ = c.classify_document(doc, Some(name));
        }
    }
}

/// Whether `e` is a refusal on purpose of something a conforming parser
/// accepts: a spelling that readers split differently, or a limit.
pub fn is_deliberate_refusal(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ByteOrderMark { .. }
            | ErrorKind::ControlCharacter { .. }
            | ErrorKind::LoneCarriageReturn { .. }
            | ErrorKind::LineSeparatorInComment { .. }
            | ErrorKind::AmbiguousQuotes { .. }
            | ErrorKind::NonExecutableDefinition { .. }
            | ErrorKind::TooManyTokens { .. }
            | ErrorKind::TooDeep { .. }
            | ErrorKind::DocumentTooLarge { .. }
    )
}
