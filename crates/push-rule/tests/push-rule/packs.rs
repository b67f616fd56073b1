//! Push rules judged on packs and push bodies made by real `git`: fast
//! forwards proven, rewrites refused, delta-encoded commits rebuilt,
//! corrupt packs refused, and what `git push` shows of a refusal.

use crate::support::{RULE, Repo, git_available, judge, push_body, rule};
use push_rule::{
    Ancestry, BodyEncoding, GitLimits, ObjectFormat, PackSpool, PushBody, PushDecision, PushRule,
    Refusal, Verdict, parse_receive_pack, read_pack, report_status,
};
use std::path::Path;

#[test]
fn fast_forward_force_and_create_on_real_packs() {
    if !git_available() {
        return;
    }
    for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
        let repo = Repo::new(format);
        let c1 = repo.commit("a", "one\n", "one");
        let c2 = repo.commit("a", "two\n", "two");
        let c3 = repo.commit("b", "three\n", "three");
        let caps = match format {
            ObjectFormat::Sha256 => "report-status object-format=sha256",
            _ => "report-status",
        };
        let limits = GitLimits::default();
        let r = rule(RULE);
        let branch = "refs/heads/agent/s1/work";

        // Fast-forward c1 -> c3: the pack proves it.
        let pack = repo.pack(&c3, Some(&c1), &[]);
        let commits = read_pack(
            &mut std::io::Cursor::new(&pack),
            pack.len() as u64,
            format,
            &limits,
        )
        .unwrap();
        assert_eq!(commits.commits(), 2);
        assert_eq!(
            commits.is_ancestor(&repo.id(&c1), &repo.id(&c3), 100),
            Ancestry::Proven
        );
        let d = judge(
            &r,
            &push_body(format, &[(&c1, &c3, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Allow, "{format:?} {d:?}");

        // A rewrite: d1 on c1, pushed over c3.
        repo.git(&["checkout", "-q", "-b", "other", &c1]);
        let d1 = repo.commit("c", "rewrite\n", "rewrite");
        let pack = repo.pack(&d1, Some(&c3), &[]);
        let d = judge(
            &r,
            &push_body(format, &[(&c3, &d1, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Deny);
        assert_eq!(d.refs()[0].refusal(), Some(&Refusal::NotFastForward));

        // The same rewrite is allowed when the rule allows forcing.
        let forcing = rule(&format!("{RULE}\nforce = \"allow\""));
        let d = judge(
            &forcing,
            &push_body(format, &[(&c3, &d1, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Allow);

        // Creating a ref needs no walk (an empty pack is fine).
        let pack = repo.pack(&c2, Some(&c2), &[]);
        let d = judge(
            &r,
            &push_body(format, &[("", &c2, "refs/heads/agent/s1/new")], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.verdict(), Verdict::Allow);

        // An update to a commit the server has (empty pack) is not proven.
        let d = judge(
            &r,
            &push_body(format, &[(&c3, &c2, branch)], caps),
            &pack,
            &limits,
        );
        assert_eq!(d.refs()[0].refusal(), Some(&Refusal::NotFastForward));
    }
}

#[test]
fn delta_compressed_commits_are_rebuilt() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let long: String = (0..200)
        .map(|i| format!("line {i} of a long shared message\n"))
        .collect();
    let base = repo.commit("f", "0\n", &format!("start\n\n{long}"));
    let mut last = base.clone();
    for i in 1..=30 {
        last = repo.commit("f", &format!("{i}\n"), &format!("change {i}\n\n{long}"));
    }
    let limits = GitLimits::default();
    // REF_DELTA (git's default without --delta-base-offset) and OFS_DELTA,
    // also spooled to disk.
    for extra in [
        &["--window=50"][..],
        &["--window=50", "--delta-base-offset"],
    ] {
        let pack = repo.pack(&last, Some(&base), extra);
        assert!(
            repo.delta_commits(&pack) > 0,
            "{extra:?}: git made no commit deltas"
        );
        let commits = read_pack(
            &mut std::io::Cursor::new(&pack),
            pack.len() as u64,
            ObjectFormat::Sha1,
            &limits,
        )
        .unwrap();
        assert_eq!(commits.commits(), 30, "{extra:?}");
        assert_eq!(
            commits.is_ancestor(&repo.id(&base), &repo.id(&last), 1000),
            Ancestry::Proven
        );
        assert_eq!(
            commits.is_ancestor(&repo.id(&base), &repo.id(&last), 5),
            Ancestry::LimitReached
        );
        let small = GitLimits::default().spool_memory(512);
        let body = push_body(
            ObjectFormat::Sha1,
            &[(&base, &last, "refs/heads/agent/s1/w")],
            "report-status",
        );
        let d = judge(&rule(RULE), &body, &pack, &small);
        assert_eq!(d.verdict(), Verdict::Allow, "{extra:?}");
    }
}

#[test]
fn corrupt_packs_are_refused_and_count_as_forced() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let c1 = repo.commit("a", "1\n", "one");
    let c2 = repo.commit("a", "2\n", "two");
    let pack = repo.pack(&c2, Some(&c1), &[]);
    let limits = GitLimits::default();
    let read = |p: &[u8]| {
        read_pack(
            &mut std::io::Cursor::new(p),
            p.len() as u64,
            ObjectFormat::Sha1,
            &limits,
        )
    };
    assert!(read(&pack).is_ok());
    let mut flipped = pack.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(read(&flipped).is_err(), "checksum");
    assert!(read(&pack[..pack.len() - 1]).is_err(), "truncated");
    let mut longer = pack.clone();
    longer.push(0);
    assert!(read(&longer).is_err(), "trailing byte");
    let body = push_body(
        ObjectFormat::Sha1,
        &[(&c1, &c2, "refs/heads/agent/s1/w")],
        "report-status",
    );
    let d = judge(&rule(RULE), &body, &flipped, &limits);
    assert!(
        matches!(d.refs()[0].refusal(), Some(Refusal::UnreadablePack(_))),
        "{d:?}"
    );
    // A pack past the spool's cap is refused while spooling.
    let mut spool = PackSpool::new(&GitLimits::default().max_pack(10));
    assert!(spool.write(&pack).is_err());
}

/// Runs a real `git push` into a local bare repository, recording the
/// bytes the client sends to `receive-pack` (the same bytes a smart-HTTP
/// push carries as its request body).
fn captured_push(repo: &Repo, bare: &Path, args: &[&str], name: &str) -> Vec<u8> {
    let capture = repo.dir.path().join(name);
    let receive = format!("tee {} | git receive-pack", capture.display());
    let mut all = vec!["push", "-q", "--receive-pack", &receive];
    let bare = bare.display().to_string();
    all.push(&bare);
    all.extend_from_slice(args);
    repo.git(&all);
    std::fs::read(&capture).unwrap()
}

fn judge_body(rule: &PushRule, body: &[u8]) -> PushDecision {
    let limits = GitLimits::default();
    let mut pb = PushBody::new(BodyEncoding::Identity, &limits);
    for c in body.chunks(777) {
        pb.feed(c).unwrap();
    }
    let mut done = pb.finish().unwrap();
    rule.check_spooled(&done.request, &mut done.pack, &limits)
}

#[test]
fn real_git_push_bodies() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let bare = tempfile::tempdir().unwrap();
    repo.cmd(&["init", "-q", "--bare", "-b", "main"])
        .current_dir(bare.path())
        .output()
        .unwrap();
    let r = rule(r#"refs = ["refs/heads/**"]"#);
    let long: String = (0..100).map(|i| format!("shared line {i}\n")).collect();
    repo.commit("f", "0\n", &format!("c0\n\n{long}"));
    let first = captured_push(&repo, bare.path(), &["main"], "create.bin");
    let d = judge_body(&r, &first);
    assert_eq!(d.verdict(), Verdict::Allow, "{d:?}");
    // A fast-forward of similar commits (git sends a thin pack).
    for i in 1..=5 {
        repo.commit("f", &format!("{i}\n"), &format!("c{i}\n\n{long}"));
    }
    let ff = captured_push(&repo, bare.path(), &["main"], "ff.bin");
    let rp = parse_receive_pack(&ff, &GitLimits::default()).unwrap();
    assert!(rp.has_capability("report-status") || rp.has_capability("report-status-v2"));
    let d = judge_body(&r, &ff);
    assert_eq!(d.verdict(), Verdict::Allow, "{d:?}");
    // A forced rewrite.
    repo.git(&["reset", "-q", "--hard", "HEAD~2"]);
    repo.commit("g", "x\n", "rewrite");
    let forced = captured_push(&repo, bare.path(), &["--force", "main"], "force.bin");
    let d = judge_body(&r, &forced);
    assert_eq!(
        d.refs()[0].refusal(),
        Some(&Refusal::NotFastForward),
        "{d:?}"
    );
    // A delete carries no pack.
    captured_push(&repo, bare.path(), &["main:refs/heads/other"], "other.bin");
    let del = captured_push(&repo, bare.path(), &[":other"], "delete.bin");
    let d = judge_body(&r, &del);
    assert_eq!(d.refs()[0].refusal(), Some(&Refusal::Delete), "{d:?}");
}

#[test]
fn git_push_shows_the_refusal() {
    if !git_available() {
        return;
    }
    let repo = Repo::new(ObjectFormat::Sha1);
    let bare = tempfile::tempdir().unwrap();
    repo.cmd(&["init", "-q", "--bare", "-b", "main"])
        .current_dir(bare.path())
        .output()
        .unwrap();
    repo.commit("f", "0\n", "c0");
    captured_push(&repo, bare.path(), &["main"], "create.bin");
    repo.commit("f", "1\n", "c1");
    // What the broker answers when the push rule refuses `main`.
    let adv = repo
        .cmd(&[
            "receive-pack",
            "--advertise-refs",
            &bare.path().display().to_string(),
        ])
        .output()
        .unwrap()
        .stdout;
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    let limits = GitLimits::default();
    let body = push_body(
        ObjectFormat::Sha1,
        &[(&a, &b, "refs/heads/main")],
        "report-status side-band-64k",
    );
    let rp = parse_receive_pack(&body, &limits).unwrap();
    let d = rule(RULE).check(&rp, None, &limits);
    let report = report_status(&d, &rp).unwrap();
    let dir = repo.dir.path();
    std::fs::write(dir.join("adv.bin"), adv).unwrap();
    std::fs::write(dir.join("report.bin"), report).unwrap();
    let fake = format!(
        "cat {0}/adv.bin; cat > /dev/null; cat {0}/report.bin; true",
        dir.display()
    );
    let out = repo
        .cmd(&[
            "push",
            "--receive-pack",
            &fake,
            &bare.path().display().to_string(),
            "main",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("[remote rejected] main -> main (ref not allowed by the push rule)"),
        "{stderr}"
    );
}
