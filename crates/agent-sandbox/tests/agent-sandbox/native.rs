//! The facade end to end: real proxies, real bubblewrap, real processes.

use agent_sandbox::{ErrorKind, FilenameRules, InnerBridge, SandboxManager, SharedHostView};
use connect_proxy::IpPolicy;
use sandbox_core::{
    Access, BackendRequest, FakeHost, Os, ProbeReport, SandboxBackend, SandboxBindMount,
    SandboxCommand, SandboxEvent, SandboxSpec, SandboxState, SandboxSwitch, Surface, probe_ambient,
};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The real file system, for path resolution at launch (the probe may
/// describe another host).
fn real_paths() -> SharedHostView {
    Arc::new(sandbox_core::AmbientHost::from_ambient_untimed())
}

pub(super) fn native_available() -> bool {
    let p = &probe_ambient().native;
    test_support::require(
        p.mechanism == Some(sandbox_core::NativeMechanism::Bubblewrap),
        "bubblewrap (the native sandbox's namespace mechanism)",
        "apt-get install bubblewrap",
    )
}

/// The lines a manager logs, and the sink that collects them.
type Lines = Arc<std::sync::Mutex<Vec<String>>>;

fn collected_log() -> (Lines, agent_sandbox::LogSink) {
    let lines = Lines::default();
    let sink = lines.clone();
    let log = Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()));
    (lines, log)
}

/// A manager for the tree's home and sockets, without the filename globs,
/// whose log lines are collected.
fn logging_manager(t: &Tree) -> (SandboxManager, Lines) {
    let (lines, log) = collected_log();
    let mut b = crate::builder();
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .filename_rules(FilenameRules::DropFilenameGlobDenies)
        .log(log)
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    (b.build().unwrap(), lines)
}

/// The collected log lines that contain `what`.
fn lines_with<'a>(lines: &'a [String], what: &str) -> Vec<&'a String> {
    lines.iter().filter(|l| l.contains(what)).collect()
}

/// Fallbacks from host-side listeners to socat, across this test binary.
static FALLBACKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub(super) struct Tree(PathBuf);

impl Tree {
    pub(super) fn new(tag: &str) -> Tree {
        let root = std::env::temp_dir().join(format!("facade-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(root.join("sockets")).unwrap();
        std::fs::create_dir_all(root.join("ws/.git/hooks")).unwrap();
        std::fs::write(root.join("home/.ssh/id_rsa"), "SECRET-KEY").unwrap();
        std::fs::write(root.join("ws/.git/config"), "[core]\n").unwrap();
        Tree(root)
    }
    pub(super) fn p(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
    pub(super) fn spec(&self, id: &str) -> SandboxSpec {
        let mut spec = SandboxSpec::new(id, "w");
        spec.bind_mounts
            .push(SandboxBindMount::new(self.p("ws"), Access::ReadWrite).unwrap());
        spec.bind_mounts
            .push(SandboxBindMount::new(self.p("home"), Access::ReadWrite).unwrap());
        spec.guest_workdir = Some(self.p("ws"));
        spec
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(super) fn manager(
    tree: &Tree,
    rules: FilenameRules,
    origin_port: Option<u16>,
) -> SandboxManager {
    manager_with(tree, rules, origin_port, InnerBridge::HostSideListeners)
}

fn manager_with(
    tree: &Tree,
    rules: FilenameRules,
    origin_port: Option<u16>,
    bridge: InnerBridge,
) -> SandboxManager {
    let mut ip = IpPolicy::new();
    if origin_port.is_some() {
        ip.allow_cidr("127.0.0.1/32".parse().unwrap());
    }
    let mut b = crate::builder();
    b.home(tree.p("home"))
        .temp_dir(tree.p("sockets"))
        .inner_bridge(bridge)
        .log(Arc::new(|line: &str| {
            if line.contains("using socat bridges") {
                FALLBACKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                eprintln!("fallback: {line}");
            }
        }))
        .filename_rules(rules)
        .ip_policy(ip)
        .base_env(vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("GITHUB_TOKEN".into(), "ghp_must_not_pass".into()),
            ("LD_PRELOAD".into(), "/tmp/evil.so".into()),
        ]);
    // The launcher runs a warm session's init; `Refuse` is the case
    // without one. With a fresh sandbox per command these tests run as
    // they always did, without it.
    if rules != FilenameRules::Refuse
        && crate::isolation() == agent_sandbox::CommandIsolation::SessionSandbox
    {
        b.name_guard_launcher(crate::launcher());
    }
    if origin_port.is_some() {
        b.allow("localhost");
    }
    b.build().unwrap()
}

/// What a command printed, the violations it caused and how it ended.
pub(super) struct Run {
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) violations: Vec<String>,
    /// Each violation's `raw` text (its reason), in the same order.
    pub(super) raws: Vec<String>,
    pub(super) exit: Option<i32>,
    lifecycle: Vec<&'static str>,
}

/// Runs `sh -c script` in the session and collects its events; the
/// stream must open with `starting`, then `ready`.
pub(super) async fn run(
    m: &SandboxManager,
    handle: &sandbox_core::SandboxHandle,
    script: &str,
) -> Run {
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg(script);
    let mut events = m.exec(handle, cmd).await.unwrap();
    let mut r = Run {
        stdout: String::new(),
        stderr: String::new(),
        violations: Vec::new(),
        raws: Vec::new(),
        exit: None,
        lifecycle: Vec::new(),
    };
    while let Some(ev) = events.next_event().await {
        match ev {
            SandboxEvent::Stdout { data } => r.stdout.push_str(&String::from_utf8_lossy(&data)),
            SandboxEvent::Stderr { data } => r.stderr.push_str(&String::from_utf8_lossy(&data)),
            SandboxEvent::Violation { violation } => {
                r.violations.push(violation.to_string());
                r.raws.push(violation.raw.clone().unwrap_or_default());
            }
            SandboxEvent::Exit { exit_code } => r.exit = Some(exit_code),
            SandboxEvent::Starting => r.lifecycle.push("starting"),
            SandboxEvent::Ready => r.lifecycle.push("ready"),
            other => panic!("unexpected {other:?}"),
        }
        if r.lifecycle.is_empty() {
            panic!("the stream must open with starting");
        }
    }
    // R-SPEC-5: starting, then ready, before anything the command did.
    assert_eq!(r.lifecycle, ["starting", "ready"], "{}", r.stderr);
    r
}

/// A one-shot HTTP origin on 127.0.0.1 that answers every request with a body.
pub(super) fn origin() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten().take(16) {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\norigin-hello",
            );
        }
    });
    port
}

#[tokio::test]
async fn default_launch_is_refused_with_a_typed_error() {
    if !native_available() {
        return;
    }
    let t = Tree::new("refused");
    let m = manager(&t, FilenameRules::Refuse, None);
    assert_eq!(m.selection().backend, SandboxBackend::Native);
    let err = m.launch(t.spec("refused")).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NameGuardLauncherNeeded { .. }),
        "{err}"
    );
    // The refusal names the way out.
    assert!(
        err.to_string()
            .contains("ManagerBuilder::inner_roles_from_current_exe"),
        "{err}"
    );
    // Nothing was left behind by the refused launch.
    assert_eq!(std::fs::read_dir(t.p("sockets")).unwrap().count(), 0);
}

#[tokio::test]
async fn opt_out_runs_with_every_other_denial_and_the_proxy_as_only_way_out() {
    opt_out_case(InnerBridge::HostSideListeners).await;
}

#[tokio::test]
async fn socat_bridges_give_the_same_confinement() {
    opt_out_case(InnerBridge::Socat).await;
}

async fn opt_out_case(bridge: InnerBridge) {
    if !native_available() {
        return;
    }
    let t = Tree::new(&format!("optout-{bridge:?}"));
    let port = origin();
    let m = manager_with(
        &t,
        FilenameRules::DropFilenameGlobDenies,
        Some(port),
        bridge,
    );
    let mut h = m.launch(t.spec("optout")).await.unwrap();
    assert_eq!(h.state, SandboxState::Warm);
    assert_eq!(h.backend, SandboxBackend::Native);
    let socket_dir = PathBuf::from(h.details["socketDir"].as_str().unwrap());
    assert!(socket_dir.join("http.sock").exists());

    let r = run(
        &m,
        &h,
        &format!(
            "cat ~/.ssh/id_rsa; echo x > .git/hooks/pre-commit && echo HOOK; echo x > ~/.bashrc && echo BASHRC; \
             env | sort; \
             curl -sS -m 10 http://localhost:{port}/ ; echo; \
             curl -sS -m 10 --socks5-hostname 127.0.0.1:1080 http://localhost:{port}/ ; echo; \
             curl -s -m 10 -o /dev/null -w 'denied=%{{http_code}}\\n' http://blocked.example.test/ ; \
             curl -s -m 10 -p -o /dev/null -w 'tunnel=%{{http_connect}}\\n' https://blocked-tls.example.test/ ; \
             exit 7"
        ),
    )
    .await;
    assert_eq!(r.exit, Some(7), "{r:?}", r = r.stderr);
    let out = &r.stdout;
    assert!(
        !out.contains("SECRET-KEY") && !out.contains("HOOK") && !out.contains("BASHRC"),
        "{out}"
    );
    assert!(
        !out.contains("ghp_must_not_pass") && !out.contains("LD_PRELOAD"),
        "{out}"
    );
    assert!(out.contains("HTTP_PROXY=http://127.0.0.1:3128"), "{out}");
    assert!(out.contains("ALL_PROXY=socks5h://127.0.0.1:1080"), "{out}");
    assert_eq!(
        out.matches("origin-hello").count(),
        2,
        "allowed origin via HTTP and SOCKS5: {out}\n{}",
        r.stderr
    );
    assert!(out.contains("denied=403"), "{out}");
    assert!(out.contains("tunnel=403"), "{out}");
    assert!(
        r.violations
            .iter()
            .any(|v| v == "network-outbound blocked.example.test:80"),
        "{:?}",
        r.violations
    );
    assert!(
        r.violations
            .iter()
            .any(|v| v == "network-outbound blocked-tls.example.test:443"),
        "{:?}",
        r.violations
    );

    if bridge == InnerBridge::HostSideListeners {
        assert_eq!(
            FALLBACKS.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the host-side listeners were used"
        );
    }
    m.destroy(&mut h).await.unwrap();
    assert_eq!(h.state, SandboxState::Destroyed);
    assert!(!socket_dir.exists(), "socket directory removed");
    assert!(
        !Path::new(&t.p("home/.bashrc")).exists(),
        "placeholder removed"
    );
    assert!(
        m.exec(&h, SandboxCommand::new("true")).await.is_err(),
        "a destroyed handle runs nothing"
    );
    assert!(m.destroy(&mut h).await.is_err(), "nothing leaves destroyed");
}

#[tokio::test]
async fn network_off_still_runs_proxies_that_deny_everything() {
    if !native_available() {
        return;
    }
    let t = Tree::new("netoff");
    let port = origin();
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, Some(port));
    let mut spec = t.spec("netoff");
    spec.network_enabled = false;
    let mut h = m.launch(spec).await.unwrap();
    let r = run(
        &m,
        &h,
        &format!("curl -s -m 10 -o /dev/null -w '%{{http_code}}' http://localhost:{port}/"),
    )
    .await;
    assert_eq!(r.stdout, "403", "{}", r.stderr);
    assert_eq!(
        r.violations,
        vec![format!("network-outbound localhost:{port}")]
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn destroy_kills_a_running_command() {
    if !native_available() {
        return;
    }
    let t = Tree::new("kill");
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let mut h = m.launch(t.spec("kill")).await.unwrap();
    let marker = format!("sleep 600.{}", std::process::id());
    let mut cmd = SandboxCommand::new("/bin/sh");
    cmd.arg("-c").arg(&marker);
    assert_eq!(m.state(&h), Some(SandboxState::Warm));
    let mut events = m.exec(&h, cmd).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(m.state(&h), Some(SandboxState::Active));
    let mut second = SandboxCommand::new("true");
    second.workdir(t.p("ws"));
    match m.exec(&h, second).await {
        Err(e) => assert!(matches!(e.kind(), ErrorKind::Busy { .. }), "{e}"),
        Ok(_) => panic!("a second exec while one runs must be refused"),
    }
    m.destroy(&mut h).await.unwrap();
    assert_eq!(m.state(&h), None, "destroyed");
    let mut last = None;
    while let Some(ev) = events.next_event().await {
        last = Some(ev);
    }
    assert!(
        matches!(
            last,
            Some(SandboxEvent::Killed {
                reason: Some(sandbox_core::KillReason::Destroy),
                ..
            })
        ),
        "{last:?}"
    );
    let alive = std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(&marker))
            .unwrap_or(false)
    });
    assert!(!alive, "no process outlives destroy");
}

#[tokio::test]
async fn none_backend_runs_on_the_host_with_a_sanitised_environment() {
    let t = Tree::new("none");
    let mut b = crate::builder();
    b.switch(SandboxSwitch::Off)
        .home(t.p("home"))
        .base_env(vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "leak".into()),
        ]);
    let m = b.build().unwrap();
    assert_eq!(m.selection().backend, SandboxBackend::None);
    let mut h = m.launch(t.spec("none")).await.unwrap();
    assert_eq!(h.backend, SandboxBackend::None);
    let r = run(&m, &h, "env; cat ~/.ssh/id_rsa").await;
    assert!(
        r.stdout.contains("SECRET-KEY"),
        "none does not confine: {}",
        r.stdout
    );
    assert!(!r.stdout.contains("leak"), "{}", r.stdout);
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn terminal_asking_for_native_without_it_fails() {
    let mut host = FakeHost::new(Os::Linux);
    host.env("PATH", "/usr/bin");
    let report = ProbeReport::probe(&host);
    let err = SandboxManager::builder(report, real_paths())
        .home("/home/u")
        .request(
            BackendRequest::Explicit(SandboxBackend::Native),
            Surface::Terminal,
        )
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("native"), "{err}");
}

#[tokio::test]
async fn terminal_profile_shares_the_network_and_hides_the_secret_dirs() {
    if !native_available() {
        return;
    }
    let t = Tree::new("terminal");
    let port = origin();
    let mut b = crate::builder();
    b.home(t.p("home"))
        .request(
            BackendRequest::Explicit(SandboxBackend::Native),
            Surface::Terminal,
        )
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    let m = b.build().unwrap();
    assert_eq!(
        m.selection().backend,
        SandboxBackend::Native,
        "the label never claims more than it gives"
    );
    let mut spec = SandboxSpec::new("term", "w");
    spec.guest_workdir = Some(t.p("ws"));
    let mut h = m.launch(spec).await.unwrap();
    let r = run(
        &m,
        &h,
        &format!(
            "cat ~/.ssh/id_rsa; echo note > ~/notes && echo HOME-WRITABLE; echo x > file && echo WORKDIR-WRITABLE; \
             curl -sS -m 10 http://127.0.0.1:{port}/"
        ),
    )
    .await;
    assert!(!r.stdout.contains("SECRET-KEY"), "{}", r.stdout);
    assert!(
        r.stdout.contains("HOME-WRITABLE") && r.stdout.contains("WORKDIR-WRITABLE"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("origin-hello"),
        "network open: {} {}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(t.p("home/notes")).unwrap(),
        "note\n"
    );
    m.destroy(&mut h).await.unwrap();
}

/// The launcher binary of this package.
const GUARD: &str = env!("CARGO_BIN_EXE_agent-sandbox-name-guard");

/// A manager with the name-guard launcher and no filename-rule choice: the
/// probe decides.
pub(super) fn guarded_manager(
    tree: &Tree,
    bridge: InnerBridge,
    probe: ProbeReport,
) -> SandboxManager {
    let mut b = SandboxManager::builder(probe, real_paths());
    b.home(tree.p("home"))
        .temp_dir(tree.p("sockets"))
        .inner_bridge(bridge)
        .name_guard_launcher(agent_sandbox::NameGuardLauncher::new(GUARD))
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    b.build().unwrap()
}

/// A fake host probe: bubblewrap and socat where this machine has them, and
/// the given kernel release.
fn probe_with_kernel(release: &str) -> ProbeReport {
    let mut host = FakeHost::new(Os::Linux);
    host.env("PATH", "/usr/bin:/bin");
    for tool in ["bwrap", "socat"] {
        if let Some((_, p)) = probe_ambient().native.tools.iter().find(|(n, _)| n == tool) {
            host.executable(p.clone());
        }
    }
    host.contents("/proc/sys/kernel/osrelease", release);
    ProbeReport::probe(&host)
}

#[tokio::test]
async fn default_launch_runs_the_full_policy_under_the_name_guard() {
    guarded_case(InnerBridge::HostSideListeners).await;
}

#[tokio::test]
async fn name_guard_with_socat_bridges() {
    guarded_case(InnerBridge::Socat).await;
}

async fn guarded_case(bridge: InnerBridge) {
    if !native_available() {
        return;
    }
    if !test_support::require(
        probe_ambient().native.filename_rules.is_enforceable(),
        "a kernel that can run the name guard (Linux 5.19 or later, x86-64)",
        "run the tests on such a kernel",
    ) {
        return;
    }
    let t = Tree::new(&format!("guard-{bridge:?}"));
    let m = guarded_manager(&t, bridge, probe_ambient().clone());
    let mut h = m.launch(t.spec("guard")).await.unwrap();
    let ws = t.p("ws");
    let r = run(
        &m,
        &h,
        "echo ok > ok.txt && echo OK-WRITE; \
         mkdir -p sub/deeper && echo data > sub/deeper/notes.md && echo OK-NESTED; \
         echo k > id.key; echo p > sub/x.pem; echo E > .ENV; \
         mv ok.txt .env; ln -s ok.txt cert.pem; ln ok.txt hard.key; mkdir .vscode; \
         cat ~/.ssh/id_rsa; echo x > .git/hooks/pre-commit && echo HOOK; \
         mkdir evil; echo \"$PWD/evil\" > .git/commondir && echo COMMONDIR; \
         echo '[core]' >> .git/config.worktree && echo WTCONFIG; \
         echo x >> ~/.bash_aliases && echo ALIASES; \
         mkdir -p ~/.config/git && echo x > ~/.config/git/config && echo XDGGIT; \
         mkdir -p ~/.local/bin && echo x > ~/.local/bin/git && echo LOCALBIN; \
         ls -a; exit 3",
    )
    .await;
    assert_eq!(r.exit, Some(3), "{}", r.stderr);
    assert!(r.stdout.contains("OK-WRITE") && r.stdout.contains("OK-NESTED"));
    assert!(
        !r.stdout.contains("SECRET-KEY") && !r.stdout.contains("HOOK"),
        "{}",
        r.stdout
    );
    // Git's pointer and per-worktree config, and startup files of the home
    // the host runs later.
    for bad in ["COMMONDIR", "WTCONFIG", "ALIASES", "XDGGIT", "LOCALBIN"] {
        assert!(!r.stdout.contains(bad), "{bad}: {}", r.stdout);
    }
    assert!(!Path::new(&format!("{ws}/.git/commondir")).exists());
    assert!(
        r.violations
            .iter()
            .any(|v| *v == format!("file-write-create {ws}/.git/commondir")),
        "{:?}",
        r.violations
    );
    for denied in [
        "id.key",
        "sub/x.pem",
        ".ENV",
        ".env",
        "cert.pem",
        "hard.key",
        ".vscode",
    ] {
        let p = format!("{ws}/{denied}");
        assert!(
            std::fs::symlink_metadata(&p).is_err(),
            "{p} was created; stdout {} stderr {}",
            r.stdout,
            r.stderr
        );
        assert!(
            r.violations
                .iter()
                .any(|v| *v == format!("file-write-create {p}")),
            "no violation for {p}: {:?}",
            r.violations
        );
    }
    assert_eq!(
        std::fs::read_to_string(format!("{ws}/ok.txt")).unwrap(),
        "ok\n"
    );
    assert_eq!(
        std::fs::read_to_string(format!("{ws}/sub/deeper/notes.md")).unwrap(),
        "data\n"
    );
    assert!(
        r.violations
            .iter()
            .all(|v| v.starts_with("file-write-create ")),
        "only the guard's refusals: {:?}",
        r.violations
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn an_old_kernel_keeps_the_fail_closed_refusal() {
    if !native_available() {
        return;
    }
    let t = Tree::new("oldkernel");
    let probe = probe_with_kernel("5.4.0-150-generic");
    assert!(!probe.native.filename_rules.is_enforceable());
    // Unset: the guard is not used, and the launch is refused.
    let m = guarded_manager(&t, InnerBridge::HostSideListeners, probe.clone());
    let err = m.launch(t.spec("oldkernel")).await.unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Bwrap(e) if matches!(e.kind(), bwrap_spec::ErrorKind::FilenameRulesUnenforceable { .. })),
        "{err}"
    );
    // Asked for explicitly: the manager is not built.
    let mut b = SandboxManager::builder(probe, real_paths());
    b.home(t.p("home"))
        .name_guard_launcher(agent_sandbox::NameGuardLauncher::new(GUARD))
        .filename_rules(FilenameRules::EnforcedByNameGuard);
    let err = b.build().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NameGuardUnavailable { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("5.4"), "{err}");
    // And without a launcher, explicit enforcement is refused too.
    let mut b = SandboxManager::builder(probe_with_kernel("6.1.0"), real_paths());
    b.home(t.p("home"))
        .filename_rules(FilenameRules::EnforcedByNameGuard);
    let err = b.build().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::NameGuardUnavailable { .. }),
        "{err}"
    );
}

/// The native sandbox, a kernel that runs the name guard, and python3 (the
/// socket tests' client inside).
fn guard_and_python_available() -> bool {
    native_available()
        && test_support::require(
            probe_ambient().native.filename_rules.is_enforceable(),
            "a kernel that can run the name guard (Linux 5.19 or later, x86-64 or aarch64)",
            "run the tests on such a kernel",
        )
        && test_support::tool("python3", "apt-get install python3").is_some()
}

/// A Unix socket that a host process makes inside the worktree after launch
/// is not reachable from the sandbox under the name guard (only sockets the
/// command's own tree bound are), and the refusal is a `network-outbound`
/// violation naming the socket.
#[tokio::test]
async fn a_host_unix_socket_in_the_worktree_is_unreachable_and_reported() {
    if !guard_and_python_available() {
        return;
    }
    let t = Tree::new("hostsock");
    let m = guarded_manager(&t, InnerBridge::HostSideListeners, probe_ambient().clone());
    let mut h = m.launch(t.spec("hostsock")).await.unwrap();
    let sock = t.p("ws/host.sock");
    let host = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    host.set_nonblocking(true).unwrap();
    let r = run(
        &m,
        &h,
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); print('host', s.connect_ex('host.sock'))\"; \
         python3 -c \"import socket; l = socket.socket(socket.AF_UNIX); l.bind('own.sock'); l.listen(1); c = socket.socket(socket.AF_UNIX); print('own', c.connect_ex('own.sock'))\"",
    )
    .await;
    assert!(r.stdout.contains("host 13\n"), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("own 0\n"), "{}{}", r.stdout, r.stderr);
    assert!(
        matches!(host.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the host socket was reached"
    );
    assert!(
        r.violations
            .iter()
            .any(|v| *v == format!("network-outbound {sock}")),
        "{:?}",
        r.violations
    );
    m.destroy(&mut h).await.unwrap();
}

/// A granted Unix socket (say, an SSH agent's) is reachable from inside,
/// with `SSH_AUTH_SOCK` naming it; its neighbour in the same directory is
/// not even visible; a socket that gives control of the host is refused
/// unless granted with the louder call.
#[tokio::test]
async fn a_granted_unix_socket_is_reachable_and_nothing_else_of_its_directory() {
    if !guard_and_python_available() {
        return;
    }
    let t = Tree::new("grant");
    let dir = t.0.join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    let granted_path = dir.join("granted.sock").to_string_lossy().into_owned();
    let granted = std::os::unix::net::UnixListener::bind(&granted_path).unwrap();
    let neighbour = std::os::unix::net::UnixListener::bind(dir.join("neighbour.sock")).unwrap();
    granted.set_nonblocking(true).unwrap();
    neighbour.set_nonblocking(true).unwrap();
    let build = |grant: bool| {
        let mut b = SandboxManager::builder(probe_ambient().clone(), real_paths());
        b.home(t.p("home"))
            .temp_dir(t.p("sockets"))
            .name_guard_launcher(agent_sandbox::NameGuardLauncher::new(GUARD))
            .base_env(vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("SSH_AUTH_SOCK".into(), granted_path.clone().into()),
            ]);
        if grant {
            b.allow_unix_socket(granted_path.clone());
        }
        b.build().unwrap()
    };
    let script = "python3 -c \"import socket, os; \
        c = lambda p: socket.socket(socket.AF_UNIX).connect_ex(p); \
        d = os.path.dirname(os.environ.get('SSH_AUTH_SOCK', '/none/x')); \
        print('env', os.environ.get('SSH_AUTH_SOCK', '-')); \
        print('granted', c(os.environ.get('SSH_AUTH_SOCK', '/none/x'))); \
        print('neighbour', c(d + '/neighbour.sock'))\"";
    let m = build(true);
    let mut h = m.launch(t.spec("grant")).await.unwrap();
    let r = run(&m, &h, script).await;
    assert!(
        r.stdout.contains(&format!("env {granted_path}\n")),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(r.stdout.contains("granted 0\n"), "{}{}", r.stdout, r.stderr);
    // ENOENT: only the granted socket was bound into the sandbox.
    assert!(
        r.stdout.contains("neighbour 2\n"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    assert!(granted.accept().is_ok());
    assert!(neighbour.accept().is_err());
    m.destroy(&mut h).await.unwrap();

    // Without the grant: no variable, no socket.
    let m = build(false);
    let mut h = m.launch(t.spec("grant")).await.unwrap();
    let r = run(&m, &h, script).await;
    assert!(r.stdout.contains("env -\n"), "{}{}", r.stdout, r.stderr);
    m.destroy(&mut h).await.unwrap();

    // The Docker socket needs the louder grant, which is logged.
    let mut b = SandboxManager::builder(probe_ambient().clone(), real_paths());
    b.home(t.p("home"))
        .allow_unix_socket("/var/run/docker.sock");
    let err = b.build().unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::BadSocketGrant { .. }),
        "{err}"
    );
    let (lines, log) = collected_log();
    let mut b = SandboxManager::builder(probe_ambient().clone(), real_paths());
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .log(log)
        .allow_root_equivalent_unix_socket("/var/run/docker.sock");
    b.build().unwrap();
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("WARNING") && l.contains("/var/run/docker.sock")),
        "{:?}",
        lines.lock().unwrap()
    );
}

#[tokio::test]
async fn descriptors_the_host_leaks_never_reach_the_sandbox() {
    if !native_available() {
        return;
    }
    let t = Tree::new("fds");
    // A directory handle without close-on-exec: from inside, openat(fd, "..")
    // would walk the host's tree.
    let dir = std::fs::File::open(&t.0).unwrap();
    let leaked = rustix::io::fcntl_dupfd_cloexec(&dir, 900).unwrap();
    rustix::io::fcntl_setfd(&leaked, rustix::io::FdFlags::empty()).unwrap();
    let n = std::os::fd::AsRawFd::as_raw_fd(&leaked);
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let mut h = m.launch(t.spec("fds")).await.unwrap();
    let r = run(
        &m,
        &h,
        &format!("ls /proc/self/fd; test -e /proc/self/fd/{n} && echo LEAKED; exit 0"),
    )
    .await;
    assert_eq!(r.exit, Some(0), "{}", r.stderr);
    assert!(!r.stdout.contains("LEAKED"), "{}", r.stdout);
    let fds: Vec<u32> = r
        .stdout
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(
        fds.contains(&0) && fds.contains(&1) && fds.contains(&2),
        "{fds:?}"
    );
    assert!(
        fds.iter().all(|&fd| fd < 100),
        "no high descriptor from the host: {fds:?}"
    );
    m.destroy(&mut h).await.unwrap();
    drop(leaked);
}

#[tokio::test]
async fn a_plan_too_long_for_the_command_line_goes_through_args_fd() {
    if !native_available() {
        return;
    }
    let t = Tree::new("argsfd");
    let mut spec = t.spec("argsfd");
    let long = "p".repeat(240);
    for i in 0..400 {
        let dir = t.p(&format!("ws/protected/{long}{i:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        spec.protected_paths.push(dir);
    }
    let last = spec.protected_paths[399].clone();
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, None);
    let mut h = m.launch(spec).await.unwrap();
    let plan_bytes: usize = m.bwrap_args(&h).unwrap().iter().map(|a| a.len() + 1).sum();
    assert!(plan_bytes > bwrap_spec::MAX_ARGV_BYTES, "{plan_bytes}");
    let r = run(
        &m,
        &h,
        &format!(
            "echo x > '{last}/f' && echo PROTECTED-WRITTEN; echo ok > ok.txt && echo NORMAL-WRITE; \
             cat ~/.ssh/id_rsa"
        ),
    )
    .await;
    assert!(
        r.stdout.contains("NORMAL-WRITE"),
        "{} {}",
        r.stdout,
        r.stderr
    );
    assert!(!r.stdout.contains("PROTECTED-WRITTEN"), "{}", r.stdout);
    assert!(!r.stdout.contains("SECRET-KEY"), "{}", r.stdout);
    assert!(!Path::new(&format!("{last}/f")).exists());
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn an_origin_that_aborts_is_seen_as_a_reset_inside() {
    if !native_available() {
        return;
    }
    let t = Tree::new("reset");
    // An origin that promises 100 bytes, sends 7 and aborts the connection.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten().take(4) {
            let mut s = s;
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial");
            std::thread::sleep(std::time::Duration::from_millis(100));
            let _ = rustix::net::sockopt::set_socket_linger(&s, Some(std::time::Duration::ZERO));
            drop(s);
        }
    });
    let m = manager(&t, FilenameRules::DropFilenameGlobDenies, Some(port));
    let mut h = m.launch(t.spec("reset")).await.unwrap();
    let r = run(
        &m,
        &h,
        &format!("curl -sS -m 10 -p -o /dev/null http://localhost:{port}/; echo \"curl=$?\""),
    )
    .await;
    // 56: receive failure (reset); a clean close would be 18 (partial file).
    assert!(r.stdout.contains("curl=56"), "{} {}", r.stdout, r.stderr);
    assert!(r.stderr.to_lowercase().contains("reset"), "{}", r.stderr);
    m.destroy(&mut h).await.unwrap();
}

#[test]
fn a_host_without_a_sandbox_logs_one_start_up_line() {
    let mut host = FakeHost::new(Os::Linux);
    host.env("PATH", "/usr/bin");
    let (lines, log) = collected_log();
    let m = SandboxManager::builder(ProbeReport::probe(&host), real_paths())
        .home("/home/u")
        .log(log)
        .build()
        .unwrap();
    assert_eq!(m.selection().backend, SandboxBackend::None);
    let lines = lines.lock().unwrap();
    assert_eq!(
        lines.as_slice(),
        [
            "no OS-native agent sandbox on this host: install the missing packages: sudo apt-get install bubblewrap; nor can Landlock confine here (the name guard cannot run (kernel release unknown (need Linux 5.19 or later)))"
        ],
        "R-PROBE-1: one start-up line"
    );
}

/// A macOS host as the probe sees it: `sandbox-exec` present.
fn macos_probe() -> ProbeReport {
    let mut host = FakeHost::new(Os::MacOs);
    host.executable("/usr/bin/sandbox-exec");
    ProbeReport::probe(&host)
}

#[tokio::test]
async fn on_macos_a_dispatch_gets_a_seatbelt_profile_that_reaches_only_its_proxies() {
    use seatbelt_profile::{Evaluator, Operation, Target};
    let t = Tree::new("seatbelt");
    let m = SandboxManager::builder(macos_probe(), real_paths())
        .home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .build()
        .unwrap();
    assert_eq!(m.selection().backend, SandboxBackend::Native);
    let mut h = m.launch(t.spec("seatbelt")).await.unwrap();
    let http: std::net::SocketAddr = h.details["httpProxy"].as_str().unwrap().parse().unwrap();
    let socks: std::net::SocketAddr = h.details["socksProxy"].as_str().unwrap().parse().unwrap();
    {
        // These ports are on the host's loopback, where any process can
        // connect: without the session's credentials a client gets 407
        // (HTTP) or no acceptable method (SOCKS5).
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut c = tokio::net::TcpStream::connect(http).await.unwrap();
        c.write_all(b"CONNECT example.com:443 HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        c.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 407 "), "{answer}");
        let mut c = tokio::net::TcpStream::connect(socks).await.unwrap();
        c.write_all(&[5, 1, 0]).await.unwrap();
        let mut reply = Vec::new();
        c.read_to_end(&mut reply).await.unwrap();
        assert_eq!(reply, [5, 0xff]);
    }
    let profile = m.seatbelt_profile(&h).expect("a seatbelt session");
    assert!(m.bwrap_args(&h).is_none());
    let eval = Evaluator::from_sbpl(profile.text(), &profile.params_map()).unwrap();
    let lo = std::net::IpAddr::from([127, 0, 0, 1]);
    for port in [http.port(), socks.port()] {
        assert!(eval.allows(Operation::NetworkOutbound, Target::Ip(lo, port)));
    }
    assert!(!eval.allows(Operation::NetworkOutbound, Target::Ip(lo, 22)));
    assert!(!eval.allows(
        Operation::NetworkOutbound,
        Target::Ip("93.184.216.34".parse().unwrap(), 443)
    ));
    let key = t.p("home/.ssh/id_rsa");
    assert!(!eval.allows(Operation::FileReadData, Target::Path(&key)));
    let hook = t.p("ws/.git/hooks/pre-commit");
    assert!(!eval.allows(Operation::FileWriteData, Target::Path(&hook)));
    let pem = t.p("ws/new.pem");
    assert!(!eval.allows(Operation::FileWriteData, Target::Path(&pem)));
    let ok = t.p("ws/src/main.rs");
    assert!(eval.allows(Operation::FileWriteData, Target::Path(&ok)));
    // Running it needs macOS; here the launcher is missing and exec fails
    // with a typed error instead of running anything unconfined.
    if !Path::new(seatbelt_profile::SANDBOX_EXEC).exists() {
        assert!(m.exec(&h, SandboxCommand::new("true")).await.is_err());
    }
    m.destroy(&mut h).await.unwrap();
    // The proxies are gone with the session (their listeners close as their
    // tasks end, which a loaded machine may take a moment to run).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::net::TcpStream::connect(http).is_ok() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(std::net::TcpStream::connect(http).is_err());
}

#[tokio::test]
async fn on_macos_the_extra_read_denies_are_in_the_profile_and_a_secret_is_never_read_again() {
    use seatbelt_profile::{Evaluator, Operation, Target};
    let t = Tree::new("seatbelt-reads");
    let mut b = SandboxManager::builder(macos_probe(), real_paths());
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .read_deny(t.p("ws/data"))
        .allow_read_within_denies(t.p("ws/data/pub"));
    let m = b.build().unwrap();
    let mut h = m.launch(t.spec("seatbelt-reads")).await.unwrap();
    let profile = m.seatbelt_profile(&h).expect("a seatbelt session");
    let eval = Evaluator::from_sbpl(profile.text(), &profile.params_map()).unwrap();
    let read = |p: &str| eval.allows(Operation::FileReadData, Target::Path(&t.p(p)));
    assert!(!read("ws/data/secret.txt"));
    assert!(read("ws/data/pub/ok.txt"));
    assert!(read("ws/src/main.rs"));
    assert!(!read("home/.ssh/id_rsa"));
    m.destroy(&mut h).await.unwrap();
    // Reading a secret again is refused at launch.
    b.read_deny(t.p("home"))
        .allow_read_within_denies(t.p("home/.ssh"));
    let m = b.build().unwrap();
    let err = m.launch(t.spec("seatbelt-reads-2")).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot reach into the fixed secret set"),
        "{err}"
    );
}

#[tokio::test]
async fn repositories_made_inside_are_named_at_destroy() {
    if !native_available() {
        return;
    }
    let t = Tree::new("newrepo");
    let (m, lines) = logging_manager(&t);
    let mut h = m.launch(t.spec("newrepo")).await.unwrap();
    let r = run(&m, &h, "git init -q sub && echo made").await;
    assert!(r.stdout.contains("made"), "{}", r.stderr);
    m.destroy(&mut h).await.unwrap();
    let sub = t.p("ws/sub");
    let lines = lines.lock().unwrap();
    let named = lines_with(&lines, "git repositories created inside the sandbox");
    assert_eq!(named.len(), 1, "{lines:#?}");
    assert!(named[0].ends_with(&sub), "{}", named[0]);
    // The repository that was there at launch is not named.
    assert!(
        !named[0].contains(&format!("{} ", t.p("ws"))),
        "{}",
        named[0]
    );
}

#[tokio::test]
async fn repositories_made_inside_a_settled_tree_are_named_at_destroy() {
    if !native_available() {
        return;
    }
    let t = Tree::new("settled");
    for d in ["ws/a/b/c", "ws/a/d", "ws/e"] {
        std::fs::create_dir_all(t.p(d)).unwrap();
    }
    // Older than the search's trust margin, so the search at destroy
    // reuses the launch's reading of every directory that kept its stamp.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let (m, lines) = logging_manager(&t);
    let mut h = m.launch(t.spec("settled")).await.unwrap();
    // A repository deep in an existing directory, whose times are then set
    // back; a gitlink file in another.
    let r = run(
        &m,
        &h,
        "git init -q a/b/c/sub && touch -d @1000000000 a/b/c && \
         printf 'gitdir: x\\n' > a/d/.git && echo made",
    )
    .await;
    assert!(r.stdout.contains("made"), "{}", r.stderr);
    m.destroy(&mut h).await.unwrap();
    let lines = lines.lock().unwrap();
    let named = lines_with(&lines, "git repositories created inside the sandbox");
    assert_eq!(named.len(), 1, "{lines:#?}");
    assert!(named[0].contains(&t.p("ws/a/b/c/sub")), "{}", named[0]);
    assert!(named[0].contains(&t.p("ws/a/d")), "{}", named[0]);
    assert!(!named[0].contains(&t.p("ws/e")), "{}", named[0]);
}

#[tokio::test]
async fn a_repository_made_on_the_host_between_two_launches_gets_its_denies() {
    if !native_available() {
        return;
    }
    let t = Tree::new("between");
    std::fs::create_dir_all(t.p("ws/a/b")).unwrap();
    // Older than the search's trust margin: the second launch's search
    // starts from the first run's record and reuses what did not change.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let (m, _lines) = logging_manager(&t);
    let mut h = m.launch(t.spec("between-1")).await.unwrap();
    let r = run(&m, &h, "echo one").await;
    assert!(r.stdout.contains("one"), "{}", r.stderr);
    m.destroy(&mut h).await.unwrap();
    // Between the two runs, on the host.
    std::fs::create_dir_all(t.p("ws/a/b/inner/.git/hooks")).unwrap();
    let mut h = m.launch(t.spec("between-2")).await.unwrap();
    let r = run(
        &m,
        &h,
        "echo evil > a/b/inner/.git/hooks/pre-commit && echo wrote; \
         echo evil > a/b/inner/.git/config && echo wrote; \
         echo fine > a/b/inner/file && echo ok",
    )
    .await;
    m.destroy(&mut h).await.unwrap();
    assert!(!r.stdout.contains("wrote"), "{} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("ok"), "{}", r.stderr);
    assert!(!std::path::Path::new(&t.p("ws/a/b/inner/.git/hooks/pre-commit")).exists());
    assert!(!std::path::Path::new(&t.p("ws/a/b/inner/.git/config")).exists());
}

#[tokio::test]
async fn a_repository_search_cut_short_by_its_limit_is_logged_at_launch() {
    if !native_available() {
        return;
    }
    let t = Tree::new("manydirs");
    // The root and more directories below it than the search reads.
    for i in 0..=bwrap_spec::REPO_SEARCH_MAX_DIRS {
        std::fs::create_dir(t.p(&format!("ws/d{i:05}"))).unwrap();
    }
    let (m, lines) = logging_manager(&t);
    let mut h = m.launch(t.spec("manydirs")).await.unwrap();
    m.destroy(&mut h).await.unwrap();
    let lines = lines.lock().unwrap();
    let cut = lines_with(&lines, "stopped after 5000 directories");
    assert_eq!(cut.len(), 1, "{lines:#?}");
    // The two roots (ws, home) are read first; their 5,002 subdirectories
    // (5,001 made here and home/.ssh) leave 4,998 to read.
    assert!(cut[0].contains("with 4 more in reach unread"), "{}", cut[0]);
}

#[tokio::test]
async fn on_macos_a_granted_socket_is_the_one_unix_socket_the_profile_reaches() {
    use seatbelt_profile::{Evaluator, Operation, Target};
    let t = Tree::new("seatbelt-grant");
    let m = SandboxManager::builder(macos_probe(), real_paths())
        .home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .allow_unix_socket("/Users/u/.ssh/agent.sock")
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .build()
        .unwrap();
    let mut h = m.launch(t.spec("seatbelt-grant")).await.unwrap();
    let profile = m.seatbelt_profile(&h).unwrap();
    let eval = Evaluator::from_sbpl(profile.text(), &profile.params_map()).unwrap();
    let reach = |p: &str| eval.allows(Operation::NetworkOutbound, Target::UnixSocket(p));
    assert!(reach("/Users/u/.ssh/agent.sock"));
    assert!(!reach("/Users/u/.ssh/other.sock"));
    assert!(!reach("/var/run/docker.sock"));
    m.destroy(&mut h).await.unwrap();
}

/// A stand-in for macOS's `log` in `dir`: records its arguments and pid,
/// then waits to be stopped.
fn stand_in_log(dir: &Path) -> PathBuf {
    let p = dir.join("log");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > {d}/args\necho $$ > {d}/pid\nexec sleep 60\n",
        d = dir.display()
    );
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

/// The start time (in clock ticks since boot) of live process `pid`, not
/// a zombie: with it a process is told from a later one that got its pid
/// again (pids wrap at 32,768 here, and the fork-bomb test cycles them).
fn started(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(") ")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, start time field 22.
    (fields.first() != Some(&"Z")).then(|| fields.get(19).map(|s| s.to_string()))?
}

#[tokio::test]
async fn a_seatbelt_session_streams_its_tagged_denials_from_launch_to_destroy() {
    let t = Tree::new("seatbelt-log");
    let dir = PathBuf::from(t.p("sockets"));
    let program = stand_in_log(&dir);
    let (lines, log) = collected_log();
    let m = SandboxManager::builder(macos_probe(), real_paths())
        .home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .seatbelt_log_program(&program)
        .log(log)
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .build()
        .unwrap();
    let mut h = m.launch(t.spec("seatbelt-log")).await.unwrap();
    let mut args = String::new();
    for _ in 0..100 {
        args = std::fs::read_to_string(dir.join("args")).unwrap_or_default();
        if args.lines().count() == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(
        args[..4],
        ["stream", "--style", "ndjson", "--predicate"],
        "{args:?}"
    );
    // The predicate names the tag every deny rule of the profile carries.
    let tag = args[4]
        .strip_prefix("eventMessage ENDSWITH \"")
        .and_then(|r| r.strip_suffix('"'))
        .unwrap();
    let profile = m.seatbelt_profile(&h).unwrap();
    let denies = profile.text().matches("(deny ").count();
    assert!(denies > 0);
    assert_eq!(
        profile
            .text()
            .matches(&format!("(with message \"{tag}\")"))
            .count(),
        denies
    );
    let pid = std::fs::read_to_string(dir.join("pid")).unwrap();
    let pid = pid.trim().to_owned();
    let born = started(&pid).expect("the log stream runs");
    m.destroy(&mut h).await.unwrap();
    assert_ne!(
        started(&pid),
        Some(born),
        "the log stream outlived its session"
    );
    // A second session gets a tag of its own.
    let mut h2 = m.launch(t.spec("seatbelt-log")).await.unwrap();
    let other = m.seatbelt_profile(&h2).unwrap();
    assert!(!other.text().contains(&format!("\"{tag}\"")));
    m.destroy(&mut h2).await.unwrap();
    assert!(
        lines
            .lock()
            .unwrap()
            .iter()
            .all(|l| !l.contains("system log"))
    );

    // Without a `log` to run, the launch goes on and a line says why.
    let m = SandboxManager::builder(macos_probe(), real_paths())
        .home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .seatbelt_log_program(dir.join("no-such-log"))
        .log({
            let sink = lines.clone();
            Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_string()))
        })
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .build()
        .unwrap();
    let mut h = m.launch(t.spec("seatbelt-log")).await.unwrap();
    m.destroy(&mut h).await.unwrap();
    let lines = lines.lock().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("no violations from the system log")),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn an_extra_read_deny_hides_its_tree_except_what_is_read_again_and_never_a_secret() {
    if !native_available() {
        return;
    }
    let t = Tree::new("read-deny");
    std::fs::create_dir_all(t.p("ws/data/pub")).unwrap();
    std::fs::write(t.p("ws/data/secret.txt"), "HIDDEN-DATA").unwrap();
    std::fs::write(t.p("ws/data/pub/ok.txt"), "READABLE").unwrap();
    let mut b = crate::builder();
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .filename_rules(FilenameRules::DropFilenameGlobDenies)
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .read_deny(t.p("ws/data"))
        .allow_read_within_denies(t.p("ws/data/pub"))
        .read_deny(t.p("home"));
    let m = b.build().unwrap();
    let mut h = m.launch(t.spec("read-deny")).await.unwrap();
    let r = run(
        &m,
        &h,
        &format!(
            "cat {d}/secret.txt; echo; ls -A {d}; cat {d}/pub/ok.txt; echo; \
             cat {home}/.ssh/id_rsa; ls -A {home}; echo done",
            d = t.p("ws/data"),
            home = t.p("home")
        ),
    )
    .await;
    assert!(!r.stdout.contains("HIDDEN-DATA"), "{}", r.stdout);
    assert!(r.stdout.contains("READABLE"), "{} {}", r.stdout, r.stderr);
    // Only what is read again shows in the denied directory.
    assert!(r.stdout.contains("\npub\n"), "{}", r.stdout);
    assert!(!r.stdout.contains("secret.txt"), "{}", r.stdout);
    // The denied home shows nothing, its secrets least of all.
    assert!(!r.stdout.contains("SECRET-KEY"), "{}", r.stdout);
    assert!(!r.stdout.contains(".ssh"), "{}", r.stdout);
    assert!(r.stdout.ends_with("done\n"), "{}", r.stdout);
    // The files themselves are unchanged on the host.
    assert_eq!(
        std::fs::read_to_string(t.p("ws/data/secret.txt")).unwrap(),
        "HIDDEN-DATA"
    );
    m.destroy(&mut h).await.unwrap();

    // A secret is never read again, whatever asks for it: refused at launch.
    b.allow_read_within_denies(t.p("home/.ssh"));
    let m = b.build().unwrap();
    let err = m.launch(t.spec("read-deny-2")).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot reach into the fixed secret set"),
        "{err}"
    );
}

#[tokio::test]
async fn without_the_baseline_only_the_listed_hosts_pass_the_proxy() {
    if !native_available() {
        return;
    }
    let t = Tree::new("no-baseline");
    let mut b = crate::builder();
    b.home(t.p("home"))
        .temp_dir(t.p("sockets"))
        .filename_rules(FilenameRules::DropFilenameGlobDenies)
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .baseline(agent_sandbox::Baseline::Exclude)
        .allow("listed.invalid");
    let m = b.build().unwrap();
    let mut h = m.launch(t.spec("no-baseline")).await.unwrap();
    // api.github.com is in the baseline: refused by the list here (a
    // violation), where the listed host only fails to resolve (reported
    // too, as an upstream failure of an allowed host).
    let r = run(
        &m,
        &h,
        "curl -s -o /dev/null --max-time 5 https://api.github.com/; \
         curl -s -o /dev/null --max-time 5 https://listed.invalid/; echo done",
    )
    .await;
    let reason = |host: &str| {
        r.violations
            .iter()
            .zip(&r.raws)
            .find(|(v, _)| v.contains(host))
            .map(|(_, raw)| raw.clone())
    };
    let github = reason("api.github.com").unwrap_or_default();
    assert!(
        !github.is_empty() && !github.contains("upstream failed"),
        "{:?} {:?} {}",
        r.violations,
        r.raws,
        r.stderr
    );
    let listed = reason("listed.invalid").unwrap_or_default();
    assert!(
        listed.contains("allowed, but the upstream failed: "),
        "{:?} {:?}",
        r.violations,
        r.raws
    );
    m.destroy(&mut h).await.unwrap();
}

#[tokio::test]
async fn without_a_workdir_commands_start_in_the_first_mount() {
    if !native_available() {
        return;
    }
    let t = Tree::new("workdir");
    let (m, _) = logging_manager(&t);
    let mut spec = t.spec("workdir");
    spec.guest_workdir = None;
    let mut h = m.launch(spec).await.unwrap();
    let r = run(&m, &h, "pwd").await;
    assert_eq!(r.stdout, format!("{}\n", t.p("ws")), "{}", r.stderr);
    m.destroy(&mut h).await.unwrap();
}
