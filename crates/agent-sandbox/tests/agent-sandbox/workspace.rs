//! Workspaces (R-WORKSPACE): a session works in its own copy-on-write view
//! of a registered checkout, and its work returns only by collecting.
//!
//! Each backend runs the same attack script from inside a workspace
//! session: git commands and plain writes aimed at the checkout's refs,
//! packed-refs, index, worktrees, `info/`, object store, config and hooks,
//! and at another task's worktree. The host then checks, by reading the
//! files (never by running a git that could refresh the index), that the
//! checkout is as it was but for the objects and the one
//! `refs/sessions/...` ref the collection added. Then eight sessions on one
//! checkout in parallel, forks, and refusals.

use agent_sandbox::{
    CollectOutcome, ErrorKind, FilenameRules, ManagerBuilder, SandboxManager, WorkspaceLayering,
    WorkspaceRequest,
};
use sandbox_core::{BackendRequest, NativeMechanism, SandboxBackend, SandboxSpec, Surface};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::native::run;

/// A scratch tree: a registered checkout (`main`, with a tag, a packed
/// ref, a second task's linked worktree `t2` and an uncommitted change),
/// a home and a temp dir.
pub(super) struct Fixture {
    root: PathBuf,
}

impl Fixture {
    pub(super) fn new(tag: &str) -> Fixture {
        let root = std::env::temp_dir().join(format!("facade-ws-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["main", "home", "tmp"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let f = Fixture { root };
        let main = f.main();
        git(&main, &["init", "-q"]);
        std::fs::write(main.join("README"), "hello\n").unwrap();
        std::fs::write(main.join("lib.txt"), "one\n").unwrap();
        git(&main, &["add", "README", "lib.txt"]);
        git(&main, &["commit", "-qm", "first"]);
        git(&main, &["tag", "v1"]);
        git(&main, &["branch", "old"]);
        git(&main, &["pack-refs", "--all"]);
        let t2 = f.root.join("t2");
        git(
            &main,
            &["worktree", "add", "-q", "-b", "t2", t2.to_str().unwrap()],
        );
        std::fs::write(main.join("lib.txt"), "one\nuncommitted\n").unwrap();
        // Untracked files the host hides from reading (see `builder`).
        std::fs::create_dir_all(main.join("notes")).unwrap();
        std::fs::write(main.join("notes/secret.txt"), "TOPSECRET\n").unwrap();
        std::fs::create_dir_all(main.join("deep/er")).unwrap();
        std::fs::write(main.join("deep/er/id.pem"), "TOPSECRET\n").unwrap();
        f
    }

    pub(super) fn main(&self) -> PathBuf {
        self.root.join("main")
    }

    fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    pub(super) fn builder(&self) -> ManagerBuilder {
        let mut b = crate::builder();
        b.home(self.p("home"))
            .temp_dir(self.p("tmp"))
            .name_guard_launcher(crate::launcher())
            .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
        b
    }

    /// [`Fixture::builder`] with the host hiding `notes/` and every
    /// `*.pem` of the checkout from reading.
    pub(super) fn builder_with_read_denies(&self) -> ManagerBuilder {
        let mut b = self.builder();
        b.read_deny(format!("{}/notes", self.main().display()))
            .read_deny(format!("{}/**/*.pem", self.main().display()));
        b
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=host",
            "-c",
            "user.email=host@example.invalid",
        ])
        .args(["-c", "init.defaultBranch=main"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Every file below `dir` with its contents (objects by name only, as
/// their contents are their names), relative paths.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(base, &p, out);
            } else if rel.starts_with("objects/") && !rel.starts_with("objects/info") {
                out.insert(rel, Vec::new());
            } else {
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What a collection may add to a git directory: objects, and the
/// session refs (with their directories).
fn added_by_collecting(path: &str) -> bool {
    path.starts_with("objects/")
        || path.starts_with("refs/sessions/")
        || path == "refs/sessions/"
        || path.starts_with("logs/refs/sessions")
}

/// The checkout's git directory, its working tree and the other task's
/// worktree, before the session.
struct Before {
    git: BTreeMap<String, Vec<u8>>,
    tree: BTreeMap<String, Vec<u8>>,
    t2: BTreeMap<String, Vec<u8>>,
}

impl Before {
    fn take(f: &Fixture) -> Before {
        let main = f.main();
        let mut tree = files(&main);
        tree.retain(|k, _| !k.starts_with(".git"));
        Before {
            git: files(&main.join(".git")),
            tree,
            t2: files(&f.root.join("t2")),
        }
    }

    /// The checkout is as it was, but for what collecting added.
    fn check(&self, f: &Fixture) {
        let now = Before::take(f);
        assert_eq!(now.tree, self.tree, "the checkout's working tree changed");
        assert_eq!(now.t2, self.t2, "the other task's worktree changed");
        for (path, contents) in &self.git {
            assert_eq!(
                now.git.get(path),
                Some(contents),
                "{path} of the checkout's git directory changed or went"
            );
        }
        for path in now.git.keys() {
            assert!(
                self.git.contains_key(path) || added_by_collecting(path),
                "{path} appeared in the checkout's git directory"
            );
        }
    }
}

/// The attacks, each echoing a word when it got through (none may), and
/// the session's own work, which must succeed.
fn attack_script(f: &Fixture) -> String {
    let o = f.main().join(".git").display().to_string();
    let main = f.main().display().to_string();
    let t2 = f.p("t2");
    format!(
        r#"export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid
grep -q uncommitted lib.txt && echo SEES-UNCOMMITTED
test "$(git rev-parse --abbrev-ref HEAD)" = task && echo ON-TASK
git status --short >/dev/null && echo STATUS
git log --format=%s v1 | grep -q first && echo HISTORY
echo work > work.txt && git add work.txt lib.txt && git commit -qm work && echo COMMIT
cat notes/secret.txt 2>/dev/null | grep -q TOPSECRET && echo ATTACK-read-denied-dir
cat deep/er/id.pem 2>/dev/null | grep -q TOPSECRET && echo ATTACK-read-denied-glob
cat {main}/notes/secret.txt 2>/dev/null | grep -q TOPSECRET && echo ATTACK-read-denied-checkout
git update-ref refs/heads/main HEAD && git tag -f v1 HEAD >/dev/null && git branch -f old HEAD && echo OWN-REFS
git gc --prune=now -q && git log --format=%s -1 | grep -q work && echo OWN-GC
O={o}
git --git-dir=$O update-ref refs/heads/main HEAD 2>/dev/null && echo ATTACK-main
git --git-dir=$O branch -f t2 HEAD 2>/dev/null && echo ATTACK-t2
git --git-dir=$O branch -D t2 2>/dev/null && echo ATTACK-delete-t2
git --git-dir=$O tag -f v1 HEAD 2>/dev/null && echo ATTACK-tag
git --git-dir=$O branch evil 2>/dev/null && echo ATTACK-branch
echo x >> $O/packed-refs 2>/dev/null && echo ATTACK-packed
echo x > $O/worktrees/t2/HEAD 2>/dev/null && echo ATTACK-wt-head
echo x > $O/worktrees/t2/index 2>/dev/null && echo ATTACK-wt-index
echo /tmp > $O/objects/info/alternates 2>/dev/null && echo ATTACK-alternates
echo x > $O/info/attributes 2>/dev/null && echo ATTACK-attributes
echo x >> $O/info/exclude 2>/dev/null && echo ATTACK-exclude
git --git-dir=$O gc --prune=now -q 2>/dev/null && echo ATTACK-gc
mkdir -p $O/objects/ab 2>/dev/null; echo x > $O/objects/ab/cd 2>/dev/null && echo ATTACK-object
rm -rf $O/objects/pack 2>/dev/null; test -d $O/objects/pack || echo ATTACK-rm-pack
echo x > $O/HEAD 2>/dev/null && echo ATTACK-head
echo x >> $O/config 2>/dev/null && echo ATTACK-config
echo x > $O/hooks/post-checkout 2>/dev/null && echo ATTACK-hook
echo x > $O/index 2>/dev/null && echo ATTACK-index
echo x >> {main}/README 2>/dev/null && echo ATTACK-tree
echo x > {main}/new-file 2>/dev/null && echo ATTACK-tree-new
echo x >> {t2}/README 2>/dev/null && echo ATTACK-t2-tree
git worktree remove --force {t2} 2>/dev/null && echo ATTACK-wt-remove
true"#
    )
}

const MUST: [&str; 8] = [
    "SEES-UNCOMMITTED",
    "ON-TASK",
    "STATUS",
    "HISTORY",
    "COMMIT",
    "OWN-REFS",
    "OWN-GC",
    "\n",
];

/// Launches a workspace session with `m`, runs the attacks, collects and
/// checks the checkout.
/// What a backend's workspace session is expected to be.
struct Expect {
    layering: WorkspaceLayering,
    /// Whether the manager hides `notes/` and `*.pem` of the checkout.
    reads_denied: bool,
}

async fn attacks_fail_and_the_work_collects(m: &SandboxManager, f: &Fixture, id: &str, e: Expect) {
    let layering = e.layering;
    let before = Before::take(f);
    let req = WorkspaceRequest::new(f.main(), "task").unwrap();
    let mut h = m
        .launch_in_workspace(SandboxSpec::new(id, "w"), &req)
        .await
        .unwrap();
    let info = m.workspace(&h).unwrap();
    assert_eq!(info.layering, layering);
    assert_eq!(
        h.details["workspaceLayering"].as_str(),
        Some(layering.as_str())
    );
    assert_eq!(info.branch, "task");
    assert_eq!(
        h.details["workspace"].as_str().unwrap(),
        info.path.display().to_string()
    );
    assert!(info.disk_bytes > 0);
    let r = run(m, &h, &attack_script(f)).await;
    for word in MUST.iter().filter(|w| **w != "\n") {
        assert!(
            r.stdout.contains(word),
            "{word} missing: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    // What the host hides in the checkout is hidden in the view too.
    assert!(
        !e.reads_denied || !r.stdout.contains("ATTACK-read-denied"),
        "a denied read got through: {}",
        r.stdout
    );
    // An attack may "succeed" in what the sandbox shows (under bubblewrap
    // the checkout's paths are directories of the sandbox's own root), so
    // what counts is the host's checkout, read from the host.
    eprintln!("inside: {}", r.stdout.replace('\n', " "));
    before.check(f);

    let CollectOutcome::Updated(c) = m.collect(&h).await.unwrap() else {
        panic!("nothing collected")
    };
    assert_eq!(c.reference, format!("refs/sessions/{id}/task"));
    assert_eq!(c.old, None);
    let main = f.main();
    assert_eq!(git(&main, &["rev-parse", &c.reference]), c.new);
    assert_eq!(
        git(&main, &["log", "--format=%s", &c.reference]),
        "work\nfirst"
    );
    assert_eq!(
        git(&main, &["show", &format!("{}:work.txt", c.reference)]),
        "work"
    );
    before.check(f);
    // Collecting again without new work changes nothing.
    assert!(matches!(
        m.collect(&h).await.unwrap(),
        CollectOutcome::NothingNew { .. }
    ));
    let layer = info.path.parent().unwrap().to_path_buf();
    m.destroy(&mut h).await.unwrap();
    assert!(!layer.exists(), "the layer outlived the session");
    fsck(&main);
}

fn fsck(main: &Path) {
    let out = Command::new("git")
        .arg("-C")
        .arg(main)
        .args(["fsck", "--no-progress", "--no-dangling"])
        .output()
        .unwrap();
    assert!(out.status.success(), "git fsck: {out:?}");
}

fn git_available() -> bool {
    test_support::tool("git", "apt-get install git").is_some()
}

#[tokio::test]
async fn under_bubblewrap_the_checkout_holds_and_the_work_collects() {
    if !git_available() || !super::native::native_available() {
        return;
    }
    let f = Fixture::new("bwrap");
    let mut b = f.builder_with_read_denies();
    b.native_mechanism(NativeMechanism::Bubblewrap);
    attacks_fail_and_the_work_collects(
        &b.build().unwrap(),
        &f,
        "ws-bwrap",
        Expect {
            layering: WorkspaceLayering::Overlay,
            reads_denied: true,
        },
    )
    .await;
}

#[tokio::test]
async fn under_landlock_the_checkout_holds_and_the_work_collects() {
    if !git_available() || !super::landlock::landlock_available() {
        return;
    }
    let f = Fixture::new("landlock");
    // Without read denies: under Landlock a file made later in a directory
    // that holds a denied path cannot be read (the rules are fixed at launch).
    let mut b = f.builder();
    b.native_mechanism(NativeMechanism::Landlock);
    attacks_fail_and_the_work_collects(
        &b.build().unwrap(),
        &f,
        "ws-landlock",
        Expect {
            layering: WorkspaceLayering::Copy,
            reads_denied: false,
        },
    )
    .await;
}

#[tokio::test]
async fn under_gvisor_the_checkout_holds_and_the_work_collects() {
    if !git_available()
        || !test_support::require(
            sandbox_core::probe_ambient().microvm.available,
            "gVisor's runsc for the microvm backend",
            "apt-get install runsc",
        )
    {
        return;
    }
    let f = Fixture::new("gvisor");
    let mut b = f.builder_with_read_denies();
    b.request(
        BackendRequest::Explicit(SandboxBackend::Microvm),
        Surface::Dispatch,
    )
    .filename_rules(FilenameRules::DropFilenameGlobDenies);
    attacks_fail_and_the_work_collects(
        &b.build().unwrap(),
        &f,
        "ws-gvisor",
        Expect {
            layering: WorkspaceLayering::Copy,
            reads_denied: true,
        },
    )
    .await;
}

#[tokio::test]
async fn in_a_qemu_guest_the_checkout_holds_and_the_work_collects() {
    const INSTALL: &str = "apt-get install qemu-system-x86 linux-image-cloud-amd64 bubblewrap";
    if !git_available() || test_support::tool("qemu-system-x86_64", INSTALL).is_none() {
        return;
    }
    let f = Fixture::new("qemu");
    let mut b = f.builder_with_read_denies();
    b.request(
        BackendRequest::Explicit(SandboxBackend::Microvm),
        Surface::Dispatch,
    )
    .microvm_runtime_qemu();
    attacks_fail_and_the_work_collects(
        &b.build().unwrap(),
        &f,
        "ws-qemu",
        Expect {
            layering: WorkspaceLayering::Copy,
            reads_denied: true,
        },
    )
    .await;
}

/// A bubblewrap manager for the fixture, or `None` (with the install line
/// printed) where the tests cannot run.
fn bwrap_manager(f: &Fixture) -> Option<SandboxManager> {
    if !git_available() || !super::native::native_available() {
        return None;
    }
    let mut b = f.builder_with_read_denies();
    b.native_mechanism(NativeMechanism::Bubblewrap);
    Some(b.build().unwrap())
}

const COMMIT_ENV: &str = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid \
                          GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid";

/// Commits `file` with `word` in it, in the session's workspace.
async fn commit(m: &SandboxManager, h: &sandbox_core::SandboxHandle, file: &str, word: &str) {
    let r = run(
        m,
        h,
        &format!("{COMMIT_ENV}; echo {word} > {file} && git add {file} && git commit -qm {word} && echo DONE"),
    )
    .await;
    assert!(r.stdout.contains("DONE"), "{}\n{}", r.stdout, r.stderr);
}

fn session_refs(main: &Path) -> BTreeSet<String> {
    git(
        main,
        &["for-each-ref", "--format=%(refname)", "refs/sessions"],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

#[tokio::test]
async fn eight_sessions_on_one_checkout_each_collect_their_own_ref() {
    let f = Fixture::new("eight");
    let Some(m) = bwrap_manager(&f) else { return };
    let main = f.main();
    let before = Before::take(&f);
    let refs_before = git(
        &main,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    let mut set = tokio::task::JoinSet::new();
    for i in 0..8 {
        let (m, main) = (m.clone(), main.clone());
        set.spawn(async move {
            let id = format!("par-{i}");
            let req = WorkspaceRequest::new(&main, &format!("task-{i}")).unwrap();
            let mut h = m
                .launch_in_workspace(SandboxSpec::new(&id, "w"), &req)
                .await
                .unwrap();
            commit(&m, &h, &format!("t{i}.txt"), &format!("work{i}")).await;
            let CollectOutcome::Updated(c) = m.collect(&h).await.unwrap() else {
                panic!("nothing collected for {id}")
            };
            m.destroy(&mut h).await.unwrap();
            (i, c)
        });
    }
    let collected = set.join_all().await;
    before.check(&f);
    let expected: BTreeSet<String> = (0..8)
        .map(|i| format!("refs/sessions/par-{i}/task-{i}"))
        .collect();
    assert_eq!(session_refs(&main), expected);
    for (i, c) in collected {
        // Each ref holds its own session's work and no other's.
        let files = git(&main, &["ls-tree", "--name-only", &c.new]);
        assert!(files.contains(&format!("t{i}.txt")), "{files}");
        assert_eq!(files.lines().count(), 3, "{files}");
    }
    let refs_after = git(
        &main,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    let others: Vec<&str> = refs_after
        .lines()
        .filter(|l| !l.starts_with("refs/sessions/"))
        .collect();
    assert_eq!(others, refs_before.lines().collect::<Vec<_>>());
    fsck(&main);
}

#[tokio::test]
async fn a_forks_writes_are_its_own_and_it_collects_on_its_own() {
    let f = Fixture::new("fork");
    let Some(m) = bwrap_manager(&f) else { return };
    let main = f.main();
    let req = WorkspaceRequest::new(&main, "try").unwrap();
    let mut parent = m
        .launch_in_workspace(SandboxSpec::new("fork-parent", "w"), &req)
        .await
        .unwrap();
    commit(&m, &parent, "a.txt", "shared").await;
    // A file of the checkout's removed in the parent (an overlay's
    // whiteout) is gone in its forks too, and stays in the checkout.
    run(&m, &parent, "echo scratch > scratch.txt; rm README").await;
    let mut one = m
        .launch_fork(&parent, SandboxSpec::new("fork-one", "w"))
        .await
        .unwrap();
    let mut two = m
        .launch_fork(&parent, SandboxSpec::new("fork-two", "w"))
        .await
        .unwrap();
    assert_ne!(
        m.workspace(&one).unwrap().path,
        m.workspace(&parent).unwrap().path
    );
    // The fork starts from what the parent had, uncommitted work too.
    let r = run(
        &m,
        &one,
        "cat scratch.txt a.txt; test -e README || echo NO-README",
    )
    .await;
    assert_eq!(r.stdout, "scratch\nshared\nNO-README\n", "{}", r.stderr);
    assert!(main.join("README").is_file());
    commit(&m, &one, "one.txt", "one").await;
    commit(&m, &two, "two.txt", "two").await;
    commit(&m, &parent, "p.txt", "parent").await;
    for (h, mine, others) in [
        (&parent, "p.txt", ["one.txt", "two.txt"]),
        (&one, "one.txt", ["p.txt", "two.txt"]),
        (&two, "two.txt", ["p.txt", "one.txt"]),
    ] {
        let r = run(&m, h, "ls; git log --format=%s").await;
        assert!(r.stdout.contains(mine), "{}", r.stdout);
        for other in others {
            assert!(!r.stdout.contains(other), "{other} seen: {}", r.stdout);
        }
    }
    let mut news = BTreeMap::new();
    for h in [&parent, &one, &two] {
        let CollectOutcome::Updated(c) = m.collect(h).await.unwrap() else {
            panic!("nothing collected")
        };
        news.insert(c.reference, git(&main, &["log", "--format=%s", &c.new]));
    }
    let logs: Vec<(&str, &str)> = news.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        logs,
        [
            ("refs/sessions/fork-one/try", "one\nshared\nfirst"),
            ("refs/sessions/fork-parent/try", "parent\nshared\nfirst"),
            ("refs/sessions/fork-two/try", "two\nshared\nfirst"),
        ]
    );
    for h in [&mut one, &mut two, &mut parent] {
        m.destroy(h).await.unwrap();
    }
    fsck(&main);
}

#[tokio::test]
async fn rewritten_history_and_bad_requests_are_refused_and_change_nothing() {
    let f = Fixture::new("refuse");
    let Some(m) = bwrap_manager(&f) else { return };
    let main = f.main();
    let req = WorkspaceRequest::new(&main, "task").unwrap();
    let mut h = m
        .launch_in_workspace(SandboxSpec::new("refuse-1", "w"), &req)
        .await
        .unwrap();
    commit(&m, &h, "a.txt", "a").await;
    let CollectOutcome::Updated(first) = m.collect(&h).await.unwrap() else {
        panic!("nothing collected")
    };
    // History rewritten after a collection: refused, the ref stays.
    run(
        &m,
        &h,
        &format!("{COMMIT_ENV}; git commit -q --amend -m rewritten"),
    )
    .await;
    let before = Before::take(&f);
    let err = m.collect(&h).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::CollectRefused { .. }),
        "{err}"
    );
    assert_eq!(git(&main, &["rev-parse", &first.reference]), first.new);
    before.check(&f);
    // A branch deleted inside: refused.
    run(
        &m,
        &h,
        "git checkout -q --detach && git branch -D task >/dev/null",
    )
    .await;
    let err = m.collect(&h).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::CollectRefused { .. }),
        "{err}"
    );
    // A symlink planted in the layer's object store is not followed out.
    let view = m.workspace(&h).unwrap().path;
    let secret = f.root.join("secret");
    std::fs::write(&secret, "secret").unwrap();
    let objects = view.join(".git/objects/ee");
    std::fs::create_dir_all(&objects).unwrap();
    std::os::unix::fs::symlink(&secret, objects.join("0".repeat(38))).unwrap();
    run(&m, &h, "git checkout -q -b task2").await;
    let _ = m.collect(&h).await;
    assert!(!main.join(".git/objects/ee").join("0".repeat(38)).exists());
    before.check(&f);
    m.destroy(&mut h).await.unwrap();

    // Requests that cannot be served.
    let t2 = f.root.join("t2");
    let plain = f.root.join("home");
    for (path, what) in [(&t2, "linked worktree"), (&plain, "no repository")] {
        let req = WorkspaceRequest::new(path, "task").unwrap();
        let err = m
            .launch_in_workspace(SandboxSpec::new("refuse-2", "w"), &req)
            .await
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::NotACheckout { .. }),
            "{what}: {err}"
        );
    }
    let err = m
        .launch_in_workspace(SandboxSpec::new("bad id", "w"), &req)
        .await
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::BadWorkspaceName { .. }),
        "{err}"
    );
    // A session without a workspace has nothing to collect.
    let mut plain_session = m.launch(SandboxSpec::new("refuse-3", "w")).await.unwrap();
    let err = m.collect(&plain_session).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NoWorkspace { .. }), "{err}");
    m.destroy(&mut plain_session).await.unwrap();
    before.check(&f);
    assert_eq!(
        session_refs(&main),
        BTreeSet::from(["refs/sessions/refuse-1/task".to_owned()])
    );
    fsck(&main);
}
