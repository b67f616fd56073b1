//! `NAME=VALUE` records separated by NUL, as in `/proc/PID/environ` or
//! `env -0`.

use crate::{Error, ErrorKind};
use std::ffi::OsString;

/// Largest NUL-separated input [`parse_records`] accepts, in bytes.
pub const MAX_INPUT_BYTES: usize = 4 * 1024 * 1024;

/// Most records [`parse_records`] accepts.
pub const MAX_RECORDS: usize = 16_384;

/// Parses `NAME=VALUE` records separated by NUL bytes. A trailing NUL is
/// optional and empty records are skipped. Each record splits at its first
/// `=`; the name may be empty or odd (the pipeline judges it), but a record
/// without `=` is an error, as is input over [`MAX_INPUT_BYTES`] or with
/// more than [`MAX_RECORDS`] records. On Unix the bytes need not be UTF-8;
/// elsewhere, where a variable is not a byte string, a record that is not
/// UTF-8 is an error ([`ErrorKind::NotUtf8`]).
pub fn parse_records(input: &[u8]) -> Result<Vec<(OsString, OsString)>, Error> {
    if input.len() > MAX_INPUT_BYTES {
        return Err(ErrorKind::InputTooLarge {
            len: input.len(),
            limit: MAX_INPUT_BYTES,
        }
        .into());
    }
    let mut out = Vec::new();
    for (index, record) in input
        .split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .enumerate()
    {
        if index >= MAX_RECORDS {
            return Err(ErrorKind::TooManyRecords { limit: MAX_RECORDS }.into());
        }
        let Some(eq) = record.iter().position(|b| *b == b'=') else {
            return Err(ErrorKind::MissingEquals { index }.into());
        };
        let (name, value) = (&record[..eq], &record[eq + 1..]);
        out.push((os_string(name, index)?, os_string(value, index)?));
    }
    Ok(out)
}

/// The bytes of record `index` as an `OsString`: as they are on Unix.
#[cfg(unix)]
fn os_string(bytes: &[u8], _index: usize) -> Result<OsString, Error> {
    use std::os::unix::ffi::OsStringExt;
    Ok(OsString::from_vec(bytes.to_vec()))
}

/// The bytes of record `index` as an `OsString`: UTF-8 only off Unix.
#[cfg(not(unix))]
fn os_string(bytes: &[u8], index: usize) -> Result<OsString, Error> {
    String::from_utf8(bytes.to_vec())
        .map(OsString::from)
        .map_err(|_| ErrorKind::NotUtf8 { index }.into())
}

/// Writes `NAME=VALUE` records, each followed by a NUL byte (on Unix the
/// variables' bytes as they are).
pub fn write_records<'a, I>(vars: I) -> Vec<u8>
where
    I: IntoIterator<Item = &'a (OsString, OsString)>,
{
    let mut out = Vec::new();
    for (name, value) in vars {
        out.extend_from_slice(name.as_encoded_bytes());
        out.push(b'=');
        out.extend_from_slice(value.as_encoded_bytes());
        out.push(0);
    }
    out
}
