//! The egress arrangement `k8s-render` describes, run for real on this
//! machine: three network namespaces standing for the agent pod, the
//! egress pod and the Internet. The agent's namespace is wired to the
//! egress one only (as the agent's NetworkPolicy allows), the egress one
//! also to the "Internet" one, where an HTTP origin answers for two names.
//! The real `egress-proxy` runs in the egress namespace with the arguments
//! of the rendered egress pod; curl in the agent namespace uses the proxy
//! variables of the rendered agent pod, expanded as the kubelet would.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The namespaces, links, processes and files of one run; removed on drop.
struct Net {
    agent: String,
    egress: String,
    origin: String,
    children: Vec<Child>,
}

impl Net {
    fn new() -> Net {
        let id = std::process::id() % 100_000;
        Net {
            agent: format!("k8a{id}"),
            egress: format!("k8e{id}"),
            origin: format!("k8o{id}"),
            children: Vec::new(),
        }
    }

    fn ip(&self, args: &[&str]) {
        let o = Command::new("ip").args(args).output().unwrap();
        assert!(
            o.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Two namespaces joined by a veth pair, each end with its address.
    fn link(&self, a: &str, a_addr: &str, b: &str, b_addr: &str) {
        let (va, vb) = (format!("v{a}"), format!("v{b}{}", &a[..3]));
        self.ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb]);
        self.ip(&["link", "set", &va, "netns", a]);
        self.ip(&["link", "set", &vb, "netns", b]);
        self.ip(&["-n", a, "addr", "add", a_addr, "dev", &va]);
        self.ip(&["-n", b, "addr", "add", b_addr, "dev", &vb]);
        self.ip(&["-n", a, "link", "set", &va, "up"]);
        self.ip(&["-n", b, "link", "set", &vb, "up"]);
    }

    fn exec(&self, ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.agent, &self.egress, &self.origin] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{}", self.egress));
    }
}

/// curl in `ns` through `proxy` (or none), giving the HTTP status (0 when
/// no answer came) and curl's exit code.
fn curl(net: &Net, ns: &str, proxy: Option<&str>, url: &str) -> (String, Option<i32>) {
    let mut c = net.exec(ns, "curl");
    c.args(["-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}"]);
    match proxy {
        Some(p) => c.args(["-x", p]),
        None => c.args(["--noproxy", "*"]),
    };
    let o = c.arg(url).output().unwrap();
    (String::from_utf8(o.stdout).unwrap(), o.status.code())
}

fn render() -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_k8s-render"))
        .args([
            "--session",
            "n1",
            "--no-baseline",
            "--allow",
            "allowed.test",
            "--allow-cidr",
            "10.201.0.0/24",
            "--proxy-secret",
            "n1-secret",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    list["items"].as_array().unwrap().clone()
}

#[test]
fn the_rendered_egress_lets_the_agent_reach_an_allowed_name_and_nothing_else() {
    if !test_support::require_root()
        || test_support::tool("ip", "apt-get install iproute2").is_none()
        || test_support::tool("curl", "apt-get install curl").is_none()
        || test_support::tool("python3", "apt-get install python3").is_none()
    {
        return;
    }
    let items = render();
    let egress_cmd: Vec<String> = items[4]["spec"]["containers"][0]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let env = items[5]["spec"]["containers"][0]["env"].as_array().unwrap();
    let var = |name: &str| {
        env.iter().find(|e| e["name"] == name).unwrap()["value"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // The kubelet's expansion: the secret from the Secret, the Service's
    // address from its service-link variable (here the egress end).
    let expand = |v: String| {
        v.replace("$(SESSION_PROXY_SECRET)", "n1-secret")
            .replace("$(SBX_N1_EGRESS_SERVICE_HOST)", "10.200.0.1")
    };
    let (http_proxy, socks_proxy) = (expand(var("HTTPS_PROXY")), expand(var("ALL_PROXY")));
    assert_eq!(http_proxy, "http://session:n1-secret@10.200.0.1:3128");

    let mut net = Net::new();
    for ns in [&net.agent, &net.egress, &net.origin] {
        net.ip(&["netns", "add", ns]);
        net.ip(&["-n", ns, "link", "set", "lo", "up"]);
    }
    net.link(&net.agent, "10.200.0.2/24", &net.egress, "10.200.0.1/24");
    net.link(&net.origin, "10.201.0.1/24", &net.egress, "10.201.0.2/24");
    // The egress pod's resolver: `ip netns exec` shows this file as
    // /etc/hosts in the egress namespace only.
    let hosts_dir = format!("/etc/netns/{}", net.egress);
    std::fs::create_dir_all(&hosts_dir).unwrap();
    std::fs::write(
        format!("{hosts_dir}/hosts"),
        "10.201.0.1 allowed.test denied.test\n",
    )
    .unwrap();

    let origin = net
        .exec(&net.origin, "python3")
        .args(["-m", "http.server", "8080", "--bind", "10.201.0.1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    net.children.push(origin);
    let start = Instant::now();
    while curl(&net, &net.egress, None, "http://10.201.0.1:8080/").0 != "200" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the origin did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("proxy-secret");
    std::fs::write(&secret, "n1-secret\n").unwrap();
    let mut args: Vec<String> = egress_cmd[1..].to_vec();
    let at = args
        .iter()
        .position(|a| a == "/run/session-proxy/proxy-secret")
        .unwrap();
    args[at] = secret.to_str().unwrap().to_owned();
    let mut proxy = net
        .exec(&net.egress, env!("CARGO_BIN_EXE_egress-proxy"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(proxy.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let stderr = proxy.stderr.take().unwrap();
    net.children.push(proxy);
    let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(ready["http"], "0.0.0.0:3128");

    let http = Some(http_proxy.as_str());
    // An allowed name, through either proxy.
    assert_eq!(
        curl(&net, &net.agent, http, "http://allowed.test:8080/").0,
        "200"
    );
    assert_eq!(
        curl(
            &net,
            &net.agent,
            Some(&socks_proxy),
            "http://allowed.test:8080/"
        )
        .0,
        "200"
    );
    // A name the allowlist does not hold, and an address, refused by the proxy.
    assert_eq!(
        curl(&net, &net.agent, http, "http://denied.test:8080/").0,
        "403"
    );
    assert_eq!(
        curl(&net, &net.agent, http, "http://10.201.0.1:8080/").0,
        "403"
    );
    // Without the session's secret, nothing.
    assert_eq!(
        curl(
            &net,
            &net.agent,
            Some("http://session:wrong@10.200.0.1:3128"),
            "http://allowed.test:8080/"
        )
        .0,
        "407"
    );
    // Straight to the address, around the proxy: no way there.
    let (code, exit) = curl(&net, &net.agent, None, "http://10.201.0.1:8080/");
    assert_eq!(code, "000");
    assert_ne!(exit, Some(0));

    drop(net);
    let mut log = String::new();
    std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut log).unwrap();
    assert!(
        log.contains("denied.test:8080 refused: host is not in the allowlist"),
        "{log}"
    );
    assert!(log.contains("10.201.0.1:8080 refused"), "{log}");
}
