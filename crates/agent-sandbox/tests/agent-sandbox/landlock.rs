//! The Landlock mechanism end to end: real commands on the host under the
//! launcher's Landlock rules and supervisor, trying to break out. Run as
//! the current user and again, from the tests at the end, as root in a
//! user namespace without capabilities where no namespace can be made
//! (`user.max_user_namespaces = 0`: bubblewrap fails there) and as uid
//! 65534.

use agent_sandbox::{CommandIsolation, NameGuardLauncher, SandboxManager};
use connect_proxy::IpPolicy;
use sandbox_core::{
    Access, HostView, NativeMechanism, SandboxBindMount, SandboxSpec, probe_ambient,
};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const GUARD: &str = env!("CARGO_BIN_EXE_agent-sandbox-name-guard");
/// Set in a re-run: `userns` or `nobody`.
const RERUN: &str = "AGENT_SANDBOX_TEST_LANDLOCK_RERUN";

/// Whether this kernel enforces what the mechanism needs; fails with what
/// to do when not (never passes empty).
pub(super) fn landlock_available() -> bool {
    let host = sandbox_core::AmbientHost::from_ambient_untimed();
    let tried = host.try_landlock();
    test_support::require(
        tried.is_ok(),
        &format!("Landlock ABI 6 or later ({tried:?})"),
        "run the tests on Linux 6.12 or later with Landlock among the active LSMs (lsm=...,landlock)",
    )
}

struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("landlock-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in [
            "home/.ssh",
            "home/.aws",
            "sessions",
            "ws/.git/hooks",
            "ws/repos/orig",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/id_rsa"), "SECRET-KEY").unwrap();
        std::fs::write(root.join("home/.aws/credentials"), "AWS-SECRET").unwrap();
        std::fs::write(root.join("home/.bashrc"), "# rc\n").unwrap();
        std::fs::write(root.join("ws/.git/config"), "[core]\n").unwrap();
        std::fs::write(root.join("ws/repos/orig/README"), "original").unwrap();
        Tree(root)
    }
    fn p(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
    fn spec(&self, id: &str) -> SandboxSpec {
        let mut spec = SandboxSpec::new(id, "w");
        spec.bind_mounts
            .push(SandboxBindMount::new(self.p("ws"), Access::ReadWrite).unwrap());
        spec.bind_mounts
            .push(SandboxBindMount::new(self.p("home"), Access::ReadWrite).unwrap());
        spec.protected_paths.push(self.p("ws/repos/orig"));
        spec.guest_workdir = Some(self.p("ws"));
        spec
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn manager(tree: &Tree, grant: Option<&str>) -> SandboxManager {
    manager_isolated(tree, grant, crate::isolation())
}

fn manager_isolated(
    tree: &Tree,
    grant: Option<&str>,
    isolation: agent_sandbox::CommandIsolation,
) -> SandboxManager {
    let mut ip = IpPolicy::new();
    ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    let mut b = crate::builder();
    b.home(tree.p("home"))
        .temp_dir(tree.p("sessions"))
        .native_mechanism(NativeMechanism::Landlock)
        .name_guard_launcher(NameGuardLauncher::new(GUARD))
        .ip_policy(ip)
        .allow("localhost")
        .base_env(vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("GITHUB_TOKEN".into(), "ghp_must_not_pass".into()),
        ])
        .command_isolation(isolation);
    if let Some(g) = grant {
        b.allow_unix_socket(g);
    }
    b.build().unwrap()
}

use super::native::run;

fn python() -> bool {
    test_support::tool("python3", "apt-get install python3").is_some()
}

#[tokio::test]
async fn files_secrets_and_names_hold_under_landlock() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("files");
    // A hard link made on the host before launch reaches the protected file
    // under another, unprotected name.
    std::fs::hard_link(t.p("home/.bashrc"), t.p("ws/alias")).unwrap();
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("ll-files")).await.unwrap();
    assert_eq!(h.details["mechanism"], "landlock");
    assert!(
        h.details["label"]
            .as_str()
            .unwrap()
            .starts_with("landlock: ")
    );
    assert!(h.details["weaker"].as_str().unwrap().contains("/proc"));
    let (ws, home) = (t.p("ws"), t.p("home"));
    let r = run(
        &m,
        &h,
        &format!(
            "echo ok > ok.txt && echo OK-WRITE; mkdir -p sub/d && echo n > sub/d/notes.md && echo OK-NESTED; \
             cat {home}/.ssh/id_rsa; cat {home}/.aws/credentials; echo x > {home}/.ssh/authorized_keys && echo SSHW; \
             rm -rf {home}/.ssh && echo SSHRM; \
             echo x >> {home}/.bashrc && echo RC; mv {home}/.bashrc {home}/rc && echo RCMV; rm {home}/.bashrc && echo RCRM; \
             echo x >> {home}/.zshrc && echo ZSHRC; \
             echo x > .git/hooks/pre-commit && echo HOOK; echo x >> .git/config && echo GITCONFIG; \
             mv .git/hooks hooks2 && echo HOOKSMV; mv .git git2 && echo GITMV; \
             echo x > .git/commondir && echo COMMONDIR; \
             echo x >> repos/orig/README && echo ORIGW; mv repos/orig repos/moved && echo ORIGMV; \
             mv repos r2 && echo ORIGPARENT; ln -s repos/orig/README lnk && echo x >> lnk && echo ORIGLINK; \
             ln {home}/.bashrc hard && echo HARDLINK; truncate -s 0 {home}/.bashrc && echo TRUNC; \
             echo k > id.key; echo p > sub/x.pem; echo e > .env; mv ok.txt .ENV; \
             echo t > /tmp/ll-escape-$$ && echo TMPW; echo t > \"$TMPDIR/scratch\" && echo SESSIONTMP; \
             echo n > /dev/null && echo DEVNULL; echo $GITHUB_TOKEN; \
             echo later > {home}/later && echo LATER-MADE; cat {home}/later && echo LATER-READ; \
             echo x >> alias && echo ALIASW; truncate -s 0 alias && echo ALIASTRUNC; mv alias alias2 && echo ALIASMV; \
             exec 3< {home}/.bashrc; echo x > /proc/self/fd/3 && echo FDREOPEN; echo x > /dev/fd/3 && echo DEVFD; exit 3"
        ),
    )
    .await;
    assert_eq!(r.exit, Some(3), "{}", r.stderr);
    // A file made next to a secret's path after the rules were computed is
    // unreadable, even to its maker (fail closed).
    assert!(!r.stdout.contains("LATER-READ"), "{}", r.stdout);
    for good in [
        "OK-WRITE",
        "OK-NESTED",
        "SESSIONTMP",
        "DEVNULL",
        "LATER-MADE",
    ] {
        assert!(r.stdout.contains(good), "{good}: {} {}", r.stdout, r.stderr);
    }
    for bad in [
        "SECRET-KEY",
        "AWS-SECRET",
        "SSHW",
        "SSHRM",
        "RC",
        "RCMV",
        "RCRM",
        "ZSHRC",
        "HOOK",
        "GITCONFIG",
        "HOOKSMV",
        "GITMV",
        "COMMONDIR",
        "ORIGW",
        "ORIGMV",
        "ORIGPARENT",
        "ORIGLINK",
        "HARDLINK",
        "TRUNC",
        "TMPW",
        "ghp_",
        "ALIASW",
        "ALIASTRUNC",
        "ALIASMV",
        "FDREOPEN",
        "DEVFD",
    ] {
        assert!(
            !r.stdout
                .lines()
                .any(|l| l == bad || l.contains("ghp_") && bad == "ghp_"),
            "{bad}: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(format!("{home}/.ssh/id_rsa")).unwrap(),
        "SECRET-KEY"
    );
    assert_eq!(
        std::fs::read_to_string(format!("{home}/.bashrc")).unwrap(),
        "# rc\n"
    );
    assert_eq!(
        std::fs::read_to_string(format!("{ws}/.git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(format!("{ws}/repos/orig/README")).unwrap(),
        "original"
    );
    for never in [
        "ws/.git/hooks/pre-commit",
        "ws/.git/commondir",
        "home/.zshrc",
        "home/.ssh/authorized_keys",
        "ws/id.key",
        "ws/sub/x.pem",
        "ws/.env",
        "ws/.ENV",
        "ws/hard",
    ] {
        assert!(
            std::fs::symlink_metadata(t.p(never)).is_err(),
            "{never} exists; {}",
            r.stderr
        );
    }
    assert!(Path::new(&format!("{ws}/ok.txt")).exists());
    // Each refused name and protected path is a violation event.
    for v in [
        format!("file-write-create {ws}/id.key"),
        format!("file-write-create {ws}/.git/hooks/pre-commit"),
        format!("file-write-create {home}/.bashrc"),
    ] {
        assert!(r.violations.contains(&v), "{v} not in {:?}", r.violations);
    }
    m.destroy(&mut h).await.unwrap();
}

/// A one-shot HTTP origin on 127.0.0.1.
fn origin() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = hits.clone();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten().take(16) {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\norigin-hello",
            );
        }
    });
    (port, hits)
}

#[tokio::test]
async fn only_the_proxies_are_reachable_and_no_host_process_is_signalled() {
    if !landlock_available() || !python() {
        return;
    }
    let t = Tree::new("net");
    std::fs::create_dir_all(t.p("granted")).unwrap();
    let granted_path = t.p("granted/agent.sock");
    let granted = std::os::unix::net::UnixListener::bind(&granted_path).unwrap();
    granted.set_nonblocking(true).unwrap();
    let m = manager(&t, Some(&granted_path));
    let mut h = m.launch(t.spec("ll-net")).await.unwrap();
    let http: std::net::SocketAddr = h.details["httpProxy"].as_str().unwrap().parse().unwrap();
    let (port, hits) = origin();
    // A listener the run may not reach directly: only the proxy may.
    let direct = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    direct.set_nonblocking(true).unwrap();
    let direct_port = direct.local_addr().unwrap().port();
    let sock_path = t.p("ws/host.sock");
    let _host_socket = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let script = format!(
        r#"
import os, socket, urllib.request
def tcp(fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.connect(addr); print("REACHED", addr)
    except OSError as e:
        print("refused", addr, e.errno)
tcp(socket.AF_INET, ("127.0.0.1", {direct_port}))
tcp(socket.AF_INET, ("127.0.0.2", {proxy}))
tcp(socket.AF_INET, ("10.0.0.1", {proxy}))
tcp(socket.AF_INET6, ("::1", {proxy}))
tcp(socket.AF_INET, ("1.1.1.1", 443))
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"x", ("1.1.1.1", 53)); print("REACHED udp")
except OSError as e:
    print("refused udp", e.errno)
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("REACHED raw")
except OSError as e:
    print("refused raw", e.errno)
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print("REACHED netlink")
except OSError as e:
    print("refused netlink", e.errno)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect("{sock_path}"); print("REACHED unix")
except OSError as e:
    print("refused unix", e.errno)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect("{granted_path}"); print("granted unix ok")
except OSError as e:
    print("granted unix failed", e.errno)
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("own.sock"); s.listen(1)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect("own.sock"); print("own unix ok")
except OSError as e:
    print("own unix failed", e.errno)
try:
    os.kill({sleeper}, 0); print("REACHED signal")
except OSError as e:
    print("refused signal", e.errno)
print("proc visible", os.path.isdir("/proc/{sleeper}"))
try:
    open("/proc/{sleeper}/environ", "rb").read(); print("REACHED environ")
except OSError as e:
    print("refused environ", e.errno)
print(urllib.request.urlopen("http://localhost:{port}/").read().decode())
"#,
        proxy = http.port(),
        sleeper = sleeper.id(),
    );
    let r = run(&m, &h, &format!("python3 -c '{script}'")).await;
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(r.exit, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("REACHED"), "{}", r.stdout);
    for want in [
        format!("refused ('127.0.0.1', {direct_port}) 13"),
        format!("refused ('127.0.0.2', {}) 13", http.port()),
        format!("refused ('10.0.0.1', {}) 13", http.port()),
        "refused udp 13".to_string(),
        "refused raw 13".to_string(),
        "refused netlink 13".to_string(),
        "refused unix 13".to_string(),
        "own unix ok".to_string(),
        "granted unix ok".to_string(),
        "refused signal 1".to_string(),
        // Nor traced: its memory and environment are out of reach.
        "refused environ 13".to_string(),
        // Weaker than bubblewrap, and said so: host processes are visible.
        "proc visible True".to_string(),
        "origin-hello".to_string(),
    ] {
        assert!(
            r.stdout.contains(&want),
            "{want}: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    assert!(matches!(direct.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
    assert!(granted.accept().is_ok(), "the granted socket was reached");
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(
        r.violations
            .iter()
            .any(|v| *v == format!("network-outbound 127.0.0.1:{direct_port}")),
        "{:?}",
        r.violations
    );
    m.destroy(&mut h).await.unwrap();
}

/// Runs this test binary again with only the Landlock tests selected,
/// under `wrapper`, and requires all of them to pass.
/// Root of a user namespace where no namespace can be made (bubblewrap
/// fails there) and no capability is left.
const USERNS: [&str; 6] = [
    "unshare",
    "--user",
    "--map-root-user",
    "sh",
    "-c",
    "echo 0 > /proc/sys/user/max_user_namespaces && \
     exec setpriv --inh-caps=-all --bounding-set=-all -- \"$0\" \"$@\"",
];

/// Whether the tools of a re-run as root are here (else the test fails with
/// the install line, or is skipped visibly where that was asked for).
fn rerun_tools(wrapper: &[&str]) -> bool {
    landlock_available()
        && test_support::require_root()
        && wrapper
            .iter()
            .filter(|t| ["unshare", "setpriv"].contains(t))
            .all(|t| test_support::tool(t, "apt-get install util-linux").is_some())
}

fn rerun(kind: &str, wrapper: &[&str]) {
    rerun_selected(kind, wrapper, &["landlock::"], 3);
}

/// Runs this test binary again under `wrapper` with the tests `filter`
/// selects, and requires at least `min` of them to pass and none to fail.
fn rerun_selected(kind: &str, wrapper: &[&str], filter: &[&str], min: usize) {
    let me = std::env::current_exe().unwrap();
    let out = Command::new(wrapper[0])
        .args(&wrapper[1..])
        .arg(&me)
        .args(filter)
        .arg("--test-threads=2")
        .env(RERUN, kind)
        .env("TMPDIR", "/tmp")
        .env("HOME", "/tmp")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{kind}:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
    let passed = super::unprivileged::tests_passed(&stdout);
    assert!(
        passed >= min,
        "only {passed} Landlock tests ran ({kind}):\n{stdout}"
    );
}

#[test]
fn the_probe_offers_landlock_where_bubblewrap_cannot_make_namespaces() {
    // Only meaningful where no namespace can be made: elsewhere this test
    // runs itself there.
    if std::env::var(RERUN).as_deref() != Ok("userns") {
        if std::env::var_os(RERUN).is_none() && rerun_tools(&USERNS) {
            rerun_selected(
                "userns",
                &USERNS,
                &[
                    "landlock::the_probe_offers_landlock_where_bubblewrap_cannot_make_namespaces",
                    "--exact",
                ],
                1,
            );
        }
        return;
    }
    let p = &probe_ambient().native;
    assert!(p.available, "{p:?}");
    assert_eq!(p.mechanism, Some(NativeMechanism::Landlock), "{p:?}");
    let note = p.note.as_deref().unwrap_or_default();
    assert!(note.starts_with("landlock: "), "{note}");
    assert!(
        note.contains("bubblewrap cannot make its namespaces here"),
        "{note}"
    );
    assert!(!note.contains("namespace isolation"), "{note}");
}

#[test]
fn landlock_holds_as_root_in_a_user_namespace_without_capabilities() {
    if std::env::var_os(RERUN).is_some() || !rerun_tools(&USERNS) {
        return;
    }
    rerun("userns", &USERNS);
}

#[test]
fn landlock_holds_as_an_unprivileged_user() {
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
    ];
    if std::env::var_os(RERUN).is_some() || !rerun_tools(&nobody) {
        return;
    }
    rerun("nobody", &nobody);
}

/// Reads the command's output until `want` shows (at most 10 s).
pub(super) async fn expect(
    running: &mut sandbox_core::RunningCommand,
    seen: &mut String,
    want: &str,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !seen.contains(want) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match tokio::time::timeout(left, running.next_event()).await {
            Ok(Some(sandbox_core::SandboxEvent::Stdout { data })) => {
                seen.push_str(&String::from_utf8_lossy(&data))
            }
            Ok(Some(sandbox_core::SandboxEvent::Exit { .. })) | Ok(None) => {
                panic!("ended before {want:?} showed: {seen:?}")
            }
            Ok(Some(_)) => {}
            Err(_) => panic!("{want:?} never showed: {seen:?}"),
        }
    }
}

#[tokio::test]
async fn a_command_on_a_terminal_has_its_own_and_follows_resizes() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("pty");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("ll-pty")).await.unwrap();
    let mut cmd = sandbox_core::SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg("tty; stty size; echo READY; read x; stty size; echo DONE");
    cmd.pty(sandbox_core::PtySize::new(24, 80).unwrap());
    let mut running = m.exec(&h, cmd).await.unwrap();
    let mut seen = String::new();
    expect(&mut running, &mut seen, "READY").await;
    assert!(
        seen.contains("/dev/pts/"),
        "a terminal of its own: {seen:?}"
    );
    assert!(seen.contains("24 80\r\n"), "{seen:?}");
    running
        .resize(sandbox_core::PtySize::new(30, 100).unwrap())
        .unwrap();
    running.write_stdin(b"\n").await.unwrap();
    expect(&mut running, &mut seen, "DONE").await;
    assert!(seen.contains("30 100\r\n"), "{seen:?}");
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_denied_directory_is_neither_readable_nor_listable() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("list");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("ll-list")).await.unwrap();
    let home = t.p("home");
    let py = if python() {
        format!("python3 -c 'import os,sys; print(os.listdir(sys.argv[1]))' {home}/.ssh; ")
    } else {
        String::new()
    };
    let r = run(
        &m,
        &h,
        &format!(
            "ls -a {home}/.ssh; ls {home}/.ssh/; ls -a {home}/../home/.ssh; find {home}/.ssh; \
             ls -a {home}/.aws; cd {home}/.ssh && ls -a .; cd {home}/.ssh && echo *; \
             {py}ln -s {home}/.ssh link && ls -a link/; \
             ls -a {home} && echo HOME-LISTED; cat {home}/.bashrc && echo SIBLING-READ; \
             ls -a {ws} >/dev/null && echo WS-LISTED",
            ws = t.p("ws"),
        ),
    )
    .await;
    for secret in ["id_rsa", "credentials"] {
        assert!(
            !r.stdout.contains(secret) && !r.stderr.contains(secret),
            "{secret} revealed:\n{}\n{}",
            r.stdout,
            r.stderr
        );
    }
    // The siblings of a secret stay readable, the home above it and the
    // sandbox's own tree listable (the secret's name shows there).
    for good in ["SIBLING-READ", "WS-LISTED", "HOME-LISTED", ".ssh"] {
        assert!(r.stdout.contains(good), "{good}: {} {}", r.stdout, r.stderr);
    }
    // Each refused listing is a violation naming the directory; nothing
    // listable is reported (the one other refusal: the link the script
    // tries to make inside the secret directory it moved into).
    for dir in [format!("{home}/.ssh"), format!("{home}/.aws")] {
        assert!(
            r.violations.contains(&format!("file-read-data {dir}")),
            "{dir}: {:?}",
            r.violations
        );
    }
    for v in &r.violations {
        assert!(
            (v.starts_with("file-read-data ") || v.starts_with("file-write-create "))
                && (v.contains(&format!("{home}/.ssh")) || v.contains(&format!("{home}/.aws"))),
            "{v}: {:?}",
            r.violations
        );
    }
    m.destroy(&mut h).await.unwrap();
}

/// A marker only this test's processes carry: a `sleep` duration.
fn marker(tag: u32, n: u32) -> String {
    format!("{}.{}{n}", 4000 + tag, std::process::id())
}

/// The pids whose command line holds `marker`.
fn carrying(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).split('\0').any(|a| a == marker))
        })
        .collect()
}

/// Waits up to 5 s for every process carrying one of `markers` to be gone;
/// the ones left, if any.
fn left_after_wait(markers: &[String]) -> Vec<(String, Vec<u32>)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left: Vec<(String, Vec<u32>)> = markers
            .iter()
            .map(|m| (m.clone(), carrying(m)))
            .filter(|(_, p)| !p.is_empty())
            .collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Ends what a failed test left running.
fn kill_all(left: &[(String, Vec<u32>)]) {
    for (_, pids) in left {
        for pid in pids {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}

/// A script that leaves processes behind every way it can: a background
/// job, a double-forked `setsid` process that ignores SIGTERM and SIGHUP,
/// and a daemon that forks again; each a `sleep` carrying one of
/// `markers`. Their output goes nowhere, so a survivor cannot hold the
/// command's pipes.
fn leave_behind(markers: &[String; 3]) -> String {
    let [a, b, c] = markers;
    format!(
        "sleep {a} >/dev/null 2>&1 & \
         (setsid sh -c 'trap \"\" TERM HUP; exec sleep {b}' >/dev/null 2>&1 &); \
         (setsid sh -c 'trap \"\" TERM; sleep {c} & sleep {c}' >/dev/null 2>&1 &); \
         echo STARTED"
    )
}

#[tokio::test]
async fn nothing_a_command_starts_outlives_it() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("tree");
    // The per-command guarantee; a warm session keeps what a command
    // leaves running until destroy (`warm`).
    let m = manager_isolated(&t, None, CommandIsolation::FreshSandboxPerCommand);
    let mut h = m.launch(t.spec("ll-tree")).await.unwrap();
    let markers = [marker(1, 1), marker(1, 2), marker(1, 3)];
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        run(&m, &h, &leave_behind(&markers)),
    )
    .await
    .expect("the command's end waited for what it left behind");
    assert!(r.stdout.contains("STARTED"), "{} {}", r.stdout, r.stderr);
    assert_eq!(r.exit, Some(0), "{}", r.stderr);
    let left = left_after_wait(&markers);
    kill_all(&left);
    assert!(left.is_empty(), "outlived the command: {left:?}");
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn destroy_and_kill_end_everything_a_running_command_started() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("destroy");
    let m = manager_isolated(&t, None, CommandIsolation::FreshSandboxPerCommand);
    for (round, by_destroy) in [(2u32, false), (3, true)] {
        let mut h = m.launch(t.spec(&format!("ll-end-{round}"))).await.unwrap();
        let markers = [marker(round, 1), marker(round, 2), marker(round, 3)];
        let fg = marker(round, 4);
        let mut cmd = sandbox_core::SandboxCommand::new("/bin/sh");
        cmd.arg("-c").arg(format!(
            "trap '' TERM; {} ; exec sleep {fg}",
            leave_behind(&markers)
        ));
        let mut running = m.exec(&h, cmd).await.unwrap();
        let mut seen = String::new();
        expect(&mut running, &mut seen, "STARTED").await;
        // All are running before the end.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while markers.iter().chain([&fg]).any(|m| carrying(m).is_empty())
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        if by_destroy {
            m.destroy(&mut h).await.unwrap();
        } else {
            running.signal(sandbox_core::CommandSignal::Kill).unwrap();
        }
        let mut ended = None;
        while let Ok(Some(ev)) =
            tokio::time::timeout(std::time::Duration::from_secs(10), running.next_event()).await
        {
            if let sandbox_core::SandboxEvent::Killed { reason, .. } = ev {
                ended = Some(reason);
            }
        }
        let all: Vec<String> = markers.iter().cloned().chain([fg.clone()]).collect();
        let left = left_after_wait(&all);
        kill_all(&left);
        assert!(left.is_empty(), "round {round}: outlived the end: {left:?}");
        let want = if by_destroy {
            sandbox_core::KillReason::Destroy
        } else {
            sandbox_core::KillReason::Manual
        };
        assert_eq!(ended, Some(Some(want)), "round {round}");
        if !by_destroy {
            m.destroy(&mut h).await.unwrap();
        }
    }
}

/// The parent pid in `/proc/PID/stat` (the field after the state, which
/// follows the last `)`).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn a_stopped_supervisor_does_not_keep_the_tree_alive() {
    let per_command = CommandIsolation::FreshSandboxPerCommand;
    stopped_supervisor_case(sandbox_core::KillReason::Timeout, 5, per_command).await;
}

#[tokio::test]
async fn a_stopped_supervisor_does_not_keep_the_tree_alive_after_the_hosts_kill() {
    let per_command = CommandIsolation::FreshSandboxPerCommand;
    stopped_supervisor_case(sandbox_core::KillReason::Manual, 6, per_command).await;
}

#[tokio::test]
async fn a_stopped_session_init_does_not_keep_the_command_alive() {
    let warm = CommandIsolation::SessionSandbox;
    stopped_supervisor_case(sandbox_core::KillReason::Timeout, 7, warm).await;
}

#[tokio::test]
async fn a_stopped_session_init_does_not_keep_the_command_alive_after_the_hosts_kill() {
    let warm = CommandIsolation::SessionSandbox;
    stopped_supervisor_case(sandbox_core::KillReason::Manual, 8, warm).await;
}

/// A command whose supervisor (per command) or session init (warm) is
/// stopped, so that it cannot act on the end signal, is ended by the host
/// anyway, at its timeout or at the host's own `Kill`, with nothing of its
/// tree left (in a warm session the whole session's sandbox ends then).
async fn stopped_supervisor_case(
    how: sandbox_core::KillReason,
    tag: u32,
    isolation: CommandIsolation,
) {
    if !landlock_available() {
        return;
    }
    let t = Tree::new(&format!("stopped-{tag}"));
    let m = manager_isolated(&t, None, isolation);
    let mut h = m
        .launch(t.spec(&format!("ll-stopped-{tag}")))
        .await
        .unwrap();
    let (bg, fg) = (marker(tag, 1), marker(tag, 2));
    let mut cmd = sandbox_core::SandboxCommand::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("sleep {bg} >/dev/null 2>&1 & exec sleep {fg}"));
    if how == sandbox_core::KillReason::Timeout {
        cmd.timeout = Some(std::time::Duration::from_secs(1));
    }
    let mut running = m.exec(&h, cmd).await.unwrap();
    // Both sleeps run; the foreground one's parent is the supervisor.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while (carrying(&bg).is_empty() || carrying(&fg).is_empty())
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let sleeper = *carrying(&fg).first().expect("the command runs");
    let supervisor = parent_of(sleeper).expect("its parent");
    assert_ne!(
        supervisor,
        std::process::id(),
        "the supervisor sits between"
    );
    // Stopped, it cannot act on the host's end signal at the timeout.
    let stopped = Command::new("kill")
        .args(["-STOP", &supervisor.to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let started = std::time::Instant::now();
    if how == sandbox_core::KillReason::Manual {
        running
            .control()
            .signal(sandbox_core::CommandSignal::Kill)
            .unwrap();
    }
    let mut ended = None;
    while let Ok(Some(ev)) =
        tokio::time::timeout(std::time::Duration::from_secs(20), running.next_event()).await
    {
        if let sandbox_core::SandboxEvent::Killed { reason, .. } = ev {
            ended = Some(reason);
        }
    }
    let took = started.elapsed();
    let left = left_after_wait(&[bg.clone(), fg.clone()]);
    kill_all(&left);
    let _ = Command::new("kill")
        .args(["-KILL", &supervisor.to_string()])
        .status();
    assert_eq!(ended, Some(Some(how)), "the host ended it itself");
    assert!(left.is_empty(), "outlived a stopped supervisor: {left:?}");
    assert!(
        took < std::time::Duration::from_secs(15),
        "ended within the grace: {took:?}"
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_session_reads_no_other_sessions_directory() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("others");
    std::fs::write(t.0.join("sessions/user-note"), "not a session's").unwrap();
    let m = manager(&t, None);
    let mut a = m.launch(t.spec("ll-others-a")).await.unwrap();
    let r = run(&m, &a, "echo A-SECRET > \"$TMPDIR/a.txt\" && echo $TMPDIR").await;
    let a_tmp = r.stdout.trim().to_owned();
    assert!(a_tmp.starts_with(&t.p("sessions")), "{}", r.stdout);
    let mut b = m.launch(t.spec("ll-others-b")).await.unwrap();
    // A session launched after b: its directory is made after b's rules.
    let mut c = m.launch(t.spec("ll-others-c")).await.unwrap();
    let r = run(&m, &c, "echo C-SECRET > \"$TMPDIR/c.txt\" && echo $TMPDIR").await;
    let c_tmp = r.stdout.trim().to_owned();
    let sessions = t.p("sessions");
    let r = run(
        &m,
        &b,
        &format!(
            "cat {a_tmp}/a.txt; cat {c_tmp}/c.txt; cat {sessions}/agent-sandbox-*/tmp/*; \
             grep -r SECRET {sessions} 2>/dev/null; \
             echo B-OWN > \"$TMPDIR/b.txt\" && cat \"$TMPDIR/b.txt\"; cat {sessions}/user-note"
        ),
    )
    .await;
    for secret in ["A-SECRET", "C-SECRET"] {
        assert!(!r.stdout.contains(secret), "{secret} read: {}", r.stdout);
    }
    assert!(r.stdout.contains("B-OWN"), "{} {}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("not a session's"),
        "{} {}",
        r.stdout,
        r.stderr
    );
    for h in [&mut a, &mut b, &mut c] {
        m.destroy(h).await.unwrap();
    }
}

#[tokio::test]
async fn a_session_has_a_private_writable_home_and_the_real_one_stays_as_it_was() {
    if !landlock_available() {
        return;
    }
    let t = Tree::new("home");
    let m = manager(&t, None);
    // No home mount: the real home is the host's, read-only.
    let mut spec = SandboxSpec::new("ll-home", "w");
    spec.bind_mounts
        .push(SandboxBindMount::new(t.p("ws"), Access::ReadWrite).unwrap());
    spec.guest_workdir = Some(t.p("ws"));
    let mut h = m.launch(spec).await.unwrap();
    let private = h.details["home"].as_str().unwrap().to_owned();
    assert!(private.starts_with(&t.p("sessions")), "{private}");
    let real = t.p("home");
    let npm = if test_support::tool("npm", "apt-get install npm").is_some() {
        "npm config set fund false && npm config get cache && echo NPM-OK; "
    } else {
        ""
    };
    let r = run(
        &m,
        &h,
        &format!(
            "echo \"$HOME $XDG_CACHE_HOME $XDG_CONFIG_HOME\"; \
             mkdir -p ~/.npm/_cacache ~/.cache/pip && echo c > ~/.cache/pip/x && echo CACHE-OK; \
             {npm}echo x > {real}/.profile 2>/dev/null && echo REAL-WRITTEN; \
             cat {real}/.bashrc && echo REAL-READ; cat {real}/.ssh/id_rsa; true"
        ),
    )
    .await;
    assert!(
        r.stdout
            .starts_with(&format!("{private} {private}/.cache {private}/.config")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("CACHE-OK"), "{} {}", r.stdout, r.stderr);
    if !npm.is_empty() {
        assert!(
            r.stdout.contains(&format!("{private}/.npm")),
            "{}",
            r.stdout
        );
        assert!(r.stdout.contains("NPM-OK"), "{} {}", r.stdout, r.stderr);
    }
    assert!(r.stdout.contains("REAL-READ"), "{}", r.stdout);
    assert!(!r.stdout.contains("REAL-WRITTEN"), "{}", r.stdout);
    assert!(!r.stdout.contains("SECRET-KEY"), "{}", r.stdout);
    assert!(!Path::new(&real).join(".profile").exists());
    assert!(!Path::new(&real).join(".npmrc").exists());
    m.destroy(&mut h).await.unwrap();
    assert!(
        !Path::new(&private).exists(),
        "the private home outlived the session"
    );
}

/// A host listener on 127.0.0.1 that lets another socket of the same user
/// share its port (`SO_REUSEPORT`), as a session's server could: a host
/// python process, its port printed.
fn host_reuseport_listener() -> (std::process::Child, u16) {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import socket,sys,time\n\
             s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n\
             s.bind(('127.0.0.1',0)); s.listen(8); print(s.getsockname()[1], flush=True)\n\
             time.sleep(120)",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    (child, line.trim().parse().unwrap())
}

/// This host's first address that is not loopback, if it has one.
fn a_non_loopback_address() -> Option<String> {
    let out = Command::new("hostname").arg("-I").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| !a.contains(':') && !a.starts_with("127."))
        .map(str::to_owned)
}

#[tokio::test]
async fn a_sessions_own_loopback_servers_are_reachable_and_nothing_else_of_the_hosts() {
    if !landlock_available() || !python() {
        return;
    }
    let t = Tree::new("loopback");
    let m = manager(&t, None);
    let mut h = m.launch(t.spec("ll-loopback")).await.unwrap();
    let (host_port, host_hits) = origin();
    let (mut shared, shared_port) = host_reuseport_listener();
    let elsewhere = a_non_loopback_address().unwrap_or_else(|| "192.0.2.1".into());
    std::fs::write(
        t.0.join("ws/servers.py"),
        format!(
            r#"
import http.server, socket, subprocess, sys, threading, time, urllib.request
def serve(srv):
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address
class V6(http.server.HTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
h = http.server.SimpleHTTPRequestHandler
# Straight to loopback, not through the session's proxy.
direct = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
for name, srv in [("v4", http.server.HTTPServer(("127.0.0.1", 0), h)),
                  ("any", http.server.HTTPServer(("0.0.0.0", 0), h)),
                  ("dual", V6(("::", 0), h))]:
    addr = serve(srv)
    body = direct.open("http://127.0.0.1:%d/servers.py" % addr[1]).read()
    print(name, "bound", addr[0], "served", len(body) > 0)
def tcp(addr, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.connect(addr); print("REACHED", addr)
    except OSError as e:
        print("refused", addr, e.errno)
tcp(("127.0.0.1", {host_port}))
tcp(("::ffff:127.0.0.1", {host_port}, 0, 0), socket.AF_INET6)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", {shared_port})); s.listen(1)
tcp(("127.0.0.1", {shared_port}))
s.close()
try:
    b = socket.socket(); b.bind(("{elsewhere}", 0)); print("BOUND elsewhere", b.getsockname())
except OSError as e:
    print("refused bind", e.errno)
# A server in another process of the same command, reached by curl.
p = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
line = p.stdout.readline()
port = int(line.split("port ")[1].split(" ")[0])
out = subprocess.run(["curl", "-s", "--noproxy", "*", "-o", "/dev/null", "-w", "%{{http_code}}",
                      "http://127.0.0.1:%d/" % port], capture_output=True, text=True).stdout
print("curl", out)
p.kill()
"#
        ),
    )
    .unwrap();
    let r = run(&m, &h, "python3 servers.py").await;
    let _ = shared.kill();
    let _ = shared.wait();
    assert_eq!(r.exit, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("REACHED"), "{}", r.stdout);
    assert!(!r.stdout.contains("BOUND"), "{}", r.stdout);
    for want in [
        "v4 bound 127.0.0.1 served True".to_string(),
        // A wildcard bind is made on loopback, never on the host's
        // interfaces; a dual-stack one on IPv4 loopback mapped to IPv6.
        "any bound 127.0.0.1 served True".to_string(),
        "dual bound ::ffff:127.0.0.1 served True".to_string(),
        format!("refused ('127.0.0.1', {host_port}) 13"),
        format!("refused ('::ffff:127.0.0.1', {host_port}, 0, 0) 13"),
        // The session's listener shares the port with a host one: refused.
        format!("refused ('127.0.0.1', {shared_port}) 13"),
        "refused bind 13".to_string(),
        "curl 200".to_string(),
    ] {
        assert!(
            r.stdout.contains(&want),
            "{want}: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(host_hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    for want in [
        format!("network-outbound 127.0.0.1:{host_port}"),
        format!("network-outbound 127.0.0.1:{shared_port}"),
        format!("network-bind {elsewhere}:0"),
    ] {
        assert!(r.violations.contains(&want), "{want}: {:?}", r.violations);
    }
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn a_sessions_server_is_not_reachable_from_another_session() {
    if !landlock_available() || !python() {
        return;
    }
    let t = Tree::new("loopback-two");
    let m = manager(&t, None);
    let mut a = m.launch(t.spec("ll-serve-a")).await.unwrap();
    let mut b = m.launch(t.spec("ll-serve-b")).await.unwrap();
    let mut cmd = sandbox_core::SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg(
        "python3 -c 'import socket,time\ns=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(8)\n\
         print(\"STARTED\", s.getsockname()[1], flush=True); time.sleep(20)'",
    );
    let mut serving = m.exec(&a, cmd).await.unwrap();
    let mut seen = String::new();
    expect(&mut serving, &mut seen, "STARTED").await;
    let port: u16 = seen
        .split("STARTED ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{seen}"));
    let r = run(
        &m,
        &b,
        &format!(
            "python3 -c 'import socket\ntry:\n socket.create_connection((\"127.0.0.1\",{port})); print(\"REACHED\")\nexcept OSError as e:\n print(\"refused\", e.errno)'"
        ),
    )
    .await;
    assert!(r.stdout.contains("refused 13"), "{} {}", r.stdout, r.stderr);
    assert!(
        r.violations
            .contains(&format!("network-outbound 127.0.0.1:{port}")),
        "{:?}",
        r.violations
    );
    serving.signal(sandbox_core::CommandSignal::Kill).unwrap();
    for h in [&mut a, &mut b] {
        m.destroy(h).await.unwrap();
    }
}
