//! `broker-proxy --rules FILE --ca-out FILE --broker HOST... --credential-env NAME
//! [--template bearer|token|git-basic|header:NAME] [--push-rule FILE]
//! [--broker-port PORT]... [--upstream-ca FILE]... [--allow ENTRY]...
//! [--allow-cidr CIDR]...`: the session proxy pair on 127.0.0.1 with the
//! credential broker on the chosen hosts (on 443 and every `--broker-port`).
//! Writes the session CA to `--ca-out`, prints one JSON line
//! `{"http":..,"socks":..,"httpUrl":..,"socksUrl":..,"ca":..,"phantom":..,
//! "session":..}` and runs until stdin closes or SIGINT/SIGTERM (Ctrl-C on
//! Windows). When stdin is `/dev/null` (or was closed) at start there is no
//! input to end: it says so on stderr and runs until a signal. Pushes are
//! refused unless `--push-rule` allows them (the TOML of `agent-run
//! --broker-push-rule`; `{session}` is the session id of the JSON line).
//! Refusals are logged on stderr. The real credential is read
//! from the named variable of this process's environment. The proxies listen
//! on loopback, where any local process can connect, so they serve only
//! clients that present this run's secret (carried in `httpUrl` and
//! `socksUrl`): the broker never injects the credential for anyone else.

use agent_sandbox::{
    DEFAULT_BROKER_PORT, broker_intercept_on_ports, credential_for_hosts,
    pem_certificates_from_file, rule_engine_from_file,
};
use agent_sandbox_examples::{header_template, port, push_rule_file};
use connect_proxy::{
    AllowList, Cidr, Host, IpPolicy, ProxyConfig, ProxyCredentials, ProxyPair, SystemResolver,
};
use cred_broker::{Broker, HeaderTemplate, Lease, SessionCa};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str =
    "usage: broker-proxy --rules FILE --ca-out FILE --broker HOST... --credential-env NAME \
[--template bearer|token|git-basic|header:NAME] [--push-rule FILE] [--broker-port PORT]... \
[--upstream-ca FILE]... [--allow ENTRY]... [--allow-cidr CIDR]...

  --template TEMPLATE   how the real credential is sent: bearer, token, git-basic, or header:NAME
                        for an API-key header such as header:x-api-key
  --push-rule FILE      the TOML push rule git pushes must pass (as agent-run --broker-push-rule);
                        without it every push is refused
  --broker-port PORT    also broker the brokered hosts on PORT besides 443 (repeat for more)

Runs until stdin ends or SIGINT/SIGTERM; with stdin /dev/null or closed, until a signal.";

struct Options {
    rules: Option<String>,
    ca_out: Option<String>,
    hosts: Vec<String>,
    credential_env: Option<String>,
    template: HeaderTemplate,
    push_rule: Option<String>,
    ports: Vec<u16>,
    upstream_ca: Vec<String>,
    allow: Vec<String>,
    cidrs: Vec<Cidr>,
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut o = Options {
        rules: None,
        ca_out: None,
        hosts: Vec::new(),
        credential_env: None,
        template: HeaderTemplate::Bearer,
        push_rule: None,
        ports: Vec::new(),
        upstream_ca: Vec::new(),
        allow: Vec::new(),
        cidrs: Vec::new(),
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let mut v = |n: &str| it.next().ok_or_else(|| format!("{n} needs a value"));
        match a.as_str() {
            "--rules" => o.rules = Some(v("--rules")?),
            "--ca-out" => o.ca_out = Some(v("--ca-out")?),
            "--broker" => o.hosts.push(v("--broker")?),
            "--credential-env" => o.credential_env = Some(v("--credential-env")?),
            "--template" => {
                o.template =
                    header_template("--template", &v("--template")?).map_err(|e| e.to_string())?
            }
            "--push-rule" => o.push_rule = Some(v("--push-rule")?),
            "--broker-port" => {
                let p = port("--broker-port", &v("--broker-port")?).map_err(|e| e.to_string())?;
                if !o.ports.contains(&p) {
                    o.ports.push(p);
                }
            }
            "--upstream-ca" => o.upstream_ca.push(v("--upstream-ca")?),
            "--allow" => o.allow.push(v("--allow")?),
            "--allow-cidr" => {
                let c = v("--allow-cidr")?;
                o.cidrs
                    .push(c.parse().map_err(|e| format!("--allow-cidr {c}: {e}"))?);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.rules.is_none() || o.ca_out.is_none() || o.hosts.is_empty() || o.credential_env.is_none() {
        return Err("--rules, --ca-out, --broker and --credential-env are required".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match parse(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("broker-proxy: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("broker-proxy: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("broker-proxy: {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(o: Options) -> Result<(), String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let rules = o.rules.as_deref().unwrap_or_default();
    let engine = rule_engine_from_file(Path::new(rules)).map_err(|e| s(&e))?;
    let env_name = o.credential_env.as_deref().unwrap_or_default();
    let value = std::env::var(env_name).map_err(|_| format!("{env_name} is not set"))?;
    let cred =
        credential_for_hosts(env_name, value, o.template.clone(), &o.hosts).map_err(|e| s(&e))?;
    let session = format!("broker-proxy-{}", std::process::id());
    let ca = SessionCa::builder(&session).build().map_err(|e| s(&e))?;
    let lease = Lease::builder(&session, &cred).build().map_err(|e| s(&e))?;
    let mut b = Broker::builder(Arc::new(ca), engine);
    b.grant(cred, lease.clone());
    if let Some(path) = &o.push_rule {
        b.push_rule(push_rule_file("--push-rule", path).map_err(|e| s(&e))?);
    }
    for path in &o.upstream_ca {
        for der in pem_certificates_from_file(Path::new(path)).map_err(|e| s(&e))? {
            b.extra_root_der(&der);
        }
    }
    let broker = Arc::new(b.build().map_err(|e| s(&e))?);
    let ca_out = o.ca_out.as_deref().unwrap_or_default();
    std::fs::write(ca_out, broker.ca().ca_cert_pem()).map_err(|e| format!("{ca_out}: {e}"))?;

    // The hook compares canonical hosts; the allowlist canonicalises the
    // entries as given.
    let hosts = o
        .hosts
        .iter()
        .map(|h| {
            Host::parse_config(h)
                .map(|h| h.to_string())
                .map_err(|e| format!("--broker {h:?}: {e}"))
        })
        .collect::<Result<Vec<String>, String>>()?;
    let list = AllowList::builder()
        .allow_all(o.allow.iter().cloned())
        .allow_all(o.hosts.iter().cloned())
        .build()
        .map_err(|e| s(&e))?;
    let mut ip = IpPolicy::new();
    for c in &o.cidrs {
        ip.allow_cidr(*c);
    }
    // The broker injects a real credential: only clients that present this
    // run's secret (in the printed URLs) are served.
    let credentials = ProxyCredentials::generate_from_os_rng().map_err(|e| s(&e))?;
    let config = ProxyConfig::builder()
        .require_credentials(credentials.clone())
        .allowlist(list)
        .ip_policy(ip)
        .resolver(Arc::new(SystemResolver::from_ambient()))
        .intercept(broker_intercept_on_ports(
            broker.clone(),
            hosts,
            brokered_ports(&o.ports),
        ))
        .build()
        .map_err(|e| s(&e))?;
    let pair = ProxyPair::start(config).await.map_err(|e| s(&e))?;
    println!(
        "{}",
        serde_json::json!({
            "http": pair.http_addr().to_string(),
            "socks": pair.socks_addr().to_string(),
            "httpUrl": credentials.http_url(pair.http_addr()),
            "socksUrl": credentials.socks_url(pair.socks_addr()),
            "ca": ca_out,
            "phantom": lease.phantom().as_str(),
            "session": session,
        })
    );
    let mut proxy_v = pair.subscribe_violations();
    let mut broker_v = broker.subscribe_violations();
    let stdin_closed = end_of_input();
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| s(&e))?;
    #[cfg(unix)]
    let terminated = term.recv();
    // Windows has no SIGTERM: Ctrl-C or stdin closing.
    #[cfg(not(unix))]
    let terminated = std::future::pending::<Option<()>>();
    tokio::pin!(stdin_closed);
    tokio::pin!(terminated);
    loop {
        tokio::select! {
            Some(v) = proxy_v.recv() => eprintln!("denied: {} {}", v.action, v.target),
            Ok(v) = broker_v.recv() => eprintln!("denied: {} {}", v.action, v.target),
            _ = tokio::signal::ctrl_c() => break,
            _ = &mut terminated => break,
            _ = &mut stdin_closed => break,
        }
    }
    lease.revoke();
    // Every connection task has ended after this: the refusals they
    // reported are all queued, and none is lost to the race with stdin.
    pair.shutdown().await;
    while let Some(v) = proxy_v.try_recv() {
        eprintln!("denied: {} {}", v.action, v.target);
    }
    while let Ok(v) = broker_v.try_recv() {
        eprintln!("denied: {} {}", v.action, v.target);
    }
    Ok(())
}

/// The ports the broker claims: 443 and every `--broker-port`.
fn brokered_ports(extra: &[u16]) -> Vec<u16> {
    let mut ports = vec![DEFAULT_BROKER_PORT];
    ports.extend(extra.iter().filter(|p| **p != DEFAULT_BROKER_PORT));
    ports
}

/// Resolves when stdin ends. When it is `/dev/null` or was closed at start
/// (there is no input whose end could mean "stop"), it says so on stderr
/// and never resolves: the run then ends on a signal.
fn end_of_input() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    if stdin_is_null() {
        eprintln!(
            "broker-proxy: stdin is /dev/null or closed: running until SIGINT or SIGTERM (Ctrl-C)"
        );
        return Box::pin(std::future::pending());
    }
    Box::pin(async {
        let _ = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        })
        .await;
    })
}

/// Whether stdin is `/dev/null` (the standard library opens it there when
/// the program was started with stdin closed).
#[cfg(unix)]
fn stdin_is_null() -> bool {
    let (Ok(stdin), Ok(null)) = (
        rustix::fs::fstat(std::io::stdin()),
        rustix::fs::stat("/dev/null"),
    ) else {
        return false;
    };
    stdin.st_dev == null.st_dev && stdin.st_ino == null.st_ino
}

/// Without a `/dev/null` to compare with, stdin counts as input.
#[cfg(not(unix))]
fn stdin_is_null() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUIRED: [&str; 8] = [
        "--rules",
        "r.toml",
        "--ca-out",
        "ca.pem",
        "--broker",
        "api.example.com",
        "--credential-env",
        "REAL",
    ];

    fn with_required(extra: &[&str]) -> Vec<String> {
        REQUIRED
            .iter()
            .chain(extra)
            .map(|s| (*s).to_owned())
            .collect()
    }

    fn refusal(extra: &[&str]) -> String {
        match parse(with_required(extra)) {
            Ok(_) => panic!("{extra:?} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn push_rule_ports_and_template_parse_to_their_values() {
        let o = parse(with_required(&[
            "--push-rule",
            "push.toml",
            "--broker-port",
            "8443",
            "--broker-port",
            "9443",
            "--broker-port",
            "8443",
            "--template",
            "header:x-api-key",
        ]))
        .unwrap();
        assert_eq!(o.push_rule.as_deref(), Some("push.toml"));
        assert_eq!(o.ports, [8443, 9443]);
        assert_eq!(brokered_ports(&o.ports), [443, 8443, 9443]);
        assert_eq!(
            o.template,
            HeaderTemplate::Header {
                name: "x-api-key".into()
            }
        );
        let o = parse(with_required(&["--broker-port", "443"])).unwrap();
        assert_eq!(brokered_ports(&o.ports), [443]);
        let o = parse(with_required(&[])).unwrap();
        assert_eq!(o.push_rule, None);
        assert_eq!(brokered_ports(&o.ports), [443]);
        assert_eq!(o.template, HeaderTemplate::Bearer);
    }

    #[test]
    fn a_refused_value_says_what_to_type_instead() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--broker-port", "0"],
                "--broker-port takes a port number from 1 to 65535, not \"0\"",
            ),
            (
                &["--broker-port", "65536"],
                "--broker-port takes a port number from 1 to 65535, not \"65536\"",
            ),
            (&["--broker-port"], "--broker-port needs a value"),
            (&["--push-rule"], "--push-rule needs a value"),
            (
                &["--template", "header:host"],
                "--template takes bearer, token, git-basic or header:NAME (NAME a header name \
                 such as x-api-key, not a framing or routing header), not \"header:host\"",
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(refusal(extra), *want, "{extra:?}");
        }
        assert_eq!(
            parse(vec!["--broker-port".into(), "8443".into()]).err(),
            Some("--rules, --ca-out, --broker and --credential-env are required".into())
        );
    }
}
