//! Entry points for the git fuzz targets under `fuzz/`. Each panics only
//! when a property fails.

use crate::commands::{
    ObjectFormat, ObjectId, check_refname, inflate_gzip, try_parse_receive_pack,
};
use crate::limits::GitLimits;
use crate::pack::{Ancestry, apply_delta, read_pack};
use crate::pktline::{read_all, write_pkt};
use ring::digest;

/// The pkt-line reader: never panics, and what it reads writes back to
/// bytes that read the same.
pub fn pktline(data: &[u8]) {
    let Ok(pkts) = read_all(data, 4096) else {
        return;
    };
    let mut again = Vec::new();
    for p in &pkts {
        assert!(
            write_pkt(&mut again, *p).is_ok(),
            "a packet read cannot be written"
        );
    }
    assert_eq!(read_all(&again, 4096).ok(), Some(pkts));
}

/// The command-list parser, the ref-name check and the gzip bound: never
/// panic; an accepted request's refs pass the ref-name check, its ids
/// have its format, and the same bytes with more after them parse the
/// same.
pub fn commands(data: &[u8]) {
    let limits = GitLimits::default().max_commands(64).max_shallow(64);
    let _ = check_refname(data);
    if let Ok(out) = inflate_gzip(data, 4096) {
        assert!(out.len() <= 4096);
    }
    if let Ok(Some(rp)) = try_parse_receive_pack(data, &limits) {
        for u in rp.updates() {
            assert!(check_refname(u.refname().as_bytes()).is_ok());
            assert_eq!(u.old().format(), rp.object_format());
            assert_eq!(u.new_id().format(), rp.object_format());
        }
        assert!(rp.pack_offset() <= data.len());
        let mut longer = data.to_vec();
        longer.extend_from_slice(b"PACK");
        let again = try_parse_receive_pack(&longer, &limits);
        assert_eq!(again.ok().flatten().as_ref(), Some(&rp));
    }
}

/// The pack reader and walk. The input after its first byte becomes the
/// body of a pack with a header (object count from the first byte) and a
/// valid checksum, so the fuzzer reaches the object parser. Never panics;
/// every parent of a commit found is proven its ancestor. Also drives the
/// delta applier directly.
pub fn pack_walk(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let split = rest.len().min(usize::from(first));
    let _ = apply_delta(&rest[..split], &rest[split..], 1 << 16);
    let mut pack = b"PACK\0\0\0\x02\0\0\0".to_vec();
    pack.push(first % 16);
    pack.extend_from_slice(rest);
    let sum = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, &pack);
    pack.extend_from_slice(sum.as_ref());
    let limits = GitLimits::default()
        .max_object_size(1 << 16)
        .max_commit_size(1 << 16)
        .max_walk(64);
    let len = pack.len() as u64;
    let read = read_pack(
        &mut std::io::Cursor::new(&pack),
        len,
        ObjectFormat::Sha1,
        &limits,
    );
    let (Ok(commits), Some(zero)) = (read, ObjectId::from_raw(&[0; 20])) else {
        return;
    };
    for (id, parents) in &commits.parents {
        let _ = commits.is_ancestor(&zero, id, 64);
        for p in parents {
            assert_eq!(commits.is_ancestor(p, id, 64), Ancestry::Proven);
        }
    }
}

/// The ref-file readers: never panic; an id they give has the format's
/// length and lowercase hexadecimal digits, and comes from the bytes.
pub fn ref_files(data: &[u8]) {
    for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
        if let Ok(id) = crate::loose_ref_id(data, format) {
            assert_eq!(id.len(), format.hex_len());
            assert!(data.starts_with(id.as_bytes()));
        }
        if let Ok(Some(id)) = crate::packed_ref_id(data, "refs/heads/task", format) {
            assert_eq!(id.len(), format.hex_len());
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn targets_hold_on_random_input(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            pktline(&data);
            commands(&data);
            pack_walk(&data);
        }
    }
}
