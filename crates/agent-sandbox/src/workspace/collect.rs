//! Collecting: a session's branch enters the registered checkout as
//! `refs/sessions/<session>/<branch>`, through the push rule, as a push
//! would (R-WORKSPACE-2).
//!
//! 1. The branch's commit is read from the layer without git
//!    ([`super::branch_tip`]).
//! 2. The layer's objects (loose objects and packs, regular files only,
//!    within bounds) are copied into a private bare repository of ours
//!    that borrows the checkout's store; nothing else of the layer is
//!    read, so its config, hooks and attributes never reach a host git.
//! 3. That repository packs what the checkout lacks (the branch's commit,
//!    everything the checkout's refs already reach left out).
//! 4. The command and the pack make a `git-receive-pack` request body,
//!    which the push rule judges ([`push_rule::PushRule`], refs
//!    `refs/sessions/{session}/**`: a create, or a fast-forward proven by
//!    walking the pack; its object and size limits).
//! 5. An allowed push is handed to `git receive-pack --stateless-rpc` of
//!    the checkout, which checks every object (`receive.fsckObjects`) and
//!    its connectivity, adds the objects and moves that one ref, with the
//!    old value checked. No hook runs and no `gc` follows.

use super::branch_tip::{TipError, branch_tip};
use super::checkout::{Checkout, ObjectFormat};
use super::host_git::{HostGit, arg, failed};
use super::layer_files::{LayerRead, MAX_DIR_ENTRIES, list, open_base, open_dir, open_file};
use super::{CollectOutcome, Collected};
use crate::{Error, ErrorKind};
use push_rule::{BodyEncoding, GitLimits, Pkt, PushBody, PushRule, PushRuleSpec, Verdict};
use rustix::fs::FileType;
use std::io::Write;
use std::path::Path;

/// The ref namespace a collection writes, `{session}` replaced.
pub(crate) const SESSION_REFS: &str = "refs/sessions/{session}/**";

/// What one collection is given.
pub(crate) struct CollectJob<'a> {
    pub(crate) checkout: &'a Checkout,
    /// The layer's git directory (its path on the host: the copy's
    /// `.git`, or the overlay's upper `.git`).
    pub(crate) layer_git: &'a Path,
    /// A private directory of ours for the work (emptied first).
    pub(crate) scratch: &'a Path,
    pub(crate) session_id: &'a str,
    pub(crate) branch: &'a str,
    /// The commit the workspace started from.
    pub(crate) base: &'a str,
}

/// Collects the session's branch.
pub(crate) fn collect(job: &CollectJob<'_>) -> Result<CollectOutcome, Error> {
    let reference = format!("refs/sessions/{}/{}", job.session_id, job.branch);
    let format = job.checkout.format;
    let refused = |reason: String| -> Error {
        ErrorKind::CollectRefused {
            reference: reference.clone(),
            reason,
        }
        .into()
    };
    let git_fd = open_base(job.layer_git)
        .map_err(|e| refused(format!("the workspace's git directory: {e}")))?;
    let tip =
        branch_tip(&git_fd, job.branch, format).map_err(|e: TipError| refused(e.to_string()))?;
    let old = job.checkout.resolve(&reference)?;
    if old.as_deref() == Some(tip.as_str()) || (old.is_none() && tip == job.base) {
        return Ok(CollectOutcome::NothingNew { reference });
    }

    // A private bare repository borrowing the checkout's store.
    let _ = std::fs::remove_dir_all(job.scratch);
    std::fs::create_dir_all(job.scratch)
        .map_err(|e| Error::io(format!("creating {}", job.scratch.display()), e))?;
    let bare = job.scratch.join("collect.git");
    let init = HostGit::new(&bare, &bare);
    let object_format = format!("--object-format={}", format.as_str());
    init.ok(&[
        arg("init"),
        arg("--bare"),
        arg("-q"),
        arg("--template="),
        arg(&object_format),
        bare.as_os_str(),
    ])?;
    let objects = bare.join("objects");
    let alternates = objects.join("info/alternates");
    std::fs::create_dir_all(objects.join("info"))
        .and_then(|()| {
            std::fs::write(
                &alternates,
                format!("{}\n", job.checkout.objects().display()),
            )
        })
        .map_err(|e| Error::io(format!("writing {}", alternates.display()), e))?;
    let copied = copy_objects(&git_fd, &objects, format)
        .map_err(|e| refused(format!("the workspace's objects: {e}")))?;

    // What the checkout lacks, as one pack (no deltas against objects it
    // does not hold, so the push rule can read every commit).
    let mut revs = format!("{tip}\n");
    for have in job.checkout.all_tips()? {
        revs.push_str(&format!("^{have}\n"));
    }
    let pack_path = job.scratch.join("collect.pack");
    let bare_git = HostGit::new(&bare, &bare);
    let args = [
        arg("pack-objects"),
        arg("--revs"),
        arg("--stdout"),
        arg("-q"),
    ];
    let out = bare_git.run(&[], &args, Some(revs.as_bytes()), Some(&pack_path))?;
    if !out.status.success() {
        return Err(refused(format!(
            "the branch's commit or an object it needs is missing or damaged: {}",
            failed(&args, &out)
        )));
    }
    let limits = GitLimits::default();
    let pack_len = std::fs::metadata(&pack_path)
        .map_err(|e| Error::io(format!("reading {}", pack_path.display()), e))?
        .len();
    if pack_len > limits.inflated_body_limit() {
        return Err(refused(format!(
            "the session's new objects take {pack_len} bytes packed, past the push rule's {}",
            limits.inflated_body_limit()
        )));
    }
    let pack = std::fs::read(&pack_path)
        .map_err(|e| Error::io(format!("reading {}", pack_path.display()), e))?;

    // The request a push would send, judged by the push rule.
    let zero = "0".repeat(format.hex_len());
    let old_id = old.clone().unwrap_or(zero);
    let mut caps = String::from("report-status");
    if format == ObjectFormat::Sha256 {
        caps.push_str(" object-format=sha256");
    }
    let command = format!("{old_id} {tip} {reference}\0{caps}");
    let mut body = Vec::with_capacity(pack.len() + command.len() + 16);
    push_rule::write_pkt(&mut body, Pkt::Data(command.as_bytes()))
        .and_then(|()| push_rule::write_pkt(&mut body, Pkt::Flush))
        .map_err(|e| refused(e.to_string()))?;
    body.extend_from_slice(&pack);
    drop(pack);
    let rule = PushRule::compile(&PushRuleSpec::new([SESSION_REFS]), job.session_id)
        .map_err(|e| refused(format!("the push rule: {e}")))?;
    let mut push = PushBody::new(BodyEncoding::Identity, &limits);
    push.feed(&body).map_err(|e| refused(e.to_string()))?;
    let mut push = push.finish().map_err(|e| refused(e.to_string()))?;
    let decision = rule.check_spooled(&push.request, &mut push.pack, &limits);
    if decision.verdict() != Verdict::Allow {
        let why: Vec<String> = decision
            .refs()
            .iter()
            .filter_map(|r| r.refusal().map(|f| format!("{} {f}", r.refname())))
            .collect();
        return Err(refused(format!("the push rule: {}", why.join("; "))));
    }

    // The checkout's own receive-pack takes it.
    let receive = job.checkout.git();
    let checkout_git = job.checkout.git_dir.as_os_str();
    let out = receive.run(
        &[
            "receive.fsckObjects=true",
            "receive.autogc=false",
            "receive.denyDeletes=true",
            "receive.denyNonFastForwards=true",
            "gc.auto=0",
        ],
        &[arg("receive-pack"), arg("--stateless-rpc"), checkout_git],
        Some(&body),
        None,
    )?;
    let _ = std::fs::remove_dir_all(job.scratch);
    report(&out.stdout, &reference).map_err(refused)?;
    if !out.status.success() {
        return Err(refused(format!(
            "receive-pack ended with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(CollectOutcome::Updated(Collected {
        reference,
        old,
        new: tip,
        objects_copied: copied,
    }))
}

/// Reads receive-pack's report: `unpack ok` and `ok REF`, or the reason.
fn report(bytes: &[u8], reference: &str) -> Result<(), String> {
    let mut at = 0;
    let mut unpacked = false;
    let mut updated = false;
    for _ in 0..1000 {
        match push_rule::read_pkt(bytes, at) {
            Ok(push_rule::PktRead::Packet(pkt, next)) => {
                at = next;
                let Pkt::Data(line) = pkt else { break };
                let line = String::from_utf8_lossy(line);
                let line = line.trim_end_matches('\n');
                if line == "unpack ok" {
                    unpacked = true;
                } else if let Some(reason) = line.strip_prefix("unpack ") {
                    return Err(format!("the checkout could not take the objects: {reason}"));
                } else if line == format!("ok {reference}") {
                    updated = true;
                } else if let Some(rest) = line.strip_prefix("ng ") {
                    let reason = rest.strip_prefix(reference).unwrap_or(rest).trim();
                    return Err(format!("the checkout refused the update: {reason}"));
                }
            }
            Ok(push_rule::PktRead::Incomplete) | Err(_) => break,
        }
    }
    if unpacked && updated {
        Ok(())
    } else {
        Err("the checkout's receive-pack gave no report".to_owned())
    }
}

/// Copies the loose objects and packs of the layer's `objects/` into
/// `to` (a fresh store of ours); returns how many files were copied.
fn copy_objects(
    git_fd: impl std::os::fd::AsFd,
    to: &Path,
    format: ObjectFormat,
) -> Result<u64, LayerRead> {
    let limits = GitLimits::default();
    let mut budget = limits.inflated_body_limit().saturating_mul(2);
    let mut files = 0u64;
    let objects = match open_dir(&git_fd, "objects") {
        Ok(fd) => fd,
        Err(LayerRead::Missing) => return Ok(0),
        Err(e) => return Err(e),
    };
    let fan_len = 2;
    let rest_len = format.hex_len() - fan_len;
    let is_hex = |s: &str| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let dirs = list(&objects, |t| {
        t == FileType::Directory || t == FileType::Unknown
    })?;
    for dir in dirs {
        let is_fan = dir.len() == fan_len && is_hex(&dir);
        if !(is_fan || dir == "pack") {
            continue;
        }
        let fd = match open_dir(&objects, &dir) {
            Ok(fd) => fd,
            Err(LayerRead::NotPlain | LayerRead::Missing) => continue,
            Err(e) => return Err(e),
        };
        let names = list(&fd, |t| {
            t == FileType::RegularFile || t == FileType::Unknown
        })?;
        for name in names {
            let wanted = if is_fan {
                name.len() == rest_len && is_hex(&name)
            } else {
                is_pack_file(&name)
            };
            if !wanted {
                continue;
            }
            let (mut file, size) = match open_file(&fd, &name) {
                Ok(f) => f,
                Err(LayerRead::NotPlain | LayerRead::Missing) => continue,
                Err(e) => return Err(e),
            };
            if size > budget || files >= MAX_DIR_ENTRIES as u64 * 10 {
                return Err(LayerRead::TooLarge);
            }
            budget -= size;
            let dest_dir = to.join(&dir);
            std::fs::create_dir_all(&dest_dir).map_err(LayerRead::Io)?;
            let mut dest = std::fs::File::create(dest_dir.join(&name)).map_err(LayerRead::Io)?;
            let n = std::io::copy(&mut std::io::Read::take(&mut file, size), &mut dest)
                .map_err(LayerRead::Io)?;
            dest.flush().map_err(LayerRead::Io)?;
            if n != size {
                return Err(LayerRead::Io(std::io::Error::other(
                    "a file changed while it was read",
                )));
            }
            files += 1;
        }
    }
    Ok(files)
}

/// `pack-<hex>.pack` or `pack-<hex>.idx`.
fn is_pack_file(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("pack-") else {
        return false;
    };
    let hex = rest
        .strip_suffix(".pack")
        .or_else(|| rest.strip_suffix(".idx"));
    hex.is_some_and(|h| {
        (h.len() == 40 || h.len() == 64)
            && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_pack_and_index_files_are_taken_from_pack() {
        let h = "0".repeat(40);
        assert!(is_pack_file(&format!("pack-{h}.pack")));
        assert!(is_pack_file(&format!("pack-{h}.idx")));
        for bad in [
            format!("pack-{h}.keep"),
            format!("pack-{h}.rev"),
            "pack-zz.pack".to_owned(),
            format!("pack-{h}.pack.lock"),
            "../pack".to_owned(),
        ] {
            assert!(!is_pack_file(&bad), "{bad}");
        }
    }

    #[test]
    fn a_report_must_say_unpack_ok_and_ok_for_the_ref() {
        let mut ok = Vec::new();
        for l in ["unpack ok\n", "ok refs/sessions/s/b\n"] {
            push_rule::write_pkt(&mut ok, Pkt::Data(l.as_bytes())).unwrap();
        }
        push_rule::write_pkt(&mut ok, Pkt::Flush).unwrap();
        assert!(report(&ok, "refs/sessions/s/b").is_ok());
        assert!(report(&ok, "refs/sessions/s/other").is_err());
        let mut ng = Vec::new();
        for l in ["unpack ok\n", "ng refs/sessions/s/b non-fast-forward\n"] {
            push_rule::write_pkt(&mut ng, Pkt::Data(l.as_bytes())).unwrap();
        }
        let e = report(&ng, "refs/sessions/s/b").unwrap_err();
        assert!(e.contains("non-fast-forward"), "{e}");
        assert!(report(b"", "r").is_err());
        assert!(report(b"zzzz", "r").is_err());
    }
}
