//! The real docker CLI reads our argv: a fake engine on a Unix socket
//! records the container-create request the CLI sends for `docker run
//! --detach` (endpoints: `/_ping`, `/vX/containers/create`,
//! `/vX/containers/ID/start`), and the test compares it with the spec.

use docker_spec::{ContainerSpec, DockerCommand, ImageRef, Limits, Network, NetworkName, User};
use sandbox_core::Access;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One request the CLI sent.
#[derive(Clone, Debug)]
struct Recorded {
    method: String,
    path: String,
    body: Vec<u8>,
}

const CONTAINER_ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const MAX_HEADER_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

struct FakeEngine {
    socket: PathBuf,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeEngine {
    fn start(socket: &Path) -> FakeEngine {
        let listener = UnixListener::bind(socket).unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (reqs, stopping) = (requests.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            // At most 64 connections: the CLI opens a handful per run.
            for stream in listener.incoming().take(64) {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let reqs = reqs.clone();
                std::thread::spawn(move || serve(stream, &reqs));
            }
        });
        FakeEngine {
            socket: socket.to_owned(),
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for FakeEngine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = UnixStream::connect(&self.socket);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves HTTP/1.1 requests on one connection until it closes.
fn serve(stream: UnixStream, requests: &Mutex<Vec<Recorded>>) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let Some(req) = read_request(&mut reader) else {
            return;
        };
        let (status, body): (&str, String) = route(&req);
        requests.lock().unwrap().push(req.clone());
        let mut head = format!(
            "HTTP/1.1 {status}\r\nApi-Version: 1.47\r\nOstype: linux\r\n\
             Docker-Experimental: false\r\nServer: fake-engine\r\n"
        );
        if status.starts_with("204") {
            head.push_str("\r\n");
            let _ = writer.write_all(head.as_bytes());
            continue;
        }
        let ctype = if req.path.ends_with("/_ping") {
            "text/plain"
        } else {
            "application/json"
        };
        head.push_str(&format!(
            "Content-Type: {ctype}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        ));
        let _ = writer.write_all(head.as_bytes());
        if req.method != "HEAD" {
            let _ = writer.write_all(body.as_bytes());
        }
    }
}

fn route(req: &Recorded) -> (&'static str, String) {
    let path = req.path.split('?').next().unwrap_or("");
    if path == "/_ping" || path.ends_with("/_ping") {
        return ("200 OK", "OK".to_owned());
    }
    if req.method == "POST" && path.ends_with("/containers/create") {
        return (
            "201 Created",
            json!({"Id": CONTAINER_ID, "Warnings": []}).to_string(),
        );
    }
    if req.method == "POST" && path.ends_with(&format!("/containers/{CONTAINER_ID}/start")) {
        return ("204 No Content", String::new());
    }
    (
        "404 Not Found",
        json!({"message": format!("fake engine: no {path}")}).to_string(),
    )
}

/// Reads one request (headers bounded, body by Content-Length or chunked).
fn read_request(reader: &mut BufReader<UnixStream>) -> Option<Recorded> {
    let mut line = String::new();
    let mut header_bytes = 0;
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut h = String::new();
        let n = reader.read_line(&mut h).ok()?;
        header_bytes += n;
        if n == 0 || header_bytes > MAX_HEADER_BYTES {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            if body.len() + size > MAX_BODY_BYTES {
                return None;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk[..size]);
            if size == 0 {
                break;
            }
        }
    } else {
        if length > MAX_BODY_BYTES {
            return None;
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).ok()?;
    }
    Some(Recorded { method, path, body })
}

/// Runs `docker run --detach` with `argv` against the fake engine and
/// returns the JSON body of the create request.
fn run_cli(docker: &Path, dir: &Path, argv: Vec<std::ffi::OsString>) -> (Value, Vec<Recorded>) {
    let socket = dir.join("engine.sock");
    let _ = std::fs::remove_file(&socket);
    let engine = FakeEngine::start(&socket);
    let config = dir.join("docker-config");
    std::fs::create_dir_all(&config).unwrap();
    // `run --detach`: create, then start, no attach.
    let mut args = argv;
    assert_eq!(args[0], "run");
    args.insert(1, "--detach".into());
    let out_path = dir.join("cli.out");
    let mut cmd = DockerCommand::new(docker)
        .engine_socket(&socket)
        .config_dir(&config)
        .home(dir)
        .command(args);
    cmd.stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(dir.join("cli.err")).unwrap());
    let mut child = cmd.spawn().unwrap();
    // A guard against a hang, not a performance assertion.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("docker CLI did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    let stderr = std::fs::read_to_string(dir.join("cli.err")).unwrap();
    let requests = engine.requests();
    drop(engine);
    let paths: Vec<_> = requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        status.success(),
        "docker failed: {stderr}\nrequests: {paths:#?}"
    );
    assert_eq!(stdout.trim(), CONTAINER_ID, "stderr: {stderr}");
    let create = requests
        .iter()
        .find(|r| r.method == "POST" && r.path.contains("/containers/create"))
        .unwrap_or_else(|| panic!("no create request: {paths:#?}"));
    (serde_json::from_slice(&create.body).unwrap(), requests)
}

/// The docker CLI on PATH (only the client runs: the engine is the fake).
fn skip_without_docker() -> Option<PathBuf> {
    test_support::tool("docker", "apt-get install docker.io")
}

fn mounts_json(spec: &ContainerSpec) -> Vec<Value> {
    spec.mounts()
        .iter()
        .map(|m| match m.access() {
            Access::ReadOnly => json!({
                "Type": "bind", "Source": m.source(), "Target": m.target(), "ReadOnly": true,
                "BindOptions": {"ReadOnlyForceRecursive": true, "Propagation": "rprivate"},
            }),
            Access::ReadWrite => json!({
                "Type": "bind", "Source": m.source(), "Target": m.target(),
            }),
        })
        .collect()
}

fn sorted(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[test]
fn docker_cli_sends_exactly_our_container() {
    let Some(docker) = skip_without_docker() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut b = ContainerSpec::builder(ImageRef::new("registry.example/agent:1.2").unwrap());
    b.mount("/srv/a,b", "/mnt/a,b", Access::ReadWrite)
        .mount("/srv/say \"hi\"", "/mnt/q", Access::ReadOnly)
        .mount("/srv/sp ace/k=v:x", "/mnt/k=v:x y", Access::ReadWrite)
        .mount(
            "/srv/all ,\"=: \"\"mix",
            "/srv/all ,\"=: \"\"mix",
            Access::ReadOnly,
        )
        .env("LANG", "C.UTF-8")
        .env("HTTPS_PROXY", "http://10.9.0.2:3128")
        .env("WITH_EQ", "a=b c")
        .secret_env("GITHUB_TOKEN", "ghp_not real = #x")
        .secret_env("PADDED", "  two spaces each side  ")
        .secret_env("EMPTY_SECRET", "")
        .user(User {
            uid: 1234,
            gid: 5678,
        })
        .limits(Limits {
            pids: 64,
            memory_bytes: 256 << 20,
            milli_cpus: Some(1500),
        })
        .network(Network::Internal(NetworkName::new("agent-net").unwrap()))
        .workdir("/mnt/a,b")
        .command(["sh", "-c", "id -u"]);
    let spec = b.build().unwrap();
    let (argv, env_file) = spec.run_argv_with_env_file(dir.path()).unwrap();
    assert!(env_file.is_some());
    let (body, requests) = run_cli(&docker, dir.path(), argv);
    drop(env_file);

    assert!(requests.iter().any(|r| r.path.ends_with("/_ping")));
    assert!(requests.iter().any(|r| r.path.ends_with("/start")));
    assert_eq!(body["Image"], "registry.example/agent:1.2");
    assert_eq!(body["Cmd"], json!(["sh", "-c", "id -u"]));
    assert_eq!(body["User"], "1234:5678");
    assert_eq!(body["WorkingDir"], "/mnt/a,b");
    assert_eq!(
        sorted(&body["Env"]),
        [
            "EMPTY_SECRET=",
            "GITHUB_TOKEN=ghp_not real = #x",
            "HTTPS_PROXY=http://10.9.0.2:3128",
            "LANG=C.UTF-8",
            "PADDED=  two spaces each side  ",
            "WITH_EQ=a=b c",
        ]
    );
    let host = &body["HostConfig"];
    assert_eq!(host["Mounts"], Value::Array(mounts_json(&spec)), "{host:#}");
    assert!(host["Binds"].is_null(), "no -v binds: {}", host["Binds"]);
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert!(host["CapAdd"].as_array().is_none_or(|a| a.is_empty()));
    assert_eq!(host["ReadonlyRootfs"], true);
    assert_eq!(host["Privileged"], false);
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges"]));
    assert_eq!(host["PidsLimit"], 64);
    assert_eq!(host["Memory"], 256 << 20);
    assert_eq!(host["MemorySwap"], 256 << 20);
    assert_eq!(host["NanoCpus"], 1_500_000_000u64);
    assert_eq!(host["NetworkMode"], "agent-net");
    assert_eq!(host["Init"], true);
    assert_eq!(host["AutoRemove"], true);
    assert_eq!(
        host["Tmpfs"],
        json!({"/tmp": "rw,nosuid,nodev,noexec,size=67108864"})
    );
    for ns in ["PidMode", "IpcMode", "UTSMode", "UsernsMode"] {
        assert!(
            host[ns].as_str().unwrap_or("").is_empty(),
            "{ns}: {}",
            host[ns]
        );
    }
}

#[test]
fn docker_cli_sends_network_none_for_a_sandbox_spec() {
    let Some(docker) = skip_without_docker() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sandbox: sandbox_core::SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","mode":"review","networkEnabled":false,
            "bindMounts":[{"hostPath":"/srv/wt, \"1\""}],
            "runnerStateDirs":["/var/lib/runner"]}"#,
    )
    .unwrap();
    let name = NetworkName::new("agent-net").unwrap();
    let spec = ContainerSpec::from_sandbox(
        &sandbox,
        ImageRef::new("alpine:3").unwrap(),
        Network::Internal(name),
    )
    .unwrap()
    .build()
    .unwrap();
    let (body, _) = run_cli(&docker, dir.path(), spec.run_argv().unwrap());
    let host = &body["HostConfig"];
    assert_eq!(host["NetworkMode"], "none");
    assert_eq!(host["Mounts"], Value::Array(mounts_json(&spec)));
    assert_eq!(host["Mounts"][0]["ReadOnly"], true);
    assert!(host["Mounts"][1]["ReadOnly"].is_null());
    assert_eq!(body["User"], "1000:1000");
    assert!(body["Env"].as_array().is_none_or(|a| a.is_empty()));
}

#[test]
fn docker_cli_sends_the_mandatory_read_only_binds() {
    let Some(docker) = skip_without_docker() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sandbox: sandbox_core::SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","mode":"chat","networkEnabled":false,
            "bindMounts":[{"hostPath":"/srv/wt","guestPath":"/work"}]}"#,
    )
    .unwrap();
    let mut host = sandbox_core::FakeHost::new(sandbox_core::Os::Linux);
    host.dir("/srv/wt/.git/hooks")
        .file("/srv/wt/.git/config")
        .file("/srv/wt/README.md");
    let spec = ContainerSpec::from_sandbox_on_host(
        &sandbox,
        ImageRef::new("alpine:3").unwrap(),
        Network::None,
        Path::new("/home/u"),
        &[],
        &host,
    )
    .unwrap()
    .build()
    .unwrap();
    let (body, _) = run_cli(&docker, dir.path(), spec.run_argv().unwrap());
    let host_config = &body["HostConfig"];
    let read_only = |source: &str, target: &str| {
        json!({
            "Type": "bind", "Source": source, "Target": target, "ReadOnly": true,
            "BindOptions": {"ReadOnlyForceRecursive": true, "Propagation": "rprivate"},
        })
    };
    // Exactly what the engine receives: the writable checkout, `.git` pinned
    // by a bind of itself (a mount point cannot be renamed away), then hooks
    // and config bound read-only over it at their guest paths.
    assert_eq!(
        host_config["Mounts"],
        json!([
            {"Type": "bind", "Source": "/srv/wt", "Target": "/work"},
            {"Type": "bind", "Source": "/srv/wt/.git", "Target": "/work/.git"},
            read_only("/srv/wt/.git/hooks", "/work/.git/hooks"),
            read_only("/srv/wt/.git/config", "/work/.git/config"),
        ]),
        "{host_config:#}"
    );
    assert_eq!(host_config["Mounts"], Value::Array(mounts_json(&spec)));
    assert!(host_config["Binds"].is_null(), "{}", host_config["Binds"]);
    assert!(
        spec.unprotected_missing_paths()
            .contains(&"/srv/wt/.bashrc".to_owned())
    );
}
