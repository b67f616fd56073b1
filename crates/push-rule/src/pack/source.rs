//! A buffered reader over the pack that knows its offset, and the
//! bounded inflation of one object's zlib stream.

use super::bad;
use crate::error::Error;
use flate2::{Decompress, FlushDecompress, Status};
use std::io::{Read, Seek, SeekFrom};

const READ_CHUNK: usize = 64 * 1024;

fn io_bad(offset: u64) -> impl Fn(std::io::Error) -> Error {
    move |_| bad(offset, "the pack cannot be read")
}

/// A buffered reader that knows its offset.
pub(super) struct Src<'a, R> {
    inner: &'a mut R,
    len: u64,
    pub(super) pos: u64,
    pub(super) buf: Vec<u8>,
    pub(super) lo: usize,
    hi: usize,
}

impl<'a, R: Read + Seek> Src<'a, R> {
    pub(super) fn new(inner: &'a mut R, len: u64) -> Self {
        Src {
            inner,
            len,
            pos: 0,
            buf: vec![0; READ_CHUNK],
            lo: 0,
            hi: 0,
        }
    }

    pub(super) fn seek(&mut self, pos: u64) -> Result<(), Error> {
        self.inner.seek(SeekFrom::Start(pos)).map_err(io_bad(pos))?;
        self.pos = pos;
        self.lo = 0;
        self.hi = 0;
        Ok(())
    }

    /// Makes bytes available; returns how many (0 at the end).
    pub(super) fn fill(&mut self) -> Result<usize, Error> {
        if self.lo == self.hi {
            let want = (self.len.saturating_sub(self.pos) as usize).min(self.buf.len());
            let n = if want == 0 {
                0
            } else {
                self.inner
                    .read(&mut self.buf[..want])
                    .map_err(io_bad(self.pos))?
            };
            self.lo = 0;
            self.hi = n;
        }
        Ok(self.hi - self.lo)
    }

    pub(super) fn consume(&mut self, n: usize) {
        self.lo += n;
        self.pos += n as u64;
    }

    pub(super) fn byte(&mut self) -> Result<u8, Error> {
        if self.fill()? == 0 {
            return Err(bad(self.pos, "the pack ends early"));
        }
        let b = self.buf[self.lo];
        self.consume(1);
        Ok(b)
    }

    pub(super) fn exact(&mut self, out: &mut [u8]) -> Result<(), Error> {
        for b in out.iter_mut() {
            *b = self.byte()?;
        }
        Ok(())
    }

    /// Inflates one zlib stream that must yield exactly `size` bytes,
    /// handing them to `sink`.
    pub(super) fn inflate(
        &mut self,
        size: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let start = self.pos;
        let mut z = Decompress::new(true);
        let mut out = vec![0u8; READ_CHUNK];
        loop {
            let avail = self.fill()?;
            let (in0, out0) = (z.total_in(), z.total_out());
            let status = z
                .decompress(&self.buf[self.lo..self.hi], &mut out, FlushDecompress::None)
                .map_err(|_| bad(start, "an object's zlib stream is corrupt"))?;
            let used = (z.total_in() - in0) as usize;
            let made = (z.total_out() - out0) as usize;
            self.consume(used);
            if z.total_out() > size {
                return Err(bad(start, "an object inflates past its declared size"));
            }
            sink(&out[..made])?;
            match status {
                Status::StreamEnd => break,
                _ if used == 0 && made == 0 && avail == 0 => {
                    return Err(bad(start, "the pack ends inside an object"));
                }
                _ if used == 0 && made == 0 => {
                    return Err(bad(start, "an object's zlib stream makes no progress"));
                }
                _ => {}
            }
        }
        if z.total_out() != size {
            return Err(bad(
                start,
                "an object inflates to less than its declared size",
            ));
        }
        Ok(())
    }
}
