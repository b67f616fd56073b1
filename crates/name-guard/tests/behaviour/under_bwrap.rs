//! The launcher under real bubblewrap: denied names cannot be created by any
//! route; ordinary work runs unchanged.

use crate::support::*;
use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn every_route_to_a_denied_name_is_refused() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    fs::create_dir(d.join("sub")).unwrap();
    symlink("sub", d.join("dirlink")).unwrap();
    fs::write(d.join("allowed.txt"), "a").unwrap();
    let abs = d.to_str().unwrap();
    let mut cases = Vec::new();
    for (i, name) in DENIED_NAMES.into_iter().enumerate() {
        // The dangling link that would make an open create the denied name.
        symlink(name, d.join(format!("dangling-rel-{i}"))).unwrap();
        symlink(
            format!("{abs}/sub/{name}"),
            d.join(format!("dangling-abs-{i}")),
        )
        .unwrap();
        for path in [
            name.to_string(),
            format!("./{name}"),
            format!("sub/../{name}"),
            format!("sub/{name}"),
            format!("{abs}/{name}"),
            format!("{abs}/sub/../sub/{name}"),
            format!("dirlink/{name}"),
            format!("sub/{name}/"),
            format!("/proc/self/cwd/{name}"),
        ] {
            for op in [
                "open",
                "open_excl",
                "openat2",
                "creat",
                "mknod",
                "mkfifo",
                "tmpfile",
                "tmpfile_empty",
            ] {
                let args = if op.starts_with("tmpfile") {
                    format!("{op} . '{path}'")
                } else {
                    format!("{op} '{path}'")
                };
                cases.push((format!("{op} {path}"), args));
            }
            for op in ["rename", "renameat2", "link", "symlink"] {
                cases.push((format!("{op} {path}"), format!("{op} allowed.txt '{path}'")));
            }
            cases.push((format!("mkdir {path}"), format!("mkdir '{path}'")));
        }
        cases.push((
            format!("mkdirat sub {name}"),
            format!("mkdirat sub '{name}'"),
        ));
        cases.push((
            format!("mkdirat dirlink {name}/"),
            format!("mkdirat dirlink '{name}/'"),
        ));
        cases.push((format!("openat sub {name}"), format!("openat sub '{name}'")));
        cases.push((
            format!("openat dirlink {name}"),
            format!("openat dirlink '{name}'"),
        ));
        for via in ["dangling-rel-", "dangling-abs-"] {
            for op in ["open", "creat", "openat2"] {
                cases.push((format!("{op} {via}{i}"), format!("{op} '{via}{i}'")));
            }
        }
    }
    let out = sb.sh(&script_of(&cases));
    let res = results(&out);
    assert_eq!(res.len(), cases.len(), "every case reported");
    for (label, r) in &res {
        // A trailing slash makes the kernel refuse first for some calls; all
        // other refusals are the guard's.
        if label.starts_with("mkdir") {
            // mkdir decides on the component, trailing slash or not.
            assert_eq!(r, "err EACCES", "{label}");
        } else if label.ends_with('/') {
            assert!(r.starts_with("err "), "{label}: {r}");
        } else {
            assert_eq!(r, "err EACCES", "{label}");
        }
    }
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
    assert_eq!(fs::read_to_string(d.join("allowed.txt")).unwrap(), "a");
}

#[test]
fn ordinary_creation_works() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    fs::create_dir(d.join("sub")).unwrap();
    symlink("sub", d.join("dirlink")).unwrap();
    symlink("sub/target.txt", d.join("dangling")).unwrap();
    fs::write(d.join("existing.pem"), "old").unwrap();
    let cases: Vec<(String, String)> = [
        ("write_read", "write_read w.txt"),
        ("open", "open o.txt"),
        ("open dirlink", "open dirlink/o2.txt"),
        ("open dangling", "open dangling"),
        ("open existing denied name", "open existing.pem"),
        ("openat", "openat sub at.txt"),
        ("openat2", "openat2 o2.txt"),
        ("creat", "creat c.txt"),
        ("mknod", "mknod n.txt"),
        ("mkfifo", "mkfifo fifo"),
        ("rename", "rename o.txt renamed.txt"),
        ("renameat2", "renameat2 c.txt sub/moved.txt"),
        ("link", "link w.txt hard.txt"),
        ("symlink", "symlink w.txt soft.txt"),
        ("tmpfile", "tmpfile . tmp1.txt"),
        ("tmpfile_empty", "tmpfile_empty sub sub/tmp2.txt"),
        ("open_excl exists", "open_excl w.txt"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let mut script = script_of(&cases);
    script.push_str(
        "umask 077; printf 'umask: '; \"$ATTACK\" write_read u.txt | tr '\\n' ' '; echo\n",
    );
    let out = sb.sh(&script);
    assert!(out.status.success());
    let res = results(&out);
    for (label, r) in &res {
        match label.as_str() {
            "write_read" => assert_eq!(r, "mode 644"),
            "open_excl exists" => assert_eq!(r, "err EEXIST"),
            "umask" => assert_eq!(r.trim(), "mode 600 ok"),
            _ => assert_eq!(r, "ok", "{label}"),
        }
    }
    assert_eq!(res.len(), cases.len() + 1);
    assert_eq!(fs::read_to_string(d.join("w.txt")).unwrap(), "payload\n");
    assert_eq!(fs::read_to_string(d.join("hard.txt")).unwrap(), "payload\n");
    assert_eq!(
        fs::read_link(d.join("soft.txt")).unwrap(),
        Path::new("w.txt")
    );
    assert!(d.join("sub/o2.txt").is_file());
    assert!(d.join("sub/target.txt").is_file());
    assert!(d.join("sub/at.txt").is_file());
    assert!(d.join("renamed.txt").is_file() && !d.join("o.txt").exists());
    assert!(d.join("sub/moved.txt").is_file());
    assert!(
        fs::symlink_metadata(d.join("fifo"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert_eq!(fs::read_to_string(d.join("tmp1.txt")).unwrap(), "tmp\n");
    assert_eq!(fs::read_to_string(d.join("sub/tmp2.txt")).unwrap(), "tmp\n");
    // Opening an existing file of a denied name is not creating one.
    assert_eq!(fs::read_to_string(d.join("existing.pem")).unwrap(), "old");
}

#[test]
fn each_creation_is_made_under_its_creators_umask_of_that_moment() {
    // Another thread changes the umask after a creation, a thread creates
    // under one the main thread set, a child under an inherited one and
    // one of its own: the guard (which remembers umasks between calls)
    // gives exactly the modes the kernel gives without it.
    let Some(sb) = Sandbox::new() else { return };
    let run = |guarded: bool, dir: &str| {
        let out = sb.sh_with(
            guarded,
            &format!("mkdir {dir} && cd {dir} && \"$ATTACK\" umask_threads"),
        );
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run(false, "plain");
    assert_eq!(plain.trim(), "modes 644 600 640 640 666 640");
    assert_eq!(run(true, "guarded"), plain);
}

#[test]
fn mkdir_p_and_ordinary_directories_work() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    // A directory of a denied name made before the guard: creating it again
    // is EEXIST (as without the guard), so `mkdir -p` goes through it.
    fs::create_dir(d.join("certs.pem")).unwrap();
    let out = sb.sh(
        "set -e; umask 022; mkdir -p a/b/c; mkdir a/b/c/d/; mkdir -p keys.d/x.pem.d; \
         umask 077; mkdir private; printf 'again: '; \"$ATTACK\" mkdir a || true; \
         printf 'at: '; \"$ATTACK\" mkdirat a/b at-dir; \
         printf 'missing parent: '; \"$ATTACK\" mkdir no/such/dir || true; \
         printf 'existing denied: '; \"$ATTACK\" mkdir certs.pem || true; \
         umask 022; mkdir -p certs.pem/inner; (umask 027; mkdir g27); mkdir back",
    );
    assert!(out.status.success());
    assert!(d.join("certs.pem/inner").is_dir());
    let res = results(&out);
    assert_eq!(
        res,
        [
            ("again", "err EEXIST"),
            ("at", "ok"),
            ("missing parent", "err ENOENT"),
            ("existing denied", "err EEXIST")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let mode = |p: &str| fs::metadata(d.join(p)).unwrap().permissions().mode() & 0o7777;
    for p in ["a", "a/b", "a/b/c", "a/b/c/d", "keys.d/x.pem.d"] {
        assert!(d.join(p).is_dir(), "{p}");
        assert_eq!(mode(p), 0o755, "{p}");
    }
    assert_eq!(mode("private"), 0o700);
    assert_eq!(mode("a/b/at-dir"), 0o700);
    // Each call is made under its caller's umask at that moment, also when
    // it changes back and forth between callers.
    assert_eq!(mode("certs.pem/inner"), 0o755);
    assert_eq!(mode("g27"), 0o750);
    assert_eq!(mode("back"), 0o755);
    let (handled, denied) = guard_stats(&out);
    assert!(handled >= 8, "{handled}");
    assert_eq!(denied, 0);
}

#[test]
fn rename_exchange_is_refused_when_either_name_is_denied() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    fs::write(d.join("a.txt"), "allowed").unwrap();
    fs::write(d.join("b.txt"), "other").unwrap();
    fs::write(d.join("x.pem"), "secret").unwrap();
    fs::create_dir(d.join("sub")).unwrap();
    fs::write(d.join("sub/.env"), "env").unwrap();
    let out = sb.sh("printf 'new denied: '; \"$ATTACK\" exchange a.txt x.pem; \
         printf 'old denied: '; \"$ATTACK\" exchange x.pem a.txt; \
         printf 'across dirs: '; \"$ATTACK\" exchange sub/.env b.txt; \
         printf 'upper case: '; \"$ATTACK\" exchange a.txt X.PEM; \
         printf 'allowed: '; \"$ATTACK\" exchange a.txt b.txt");
    let res = results(&out);
    let r = |k: &str| res.iter().find(|(a, _)| a == k).map(|(_, b)| b.as_str());
    assert_eq!(r("new denied"), Some("err EACCES"));
    assert_eq!(r("old denied"), Some("err EACCES"));
    assert_eq!(r("across dirs"), Some("err EACCES"));
    // Refused before the kernel would say ENOENT.
    assert_eq!(r("upper case"), Some("err EACCES"));
    assert_eq!(r("allowed"), Some("ok"));
    assert_eq!(fs::read_to_string(d.join("x.pem")).unwrap(), "secret");
    assert_eq!(fs::read_to_string(d.join("sub/.env")).unwrap(), "env");
    assert_eq!(fs::read_to_string(d.join("a.txt")).unwrap(), "other");
    assert_eq!(fs::read_to_string(d.join("b.txt")).unwrap(), "allowed");
    assert_eq!(guard_stats(&out).1, 4);
}

#[test]
fn denied_names_in_any_ascii_case_are_refused() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    fs::write(d.join("allowed.txt"), "a").unwrap();
    let mut cases = Vec::new();
    for name in ["X.PEM", ".ENV", "ID.Key", "a.Pem", ".eNv"] {
        for op in ["open", "creat", "openat2", "mknod", "mkdir"] {
            cases.push((format!("{op} {name}"), format!("{op} '{name}'")));
        }
        for op in ["rename", "link", "symlink"] {
            cases.push((format!("{op} {name}"), format!("{op} allowed.txt '{name}'")));
        }
    }
    cases.push(("open ok".into(), "open 'X.PEM.txt'".into()));
    let out = sb.sh(&script_of(&cases));
    let res = results(&out);
    assert_eq!(res.len(), cases.len());
    for (label, r) in &res {
        let want = if label == "open ok" {
            "ok"
        } else {
            "err EACCES"
        };
        assert_eq!(r, want, "{label}");
    }
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
    assert_eq!(guard_stats(&out).1, cases.len() as u64 - 1);
}

#[test]
fn bypass_calls_are_refused_outright() {
    let Some(sb) = Sandbox::new() else { return };
    let out =
        sb.sh("printf 'iouring: '; \"$ATTACK\" iouring; printf 'handle: '; \"$ATTACK\" handle");
    let res = results(&out);
    assert_eq!(
        res,
        vec![
            ("iouring".to_string(), "err EPERM".to_string()),
            ("handle".to_string(), "err EPERM".to_string())
        ]
    );
}

#[test]
fn a_thread_rewriting_the_path_never_creates_a_denied_name() {
    let Some(sb) = Sandbox::new() else { return };
    let out = sb.sh(
        "\"$ATTACK\" race ok.txt x.pem 3000 && \"$ATTACK\" race_rename ok.txt id.key 2000 \
         && \"$ATTACK\" race sub-ok .env 2000",
    );
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(stdout(&out).matches("created").count(), 3);
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
}

#[test]
fn the_guard_fails_closed_when_the_supervisor_dies() {
    let Some(sb) = Sandbox::new() else { return };
    let out = sb.sh("\"$ATTACK\" killsup after.txt");
    assert!(!stdout(&out).contains("created"));
    assert!(!sb.path().join("after.txt").exists());
}

#[test]
fn exit_status_is_the_commands() {
    let Some(sb) = Sandbox::new() else { return };
    assert_eq!(sb.sh("exit 7").status.code(), Some(7));
    assert_eq!(sb.sh("kill -TERM $$").status.code(), Some(128 + 15));
    // The supervisor ignores these from before the fork; the command gets
    // them back as they were (here: the default action).
    assert_eq!(sb.sh("kill -INT $$; exit 9").status.code(), Some(128 + 2));
    assert_eq!(sb.sh("kill -QUIT $$; exit 9").status.code(), Some(128 + 3));
}

#[test]
fn only_the_capabilities_asked_for_are_kept_and_only_those_the_guard_allows() {
    let Some(sb) = Sandbox::new() else { return };
    // bubblewrap keeps root's capabilities; without root there are none.
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let script =
        "grep -E '^Cap(Eff|Bnd)' /proc/self/status; chroot / true 2>/dev/null && echo CHROOTED";
    let keep = [
        "--keep-capability",
        "sys_chroot",
        "--keep-capability",
        "setuid",
    ];
    let out = sb.output(sb.command(Some(&[".env"]), &keep, script), script);
    let text = stdout(&out);
    // setuid (7) and sys_chroot (18), nothing else, bounding set included.
    assert!(text.contains("CapEff:\t0000000000040080"), "{text}");
    assert!(text.contains("CapBnd:\t0000000000040080"), "{text}");
    assert!(text.contains("CHROOTED"), "{text}");
    // By default none at all.
    let out = sb.output(sb.command(Some(&[".env"]), &[], script), script);
    let text = stdout(&out);
    assert!(text.contains("CapEff:\t0000000000000000"), "{text}");
    assert!(!text.contains("CHROOTED"), "{text}");
    // One that would reach past the guard is a usage error.
    for cap in ["sys_admin", "sys_ptrace", "dac_override"] {
        let out = sb.output(
            sb.command(Some(&[".env"]), &["--keep-capability", cap], script),
            script,
        );
        assert_eq!(out.status.code(), Some(125), "{cap}");
    }
}

#[test]
fn tar_extraction_runs_and_denied_members_are_refused() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    let stage = tempfile::tempdir().unwrap();
    let s = stage.path();
    fs::create_dir_all(s.join("proj/src/deep")).unwrap();
    for i in 0..200 {
        fs::write(s.join(format!("proj/src/f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    fs::write(s.join("proj/src/deep/main.rs"), "fn main() {}\n").unwrap();
    symlink("deep/main.rs", s.join("proj/src/link.rs")).unwrap();
    fs::write(s.join("proj/secret.pem"), "-----BEGIN-----\n").unwrap();
    let tar = |name: &str, members: &[&str]| {
        let st = Command::new("tar")
            .arg("-cf")
            .arg(d.join(name))
            .arg("-C")
            .arg(s)
            .args(members)
            .status()
            .unwrap();
        assert!(st.success());
    };
    tar("good.tar", &["proj/src"]);
    tar("bad.tar", &["proj/secret.pem", "proj/src/deep/main.rs"]);
    let out = sb.sh(
        "mkdir g b && tar -xf good.tar -C g && echo good-ok; tar -xf bad.tar -C b; echo bad=$?",
    );
    let text = stdout(&out);
    assert!(text.contains("good-ok"));
    assert!(text.contains("bad=2"), "{text}");
    for i in 0..200 {
        assert_eq!(
            fs::read_to_string(d.join(format!("g/proj/src/f{i}.txt"))).unwrap(),
            format!("file {i}\n")
        );
    }
    assert_eq!(
        fs::read_link(d.join("g/proj/src/link.rs")).unwrap(),
        Path::new("deep/main.rs")
    );
    assert!(d.join("b/proj/src/deep/main.rs").is_file());
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
}

#[test]
fn git_init_add_commit_runs_under_the_guard() {
    let Some(sb) = Sandbox::new() else { return };
    if test_support::tool("git", "apt-get install git").is_none() {
        return;
    }
    let out = sb.sh(
        "set -e; git init -q repo; cd repo; mkdir -p a/b; \
         for i in $(seq 1 100); do echo $i > a/b/f$i.txt; done; \
         git add -A; git -c user.name=t -c user.email=t@example.invalid commit -qm init; \
         git log --oneline | wc -l; git status --porcelain | wc -l; git fsck --no-progress 2>&1 | wc -l; \
         if echo k > id.key 2>/dev/null; then echo created; fi",
    );
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).split_whitespace().collect::<Vec<_>>(),
        ["1", "0", "0"]
    );
    assert!(sb.path().join("repo/.git/HEAD").is_file());
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
}

#[test]
fn absolute_path_rules_deny_one_place_only() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    fs::create_dir(d.join("hooks")).unwrap();
    symlink("hooks", d.join("hooklink")).unwrap();
    let rule = format!("{}/hooks/pre-*", d.display());
    let out = sb.sh_rules(
        true,
        &[rule.as_str()],
        "printf 'in: '; \"$ATTACK\" open hooks/pre-commit; \
         printf 'via link: '; \"$ATTACK\" mknod hooklink/pre-push; \
         printf 'elsewhere: '; \"$ATTACK\" open pre-commit",
    );
    let res = results(&out);
    let r = |k: &str| res.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone());
    assert_eq!(r("in").as_deref(), Some("err EACCES"));
    assert_eq!(r("via link").as_deref(), Some("err EACCES"));
    assert_eq!(r("elsewhere").as_deref(), Some("ok"));
    assert!(!d.join("hooks/pre-commit").exists() && !d.join("hooks/pre-push").exists());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("handled 3 calls, denied 2"), "{err}");
}

#[test]
fn a_blocking_fifo_open_never_stalls_other_creations() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    // The writer's `> p` waits for a reader; the reader first creates a
    // log file. Opened on the supervisor itself, the writer's open would
    // hold every later creation, the reader's included: a deadlock. An
    // existing FIFO of a denied name may be opened too (nothing is created).
    let made = Command::new("mkfifo")
        .arg(d.join("x.pem"))
        .status()
        .unwrap();
    assert!(made.success());
    let script = "mkfifo p; (echo hi > p) & (echo key > x.pem) & sleep 0.3; \
                  echo start > log.txt; cat p; cat x.pem; wait; cat log.txt";
    let inner = sb.command(Some(&DENY), &[], script);
    let mut c = Command::new("timeout");
    c.arg("20").arg(inner.get_program()).args(inner.get_args());
    c.envs(inner.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))));
    let out = sb.output(c, script);
    assert!(
        out.status.success(),
        "status {:?} (124: deadlocked)",
        out.status
    );
    assert_eq!(stdout(&out), "hi\nkey\nstart\n");
    assert!(d.join("log.txt").is_file());
    let ft = fs::symlink_metadata(d.join("x.pem")).unwrap().file_type();
    assert!(ft.is_fifo(), "still the FIFO, nothing created in its place");
}

#[test]
fn a_signal_storm_never_makes_a_performed_call_run_twice() {
    let Some(sb) = Sandbox::new() else { return };
    let out = sb.sh("\"$ATTACK\" signal_storm 1000");
    assert!(out.status.success());
    let text = stdout(&out);
    let mut words = text.split_whitespace();
    assert_eq!(words.next(), Some("failed"), "{text}");
    assert_eq!(words.next(), Some("0"), "every call ran once: {text}");
    assert_eq!(words.next(), Some("signals"));
    let signals: u64 = words.next().unwrap().parse().unwrap();
    assert!(signals > 100, "the timer kept interrupting: {text}");
}

#[test]
fn the_supervisors_own_proc_entries_and_capabilities_are_out_of_reach() {
    let Some(sb) = Sandbox::new() else { return };
    // bubblewrap run as root keeps most capabilities; the guard drops them
    // all, so nothing can trace or rewrite the supervisor, and paths into
    // its /proc entries (directly or through a planted link) are refused.
    let out = sb.sh("grep CapEff /proc/self/status; \
         (exec 3<>/proc/$PPID/mem) 2>/dev/null && echo SUP-MEM-OPENED; \
         ln -s /proc/self evil; (echo x > evil/mem) 2>/dev/null && echo EVIL-OPENED; \
         (echo x > /proc/$PPID/fd/0) 2>/dev/null && echo SUP-FD-OPENED; \
         unshare -Urm true 2>/dev/null && echo UNSHARED; \
         \"$ATTACK\" nondumpable_create nd.txt");
    let text = stdout(&out);
    assert!(text.contains("CapEff:\t0000000000000000"), "{text}");
    for bad in ["SUP-MEM-OPENED", "EVIL-OPENED", "SUP-FD-OPENED", "UNSHARED"] {
        assert!(!text.contains(bad), "{bad}: {text}");
    }
    // A process that makes itself non-dumpable still creates files.
    assert!(text.ends_with("ok\n"), "{text}");
    assert!(sb.path().join("nd.txt").is_file());
}

#[test]
fn magic_links_reach_the_callers_own_files() {
    let Some(sb) = Sandbox::new() else { return };
    let script = "echo a > /dev/stdout; echo b > /proc/self/fd/1; echo c > /dev/stderr; \
                  exec 4>out.txt; echo v > /dev/fd/4; cat out.txt; \
                  mkdir d; exec 5<d; (echo k > /dev/fd/5/x.pem) 2>/dev/null || echo PEM-REFUSED; \
                  echo ok > /dev/fd/5/ok.txt; cat d/ok.txt; \
                  echo 500 > /proc/self/oom_score_adj; cat /proc/self/oom_score_adj";
    let plain = sb.sh_with(false, &format!("rm -rf d out.txt; {script}"));
    let guarded = sb.sh(&format!("rm -rf d out.txt; {script}"));
    assert_eq!(stdout(&guarded), "a\nb\nv\nPEM-REFUSED\nok\n500\n");
    // The same as without the guard, except the refused name.
    assert_eq!(stdout(&plain), "a\nb\nv\nok\n500\n");
    let err = String::from_utf8_lossy(&guarded.stderr);
    assert!(err.starts_with("c\n"), "{err}");
    assert!(!sb.path().join("d/x.pem").exists());
}

#[test]
fn path_rules_hold_against_moving_a_directory_into_place() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path().to_str().unwrap().to_string();
    let rules = [
        ".env".to_string(),
        format!("{d}/.claude/settings.json"),
        format!("{d}/.git/hooks/*"),
    ];
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let out = sb.sh_rules(
        true,
        &rules,
        "mkdir c h; echo '{}' > c/settings.json; echo hook > h/pre-commit; \
         mv c .claude 2>/dev/null && echo MOVED-CLAUDE; \
         ln -s c .claude 2>/dev/null && echo LINKED-CLAUDE; \
         mkdir .git; mv h .git/hooks 2>/dev/null && echo MOVED-HOOKS; \
         mkdir .claude && echo x > .claude/other.json && echo OTHER-OK; \
         (echo x > .claude/settings.json) 2>/dev/null && echo SETTINGS-WRITTEN; true",
    );
    let text = stdout(&out);
    for bad in [
        "MOVED-CLAUDE",
        "LINKED-CLAUDE",
        "MOVED-HOOKS",
        "SETTINGS-WRITTEN",
    ] {
        assert!(!text.contains(bad), "{bad}: {text}");
    }
    assert!(text.contains("OTHER-OK"), "{text}");
    assert!(!sb.path().join(".claude/settings.json").exists());
    assert!(!sb.path().join(".git/hooks/pre-commit").exists());
}

#[test]
fn unix_sockets_cannot_be_bound_under_a_denied_name() {
    let Some(sb) = Sandbox::new() else { return };
    let cases: Vec<(String, String)> = [
        ("pem", "bind_unix x.pem"),
        ("env", "bind_unix sub/.env"),
        ("KEY", "bind_unix ID.KEY"),
        ("ok", "bind_unix ok.sock"),
        ("abstract", "bind_abstract x.pem"),
        ("tcp", "bind_tcp"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    fs::create_dir(sb.path().join("sub")).unwrap();
    let out = sb.sh(&script_of(&cases));
    let got = results(&out);
    let want = [
        ("pem", "err EACCES"),
        ("env", "err EACCES"),
        ("KEY", "err EACCES"),
        ("ok", "ok"),
        ("abstract", "ok"),
        ("tcp", "ok"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(got, want);
    assert!(sb.denied_entries().is_empty(), "{:?}", sb.denied_entries());
    let ft = fs::symlink_metadata(sb.path().join("ok.sock"))
        .unwrap()
        .file_type();
    assert!(ft.is_socket());
}

#[test]
fn binds_and_links_cannot_reach_a_denied_name_or_path_rule() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path().to_str().unwrap().to_string();
    let rules = [
        "*.pem".to_string(),
        format!("{d}/sub/sock"),
        format!("{d}/a/s.json"),
    ];
    let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
    let out = sb.sh_rules(
        true,
        &rules,
        "mkdir sub x; echo secret > x/s.json; \
         printf 'direct: '; \"$ATTACK\" bind_unix sub/sock; \
         ln -s /proc/self/cwd me; cd sub; printf 'via link: '; \"$ATTACK\" bind_unix ../me/sock; cd ..; \
         ln -s x lnk; printf 'hardlink: '; \"$ATTACK\" link lnk a; \
         printf 'race: '; \"$ATTACK\" bind_race ok.sock x.pem 3000",
    );
    let got = results(&out);
    let get = |k: &str| {
        got.iter()
            .find(|(a, _)| a == k)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    assert_eq!(get("direct"), "err EACCES");
    // Through a link into /proc/self the parent is resolved for the
    // supervisor (its own working directory): whatever is bound is the
    // checked name, never the protected one.
    assert!(!get("via link").is_empty(), "{got:?}");
    assert_eq!(get("hardlink"), "err EACCES");
    assert_eq!(get("race"), "held 3000");
    assert!(!sb.path().join("sub/sock").exists());
    assert!(!sb.path().join("a").exists());
    assert!(sb.denied_entries().is_empty(), "{:?}", sb.denied_entries());
}

#[test]
fn fifo_opens_of_callers_that_are_gone_are_released() {
    let Some(sb) = Sandbox::new() else { return };
    // 70 writers killed while they wait for a reader: their opens must not
    // keep waiting in the supervisor, or later FIFO opens would stall.
    let script = "for i in $(seq 70); do mkfifo f$i; timeout 0.05 sh -c \"echo x > f$i\"; done; \
                  for j in $(seq 100); do [ $(ls /proc/$PPID/task | wc -l) = 1 ] && break; sleep 0.1; done; \
                  echo threads $(ls /proc/$PPID/task | wc -l); \
                  mkfifo g; (echo hi > g &); sleep 0.2; echo start > log.txt; \
                  cat g; cat log.txt";
    let inner = sb.command(Some(&DENY), &[], script);
    let mut c = Command::new("timeout");
    c.arg("60").arg(inner.get_program()).args(inner.get_args());
    c.envs(inner.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))));
    let out = sb.output(c, script);
    assert!(
        out.status.success(),
        "status {:?} (124: stalled)",
        out.status
    );
    // The supervisor is back to its one thread: no worker still waits.
    assert_eq!(stdout(&out), "threads 1\nhi\nstart\n");
}

#[test]
fn name_rules_do_not_hold_in_a_state_dir_and_nothing_made_there_moves_out_whole() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    fs::create_dir_all(d.join("state/sessions")).unwrap();
    fs::create_dir_all(d.join("work")).unwrap();
    let state = d.join("state").display().to_string();
    let c = sb.command(
        Some(&["*.key", "*.pem"]),
        &["--state-dir", &state],
        "printf 'in the state dir: '; \"$ATTACK\" open state/sessions/1.abc.key; \
         printf 'in the work dir: '; \"$ATTACK\" open work/id.key; \
         printf 'the state dir as a name: '; \"$ATTACK\" mkdir state.pem; \
         mkdir state/tree && : > state/tree/inner.key; \
         printf 'a tree moved out: '; \"$ATTACK\" rename state/tree work/tree; \
         printf 'a file moved out: '; \"$ATTACK\" rename state/sessions/1.abc.key work/plain; \
         : > work/plain2; \
         printf 'a file moved in: '; \"$ATTACK\" rename work/plain2 state/plain2; \
         printf 'copied out: '; cp -r state/tree work/tree 2>/dev/null; echo done",
    );
    let out = sb.output(c, "state dir");
    let res = results(&out);
    let r = |k: &str| res.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone());
    assert_eq!(
        r("in the state dir").as_deref(),
        Some("ok"),
        "the runner's own key"
    );
    assert_eq!(r("in the work dir").as_deref(), Some("err EACCES"));
    assert_eq!(
        r("the state dir as a name").as_deref(),
        Some("err EACCES"),
        "a name beside the state dir is under the rules"
    );
    assert_eq!(
        r("a tree moved out").as_deref(),
        Some("err EXDEV"),
        "a tree leaves only by a copy"
    );
    assert_eq!(r("a file moved out").as_deref(), Some("err EXDEV"));
    assert_eq!(r("a file moved in").as_deref(), Some("err EXDEV"));
    assert!(d.join("state/sessions/1.abc.key").exists());
    assert!(d.join("state/tree/inner.key").exists());
    // The copy made the directory, and the rules refused its key.
    assert!(d.join("work/tree").is_dir());
    assert!(!d.join("work/tree/inner.key").exists());
    assert!(!d.join("work/id.key").exists());
}
