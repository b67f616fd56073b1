//! Rebuilding delta-encoded commits: git's delta format, applied within
//! bounds, and the work bound that keeps rebuilding linear.

use super::source::Src;
use super::{Entry, Kind, bad};
use crate::commands::ObjectId;
use crate::error::Error;
use crate::limits::GitLimits;
use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek};

/// Commit bodies rebuilt recently (delta chains usually run in pack
/// order, so each delta's base was just rebuilt), and the work done.
#[derive(Default)]
pub(super) struct Rebuilt {
    pub(super) bodies: HashMap<usize, Vec<u8>>,
    order: VecDeque<usize>,
    work: u64,
}

/// Rebuilt bodies kept for reuse.
const REBUILT_CACHE: usize = 64;

impl Rebuilt {
    fn keep(&mut self, i: usize, body: &[u8]) {
        if self.bodies.insert(i, body.to_vec()).is_none() {
            self.order.push_back(i);
        }
        while self.order.len() > REBUILT_CACHE {
            if let Some(old) = self.order.pop_front() {
                self.bodies.remove(&old);
            }
        }
    }

    /// Counts bytes inflated or produced; refuses past a bound of 16 times
    /// the pack cap (at least 64 MiB), so no pack can make the rebuilding
    /// quadratic.
    fn spend(&mut self, bytes: u64, limits: &GitLimits, offset: u64) -> Result<(), Error> {
        self.work = self.work.saturating_add(bytes);
        if self.work > limits.max_pack.saturating_mul(16).max(64 << 20) {
            return Err(bad(
                offset,
                "rebuilding delta commits exceeds its work bound",
            ));
        }
        Ok(())
    }
}

/// Rebuilds the content of commit-typed entry `i` from its delta chain.
pub(super) fn rebuild<R: Read + Seek>(
    s: &mut Src<'_, R>,
    entries: &[Entry],
    by_offset: &HashMap<u64, usize>,
    by_id: &HashMap<ObjectId, usize>,
    i: usize,
    limits: &GitLimits,
    cache: &mut Rebuilt,
) -> Result<Vec<u8>, Error> {
    let max = limits.max_commit_size as u64;
    let mut chain = vec![i];
    let mut at = i;
    while !cache.bodies.contains_key(&at) {
        let next = match entries[at].kind {
            Kind::Ofs(o) => by_offset.get(&o).copied(),
            Kind::Ref(id) => by_id.get(&id).copied(),
            _ => break,
        };
        let Some(next) = next else {
            return Err(bad(entries[at].offset, "a delta base is missing"));
        };
        if chain.len() > limits.max_delta_depth {
            return Err(bad(
                entries[i].offset,
                "a delta chain is longer than the limit",
            ));
        }
        chain.push(next);
        at = next;
    }
    let mut body = match cache.bodies.get(&at) {
        Some(b) => b.clone(),
        None => {
            let root = &entries[at];
            if root.size > max {
                return Err(bad(root.offset, "a commit is larger than the limit"));
            }
            cache.spend(root.size, limits, root.offset)?;
            let mut body = Vec::new();
            s.seek(root.data)?;
            s.inflate(root.size, &mut |c| {
                body.extend_from_slice(c);
                Ok(())
            })?;
            body
        }
    };
    for &d in chain.iter().rev().skip(1) {
        let e = &entries[d];
        // A delta that yields at most `max` bytes is never much larger.
        if e.size > max.saturating_mul(2).saturating_add(64) {
            return Err(bad(e.offset, "a commit delta is larger than the limit"));
        }
        cache.spend(e.size.saturating_add(body.len() as u64), limits, e.offset)?;
        let mut delta = Vec::new();
        s.seek(e.data)?;
        s.inflate(e.size, &mut |c| {
            delta.extend_from_slice(c);
            Ok(())
        })?;
        body = apply_delta(&body, &delta, max).map_err(|r| bad(e.offset, r))?;
        cache.keep(d, &body);
    }
    Ok(body)
}

fn varint(d: &[u8], at: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let c = *d.get(*at).ok_or("a delta header ends early")?;
        *at += 1;
        if shift > 57 {
            return Err("a delta size overflows");
        }
        v |= u64::from(c & 0x7f) << shift;
        shift += 7;
        if c & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// Applies a git delta to `base`, refusing a result larger than `max`
/// bytes and every copy outside the base.
pub fn apply_delta(base: &[u8], delta: &[u8], max: u64) -> Result<Vec<u8>, &'static str> {
    let mut at = 0;
    if varint(delta, &mut at)? != base.len() as u64 {
        return Err("a delta's base size does not match its base");
    }
    let size = varint(delta, &mut at)?;
    if size > max {
        return Err("a delta result is larger than the limit");
    }
    let mut out = Vec::with_capacity(size as usize);
    while let Some(&c) = delta.get(at) {
        at += 1;
        if c & 0x80 != 0 {
            let mut off = 0u64;
            let mut len = 0u64;
            for bit in 0..4 {
                if c & (1 << bit) != 0 {
                    off |= u64::from(*delta.get(at).ok_or("a delta copy ends early")?) << (8 * bit);
                    at += 1;
                }
            }
            for bit in 0..3 {
                if c & (0x10 << bit) != 0 {
                    len |= u64::from(*delta.get(at).ok_or("a delta copy ends early")?) << (8 * bit);
                    at += 1;
                }
            }
            if len == 0 {
                len = 0x10000;
            }
            let end = off.checked_add(len).ok_or("a delta copy overflows")?;
            let src = base
                .get(off as usize..end as usize)
                .ok_or("a delta copy reaches outside its base")?;
            if out.len() as u64 + len > size {
                return Err("a delta writes past its declared size");
            }
            out.extend_from_slice(src);
        } else if c != 0 {
            let lit = delta
                .get(at..at + usize::from(c))
                .ok_or("a delta insert ends early")?;
            if out.len() as u64 + u64::from(c) > size {
                return Err("a delta writes past its declared size");
            }
            out.extend_from_slice(lit);
            at += usize::from(c);
        } else {
            return Err("a delta has the reserved opcode 0");
        }
    }
    if out.len() as u64 != size {
        return Err("a delta yields less than its declared size");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn delta_copy_and_insert() {
        // base 5, result 7: copy 0..5, insert "xy".
        let delta = [5u8, 7, 0x90, 5, 2, b'x', b'y'];
        assert_eq!(apply_delta(b"hello", &delta, 100).unwrap(), b"helloxy");
        assert!(apply_delta(b"hell", &delta, 100).is_err());
        assert!(apply_delta(b"hello", &[5, 7, 0x91, 1, 5], 100).is_err());
        assert!(apply_delta(b"hello", &[5, 1, 0], 100).is_err());
    }

    proptest! {
        #[test]
        fn delta_never_panics(base in proptest::collection::vec(any::<u8>(), 0..32),
                              delta in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = apply_delta(&base, &delta, 1 << 16);
        }
    }
}
