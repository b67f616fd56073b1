//! Ordinary work under the guard, under real bubblewrap: cloning a git
//! repository, `cargo new`, extracting a tarball; and the denial reports.

use crate::support::*;
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every regular file under `root` (skipping `.git`), by relative path.
fn files_under(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ty = e.file_type().unwrap();
            if ty.is_dir() {
                if e.file_name() != ".git" {
                    stack.push(e.path());
                }
            } else if ty.is_file() {
                let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
                out.insert(rel, fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

fn git(home: &Path) -> Command {
    let mut c = Command::new("git");
    c.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .args(["-c", "init.defaultBranch=main"]);
    c
}

#[test]
fn git_clone_of_a_large_repository_works() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    let src = d.join("src");
    let mut want = BTreeMap::new();
    for i in 0..30 {
        for j in 0..10 {
            let dir = src.join(format!("d{i:02}/s{j}"));
            fs::create_dir_all(&dir).unwrap();
            for k in 0..10 {
                let rel = PathBuf::from(format!("d{i:02}/s{j}/f{k}.txt"));
                let body = format!("{i} {j} {k}\n").repeat(1 + (i * j + k) % 7);
                fs::write(src.join(&rel), &body).unwrap();
                want.insert(rel, body.into_bytes());
            }
        }
    }
    assert_eq!(want.len(), 3000);
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    ] {
        let st = git(d).arg("-C").arg(&src).args(args).status().unwrap();
        assert!(st.success(), "git {args:?}");
    }
    let script = "set -e; \
        git -c init.defaultBranch=main clone -q --no-local src packed; \
        git -c init.defaultBranch=main clone -q src linked; \
        printf 'packed: '; git -C packed status --porcelain | wc -l; \
        printf 'linked: '; git -C linked status --porcelain | wc -l; \
        printf 'denied: '; if echo k > linked/id.key; then echo created; else echo refused; fi";
    let mut c = sb.command(Some(&DENY), &[], script);
    c.env("GIT_CONFIG_NOSYSTEM", "1");
    let out = sb.output(c, script);
    assert!(out.status.success());
    let res = results(&out);
    let r = |k: &str| res.iter().find(|(a, _)| a == k).map(|(_, b)| b.trim());
    assert_eq!(r("packed"), Some("0"));
    assert_eq!(r("linked"), Some("0"));
    assert_eq!(r("denied"), Some("refused"));
    for clone in ["packed", "linked"] {
        let got = files_under(&d.join(clone));
        assert_eq!(got.len(), 3000, "{clone}");
        assert!(got == want, "{clone}: the working tree differs");
    }
    // The local clone hard-linked the source's objects, through the guard.
    let linked_objects = files_under(&d.join("linked/.git/objects"));
    let shared = fs::read_dir(d.join("linked/.git/objects"))
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            e.file_type().unwrap().is_dir().then(|| e.path())
        })
        .flat_map(|dir| fs::read_dir(dir).unwrap())
        .filter(|e| e.as_ref().unwrap().metadata().unwrap().nlink() >= 2)
        .count();
    assert!(shared > 3000, "{shared} of {} linked", linked_objects.len());
    let (handled, denied) = guard_stats(&out);
    assert!(handled > 6000, "{handled}");
    assert_eq!(denied, 1);
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
}

#[test]
fn cargo_new_with_the_test_toolchain_works() {
    let Some(sb) = Sandbox::new() else { return };
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .or_else(|| option_env!("CARGO").map(PathBuf::from))
        .expect("cargo sets CARGO");
    assert!(cargo.is_file(), "{}", cargo.display());
    let d = sb.path();
    let cargo_home = d.join("cargo-home");
    fs::create_dir(&cargo_home).unwrap();
    let script = "set -e; \"$CARGO_UNDER_TEST\" new -q proj; echo made";
    let mut c = sb.command(Some(&DENY), &[], script);
    c.env("CARGO_UNDER_TEST", &cargo)
        .env("CARGO_HOME", &cargo_home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("CARGO_TARGET_DIR");
    let out = sb.output(c, script);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "made");
    let p = d.join("proj");
    assert!(p.join("Cargo.toml").is_file() && p.join("src/main.rs").is_file());
    assert!(
        fs::read_to_string(p.join("Cargo.toml"))
            .unwrap()
            .contains("name = \"proj\"")
    );
    // Not inside a repository, so cargo made one with git.
    assert!(p.join(".git/HEAD").is_file() && p.join(".gitignore").is_file());
    assert!(guard_stats(&out).0 > 0);
}

#[test]
fn tarball_extraction_refuses_only_the_denied_members() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    let stage = tempfile::tempdir().unwrap();
    let s = stage.path();
    let mut want = BTreeMap::new();
    for i in 0..20 {
        fs::create_dir_all(s.join(format!("data/d{i:02}"))).unwrap();
        for k in 0..100 {
            let rel = format!("data/d{i:02}/f{k:03}.txt");
            let body = format!("member {i} {k}\n").repeat(1 + k % 5);
            fs::write(s.join(&rel), &body).unwrap();
            want.insert(PathBuf::from(rel), body.into_bytes());
        }
    }
    fs::create_dir(s.join("secrets")).unwrap();
    fs::write(s.join("secrets/x.pem"), "-----BEGIN-----\n").unwrap();
    fs::write(s.join(".env"), "TOKEN=1\n").unwrap();
    let st = Command::new("tar")
        .arg("-cf")
        .arg(d.join("big.tar"))
        .arg("-C")
        .arg(s)
        .args(["data", "secrets", ".env"])
        .status()
        .unwrap();
    assert!(st.success());
    let out = sb.sh("mkdir out && tar -xf big.tar -C out; echo tar=$?");
    assert_eq!(stdout(&out).trim(), "tar=2");
    let err = String::from_utf8_lossy(&out.stderr);
    for member in ["secrets/x.pem", ".env"] {
        assert!(
            err.lines()
                .any(|l| l.contains(member) && l.contains("Permission denied")),
            "{member}: {err}"
        );
    }
    let o = d.join("out");
    let got = files_under(&o);
    assert_eq!(got.len(), 2000);
    assert!(got == want, "extracted files differ");
    assert!(o.join("secrets").is_dir());
    assert!(!o.join("secrets/x.pem").exists() && !o.join(".env").exists());
    assert_eq!(guard_stats(&out).1, 2);
}

/// Give the command a pipe as descriptor 3; returns the read end.
#[allow(
    unsafe_code,
    reason = "dup2 in pre_exec to hand the test a descriptor 3"
)]
fn as_fd3(c: &mut Command, fd: i32) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes async-signal-safe calls (dup2, fcntl) on descriptor numbers.
    unsafe {
        c.pre_exec(move || {
            let r = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A pipe whose writing end the command has as descriptor 3.
fn pipe_as_fd3(c: &mut Command) -> (std::io::PipeReader, std::io::PipeWriter) {
    let (r, w) = std::io::pipe().unwrap();
    as_fd3(c, w.as_raw_fd());
    (r, w)
}

/// A pipe whose reading end the command has as descriptor 3.
fn reading_pipe_as_fd3(c: &mut Command) -> (std::io::PipeReader, std::io::PipeWriter) {
    let (r, w) = std::io::pipe().unwrap();
    as_fd3(c, r.as_raw_fd());
    (r, w)
}

fn read_all(mut r: std::io::PipeReader, w: std::io::PipeWriter) -> Vec<u8> {
    drop(w);
    let mut buf = Vec::new();
    r.read_to_end(&mut buf).unwrap();
    buf
}

fn denial_lines(buf: &[u8]) -> Vec<name_guard::Denial> {
    assert!(buf.is_empty() || buf.ends_with(b"\n"));
    buf.split_inclusive(|&c| c == b'\n')
        .map(|l| name_guard::parse_denial_line(l).unwrap())
        .collect()
}

#[test]
fn denials_are_reported_on_the_report_fd_and_the_command_cannot_write_it() {
    let Some(sb) = Sandbox::new() else { return };
    let d = fs::canonicalize(sb.path()).unwrap();
    // Control: bubblewrap hands descriptor 3 on.
    let script = "echo unguarded >&3";
    let mut c = sb.command(None, &[], script);
    let (r, w) = pipe_as_fd3(&mut c);
    assert!(sb.output(c, script).status.success());
    assert_eq!(read_all(r, w), b"unguarded\n");

    let script = "touch a.txt; \
        printf 'touch: '; if touch x.pem 2>/dev/null; then echo created; else echo refused; fi; \
        printf 'mkdir: '; if mkdir id.key 2>/dev/null; then echo created; else echo refused; fi; \
        printf 'mv: '; if mv a.txt .env 2>/dev/null; then echo created; else echo refused; fi; \
        printf 'fd3: '; if (echo 'open /forged' >&3) 2>/dev/null; then echo open; else echo closed; fi";
    let mut c = sb.command(Some(&DENY), &["--report-fd", "3"], script);
    let (r, w) = pipe_as_fd3(&mut c);
    let out = sb.output(c, script);
    let buf = read_all(r, w);
    eprintln!("--- report:\n{}", String::from_utf8_lossy(&buf));
    assert!(out.status.success());
    let res = results(&out);
    assert_eq!(
        res,
        [
            ("touch", "refused"),
            ("mkdir", "refused"),
            ("mv", "refused"),
            ("fd3", "closed")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let got: Vec<(name_guard::DeniedCall, String)> = denial_lines(&buf)
        .into_iter()
        .map(|x| (x.call, x.path))
        .collect();
    let at = |n: &str| d.join(n).to_str().unwrap().to_string();
    use name_guard::DeniedCall::{Mkdir, Open, Rename};
    assert_eq!(
        got,
        [
            (Open, at("x.pem")),
            (Mkdir, at("id.key")),
            (Rename, at(".env"))
        ]
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(" calls, denied 3, reports dropped 0"), "{err}");
    assert!(d.join("a.txt").is_file());
    assert_eq!(sb.denied_entries(), Vec::<PathBuf>::new());
}

#[test]
fn a_full_report_pipe_drops_lines_and_never_stalls_the_guard() {
    let Some(sb) = Sandbox::new() else { return };
    let d = fs::canonicalize(sb.path()).unwrap();
    // Nobody reads the pipe while the command runs: about 64 KiB of lines
    // fit, the rest are dropped and counted.
    let n = 8000;
    // A name with a newline and a byte that is not UTF-8 in it.
    let script = format!("\"$ATTACK\" deny_many {n} \"$(printf 'sub/x\\n\\377.pem')\"");
    fs::create_dir(d.join("sub")).unwrap();
    let mut c = sb.command(Some(&DENY), &["--report-fd", "3"], &script);
    let (r, w) = pipe_as_fd3(&mut c);
    let out = sb.output(c, &script);
    let buf = read_all(r, w);
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), format!("refused {n}"));
    let lines = denial_lines(&buf);
    let want = format!("{}/sub/x\n\u{fffd}.pem", d.display());
    assert!(
        lines
            .iter()
            .all(|l| l.call == name_guard::DeniedCall::Open && l.path == want)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let dropped: usize = err
        .lines()
        .find_map(|l| l.split_once("reports dropped "))
        .map(|(_, v)| v.trim().parse().unwrap())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(dropped > 0, "{err}");
    assert!(!lines.is_empty());
    assert_eq!(lines.len() + dropped, n);
    assert_eq!(guard_stats(&out).1, n as u64);
}

/// Runs `script` under the guard with `--updates-fd 3`, writes `updates` on
/// that descriptor once the script has started, then lets it go on.
fn with_updates(sb: &Sandbox, updates: &[u8], script: &str) -> Output {
    use std::io::Write as _;
    let mut c = sb.command(Some(&DENY), &["--updates-fd", "3"], script);
    let (r, mut w) = reading_pipe_as_fd3(&mut c);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    drop(r);
    let d = fs::canonicalize(sb.path()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !d.join("started").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    w.write_all(updates).unwrap();
    // The guard reads it before it answers the next guarded call.
    fs::write(d.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "--- script:\n{script}\n--- stdout:\n{}\n--- stderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const AFTER_GO: &str = "touch started; while [ ! -e go ]; do sleep 0.02; done; \
    printf 'late: '; if touch late.txt 2>/dev/null; then echo created; else echo refused; fi; \
    printf 'other: '; if touch other.txt 2>/dev/null; then echo created; else echo refused; fi";

#[test]
fn a_path_rule_sent_while_the_command_runs_holds_from_then_on() {
    let Some(sb) = Sandbox::new() else { return };
    let d = fs::canonicalize(sb.path()).unwrap();
    let update =
        sandbox_core::GuardUpdate::Deny(d.join("late.txt").as_os_str().as_encoded_bytes().to_vec());
    let out = with_updates(&sb, &update.to_line().unwrap(), AFTER_GO);
    assert!(out.status.success());
    assert_eq!(
        results(&out),
        [("late", "refused"), ("other", "created")].map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert!(!d.join("late.txt").exists());
}

#[test]
fn a_rule_the_guard_cannot_take_on_makes_it_deny_every_name() {
    let Some(sb) = Sandbox::new() else { return };
    let d = fs::canonicalize(sb.path()).unwrap();
    // A protected path means nothing inside bubblewrap (no host rules), and
    // a line that is no rule at all: either closes the guard.
    for updates in [
        sandbox_core::GuardUpdate::Protect(d.join("x").as_os_str().as_encoded_bytes().to_vec())
            .to_line()
            .unwrap(),
        b"allow everything\n".to_vec(),
    ] {
        let _ = fs::remove_file(d.join("started"));
        let _ = fs::remove_file(d.join("go"));
        let out = with_updates(&sb, &updates, AFTER_GO);
        assert!(out.status.success());
        assert_eq!(
            results(&out),
            [("late", "refused"), ("other", "refused")]
                .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("could not be taken on"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn what_may_make_a_repository_is_noted_and_nothing_else() {
    let Some(sb) = Sandbox::new() else { return };
    let noted = |script: &str| -> Vec<u8> {
        let mut c = sb.command(Some(&DENY), &["--notify-fd", "3"], script);
        let (r, w) = pipe_as_fd3(&mut c);
        assert!(sb.output(c, script).status.success());
        read_all(r, w)
    };
    // Files made, written and renamed, a directory made: no note.
    assert_eq!(
        noted("touch f && echo x >> f && mv f g && mkdir plain && echo done"),
        b""
    );
    // A `.git` made (directory, file or by rename) or a directory moved:
    // at least one note each.
    for script in [
        "mkdir -p r && mkdir r/.git",
        "mkdir -p w && echo 'gitdir: /x' > w/.git",
        "mkdir -p v && touch v/g && mv v/g v/.GIT",
        "mkdir -p a/b && mv a c",
    ] {
        assert!(!noted(script).is_empty(), "{script}");
    }
}
