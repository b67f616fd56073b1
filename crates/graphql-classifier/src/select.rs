//! Operation selection: the spec's GetOperation, refusing every case where
//! servers pick differently.

use crate::error::{Error, ErrorKind, echo};
use crate::operation::{Classification, Operation};

/// Picks the operation that `operation_name` selects among `ops`, the
/// operations of `source`.
///
/// `first_fragment` is the offset of the document's first fragment
/// definition (a fragment-only document has no operation to run). An empty
/// `operation_name` counts as absent.
pub(crate) fn select(
    source: &str,
    ops: &[Operation<'_>],
    first_fragment: Option<usize>,
    operation_name: Option<&str>,
) -> Result<Classification, Error> {
    if ops.is_empty() {
        return Err(match first_fragment {
            Some(offset) => Error::at(ErrorKind::NoOperation { offset }, source.as_bytes(), offset),
            None => Error::new(ErrorKind::EmptyDocument),
        });
    }
    if ops.len() > 1 {
        if let Some(anon) = ops.iter().find(|o| o.name.is_none()) {
            let kind = ErrorKind::AnonymousAmongOthers {
                offset: anon.offset,
            };
            return Err(Error::at(kind, source.as_bytes(), anon.offset));
        }
        if let Some((name, offset)) = duplicate(ops) {
            let kind = ErrorKind::DuplicateOperationName {
                name: echo(name),
                offset,
            };
            return Err(Error::at(kind, source.as_bytes(), offset));
        }
    }
    let chosen = match operation_name.filter(|n| !n.is_empty()) {
        Some(wanted) => ops
            .iter()
            .find(|o| o.name == Some(wanted))
            .ok_or_else(|| Error::new(ErrorKind::OperationNotFound { name: echo(wanted) }))?,
        None => match ops {
            [only] => only,
            _ => {
                return Err(Error::new(ErrorKind::OperationNameRequired {
                    count: ops.len(),
                }));
            }
        },
    };
    Ok(Classification {
        kind: chosen.kind,
        operation_name: chosen.name.map(str::to_owned),
    })
}

/// The first repeated operation name (all operations are named here) and
/// the offset of its later definition. Few operations are compared pairwise;
/// many are sorted, so the work stays `n log n`.
fn duplicate<'a>(ops: &[Operation<'a>]) -> Option<(&'a str, usize)> {
    const PAIRWISE: usize = 16;
    if ops.len() <= PAIRWISE {
        let mut found: Option<(&'a str, usize)> = None;
        for (i, a) in ops.iter().enumerate() {
            for b in &ops[i + 1..] {
                if a.name == b.name && found.is_none_or(|(_, off)| b.offset < off) {
                    found = b.name.map(|n| (n, b.offset));
                }
            }
        }
        return found;
    }
    let mut named: Vec<(&'a str, usize)> = ops
        .iter()
        .filter_map(|o| o.name.map(|n| (n, o.offset)))
        .collect();
    named.sort_unstable();
    named
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1])
        .min_by_key(|&(_, off)| off)
}
