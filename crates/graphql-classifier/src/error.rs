//! The crate's one error type.

use std::fmt;

/// How many bytes of the input an error quotes after the offending byte.
const NEAR_BYTES: usize = 24;
/// How many characters of a name or key an error repeats.
const ECHO_CHARS: usize = 64;

/// Why a request or document was refused. [`Error::kind`] says which, with
/// the byte offset of the offending input where there is one; `Display`
/// quotes the bytes found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    // Boxed: errors are rare, and a small `Result` keeps the lexer fast.
    inner: Box<Inner>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    kind: ErrorKind,
    near: Option<String>,
}

/// What was refused, with the offending value and its byte offset.
///
/// Offsets of document errors count bytes from the start of the GraphQL
/// document (for a JSON request: of the decoded `query` string); offsets of
/// request errors count bytes from the start of the body or query string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    // ---- limits ----
    /// The document is larger than the configured limit.
    #[error("document is {size} bytes, over the limit of {limit}; send a smaller query")]
    DocumentTooLarge {
        /// Size of the document in bytes.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The request body or query string is larger than the configured limit.
    #[error("request is {size} bytes, over the limit of {limit}; send a smaller request")]
    RequestTooLarge {
        /// Size of the request in bytes.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The document has more tokens than the configured limit.
    #[error("more than {limit} tokens at byte {offset}; the document is too long")]
    TooManyTokens {
        /// Offset of the first token over the limit.
        offset: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Brackets nest deeper than the configured limit.
    #[error("brackets nest deeper than {limit} at byte {offset}")]
    TooDeep {
        /// Offset of the bracket over the limit.
        offset: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The JSON body nests deeper than the configured limit.
    #[error("JSON nests deeper than {limit} at byte {offset} of the body")]
    JsonTooDeep {
        /// Offset of the bracket over the limit.
        offset: usize,
        /// The configured limit.
        limit: usize,
    },

    // ---- lexical ----
    /// A byte order mark, which readers treat differently.
    #[error("byte order mark at byte {offset}; remove it")]
    ByteOrderMark {
        /// Offset of the mark.
        offset: usize,
    },
    /// A C0 or C1 control character (other than tab and line feed) or DEL.
    #[error("control character {ch:?} at byte {offset}")]
    ControlCharacter {
        /// Offset of the character.
        offset: usize,
        /// The character.
        ch: char,
    },
    /// A carriage return not followed by a line feed: some readers end a
    /// comment there and some do not.
    #[error("carriage return without line feed at byte {offset}; use LF or CRLF line ends")]
    LoneCarriageReturn {
        /// Offset of the carriage return.
        offset: usize,
    },
    /// A Unicode line or paragraph separator inside a comment, which some
    /// readers take as a line end.
    #[error("Unicode line separator {ch:?} in a comment at byte {offset}")]
    LineSeparatorInComment {
        /// Offset of the separator.
        offset: usize,
        /// The separator.
        ch: char,
    },
    /// A non-ASCII character outside strings and comments.
    #[error("non-ASCII character {ch:?} at byte {offset}; only strings and comments may hold it")]
    NonAscii {
        /// Offset of the character.
        offset: usize,
        /// The character.
        ch: char,
    },
    /// An ASCII character that starts no GraphQL token.
    #[error("unexpected character {ch:?} at byte {offset}")]
    UnexpectedCharacter {
        /// Offset of the character.
        offset: usize,
        /// The character.
        ch: char,
    },
    /// A malformed number, or a number glued to a name or a dot (`123abc`).
    #[error("invalid number at byte {offset}: {reason}")]
    InvalidNumber {
        /// Offset of the number.
        offset: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A string escape the spec does not allow (`\x`, a lone `\uD800`, ...).
    #[error("invalid escape at byte {offset}: {reason}")]
    InvalidEscape {
        /// Offset of the backslash.
        offset: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A string or block string that never ends (or a string that meets a
    /// line end).
    #[error("unterminated string starting at byte {offset}")]
    UnterminatedString {
        /// Offset of the opening quote.
        offset: usize,
    },
    /// Quotes piled up where readers disagree on where a string ends: four
    /// or more in a row, `\"""` followed by a quote, `\\"""` in a block
    /// string, or a string directly followed by a quote.
    #[error("ambiguous quotes at byte {offset}: {reason}; separate the strings or rephrase")]
    AmbiguousQuotes {
        /// Offset of the quotes.
        offset: usize,
        /// Which pattern was found.
        reason: &'static str,
    },

    // ---- syntax ----
    /// The document holds no definition at all.
    #[error("the document is empty")]
    EmptyDocument,
    /// A token that does not fit where it was found.
    #[error("expected {expected} at byte {offset}, found {found}")]
    UnexpectedToken {
        /// Offset of the token.
        offset: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// The document ends where the grammar needs more.
    #[error("document ends at byte {offset}; expected {expected}")]
    UnexpectedEnd {
        /// Offset of the end.
        offset: usize,
        /// What the grammar needs.
        expected: &'static str,
    },
    /// A closing bracket that does not match the open one.
    #[error("found {found:?} at byte {offset} where {expected:?} closes the bracket")]
    MismatchedBracket {
        /// Offset of the closing bracket.
        offset: usize,
        /// The bracket found.
        found: char,
        /// The bracket expected.
        expected: char,
    },
    /// A bracket that is never closed.
    #[error("bracket {open:?} at byte {offset} is never closed")]
    UnclosedBracket {
        /// Offset of the open bracket.
        offset: usize,
        /// The open bracket.
        open: char,
    },
    /// A type-system definition or extension (`type`, `schema`, `extend`,
    /// ...): a request must hold executable definitions only.
    #[error(
        "non-executable definition {keyword:?} at byte {offset}; send operations and fragments only"
    )]
    NonExecutableDefinition {
        /// Offset of the keyword (or of its description).
        offset: usize,
        /// The keyword.
        keyword: String,
    },

    // ---- operation selection ----
    /// The document holds fragments but no operation.
    #[error("the document holds no operation, only fragments (the first at byte {offset})")]
    NoOperation {
        /// Offset of the first fragment.
        offset: usize,
    },
    /// Two operations share a name; servers run different ones.
    #[error(
        "operation name {name:?} is used again at byte {offset}; operation names must be unique"
    )]
    DuplicateOperationName {
        /// The name (truncated).
        name: String,
        /// Offset of the second operation.
        offset: usize,
    },
    /// An anonymous operation next to other operations.
    #[error("anonymous operation at byte {offset} next to other operations; name every operation")]
    AnonymousAmongOthers {
        /// Offset of the anonymous operation.
        offset: usize,
    },
    /// `operationName` names no operation of the document.
    #[error("operationName {name:?} matches no operation of the document")]
    OperationNotFound {
        /// The name asked for (truncated).
        name: String,
    },
    /// Several operations and no `operationName`.
    #[error("the document holds {count} operations; say which with operationName")]
    OperationNameRequired {
        /// How many operations the document holds.
        count: usize,
    },

    // ---- request layer ----
    /// The body is not valid JSON.
    #[error("invalid JSON at byte {offset} of the body: {message}")]
    Json {
        /// Offset where the JSON reader stopped.
        offset: usize,
        /// What the JSON reader said.
        message: String,
    },
    /// The body is JSON but not an object (an array is a batch, refused).
    #[error("the body at byte {offset} is {found}, not a JSON object; batches are refused")]
    NotAnObject {
        /// Offset of the value.
        offset: usize,
        /// What was found.
        found: &'static str,
    },
    /// A key given twice.
    #[error("key {key:?} is given twice (at byte {offset}); send each key once")]
    DuplicateKey {
        /// The key (truncated).
        key: String,
        /// Offset of the second occurrence (in a JSON body: just after it).
        offset: usize,
    },
    /// A key the request layer does not know.
    #[error(
        "unknown request key {key:?} at byte {offset}; only query, operationName, variables and extensions are accepted"
    )]
    UnknownKey {
        /// The key (truncated).
        key: String,
        /// Offset of the key (in a JSON body: just after it).
        offset: usize,
    },
    /// No `query`.
    #[error("the request has no query")]
    MissingQuery,
    /// A field of the wrong JSON type (`query` not a string, ...).
    #[error("{field} at byte {offset} must be {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
        /// Offset just after the value in the body.
        offset: usize,
    },
    /// A persisted-query form, which names a stored document instead of
    /// sending it.
    #[error("persisted query field {field} at byte {offset} is refused; send the query text")]
    PersistedQuery {
        /// The field (`extensions.persistedQuery`, `documentId`, `id`, or
        /// `extensions` in a GET query string).
        field: &'static str,
        /// Offset of the field (in a JSON body: just after its key).
        offset: usize,
    },
    /// A malformed URL query string.
    #[error("invalid URL query string at byte {offset}: {reason}")]
    BadQueryString {
        /// Offset of the offending byte.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A mutation sent with GET, which is never a write path.
    #[error("a mutation sent with GET is refused; GET is never a write path")]
    MutationOverGet,
    /// A builder limit of zero.
    #[error("limit {name} must be at least 1")]
    InvalidLimit {
        /// Which limit.
        name: &'static str,
    },
}

impl Error {
    /// An error without quoted input.
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Self {
            inner: Box::new(Inner { kind, near: None }),
        }
    }

    /// An error quoting `source` from `offset`.
    pub(crate) fn at(kind: ErrorKind, source: &[u8], offset: usize) -> Self {
        let start = offset.min(source.len());
        let end = (start + NEAR_BYTES).min(source.len());
        let near = String::from_utf8_lossy(&source[start..end]).into_owned();
        Self {
            inner: Box::new(Inner {
                kind,
                near: Some(near),
            }),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.inner.kind
    }

    /// The byte offset of the offending input, when there is one.
    pub fn offset(&self) -> Option<usize> {
        use ErrorKind as K;
        match &self.inner.kind {
            K::TooManyTokens { offset, .. }
            | K::TooDeep { offset, .. }
            | K::JsonTooDeep { offset, .. }
            | K::ByteOrderMark { offset }
            | K::ControlCharacter { offset, .. }
            | K::LoneCarriageReturn { offset }
            | K::LineSeparatorInComment { offset, .. }
            | K::NonAscii { offset, .. }
            | K::UnexpectedCharacter { offset, .. }
            | K::InvalidNumber { offset, .. }
            | K::InvalidEscape { offset, .. }
            | K::UnterminatedString { offset }
            | K::AmbiguousQuotes { offset, .. }
            | K::UnexpectedToken { offset, .. }
            | K::UnexpectedEnd { offset, .. }
            | K::MismatchedBracket { offset, .. }
            | K::UnclosedBracket { offset, .. }
            | K::NonExecutableDefinition { offset, .. }
            | K::DuplicateOperationName { offset, .. }
            | K::AnonymousAmongOthers { offset }
            | K::NoOperation { offset }
            | K::Json { offset, .. }
            | K::NotAnObject { offset, .. }
            | K::DuplicateKey { offset, .. }
            | K::UnknownKey { offset, .. }
            | K::WrongType { offset, .. }
            | K::PersistedQuery { offset, .. }
            | K::BadQueryString { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// A short name of the kind (`"LoneCarriageReturn"`), stable for tables
    /// and logs.
    pub fn code(&self) -> &'static str {
        use ErrorKind as K;
        match &self.inner.kind {
            K::DocumentTooLarge { .. } => "DocumentTooLarge",
            K::RequestTooLarge { .. } => "RequestTooLarge",
            K::TooManyTokens { .. } => "TooManyTokens",
            K::TooDeep { .. } => "TooDeep",
            K::JsonTooDeep { .. } => "JsonTooDeep",
            K::ByteOrderMark { .. } => "ByteOrderMark",
            K::ControlCharacter { .. } => "ControlCharacter",
            K::LoneCarriageReturn { .. } => "LoneCarriageReturn",
            K::LineSeparatorInComment { .. } => "LineSeparatorInComment",
            K::NonAscii { .. } => "NonAscii",
            K::UnexpectedCharacter { .. } => "UnexpectedCharacter",
            K::InvalidNumber { .. } => "InvalidNumber",
            K::InvalidEscape { .. } => "InvalidEscape",
            K::UnterminatedString { .. } => "UnterminatedString",
            K::AmbiguousQuotes { .. } => "AmbiguousQuotes",
            K::EmptyDocument => "EmptyDocument",
            K::UnexpectedToken { .. } => "UnexpectedToken",
            K::UnexpectedEnd { .. } => "UnexpectedEnd",
            K::MismatchedBracket { .. } => "MismatchedBracket",
            K::UnclosedBracket { .. } => "UnclosedBracket",
            K::NonExecutableDefinition { .. } => "NonExecutableDefinition",
            K::NoOperation { .. } => "NoOperation",
            K::DuplicateOperationName { .. } => "DuplicateOperationName",
            K::AnonymousAmongOthers { .. } => "AnonymousAmongOthers",
            K::OperationNotFound { .. } => "OperationNotFound",
            K::OperationNameRequired { .. } => "OperationNameRequired",
            K::Json { .. } => "Json",
            K::NotAnObject { .. } => "NotAnObject",
            K::DuplicateKey { .. } => "DuplicateKey",
            K::UnknownKey { .. } => "UnknownKey",
            K::MissingQuery => "MissingQuery",
            K::WrongType { .. } => "WrongType",
            K::PersistedQuery { .. } => "PersistedQuery",
            K::BadQueryString { .. } => "BadQueryString",
            K::MutationOverGet => "MutationOverGet",
            K::InvalidLimit { .. } => "InvalidLimit",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner.kind)?;
        if let Some(near) = &self.inner.near {
            write!(f, ", here: {near:?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Self::new(kind)
    }
}

/// `s` cut to a length safe to repeat in an error.
pub(crate) fn echo(s: &str) -> String {
    s.chars().take(ECHO_CHARS).collect()
}
