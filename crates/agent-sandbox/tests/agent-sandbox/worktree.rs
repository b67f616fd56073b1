//! A linked git worktree (one per task, as agents work) mounted with its
//! repository's common directory: git works inside, the common
//! directory's hooks and config stay unwritable, and the host's git
//! directory gets nothing of ours, during the session or after it. Under
//! bubblewrap and under Landlock.

use super::native::run;
use agent_sandbox::{NameGuardLauncher, SandboxManager};
use sandbox_core::{Access, NativeMechanism, SandboxBindMount, SandboxSpec, probe_ambient};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

const GUARD: &str = env!("CARGO_BIN_EXE_agent-sandbox-name-guard");

fn git(dir: &Path, args: &[&str]) {
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
}

/// Every path below `dir`, relative.
fn listing(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            out.insert(p.strip_prefix(base).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = BTreeSet::new();
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
    case(NativeMechanism::Bubblewrap).await;
}

#[tokio::test]
async fn a_linked_worktree_works_under_landlock_and_its_git_directory_stays_clean() {
    let tried =
        sandbox_core::HostView::try_landlock(&sandbox_core::AmbientHost::from_ambient_untimed());
    if !test_support::require(
        tried.is_ok(),
        &format!("Landlock ABI 6 or later ({tried:?})"),
        "run the tests on Linux 6.12 or later with Landlock among the active LSMs",
    ) {
        return;
    }
    case(NativeMechanism::Landlock).await;
}

async fn case(mechanism: NativeMechanism) {
    if test_support::tool("git", "apt-get install git").is_none()
        || !test_support::require(
            probe_ambient().native.filename_rules.is_enforceable(),
            "a kernel that can run the name guard (Linux 5.19 or later, x86-64 or aarch64)",
            "run the tests on such a kernel",
        )
    {
        return;
    }
    let root = std::env::temp_dir().join(format!(
        "facade-worktree-{}-{}",
        mechanism.as_str(),
        std::process::id()
    ));
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
    let common = main.join(".git");
    let before = listing(&common);

    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let mut b = crate::builder();
    b.home(home.display().to_string())
        .temp_dir(root.join("sessions").display().to_string())
        .native_mechanism(mechanism)
        .name_guard_launcher(NameGuardLauncher::new(GUARD))
        .log(Arc::new(move |l: &str| sink.lock().unwrap().push(l.into())))
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    let m: SandboxManager = b.build().unwrap();
    let mut spec = SandboxSpec::new(format!("wt-{}", mechanism.as_str()), "w");
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
        listing(&common),
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
             git status --short && echo STATUS; echo change > file && git add file && \
             git commit -qm inside && echo COMMIT; \
             echo x > {c}/hooks/post-checkout && echo HOOK; echo x >> {c}/config && echo CONFIG; \
             echo x > {c}/commondir && echo COMMONDIR; echo x > {c}/config.worktree && echo CWT; \
             echo x > {c}/worktrees/wt/commondir && echo WTCOMMONDIR; \
             echo x > {c}/worktrees/wt/config.worktree && echo WTCONFIG; \
             echo ref: refs/heads/evil > {c}/HEAD && echo HEAD; echo x > .git && echo DOTGIT; \
             mv {c}/hooks {c}/hooks2 && echo HOOKSMV; true"
        ),
    )
    .await;
    assert!(r.stdout.contains("STATUS"), "{} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("COMMIT"), "{} {}", r.stdout, r.stderr);
    for bad in [
        "HOOK\n",
        "CONFIG",
        "COMMONDIR",
        "CWT",
        "WTCOMMONDIR",
        "WTCONFIG",
        "HEAD",
        "DOTGIT",
        "HOOKSMV",
    ] {
        assert!(!r.stdout.contains(bad), "{bad}: {}", r.stdout);
    }
    // The creation-time rules of the git directory are the name guard's,
    // reported as they happen.
    for created in [
        "commondir",
        "config.worktree",
        "worktrees/wt/config.worktree",
    ] {
        let p = format!("{c}/{created}");
        assert!(!Path::new(&p).exists(), "{p}");
        assert!(
            r.violations.contains(&format!("file-write-create {p}")),
            "{p}: {:?}",
            r.violations
        );
    }
    assert!(!common.join("hooks/post-checkout").exists());
    assert_eq!(
        std::fs::read_to_string(common.join("HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    m.destroy(&mut h).await.unwrap();

    // The commit is on the host's branch; the git directory holds only
    // what git itself wrote for it.
    let log = Command::new("git")
        .arg("-C")
        .arg(&wt)
        .args(["log", "--format=%s", "task"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout), "inside\nfirst\n");
    let after = listing(&common);
    for new in after.difference(&before) {
        assert!(
            ["objects/", "logs/", "refs/", "worktrees/wt/"]
                .iter()
                .any(|p| new.starts_with(p))
                && !new.ends_with("commondir")
                && !new.ends_with("config.worktree"),
            "{new} appeared in the host's git directory"
        );
    }
    assert!(before.difference(&after).next().is_none());
    let lines = lines.lock().unwrap();
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("created inside the sandbox")),
        "{lines:#?}"
    );
    drop(repo);
}
