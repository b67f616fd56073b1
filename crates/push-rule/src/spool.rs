//! Holding a pushed pack while the push is decided: in memory up to a
//! bound, then in a private temporary file, never past a hard cap.

use crate::error::{Error, ErrorKind};
use crate::limits::GitLimits;
use std::fs::File;
use std::io::{Cursor, Read, Seek, SeekFrom, Write};

fn io_error(e: std::io::Error) -> Error {
    ErrorKind::Spool {
        message: e.kind().to_string(),
    }
    .into()
}

/// A pack being received. Bytes stay in memory up to
/// [`GitLimits::spool_memory`], then move to an unnamed temporary file
/// (created with `tempfile`, in the process's temporary directory,
/// readable only by its owner and gone when closed); more than
/// [`GitLimits::max_pack`] bytes are refused.
#[derive(Debug)]
pub struct PackSpool {
    memory: Vec<u8>,
    file: Option<File>,
    len: u64,
    memory_limit: usize,
    cap: u64,
}

impl PackSpool {
    /// An empty spool with the bounds of `limits`.
    pub fn new(limits: &GitLimits) -> PackSpool {
        PackSpool {
            memory: Vec::new(),
            file: None,
            len: 0,
            memory_limit: limits.spool_memory,
            cap: limits.max_pack,
        }
    }

    /// Appends bytes; refuses them past the hard cap.
    pub fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        let new_len = self.len.saturating_add(data.len() as u64);
        if new_len > self.cap {
            return Err(ErrorKind::Pack {
                offset: self.len,
                reason: "the pack exceeds the spool's hard cap",
            }
            .into());
        }
        if self.file.is_none() && new_len > self.memory_limit as u64 {
            let mut f = tempfile::tempfile().map_err(io_error)?;
            f.write_all(&self.memory).map_err(io_error)?;
            self.memory = Vec::new();
            self.file = Some(f);
        }
        match &mut self.file {
            Some(f) => f.write_all(data).map_err(io_error)?,
            None => self.memory.extend_from_slice(data),
        }
        self.len = new_len;
        Ok(())
    }

    /// Bytes held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the bytes moved to a temporary file.
    pub fn on_disk(&self) -> bool {
        self.file.is_some()
    }

    /// A reader over everything held, from the start.
    pub fn reader(&mut self) -> Result<SpoolReader<'_>, Error> {
        match &mut self.file {
            Some(f) => {
                f.seek(SeekFrom::Start(0)).map_err(io_error)?;
                Ok(SpoolReader::File(f))
            }
            None => Ok(SpoolReader::Memory(Cursor::new(&self.memory))),
        }
    }
}

/// Reads a [`PackSpool`] (for the pack walk and for forwarding).
#[derive(Debug)]
pub enum SpoolReader<'a> {
    /// The bytes are in memory.
    Memory(Cursor<&'a Vec<u8>>),
    /// The bytes are in the temporary file.
    File(&'a mut File),
}

impl Read for SpoolReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            SpoolReader::Memory(c) => c.read(buf),
            SpoolReader::File(f) => f.read(buf),
        }
    }
}

impl Seek for SpoolReader<'_> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            SpoolReader::Memory(c) => c.seek(pos),
            SpoolReader::File(f) => f.seek(pos),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;

    #[test]
    fn moves_to_disk_and_caps() {
        let limits = GitLimits::default().spool_memory(4).max_pack(10);
        let mut s = PackSpool::new(&limits);
        s.write(b"abc").unwrap();
        assert!(!s.on_disk());
        s.write(b"defg").unwrap();
        assert!(s.on_disk());
        let mut back = Vec::new();
        s.reader().unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back, b"abcdefg");
        assert!(s.write(b"hijk").is_err());
        assert_eq!(s.len(), 7);
    }
}
