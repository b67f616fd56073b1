//! `git clone` over SSH from inside `agent-run`, with the key held only by
//! a real `ssh-agent` on the host and a real OpenSSH server on loopback:
//! the clone works when the agent's socket is granted, and fails without
//! the grant.
//!
//! The sandbox hides `~/.ssh` (part of the fixed secret set, which
//! `--allow-read-within-denies` does not reach into), so neither a
//! `known_hosts` nor a `config` there is read inside, and an inherited
//! `GIT_SSH_COMMAND` is dropped. The command checks the server's host key by
//! appending its own options to the `GIT_SSH_COMMAND` env-guard writes (which
//! carries the SOCKS `ProxyCommand`), pointing at a `known_hosts` in its
//! working directory.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_agent-run");
const SSHD: &str = "/usr/sbin/sshd";

/// The children this test started; each is killed when the test ends, even
/// on a failed assertion.
#[derive(Default)]
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every host tool the test needs, or the failure naming its install line.
fn tools() -> bool {
    let p = &sandbox_core::probe_ambient().native;
    if !test_support::require(
        p.mechanism == Some(sandbox_core::NativeMechanism::Bubblewrap),
        "bubblewrap (the native sandbox's namespace mechanism)",
        "apt-get install bubblewrap",
    ) || !test_support::require(
        p.filename_rules.is_enforceable(),
        "a kernel that can run the name guard (Linux 5.19 or later, x86-64)",
        "run the tests on such a kernel",
    ) || !test_support::require(
        Path::new(SSHD).is_file(),
        SSHD,
        "apt-get install openssh-server",
    ) {
        return false;
    }
    for (t, install) in [
        ("git", "apt-get install git"),
        ("ssh", "apt-get install openssh-client"),
        ("ssh-keygen", "apt-get install openssh-client"),
        ("ssh-agent", "apt-get install openssh-client"),
        ("ssh-add", "apt-get install openssh-client"),
        ("nc", "apt-get install netcat-openbsd"),
    ] {
        if test_support::tool(t, install).is_none() {
            return false;
        }
    }
    // env-guard's ProxyCommand needs OpenBSD netcat's SOCKS5 client.
    let help = Command::new("nc").arg("-h").output().unwrap();
    test_support::require(
        text(&help.stderr).contains("-X proxy_protocol")
            || text(&help.stdout).contains("-X proxy_protocol"),
        "OpenBSD nc (with -X proxy_protocol)",
        "apt-get install netcat-openbsd",
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(what: &str, child: &mut Child, log: &Path, ready: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "{what} exited ({status}): {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < until,
            "{what} not ready after 20 s: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An `ssh-agent` in the foreground on `sock`.
fn start_agent(sock: &Path, log: &Path, children: &mut Children) {
    let out = std::fs::File::create(log).unwrap();
    let mut c = Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(sock)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    wait_for("ssh-agent", &mut c, log, || sock.exists());
    children.0.push(c);
}

/// Clones `url` into `clone` inside the sandbox, the agent's socket granted
/// or not. Before that the command prints whether it has `SSH_AUTH_SOCK`,
/// what the agent it names holds, and whether the other agent's socket
/// next to it answers.
fn clone_in_sandbox(
    work: &Path,
    home: &Path,
    agent: &Path,
    neighbour: &Path,
    url: &str,
    grant: bool,
) -> Output {
    let script = r#"echo "sock=${SSH_AUTH_SOCK:-unset}"
ssh-add -l; echo "granted=$?"
SSH_AUTH_SOCK="$1" ssh-add -l; echo "neighbour=$?"
GIT_SSH_COMMAND="$GIT_SSH_COMMAND -o UserKnownHostsFile=$PWD/known_hosts -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=20" \
    exec git clone "$0" clone"#;
    let mut cmd = Command::new(BIN);
    cmd.args(["--allow", "localhost", "--allow-cidr", "127.0.0.1/32"]);
    if grant {
        cmd.arg("--allow-unix-socket").arg(agent);
    }
    cmd.args(["--timeout", "90", "--", "sh", "-c", script, url])
        .arg(neighbour)
        .current_dir(work)
        .env("HOME", home)
        .env("SSH_AUTH_SOCK", agent)
        .env_remove("CC_SERVER_SANDBOX")
        .stdin(Stdio::null());
    cmd.output().unwrap()
}

/// git over SSH from inside the sandbox reaches a real sshd on loopback
/// through the session's SOCKS proxy (env-guard's `GIT_SSH_COMMAND`) and
/// logs in with a key only a host `ssh-agent` holds, when that agent's
/// socket is granted: the clone has the repository's commit and sshd logs
/// one publickey login. Another agent's socket in the same directory is not
/// reachable. Without the grant `SSH_AUTH_SOCK` is not passed, the login is
/// refused and no clone is left.
#[test]
fn git_over_ssh_uses_the_host_agent_only_when_its_socket_is_granted() {
    if !tools() {
        return;
    }
    let d = std::env::temp_dir().join(format!("ssh-agent-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let (work, home, sockets) = (d.join("work"), d.join("home"), d.join("agent"));
    for p in [&work, &home, &sockets] {
        std::fs::create_dir_all(p).unwrap();
    }
    let p = |name: &str| d.join(name);
    let mut children = Children::default();
    let git = || {
        let mut c = Command::new("git");
        c.env("HOME", &home).env("GIT_CONFIG_NOSYSTEM", "1").args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.test",
        ]);
        c
    };

    // Keys: the server's host key, and the client's, which the agent holds.
    for (file, comment) in [
        ("host_key", "sshd host key"),
        ("client_key", "agent-held key"),
    ] {
        run(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
            .arg(p(file)));
    }
    std::fs::copy(p("client_key.pub"), p("authorized_keys")).unwrap();

    // The server, as the user running the test, on a free loopback port.
    let user = text(&run(Command::new("id").arg("-un")).stdout)
        .trim()
        .to_owned();
    let port = free_port();
    let config = format!(
        "Port {port}\n\
         ListenAddress 127.0.0.1\n\
         HostKey {host_key}\n\
         AuthorizedKeysFile {keys}\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         PubkeyAuthentication yes\n\
         PermitRootLogin prohibit-password\n\
         StrictModes no\n\
         UsePAM no\n\
         UseDNS no\n\
         PidFile {pid}\n\
         AllowUsers {user}\n\
         LogLevel VERBOSE\n",
        host_key = p("host_key").display(),
        keys = p("authorized_keys").display(),
        pid = p("sshd.pid").display(),
    );
    std::fs::write(p("sshd_config"), config).unwrap();
    if user == "root" {
        // As root sshd needs its privilege separation directory, which the
        // system's service manager would otherwise make.
        std::fs::create_dir_all("/run/sshd").unwrap();
    }
    let log = p("sshd.log");
    let mut sshd = Command::new(SSHD)
        .arg("-D")
        .arg("-e")
        .arg("-f")
        .arg(p("sshd_config"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for("sshd", &mut sshd, &log, || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    children.0.push(sshd);

    // The agent holds the client key; the key file is then deleted. A
    // second agent, holding the same key, listens next to it.
    let agent = sockets.join("agent.sock");
    let neighbour = sockets.join("neighbour.sock");
    start_agent(&agent, &p("agent.log"), &mut children);
    start_agent(&neighbour, &p("neighbour.log"), &mut children);
    for sock in [&agent, &neighbour] {
        run(Command::new("ssh-add")
            .arg(p("client_key"))
            .env("SSH_AUTH_SOCK", sock)
            .stdin(Stdio::null()));
    }
    std::fs::remove_file(p("client_key")).unwrap();

    // The repository, with one commit on main.
    let bare = p("repo.git");
    run(git().args(["init", "-q", "--bare"]).arg(&bare));
    run(git().args(["init", "-q"]).arg(p("src")));
    run(git()
        .arg("-C")
        .arg(p("src"))
        .args(["commit", "-q", "--allow-empty", "-m", "over ssh"]));
    run(git()
        .arg("-C")
        .arg(p("src"))
        .arg("push")
        .arg("-q")
        .arg(&bare)
        .arg("HEAD:refs/heads/main"));
    run(git()
        .arg("--git-dir")
        .arg(&bare)
        .args(["symbolic-ref", "HEAD", "refs/heads/main"]));
    let commit = text(&run(git().arg("-C").arg(p("src")).args(["rev-parse", "HEAD"])).stdout)
        .trim()
        .to_owned();
    let url = format!("ssh://{user}@localhost:{port}{}", bare.display());

    // The command's known_hosts names the server's key under the name and
    // port it connects to.
    let host_pub = std::fs::read_to_string(p("host_key.pub")).unwrap();
    let key: Vec<&str> = host_pub.split_whitespace().take(2).collect();
    std::fs::write(
        work.join("known_hosts"),
        format!("[localhost]:{port} {}\n", key.join(" ")),
    )
    .unwrap();

    let accepted = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .matches(&format!("Accepted publickey for {user} from 127.0.0.1"))
            .count()
    };

    // Granted: the clone succeeds through the proxy with the agent's key.
    let o = clone_in_sandbox(&work, &home, &agent, &neighbour, &url, true);
    let (out, e) = (text(&o.stdout), text(&o.stderr));
    let all = format!("{out}{e}\nsshd: {}", std::fs::read_to_string(&log).unwrap());
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(
        out.contains(&format!("sock={}\n", agent.display())),
        "{all}"
    );
    assert!(
        out.contains("agent-held key (ED25519)\ngranted=0\n"),
        "{all}"
    );
    // ssh-add exits 2 when it cannot reach an agent: the neighbour was not
    // bound into the sandbox.
    assert!(out.contains("neighbour=2\n"), "{all}");
    let head = run(Command::new("git")
        .env("HOME", &home)
        .args(["-c", "safe.directory=*", "-C"])
        .arg(work.join("clone"))
        .args(["rev-parse", "HEAD"]));
    assert_eq!(text(&head.stdout).trim(), commit, "{all}");
    assert_eq!(accepted(), 1, "{all}");

    // Not granted: no agent inside, so the server refuses the login.
    std::fs::remove_dir_all(work.join("clone")).unwrap();
    let o = clone_in_sandbox(&work, &home, &agent, &neighbour, &url, false);
    let (out, e) = (text(&o.stdout), text(&o.stderr));
    let all = format!("{out}{e}\nsshd: {}", std::fs::read_to_string(&log).unwrap());
    assert_ne!(o.status.code(), Some(0), "{all}");
    assert!(out.contains("sock=unset\n"), "{all}");
    assert!(out.contains("granted=2\n"), "{all}");
    assert!(e.contains("Permission denied (publickey)"), "{all}");
    assert!(!work.join("clone").exists(), "{all}");
    assert_eq!(accepted(), 1, "no second login: {all}");

    drop(children);
    std::fs::remove_dir_all(&d).unwrap();
}
