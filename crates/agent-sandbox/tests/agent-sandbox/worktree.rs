//! A linked git worktree mounted with its repository's common directory,
//! which is read-only: git reads inside (status, log), the worktree's
//! files can be edited, and every write aimed at what the repository's
//! checkouts share (refs, packed-refs, other worktrees, `info/`,
//! alternates, objects, gc, hooks, config) fails, the host's git directory
//! byte for byte as it was. A writable mount of a git directory is refused.
//! Under bubblewrap, Landlock, gVisor and QEMU.

use super::native::run;
use agent_sandbox::{ErrorKind, FilenameRules, ManagerBuilder, NameGuardLauncher, SandboxManager};
use sandbox_core::{
    Access, BackendRequest, NativeMechanism, SandboxBackend, SandboxBindMount, SandboxSpec,
    Surface, probe_ambient,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const GUARD: &str = env!("CARGO_BIN_EXE_agent-sandbox-name-guard");

/// Runs git on the host in `dir` (its output is not needed here).
fn git(dir: &Path, args: &[&str]) {
    super::workspace::git(dir, args);
}

/// Every path below `dir`, relative, with the contents of its files.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            if e.file_type().unwrap().is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(base, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

struct Repo(PathBuf);

impl Drop for Repo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_linked_worktree_works_under_bubblewrap_and_its_git_directory_stays_clean() {
    if !super::native::native_available() {
        return;
    }
    case("bwrap", |b| {
        b.native_mechanism(NativeMechanism::Bubblewrap);
    })
    .await;
}

#[tokio::test]
async fn a_linked_worktree_works_under_landlock_and_its_git_directory_stays_clean() {
    if !super::landlock::landlock_available() {
        return;
    }
    case("landlock", |b| {
        b.native_mechanism(NativeMechanism::Landlock);
    })
    .await;
}

#[tokio::test]
async fn a_linked_worktree_works_under_gvisor_and_its_git_directory_stays_clean() {
    if !test_support::require(
        probe_ambient().microvm.available,
        "gVisor's runsc for the microvm backend",
        "apt-get install runsc",
    ) {
        return;
    }
    case("gvisor", |b| {
        b.request(
            BackendRequest::Explicit(SandboxBackend::Microvm),
            Surface::Dispatch,
        )
        .filename_rules(FilenameRules::DropFilenameGlobDenies);
    })
    .await;
}

#[tokio::test]
async fn a_linked_worktree_works_in_a_qemu_guest_and_its_git_directory_stays_clean() {
    const INSTALL: &str = "apt-get install qemu-system-x86 linux-image-cloud-amd64 bubblewrap";
    if test_support::tool("qemu-system-x86_64", INSTALL).is_none() {
        return;
    }
    case("qemu", |b| {
        b.request(
            BackendRequest::Explicit(SandboxBackend::Microvm),
            Surface::Dispatch,
        )
        .microvm_runtime_qemu();
    })
    .await;
}

async fn case(tag: &str, configure: impl FnOnce(&mut ManagerBuilder)) {
    if test_support::tool("git", "apt-get install git").is_none()
        || !test_support::require(
            probe_ambient().native.filename_rules.is_enforceable(),
            "a kernel that can run the name guard (Linux 5.19 or later, x86-64 or aarch64)",
            "run the tests on such a kernel",
        )
    {
        return;
    }
    let root = std::env::temp_dir().join(format!("facade-worktree-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let repo = Repo(root.clone());
    let (main, wt, home) = (root.join("main"), root.join("wt"), root.join("home"));
    for d in [&main, &home, &root.join("sessions")] {
        std::fs::create_dir_all(d).unwrap();
    }
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("README"), "hello\n").unwrap();
    git(&main, &["add", "README"]);
    git(&main, &["commit", "-qm", "first"]);
    git(
        &main,
        &["worktree", "add", "-q", "-b", "task", wt.to_str().unwrap()],
    );
    let wt2 = root.join("wt2");
    git(
        &main,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "other",
            wt2.to_str().unwrap(),
        ],
    );
    git(&main, &["tag", "v1"]);
    git(&main, &["pack-refs", "--all"]);
    let common = main.join(".git");
    let before = snapshot(&common);

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let mut b = crate::builder();
    b.home(home.display().to_string())
        .temp_dir(root.join("sessions").display().to_string())
        .name_guard_launcher(NameGuardLauncher::new(GUARD))
        .log(Arc::new(move |l: &str| sink.lock().unwrap().push(l.into())))
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    configure(&mut b);
    let m: SandboxManager = b.build().unwrap();
    let mut spec = SandboxSpec::new(format!("wt-{tag}"), "w");
    spec.bind_mounts.extend(
        SandboxBindMount::linked_worktree_from_ambient(wt.to_str().unwrap(), Access::ReadWrite)
            .unwrap(),
    );
    spec.bind_mounts
        .push(SandboxBindMount::new(home.display().to_string(), Access::ReadWrite).unwrap());
    spec.guest_workdir = Some(wt.display().to_string());
    let mut h = m.launch(spec).await.unwrap();
    // During the session: nothing placed in the host's git directory.
    assert_eq!(
        snapshot(&common),
        before,
        "the git directory changed at launch"
    );

    let c = common.display();
    let r = run(
        &m,
        &h,
        &format!(
            "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a \
             GIT_COMMITTER_EMAIL=a@example.invalid; \
             git status --short && echo STATUS; git log --oneline main >/dev/null && echo LOG; \
             echo change > file && echo EDIT; git add file 2>/dev/null; \
             git commit -qm inside 2>/dev/null && echo COMMIT; \
             git update-ref refs/heads/main HEAD 2>/dev/null && echo MAIN; \
             git branch -f other HEAD 2>/dev/null && echo OTHER; \
             git branch -D other 2>/dev/null && echo DELETE; \
             git tag -f v1 2>/dev/null && echo TAG; git branch evil 2>/dev/null && echo BRANCH; \
             echo x >> {c}/packed-refs && echo PACKED; \
             echo x > {c}/worktrees/wt2/HEAD && echo WT2HEAD; \
             echo x > {c}/worktrees/wt2/index && echo WT2INDEX; \
             echo /tmp > {c}/objects/info/alternates && echo ALTERNATES; \
             mkdir -p {c}/info; echo x > {c}/info/attributes && echo ATTRIBUTES; \
             echo x > {c}/info/exclude && echo EXCLUDE; \
             git gc --prune=now -q 2>/dev/null && echo GC; \
             echo x > {c}/hooks/post-checkout && echo HOOK; echo x >> {c}/config && echo CONFIG; \
             echo x > {c}/commondir && echo COMMONDIR; echo x > {c}/config.worktree && echo CWT; \
             echo x > {c}/worktrees/wt/commondir && echo WTCOMMONDIR; \
             echo ref: refs/heads/evil > {c}/HEAD && echo HEAD; echo x > .git && echo DOTGIT; \
             mv {c}/hooks {c}/hooks2 && echo HOOKSMV; \
             git worktree remove --force {wt2} 2>/dev/null && echo WTREMOVE; true",
            wt2 = root.join("wt2").display()
        ),
    )
    .await;
    for works in ["STATUS", "LOG", "EDIT"] {
        assert!(
            r.stdout.contains(works),
            "{works}: {} {}",
            r.stdout,
            r.stderr
        );
    }
    for bad in [
        "COMMIT",
        "MAIN",
        "OTHER",
        "DELETE",
        "TAG",
        "BRANCH",
        "PACKED",
        "WT2HEAD",
        "WT2INDEX",
        "ALTERNATES",
        "ATTRIBUTES",
        "EXCLUDE",
        "GC",
        "HOOK\n",
        "CONFIG",
        "COMMONDIR",
        "CWT",
        "WTCOMMONDIR",
        "HEAD",
        "DOTGIT",
        "HOOKSMV",
        "WTREMOVE",
    ] {
        assert!(!r.stdout.contains(bad), "{bad}: {}", r.stdout);
    }
    m.destroy(&mut h).await.unwrap();

    // The host's git directory is exactly as it was: every file, with its
    // contents.
    assert_eq!(
        snapshot(&common),
        before,
        "the host's git directory changed"
    );
    assert!(wt.join("file").exists(), "the worktree's own edit is kept");

    // Mounting the common directory writable is refused, with what to do.
    let mut spec = SandboxSpec::new(format!("wt-rw-{tag}"), "w");
    spec.bind_mounts
        .push(SandboxBindMount::new(common.display().to_string(), Access::ReadWrite).unwrap());
    let err = m.launch(spec).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WritableGitDirectory { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("launch_in_workspace"), "{err}");
    let lines = lines.lock().unwrap();
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("created inside the sandbox")),
        "{lines:#?}"
    );
    drop(repo);
}
