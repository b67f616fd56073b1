//! Reading a pushed pack far enough to prove a fast-forward: every object
//! is inflated with bounds and hashed, commits keep their parent ids, and
//! delta-encoded commits whose base is in the pack are rebuilt.

mod commits;
mod delta;
mod source;

pub use commits::{Ancestry, PackCommits};
pub use delta::apply_delta;

use crate::commands::{ObjectFormat, ObjectId};
use crate::error::{Error, ErrorKind};
use crate::limits::GitLimits;
use commits::commit_parents;
use delta::{Rebuilt, rebuild};
use ring::digest;
use source::Src;
use std::collections::HashMap;
use std::io::{Read, Seek};

fn bad(offset: u64, reason: &'static str) -> Error {
    ErrorKind::Pack { offset, reason }.into()
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

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "test and bench code: a failed unwrap is a failed run"
    )]
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn pack_never_panics(data in proptest::collection::vec(any::<u8>(), 0..128)) {
            let mut c = std::io::Cursor::new(&data);
            let _ = read_pack(&mut c, data.len() as u64, ObjectFormat::Sha1, &GitLimits::default());
        }
    }
}
