//! The proxy variables and `GIT_SSH_COMMAND` proven by use: curl, git and
//! ssh run with a sanitised environment, through connect-proxy's HTTP and
//! SOCKS5 proxies, to a TCP server on loopback. The name `allowed.test`
//! resolves only inside the proxy, so any byte that reaches the server
//! went through it.

use connect_proxy::{
    AllowList, Baseline, IpPolicy, ProxyConfig, ProxyCredentials, ProxyPair, StaticResolver,
};
use env_guard::{EnvGuard, Inherit, ProxyAuth, ProxyEnv, Sanitized, SshProxyTool};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What each accepted connection sent first.
type Seen = Arc<Mutex<Vec<Vec<u8>>>>;

/// A loopback TCP server: records the first bytes of each connection,
/// answers an HTTP GET with `ok` and an ssh client with an SSH-1.0 banner
/// (which ssh refuses, so it exits), and closes. Serves at most 16
/// connections.
fn start_server() -> (u16, Seen) {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(mut stream) = stream else { continue };
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut buf = vec![0; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            buf.truncate(n);
            if buf.starts_with(b"GET ") {
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            } else if buf.starts_with(b"SSH-") {
                // A protocol version ssh refuses, so it exits at once.
                let _ = stream.write_all(b"SSH-1.0-fake\r\n");
            }
            record.lock().unwrap().push(buf);
        }
    });
    (port, seen)
}

/// Runs `cmd` with only `env`, bounded to 60 s; returns (success, stdout, stderr).
fn run(mut cmd: Command, env: &Sanitized, dir: &Path) -> (bool, String, String) {
    let (out, err) = (dir.join("out"), dir.join("err"));
    env.apply_to(&mut cmd)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    // A guard against a hang, not a performance assertion.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.success(),
        std::fs::read_to_string(out).unwrap(),
        std::fs::read_to_string(err).unwrap(),
    )
}

fn seen_since(seen: &Seen, before: usize) -> Vec<Vec<u8>> {
    seen.lock().unwrap()[before..].to_vec()
}

/// The server may record a connection a moment after the client exits.
fn wait_for(seen: &Seen, before: usize) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() <= before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    seen_since(seen, before)
}

/// A runtime and a proxy pair that allows `allowed.test:PORT` (resolved to
/// loopback inside the proxy only), requiring `credentials` when given.
fn start_proxies(
    port: u16,
    credentials: Option<ProxyCredentials>,
) -> (tokio::runtime::Runtime, ProxyPair) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let pair = rt.block_on(async {
        let list = AllowList::builder()
            .baseline(Baseline::Exclude)
            .allow(format!("allowed.test:{port}"))
            .build()
            .unwrap();
        let resolver = StaticResolver::new();
        resolver.insert("allowed.test", [Ipv4Addr::LOCALHOST.into()]);
        let mut ip = IpPolicy::new();
        ip.allow_cidr("127.0.0.1/32".parse().unwrap());
        let mut config = ProxyConfig::builder();
        config
            .allowlist(list)
            .ip_policy(ip)
            .resolver(Arc::new(resolver));
        if let Some(c) = credentials {
            config.require_credentials(c);
        }
        ProxyPair::start(config.build().unwrap()).await.unwrap()
    });
    (rt, pair)
}

#[test]
fn proxy_variables_and_git_ssh_command_work_through_connect_proxy() {
    let found = [
        ("curl", "apt-get install curl"),
        ("git", "apt-get install git"),
        ("ssh", "apt-get install openssh-client"),
        ("nc", "apt-get install netcat-openbsd"),
    ]
    .map(|(t, install)| test_support::tool(t, install));
    if found.iter().any(Option::is_none) {
        return;
    }
    let (port, seen) = start_server();
    let (rt, pair) = start_proxies(port, None);
    let home = tempfile::tempdir().unwrap();
    let path = std::env::var_os("PATH").unwrap();
    let guard = EnvGuard::builder()
        .inherit(Inherit::None)
        .set("PATH", path)
        .set("HOME", home.path())
        .proxy(ProxyEnv {
            http: pair.http_addr(),
            socks: pair.socks_addr(),
        })
        .build()
        .unwrap();
    let env = guard.apply(Vec::<(String, String)>::new());
    let dir = home.path();
    let curl = |url: &str| {
        let mut c = Command::new("curl");
        c.args(["-sS", "--max-time", "20", url]);
        c
    };

    // HTTP_PROXY / http_proxy: plain HTTP through the HTTP proxy.
    let before = seen.lock().unwrap().len();
    let (ok, out, err) = run(
        curl(&format!("http://allowed.test:{port}/via-http")),
        &env,
        dir,
    );
    assert!(ok && out == "ok", "curl over http_proxy failed: {err}");
    assert!(wait_for(&seen, before)[0].starts_with(b"GET /via-http"));

    // HTTPS_PROXY: a CONNECT tunnel; the server sees the TLS ClientHello.
    let before = seen.lock().unwrap().len();
    let _ = run(curl(&format!("https://allowed.test:{port}/")), &env, dir);
    let got = wait_for(&seen, before);
    assert!(
        got[0].starts_with(&[0x16, 0x03]),
        "no TLS record: {:?}",
        got
    );

    // ALL_PROXY alone (socks5h://): plain HTTP through the SOCKS5 proxy.
    let mut socks_only = env.clone();
    socks_only
        .vars
        .retain(|(n, _)| !n.to_string_lossy().to_ascii_lowercase().starts_with("http"));
    let before = seen.lock().unwrap().len();
    let (ok, out, err) = run(
        curl(&format!("http://allowed.test:{port}/via-socks")),
        &socks_only,
        dir,
    );
    assert!(ok && out == "ok", "curl over all_proxy failed: {err}");
    assert!(wait_for(&seen, before)[0].starts_with(b"GET /via-socks"));

    // GIT_SSH_COMMAND: git runs ssh, whose ProxyCommand goes through the
    // SOCKS5 proxy; the server sees the ssh banner.
    let before = seen.lock().unwrap().len();
    let mut git = Command::new("git");
    git.args([
        "ls-remote",
        &format!("ssh://git@allowed.test:{port}/repo.git"),
    ]);
    let (ok, _, err) = run(git, &env, dir);
    assert!(!ok);
    let got = wait_for(&seen, before);
    assert!(
        got.first().is_some_and(|b| b.starts_with(b"SSH-2.0-")),
        "no ssh banner reached the server: {got:?}; git said: {err}"
    );

    // A name outside the allowlist is refused by the proxy: nothing arrives.
    let before = seen.lock().unwrap().len();
    let (_, out, _) = run(curl(&format!("http://denied.test:{port}/")), &env, dir);
    assert_ne!(out, "ok");
    assert!(seen_since(&seen, before).is_empty());

    rt.block_on(pair.shutdown());
}

/// Where the proxies require credentials (a loopback listener others could
/// reach), the clients a sandboxed agent runs take them from the proxy URLs:
/// curl, git over HTTPS (libcurl, as cargo), Python's urllib, pip (its
/// vendored requests) and npm; without them the same clients are refused.
#[test]
fn clients_take_the_proxy_credentials_from_the_proxy_urls() {
    let found = [
        ("curl", "apt-get install curl"),
        ("git", "apt-get install git"),
        ("python3", "apt-get install python3"),
    ]
    .map(|(t, install)| test_support::tool(t, install));
    if found.iter().any(Option::is_none) {
        return;
    }
    let creds = ProxyCredentials::generate_from_os_rng().unwrap();
    let (port, seen) = start_server();
    let (rt, pair) = start_proxies(port, Some(creds.clone()));
    let home = tempfile::tempdir().unwrap();
    let path = std::env::var_os("PATH").unwrap();
    let proxy = ProxyEnv {
        http: pair.http_addr(),
        socks: pair.socks_addr(),
    };
    let env_with = |auth: Option<ProxyAuth>| {
        let mut b = EnvGuard::builder();
        b.inherit(Inherit::None)
            .set("PATH", path.clone())
            .set("HOME", home.path())
            .proxy(proxy)
            .ssh_proxy_tool(SshProxyTool::Omit);
        if let Some(a) = auth {
            b.proxy_auth(a);
        }
        b.build().unwrap().apply(Vec::<(String, String)>::new())
    };
    let auth = ProxyAuth::new(creds.user(), creds.reveal_secret()).unwrap();
    let env = env_with(Some(auth));
    let bare = env_with(None);
    let dir = home.path();
    let url = |p: &str| format!("http://allowed.test:{port}/{p}");
    let curl = |u: String| {
        let mut c = Command::new("curl");
        c.args(["-sS", "--max-time", "20", &u]);
        c
    };
    let python = |u: String| {
        let mut c = Command::new("python3");
        c.args([
            "-c",
            "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode(), end='')",
            &u,
        ]);
        c
    };

    for (name, cmd, path) in [
        ("curl", curl(url("curl")), "curl"),
        ("python urllib", python(url("urllib")), "urllib"),
    ] {
        let before = seen.lock().unwrap().len();
        let (ok, out, err) = run(cmd, &env, dir);
        assert!(ok && out == "ok", "{name} with credentials: {err}");
        let got = wait_for(&seen, before);
        assert!(
            got[0].starts_with(format!("GET /{path}").as_bytes()),
            "{name}"
        );
        assert!(
            !String::from_utf8_lossy(&got[0]).contains(creds.reveal_secret()),
            "{name}: the secret went upstream"
        );
    }
    // git over HTTPS: a CONNECT tunnel with the credentials; the server sees
    // the TLS ClientHello.
    let before = seen.lock().unwrap().len();
    let mut git = Command::new("git");
    git.args([
        "ls-remote",
        &format!("https://allowed.test:{port}/repo.git"),
    ]);
    let _ = run(git, &env, dir);
    let got = wait_for(&seen, before);
    assert!(
        got.first().is_some_and(|b| b.starts_with(&[0x16, 0x03])),
        "git over https: no TLS record reached the server: {got:?}"
    );
    // pip reads the same variables.
    if let Some(pip) = test_support::tool("pip3", "apt-get install python3-pip") {
        let before = seen.lock().unwrap().len();
        let mut c = Command::new(pip);
        c.args([
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--retries",
            "0",
            "-d",
        ])
        .arg(dir.join("dl"))
        .args(["--index-url", &url("simple/")])
        .args(["--trusted-host", "allowed.test", "nothing-here"]);
        let (_, _, err) = run(c, &env, dir);
        let got = wait_for(&seen, before);
        assert!(
            got.first()
                .is_some_and(|b| b.starts_with(b"GET /simple/nothing-here/")),
            "pip did not reach the index through the proxy: {got:?}; pip said: {err}"
        );
    }

    // npm reads the same variables (its own proxy settings default to them).
    if let Some(npm) = test_support::tool("npm", "apt-get install npm") {
        let before = seen.lock().unwrap().len();
        let mut c = Command::new(npm);
        c.args(["view", "nothing-here", "--registry", &url("npm/")]);
        let (_, _, err) = run(c, &env, dir);
        let got = wait_for(&seen, before);
        assert!(
            got.iter().any(|b| b.starts_with(b"GET /npm/nothing-here ")),
            "npm did not reach the registry through the proxy: {:?}; npm said: {err}",
            got.iter()
                .map(|b| String::from_utf8_lossy(b))
                .collect::<Vec<_>>()
        );
    }

    // Without the credentials every client is refused (407) and nothing
    // reaches the server.
    let before = seen.lock().unwrap().len();
    for (name, cmd) in [
        ("curl", curl(url("bare"))),
        ("python urllib", python(url("bare"))),
    ] {
        let (_, out, err) = run(cmd, &bare, dir);
        assert_ne!(out, "ok", "{name} without credentials got through");
        assert!(
            out.contains("407") || err.contains("407"),
            "{name}: {out}{err}"
        );
    }
    assert!(seen_since(&seen, before).is_empty());
    rt.block_on(pair.shutdown());
}
