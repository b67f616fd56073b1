//! `broker-proxy --rules FILE --ca-out FILE --broker HOST... --credential-env NAME
//! [--template bearer|token|git-basic] [--upstream-ca FILE]... [--allow ENTRY]...
//! [--allow-cidr CIDR]...`: the session proxy pair on 127.0.0.1 with the
//! credential broker on the chosen hosts. Writes the session CA to
//! `--ca-out`, prints one JSON line `{"http":..,"socks":..,"httpUrl":..,
//! "socksUrl":..,"ca":..,"phantom":..}` and runs until stdin closes or
//! SIGINT/SIGTERM (Ctrl-C on Windows). Refusals are logged on stderr. The real credential is read
//! from the named variable of this process's environment. The proxies listen
//! on loopback, where any local process can connect, so they serve only
//! clients that present this run's secret (carried in `httpUrl` and
//! `socksUrl`): the broker never injects the credential for anyone else.

use agent_sandbox::{
    broker_intercept, credential_for_hosts, header_template_from_name, pem_certificates_from_file,
    rule_engine_from_file,
};
use connect_proxy::{
    AllowList, Cidr, Host, IpPolicy, ProxyConfig, ProxyCredentials, ProxyPair, SystemResolver,
};
use cred_broker::{Broker, Lease, SessionCa};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str = "usage: broker-proxy --rules FILE --ca-out FILE --broker HOST... --credential-env NAME \
[--template bearer|token|git-basic] [--upstream-ca FILE]... [--allow ENTRY]... [--allow-cidr CIDR]...";

#[derive(Default)]
struct Options {
    rules: Option<String>,
    ca_out: Option<String>,
    hosts: Vec<String>,
    credential_env: Option<String>,
    template: Option<String>,
    upstream_ca: Vec<String>,
    allow: Vec<String>,
    cidrs: Vec<Cidr>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options::default();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut v = |n: &str| it.next().ok_or_else(|| format!("{n} needs a value"));
        match a.as_str() {
            "--rules" => o.rules = Some(v("--rules")?),
            "--ca-out" => o.ca_out = Some(v("--ca-out")?),
            "--broker" => o.hosts.push(v("--broker")?),
            "--credential-env" => o.credential_env = Some(v("--credential-env")?),
            "--template" => o.template = Some(v("--template")?),
            "--upstream-ca" => o.upstream_ca.push(v("--upstream-ca")?),
            "--allow" => o.allow.push(v("--allow")?),
            "--allow-cidr" => {
                let c = v("--allow-cidr")?;
                o.cidrs
                    .push(c.parse().map_err(|e| format!("--allow-cidr {c}: {e}"))?);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if o.rules.is_none() || o.ca_out.is_none() || o.hosts.is_empty() || o.credential_env.is_none() {
        return Err("--rules, --ca-out, --broker and --credential-env are required".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
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
    let name = o.template.as_deref().unwrap_or("bearer");
    let template = header_template_from_name(name)
        .ok_or_else(|| format!("--template takes bearer, token or git-basic, not {name:?}"))?;
    let cred = credential_for_hosts(env_name, value, template, &o.hosts).map_err(|e| s(&e))?;
    let session = format!("broker-proxy-{}", std::process::id());
    let ca = SessionCa::builder(&session).build().map_err(|e| s(&e))?;
    let lease = Lease::builder(&session, &cred).build().map_err(|e| s(&e))?;
    let mut b = Broker::builder(Arc::new(ca), engine);
    b.grant(cred, lease.clone());
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
        .intercept(broker_intercept(broker.clone(), hosts))
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
        })
    );
    let mut proxy_v = pair.subscribe_violations();
    let mut broker_v = broker.subscribe_violations();
    let stdin_closed = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    });
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
