//! The compiled classifier and its builder.

use crate::error::{Error, ErrorKind};
use crate::operation::{Classification, Operation};

/// Default limit on the size of a GraphQL document: 1 MiB.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// Default limit on the size of a request body or query string: 2 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 2 << 20;
/// Default limit on the number of tokens in a document.
pub const DEFAULT_MAX_TOKENS: usize = 200_000;
/// Default limit on bracket nesting in a document.
pub const DEFAULT_MAX_DEPTH: usize = 64;
/// Default limit on nesting in a JSON body.
pub const DEFAULT_MAX_JSON_DEPTH: usize = 32;

/// Classifies GraphQL requests. Build once, classify many; cheap to share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    pub(crate) max_document_bytes: usize,
    pub(crate) max_request_bytes: usize,
    pub(crate) max_tokens: usize,
    pub(crate) max_depth: usize,
    pub(crate) max_json_depth: usize,
}

/// Sets a [`Classifier`]'s limits; every limit has a safe default.
#[derive(Debug, Clone, Default)]
pub struct ClassifierBuilder {
    limits: Classifier,
}

impl Default for Classifier {
    fn default() -> Self {
        Self {
            max_document_bytes: DEFAULT_MAX_DOCUMENT_BYTES,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_tokens: DEFAULT_MAX_TOKENS,
            max_depth: DEFAULT_MAX_DEPTH,
            max_json_depth: DEFAULT_MAX_JSON_DEPTH,
        }
    }
}

impl ClassifierBuilder {
    /// A builder with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Largest document, in bytes.
    pub fn max_document_bytes(&mut self, n: usize) -> &mut Self {
        self.limits.max_document_bytes = n;
        self
    }

    /// Largest request body or URL query string, in bytes.
    pub fn max_request_bytes(&mut self, n: usize) -> &mut Self {
        self.limits.max_request_bytes = n;
        self
    }

    /// Most tokens in a document.
    pub fn max_tokens(&mut self, n: usize) -> &mut Self {
        self.limits.max_tokens = n;
        self
    }

    /// Deepest bracket nesting in a document.
    pub fn max_depth(&mut self, n: usize) -> &mut Self {
        self.limits.max_depth = n;
        self
    }

    /// Deepest nesting in a JSON body (the body object is level 1).
    pub fn max_json_depth(&mut self, n: usize) -> &mut Self {
        self.limits.max_json_depth = n;
        self
    }

    /// The classifier; fails when a limit is zero. The JSON depth is capped
    /// at 100, below the JSON reader's own recursion limit.
    pub fn build(&self) -> Result<Classifier, Error> {
        let l = &self.limits;
        for (name, v) in [
            ("max_document_bytes", l.max_document_bytes),
            ("max_request_bytes", l.max_request_bytes),
            ("max_tokens", l.max_tokens),
            ("max_depth", l.max_depth),
            ("max_json_depth", l.max_json_depth),
        ] {
            if v == 0 {
                return Err(Error::new(ErrorKind::InvalidLimit { name }));
            }
        }
        let mut c = l.clone();
        c.max_json_depth = c.max_json_depth.min(100);
        Ok(c)
    }
}

impl Classifier {
    /// A classifier with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder to set limits.
    pub fn builder() -> ClassifierBuilder {
        ClassifierBuilder::new()
    }

    /// The operations of `document`, in order, after checking the whole
    /// document lexically and at the top level.
    pub fn operations<'a>(&self, document: &'a str) -> Result<Vec<Operation<'a>>, Error> {
        Ok(self.scan(document)?.operations)
    }

    fn scan<'a>(&self, document: &'a str) -> Result<crate::scan::Scanned<'a>, Error> {
        if document.len() > self.max_document_bytes {
            return Err(Error::new(ErrorKind::DocumentTooLarge {
                size: document.len(),
                limit: self.max_document_bytes,
            }));
        }
        crate::scan::scan(document, self.max_tokens, self.max_depth)
    }

    /// Classifies `document` with an optional `operationName` (`Some("")`
    /// counts as absent).
    pub fn classify_document(
        &self,
        document: &str,
        operation_name: Option<&str>,
    ) -> Result<Classification, Error> {
        let scanned = self.scan(document)?;
        crate::select::select(
            document,
            &scanned.operations,
            scanned.first_fragment,
            operation_name,
        )
    }
}
