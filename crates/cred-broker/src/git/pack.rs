//! Reading a pushed pack far enough to prove a fast-forward: every object
//! is inflated with bounds and hashed, commits keep their parent ids, and
//! delta-encoded commits whose base is in the pack are rebuilt.

use super::commands::{ObjectFormat, ObjectId};
use super::limits::GitLimits;
use crate::error::{Error, ErrorKind};
use flate2::{Decompress, FlushDecompress, Status};
use ring::digest;
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{Read, Seek, SeekFrom};

const READ_CHUNK: usize = 64 * 1024;

fn bad(offset: u64, reason: &'static str) -> Error {
    ErrorKind::Pack { offset, reason }.into()
}

fn io_bad(offset: u64) -> impl Fn(std::io::Error) -> Error {
    move |_| bad(offset, "the pack cannot be read")
}

/// A buffered reader that knows its offset.
struct Src<'a, R> {
    inner: &'a mut R,
    len: u64,
    pos: u64,
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
}

impl<'a, R: Read + Seek> Src<'a, R> {
    fn new(inner: &'a mut R, len: u64) -> Self {
        Src {
            inner,
            len,
            pos: 0,
            buf: vec![0; READ_CHUNK],
            lo: 0,
            hi: 0,
        }
    }

    fn seek(&mut self, pos: u64) -> Result<(), Error> {
        self.inner.seek(SeekFrom::Start(pos)).map_err(io_bad(pos))?;
        self.pos = pos;
        self.lo = 0;
        self.hi = 0;
        Ok(())
    }

    /// Makes bytes available; returns how many (0 at the end).
    fn fill(&mut self) -> Result<usize, Error> {
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

    fn consume(&mut self, n: usize) {
        self.lo += n;
        self.pos += n as u64;
    }

    fn byte(&mut self) -> Result<u8, Error> {
        if self.fill()? == 0 {
            return Err(bad(self.pos, "the pack ends early"));
        }
        let b = self.buf[self.lo];
        self.consume(1);
        Ok(b)
    }

    fn exact(&mut self, out: &mut [u8]) -> Result<(), Error> {
        for b in out.iter_mut() {
            *b = self.byte()?;
        }
        Ok(())
    }

    /// Inflates one zlib stream that must yield exactly `size` bytes,
    /// handing them to `sink`.
    fn inflate(
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Commit,
    Tree,
    Blob,
    Tag,
    Ofs(u64),
    Ref(ObjectId),
}

#[derive(Debug, Clone)]
struct Entry {
    offset: u64,
    data: u64,
    size: u64,
    kind: Kind,
    id: Option<ObjectId>,
    /// Known for non-deltas and resolved deltas.
    base_type: Option<Kind>,
}

/// What a pushed pack says about commits: each commit found in it (also
/// those rebuilt from deltas whose base is in the pack) with its parents.
#[derive(Debug, Clone, Default)]
pub struct PackCommits {
    pub(crate) parents: HashMap<ObjectId, Vec<ObjectId>>,
    objects: u32,
    unresolved: u32,
}

/// The result of a fast-forward proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ancestry {
    /// `old` was reached from `new` through commits in the pack (or the
    /// two are equal).
    Proven,
    /// The walk ended without reaching `old`: treated as forced.
    NotProven,
    /// The walk hit [`GitLimits::max_walk`]: treated as forced.
    LimitReached,
}

impl PackCommits {
    /// The parents of commit `id`, if the pack holds it.
    pub fn parents(&self, id: &ObjectId) -> Option<&[ObjectId]> {
        self.parents.get(id).map(Vec::as_slice)
    }

    /// How many commits were found.
    pub fn commits(&self) -> usize {
        self.parents.len()
    }

    /// How many objects the pack holds.
    pub fn objects(&self) -> u32 {
        self.objects
    }

    /// Deltas whose base is not in the pack (thin-pack bases) or could not
    /// be typed: they are not used by the walk.
    pub fn unresolved(&self) -> u32 {
        self.unresolved
    }

    /// Walks parent links from `new` through the pack's commits and says
    /// whether `old` is reached within `max_walk` commits.
    pub fn is_ancestor(&self, old: &ObjectId, new: &ObjectId, max_walk: usize) -> Ancestry {
        if old == new {
            return Ancestry::Proven;
        }
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([*new]);
        while let Some(id) = queue.pop_front() {
            if !seen.insert(id) {
                continue;
            }
            if seen.len() > max_walk {
                return Ancestry::LimitReached;
            }
            let Some(parents) = self.parents.get(&id) else {
                continue;
            };
            for p in parents {
                if p == old {
                    return Ancestry::Proven;
                }
                queue.push_back(*p);
            }
        }
        Ancestry::NotProven
    }
}

struct Hasher(digest::Context);

impl Hasher {
    fn new(format: ObjectFormat) -> Hasher {
        Hasher(digest::Context::new(match format {
            ObjectFormat::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            ObjectFormat::Sha256 => &digest::SHA256,
        }))
    }

    fn object(format: ObjectFormat, type_name: &str, size: u64) -> Hasher {
        let mut h = Hasher::new(format);
        h.0.update(format!("{type_name} {size}\0").as_bytes());
        h
    }

    fn finish(self) -> Option<ObjectId> {
        ObjectId::from_raw(self.0.finish().as_ref())
    }
}

fn type_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Commit => "commit",
        Kind::Tree => "tree",
        Kind::Blob => "blob",
        _ => "tag",
    }
}

/// Reads a pack of `len` bytes from `src`: its header (`PACK`, version 2
/// or 3, object count), every object (types 1 to 4, offset and ref
/// deltas), its trailing checksum, and nothing after it.
pub fn read_pack<R: Read + Seek>(
    src: &mut R,
    len: u64,
    format: ObjectFormat,
    limits: &GitLimits,
) -> Result<PackCommits, Error> {
    let raw = format.raw_len() as u64;
    if len < 12 + raw {
        return Err(bad(0, "shorter than a pack header and checksum"));
    }
    // The checksum over everything before it.
    let mut s = Src::new(src, len);
    s.seek(0)?;
    let mut h = Hasher::new(format);
    let mut left = len - raw;
    while left > 0 {
        let n = s.fill()?.min(left as usize);
        if n == 0 {
            return Err(bad(s.pos, "the pack ends early"));
        }
        h.0.update(&s.buf[s.lo..s.lo + n]);
        s.consume(n);
        left -= n as u64;
    }
    let mut trailer = vec![0u8; raw as usize];
    s.exact(&mut trailer)?;
    if h.0.finish().as_ref() != trailer.as_slice() {
        return Err(bad(len - raw, "the pack checksum does not match"));
    }
    s.seek(0)?;
    let mut head = [0u8; 12];
    s.exact(&mut head)?;
    if &head[..4] != b"PACK" {
        return Err(bad(0, "no PACK signature"));
    }
    let version = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    if version != 2 && version != 3 {
        return Err(bad(4, "pack version is not 2 or 3"));
    }
    let count = u32::from_be_bytes([head[8], head[9], head[10], head[11]]);
    if count > limits.max_objects {
        return Err(bad(8, "more objects than the limit"));
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut by_offset: HashMap<u64, usize> = HashMap::new();
    let mut parents: HashMap<ObjectId, Vec<ObjectId>> = HashMap::new();
    for _ in 0..count {
        let offset = s.pos;
        if offset >= len - raw {
            return Err(bad(offset, "fewer objects than the header says"));
        }
        let mut c = s.byte()?;
        let type_bits = (c >> 4) & 7;
        let mut size = u64::from(c & 15);
        let mut shift = 4;
        while c & 0x80 != 0 {
            c = s.byte()?;
            if shift > 57 {
                return Err(bad(offset, "an object size overflows"));
            }
            size |= u64::from(c & 0x7f) << shift;
            shift += 7;
        }
        if size > limits.max_object_size {
            return Err(bad(offset, "an object is larger than the limit"));
        }
        let kind = match type_bits {
            1 => Kind::Commit,
            2 => Kind::Tree,
            3 => Kind::Blob,
            4 => Kind::Tag,
            6 => {
                let mut c = s.byte()?;
                let mut back = u64::from(c & 0x7f);
                while c & 0x80 != 0 {
                    c = s.byte()?;
                    back = back
                        .checked_add(1)
                        .and_then(|b| b.checked_mul(128))
                        .map(|b| b | u64::from(c & 0x7f))
                        .filter(|&b| b < offset)
                        .ok_or_else(|| bad(offset, "a delta base offset overflows"))?;
                }
                if back == 0 || back > offset {
                    return Err(bad(offset, "a delta base offset points outside the pack"));
                }
                let base = offset - back;
                if !by_offset.contains_key(&base) {
                    return Err(bad(offset, "a delta base offset is not an object"));
                }
                Kind::Ofs(base)
            }
            7 => {
                let mut id = [0u8; 32];
                let id = &mut id[..raw as usize];
                s.exact(id)?;
                Kind::Ref(ObjectId::from_raw(id).ok_or_else(|| bad(offset, "bad id"))?)
            }
            _ => return Err(bad(offset, "an unknown object type")),
        };
        let data = s.pos;
        let mut entry = Entry {
            offset,
            data,
            size,
            kind,
            id: None,
            base_type: None,
        };
        match kind {
            Kind::Ofs(_) | Kind::Ref(_) => {
                s.inflate(size, &mut |_| Ok(()))?;
            }
            _ => {
                let mut hasher = Hasher::object(format, type_name(kind), size);
                let mut body = Vec::new();
                let keep = kind == Kind::Commit;
                if keep && size > limits.max_commit_size as u64 {
                    return Err(bad(offset, "a commit is larger than the limit"));
                }
                s.inflate(size, &mut |chunk| {
                    hasher.0.update(chunk);
                    if keep {
                        body.extend_from_slice(chunk);
                    }
                    Ok(())
                })?;
                let id = hasher.finish().ok_or_else(|| bad(offset, "bad hash"))?;
                if keep {
                    parents.insert(id, commit_parents(&body, format, offset)?);
                }
                entry.id = Some(id);
                entry.base_type = Some(kind);
            }
        }
        by_offset.insert(offset, entries.len());
        entries.push(entry);
    }
    if s.pos != len - raw {
        return Err(bad(s.pos, "bytes between the last object and the checksum"));
    }
    // Rebuild delta-encoded commits, pass by pass (ref deltas may name a
    // base that is itself a delta further on).
    let mut by_id: HashMap<ObjectId, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| e.id.map(|id| (id, i)))
        .collect();
    let mut cache = Rebuilt::default();
    for _ in 0..=limits.max_delta_depth {
        let mut progress = false;
        for i in 0..entries.len() {
            if entries[i].base_type.is_some() {
                continue;
            }
            let base = match entries[i].kind {
                Kind::Ofs(o) => by_offset.get(&o).copied(),
                Kind::Ref(id) => by_id.get(&id).copied(),
                _ => None,
            };
            let Some(base) = base else { continue };
            let Some(bt) = entries[base].base_type else {
                continue;
            };
            progress = true;
            entries[i].base_type = Some(bt);
            if bt != Kind::Commit {
                continue;
            }
            let body = rebuild(&mut s, &entries, &by_offset, &by_id, i, limits, &mut cache)?;
            let mut hasher = Hasher::object(format, "commit", body.len() as u64);
            hasher.0.update(&body);
            let id = hasher
                .finish()
                .ok_or_else(|| bad(entries[i].offset, "bad hash"))?;
            parents.insert(id, commit_parents(&body, format, entries[i].offset)?);
            entries[i].id = Some(id);
            by_id.entry(id).or_insert(i);
        }
        if !progress {
            break;
        }
    }
    let unresolved = entries.iter().filter(|e| e.base_type.is_none()).count() as u32;
    Ok(PackCommits {
        parents,
        objects: count,
        unresolved,
    })
}

/// Commit bodies rebuilt recently (delta chains usually run in pack
/// order, so each delta's base was just rebuilt), and the work done.
#[derive(Default)]
struct Rebuilt {
    bodies: HashMap<usize, Vec<u8>>,
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
fn rebuild<R: Read + Seek>(
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

/// The `parent` ids of a commit object's header, read as git reads them:
/// the header starts with `tree <id>`, and the parents are the `parent <id>`
/// lines that follow it directly. A `parent` line anywhere later in the
/// header is something git ignores while walking history but a careless
/// reader would not, so such a commit is refused rather than read either
/// way; so is a commit that does not start with a tree line.
fn commit_parents(body: &[u8], format: ObjectFormat, offset: u64) -> Result<Vec<ObjectId>, Error> {
    let mut lines = body.split(|&b| b == b'\n');
    match lines.next() {
        Some(first) if first.starts_with(b"tree ") => {}
        _ => return Err(bad(offset, "a commit does not start with its tree")),
    }
    let mut out = Vec::new();
    let mut in_parents = true;
    for line in lines {
        if line.is_empty() {
            break;
        }
        match line.strip_prefix(b"parent ") {
            Some(hex) if in_parents => {
                let id = ObjectId::from_hex(hex, format)
                    .ok_or_else(|| bad(offset, "a commit has a malformed parent line"))?;
                out.push(id);
            }
            Some(_) => {
                return Err(bad(
                    offset,
                    "a commit has a parent line after its other headers, which git does not read as a parent",
                ));
            }
            None => in_parents = false,
        }
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
    fn parents_are_the_lines_right_after_the_tree() {
        let f = ObjectFormat::Sha1;
        let a = "1".repeat(40);
        let b = "2".repeat(40);
        let t = "3".repeat(40);
        let ok =
            format!("tree {t}\nparent {a}\nparent {b}\nauthor x\ncommitter x\n\nmsg\nparent {a}\n");
        assert_eq!(commit_parents(ok.as_bytes(), f, 0).unwrap().len(), 2);
        // A parent line after the committer: git sees a root commit.
        let late = format!("tree {t}\nauthor x\ncommitter x\nparent {a}\n\nmsg\n");
        assert!(commit_parents(late.as_bytes(), f, 0).is_err());
        let no_tree = format!("parent {a}\ntree {t}\n\nmsg\n");
        assert!(commit_parents(no_tree.as_bytes(), f, 0).is_err());
        let root = format!("tree {t}\nauthor x\n\nmsg\n");
        assert!(commit_parents(root.as_bytes(), f, 0).unwrap().is_empty());
    }

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

        #[test]
        fn pack_never_panics(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut c = std::io::Cursor::new(&data);
            let _ = read_pack(&mut c, data.len() as u64, ObjectFormat::Sha1, &GitLimits::default());
        }
    }
}
