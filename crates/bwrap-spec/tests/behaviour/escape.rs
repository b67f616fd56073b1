//! Real processes under the real bubblewrap sandbox, trying to break out.
//! Runs as the current user and, when root, again as an unprivileged user.

use bwrap_spec::{BwrapBuilder, FilenameRules, PlaceholderFiles};
use sandbox_core::{Access, AmbientHost, Mode, SandboxBindMount, SandboxSpec};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bwrap() -> Option<PathBuf> {
    test_support::tool("bwrap", "apt-get install bubblewrap")
}

/// A scratch tree: home with planted secrets, a writable workspace with a
/// git repo, and a protected checkout inside the workspace.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let root = std::env::temp_dir().join(format!("bwrap-escape-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in [
            "home/.ssh",
            "home/.aws",
            "ws/repo/.git/hooks",
            "ws/repos/orig",
            "outside",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/id_rsa"), "PRIVATE-KEY-SECRET").unwrap();
        std::fs::write(root.join("home/.aws/credentials"), "AWS-SECRET").unwrap();
        std::fs::write(root.join("ws/repo/.git/config"), "[core]\n").unwrap();
        std::fs::write(root.join("ws/repos/orig/README"), "original").unwrap();
        // Let an unprivileged user walk and write the tree.
        chmod_tree(&root);
        Scratch { root }
    }
    fn p(&self, rel: &str) -> String {
        self.root.join(rel).to_string_lossy().into_owned()
    }
    fn spec(&self, mode: Mode) -> SandboxSpec {
        let mut spec = SandboxSpec::new("escape", "w");
        spec.mode = mode;
        spec.bind_mounts
            .push(SandboxBindMount::new(self.p("home"), Access::ReadWrite).unwrap());
        spec.bind_mounts
            .push(SandboxBindMount::new(self.p("ws"), Access::ReadWrite).unwrap());
        spec.protected_paths.push(self.p("ws/repos/orig"));
        spec.guest_workdir = Some(self.p("ws"));
        spec
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn chmod_tree(p: &Path) {
    let meta = std::fs::metadata(p).unwrap();
    let mode = if meta.is_dir() { 0o777 } else { 0o666 };
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    if meta.is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            chmod_tree(&e.unwrap().path());
        }
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum User {
    Current,
    Nobody,
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

fn users() -> Vec<User> {
    if is_root() && test_support::tool("setpriv", "apt-get install util-linux").is_some() {
        vec![User::Current, User::Nobody]
    } else {
        vec![User::Current]
    }
}

/// Runs `script` with `sh -c` under the sandbox built for `spec`.
fn run(s: &Scratch, spec: &SandboxSpec, user: User, script: &str) -> Output {
    let bwrap = bwrap().unwrap();
    let repos = bwrap_spec::discover_git_repos_on_host(
        &spec
            .bind_mounts
            .iter()
            .map(|m| m.host_path.clone())
            .collect::<Vec<_>>(),
    );
    let plan = BwrapBuilder::new(spec, s.p("home"))
        .nested_repos(repos)
        .filename_rules(FilenameRules::DropFilenameGlobDenies)
        .build(&AmbientHost::from_ambient())
        .unwrap();
    let mut placeholders = PlaceholderFiles::create_on_host(plan.placeholders()).unwrap();
    for p in placeholders.created() {
        chmod_tree(p);
    }
    let argv = plan.command_line(&bwrap, ["/bin/sh", "-c", script]);
    let mut cmd = match user {
        User::Current => Command::new(&argv[0]),
        User::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&argv[0]);
            c
        }
    };
    let out = cmd
        .args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", s.p("home"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    placeholders.remove();
    out
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

macro_rules! need_bwrap {
    () => {
        if bwrap().is_none() {
            return;
        }
    };
}

#[test]
fn secrets_under_home_are_unreadable() {
    need_bwrap!();
    for user in users() {
        let s = Scratch::new(&format!("secrets-{user:?}"));
        let out = run(
            &s,
            &s.spec(Mode::Chat),
            user,
            "cat ~/.ssh/id_rsa ~/.aws/credentials; ls -a ~/.ssh; echo done",
        );
        let t = text(&out);
        assert!(t.contains("done"), "{user:?}: {t}");
        assert!(
            !t.contains("PRIVATE-KEY-SECRET") && !t.contains("AWS-SECRET"),
            "{user:?}: {t}"
        );
        assert!(
            !t.contains("id_rsa\n"),
            "{user:?}: directory listing leaked: {t}"
        );
    }
}

#[test]
fn mandatory_denies_hold_in_writable_roots_and_leave_no_litter() {
    need_bwrap!();
    for user in users() {
        let s = Scratch::new(&format!("mandatory-{user:?}"));
        let out = run(
            &s,
            &s.spec(Mode::Chat),
            user,
            "echo evil >> ~/.bashrc && echo BASHRC-WRITTEN; \
             echo evil > repo/.git/hooks/pre-commit && echo HOOK-WRITTEN; \
             echo evil >> repo/.git/config && echo CONFIG-WRITTEN; \
             mv repo/.git repo/git-moved && echo GIT-MOVED; \
             echo ok > repo/file && echo NORMAL-WRITE",
        );
        let t = text(&out);
        for bad in [
            "BASHRC-WRITTEN",
            "HOOK-WRITTEN",
            "CONFIG-WRITTEN",
            "GIT-MOVED",
        ] {
            assert!(!t.contains(bad), "{user:?}: {bad}: {t}");
        }
        assert!(
            t.contains("NORMAL-WRITE"),
            "{user:?}: ordinary writes work: {t}"
        );
        assert!(
            !s.root.join("home/.bashrc").exists(),
            "{user:?}: placeholder left behind"
        );
        assert!(!s.root.join("ws/repo/.git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(s.root.join("ws/repo/.git/config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::read_to_string(s.root.join("ws/repo/file")).unwrap(),
            "ok\n"
        );
    }
}

#[test]
fn protected_checkout_cannot_be_written_renamed_or_reached_by_symlink() {
    need_bwrap!();
    for user in users() {
        let s = Scratch::new(&format!("protected-{user:?}"));
        let orig = s.p("ws/repos/orig");
        let script = format!(
            "echo x > {orig}/README && echo DIRECT; \
             mv {ws}/repos {ws}/moved && mkdir -p {orig} && echo evil > {orig}/README && echo RENAMED-PARENT; \
             mv {orig} {ws}/elsewhere && echo RENAMED-SELF; \
             ln -s {orig} {ws}/link && echo x > {ws}/link/README && echo THROUGH-SYMLINK; \
             rm -rf {orig} && echo REMOVED; echo done",
            ws = s.p("ws"),
        );
        let t = text(&run(&s, &s.spec(Mode::Chat), user, &script));
        assert!(t.contains("done"), "{t}");
        for bad in [
            "DIRECT",
            "RENAMED-PARENT",
            "RENAMED-SELF",
            "THROUGH-SYMLINK",
            "REMOVED",
        ] {
            assert!(!t.contains(bad), "{user:?}: {bad}: {t}");
        }
        assert_eq!(
            std::fs::read_to_string(s.root.join("ws/repos/orig/README")).unwrap(),
            "original"
        );
        assert!(!s.root.join("ws/moved").exists());
    }
}

#[test]
fn review_mode_is_read_only_and_chat_mode_writes() {
    need_bwrap!();
    for user in users() {
        let s = Scratch::new(&format!("modes-{user:?}"));
        let t = text(&run(
            &s,
            &s.spec(Mode::Review),
            user,
            "echo x > repo/new && echo WROTE; echo done",
        ));
        assert!(t.contains("done") && !t.contains("WROTE"), "{user:?}: {t}");
        assert!(!s.root.join("ws/repo/new").exists());
        let t = text(&run(
            &s,
            &s.spec(Mode::Chat),
            user,
            "echo x > repo/new && echo WROTE",
        ));
        assert!(t.contains("WROTE"), "{user:?}: {t}");
        assert!(s.root.join("ws/repo/new").exists());
    }
}

#[test]
fn no_network_no_host_processes_no_host_sockets() {
    need_bwrap!();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sock_dir = std::env::temp_dir().join(format!("bwrap-hostsock-{}", std::process::id()));
    std::fs::create_dir_all(&sock_dir).unwrap();
    let sock = sock_dir.join("host.sock");
    let _ = std::fs::remove_file(&sock);
    let _unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let me = std::process::id();
    for user in users() {
        let s = Scratch::new(&format!("net-{user:?}"));
        let script = format!(
            "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo TCP-CONNECTED; \
             getent hosts localhost.invalid example.org >/dev/null 2>&1 && echo RESOLVED; \
             test -e /proc/{me} && echo SEES-HOST-PID; \
             ls /proc | grep -c '^[0-9]' ; \
             socat -u OPEN:/dev/null UNIX-CONNECT:{sock} 2>/dev/null && echo UNIX-CONNECTED; \
             test -e {sock} && echo SEES-SOCKET; \
             for d in /run /var/run; do [ -d $d ] && ls -A $d; done | grep -v '^agent-sandbox$' | grep . && echo HOST-RUN; \
             echo done",
            sock = sock.display()
        );
        let t = text(&run(&s, &s.spec(Mode::Chat), user, &script));
        assert!(t.contains("done"), "{t}");
        for bad in [
            "TCP-CONNECTED",
            "RESOLVED",
            "SEES-HOST-PID",
            "UNIX-CONNECTED",
            "SEES-SOCKET",
            "HOST-RUN",
        ] {
            assert!(!t.contains(bad), "{user:?}: {bad}: {t}");
        }
        let procs: usize = t.lines().find_map(|l| l.trim().parse().ok()).unwrap();
        assert!(procs < 10, "{user:?}: {procs} processes visible: {t}");
    }
    let _ = std::fs::remove_dir_all(&sock_dir);
    drop(listener);
}

#[test]
fn sandbox_dies_with_its_parent() {
    need_bwrap!();
    let s = Scratch::new("orphans");
    let plan = BwrapBuilder::new(&s.spec(Mode::Review), s.p("home"))
        .build(&AmbientHost::from_ambient())
        .unwrap();
    let marker = format!("{}.{}", 300, std::process::id());
    let argv = plan.command_line(
        &bwrap().unwrap(),
        ["/bin/sh", "-c", &format!("sleep {marker} & sleep {marker}")],
    );
    // An intermediate parent starts the sandbox, then dies.
    let mut parent = Command::new("/bin/sh")
        .arg("-c")
        .arg("\"$@\" & sleep 0.5; kill -9 $$")
        .arg("sh")
        .args(&argv)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let _ = parent.wait();
    let alive = |marker: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
    };
    let mut gone = false;
    for _ in 0..100 {
        if !alive(&marker) {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(gone, "sandboxed processes outlived their parent");
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
        ])
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", text(&out));
}

#[test]
fn a_linked_worktree_cannot_be_pointed_at_a_git_dir_of_its_own() {
    need_bwrap!();
    if test_support::tool("git", "apt-get install git").is_none() {
        return;
    }
    for user in users() {
        let s = Scratch::new(&format!("worktree-{user:?}"));
        // ws/main is a repository; ws/wt its linked worktree, whose `.git`
        // is a file naming main/.git/worktrees/wt.
        let main = s.root.join("ws/main");
        std::fs::create_dir_all(&main).unwrap();
        std::fs::write(main.join("README"), "readme").unwrap();
        git(&main, &["init", "-q"]);
        git(&main, &["add", "README"]);
        git(&main, &["commit", "-qm", "first"]);
        git(&main, &["worktree", "add", "-q", "../wt"]);
        chmod_tree(&s.root);
        let dotgit_before = std::fs::read_to_string(s.root.join("ws/wt/.git")).unwrap();
        assert!(dotgit_before.starts_with("gitdir:"), "{dotgit_before}");

        // First: only the worktree is mounted (its repository is elsewhere).
        let mut spec = SandboxSpec::new("escape", "w");
        spec.bind_mounts
            .push(SandboxBindMount::new(s.p("ws/wt"), Access::ReadWrite).unwrap());
        spec.guest_workdir = Some(s.p("ws/wt"));
        let out = run(
            &s,
            &spec,
            user,
            "mkdir -p evil/hooks && printf '#!/bin/sh\\necho pwned\\n' > evil/hooks/post-checkout; \
             echo \"gitdir: $PWD/evil\" > .git && echo DOTGIT-WRITTEN; \
             rm -f .git && echo DOTGIT-REMOVED; \
             mv .git dotgit && echo DOTGIT-MOVED; \
             echo ok > notes.txt && echo NORMAL-WRITE",
        );
        let t = text(&out);
        for bad in ["DOTGIT-WRITTEN", "DOTGIT-REMOVED", "DOTGIT-MOVED"] {
            assert!(!t.contains(bad), "{user:?}: {bad}: {t}");
        }
        assert!(t.contains("NORMAL-WRITE"), "{user:?}: {t}");
        assert_eq!(
            std::fs::read_to_string(s.root.join("ws/wt/.git")).unwrap(),
            dotgit_before,
            "{user:?}"
        );

        // Then the whole workspace: the worktree's git dir and the common
        // hooks and config are read-only too.
        let out = run(
            &s,
            &s.spec(Mode::Chat),
            user,
            "echo x > main/.git/hooks/post-checkout && echo HOOK-WRITTEN; \
             echo '[core]' >> main/.git/config && echo CONFIG-WRITTEN; \
             printf '[core]\\n\\thooksPath = /tmp\\n' > main/.git/worktrees/wt/config.worktree && echo WTCONFIG-WRITTEN; \
             echo \"gitdir: $PWD/evil\" > wt/.git && echo DOTGIT-WRITTEN; \
             echo ok > wt/notes2.txt && echo NORMAL-WRITE",
        );
        let t = text(&out);
        for bad in [
            "HOOK-WRITTEN",
            "CONFIG-WRITTEN",
            "WTCONFIG-WRITTEN",
            "DOTGIT-WRITTEN",
        ] {
            assert!(!t.contains(bad), "{user:?}: {bad}: {t}");
        }
        assert!(t.contains("NORMAL-WRITE"), "{user:?}: {t}");
        assert!(
            !s.root.join("ws/main/.git/hooks/post-checkout").exists(),
            "{user:?}"
        );
        // The placeholder for the missing config.worktree was removed.
        assert!(
            !s.root
                .join("ws/main/.git/worktrees/wt/config.worktree")
                .exists(),
            "{user:?}"
        );
    }
}
