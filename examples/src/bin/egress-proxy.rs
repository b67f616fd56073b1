//! `egress-proxy [--allow ENTRY]... [--deny ENTRY]... [--allow-cidr CIDR]...
//! [--no-baseline] [--network on|off] [--copy-buffer BYTES] [--no-proxy-auth]`
//!
//! Starts one HTTP + SOCKS5 proxy pair on 127.0.0.1 with the host's
//! resolver, prints `{"http":"127.0.0.1:P","socks":"127.0.0.1:Q",
//! "httpUrl":"http://session:SECRET@...","socksUrl":"socks5h://..."}` on
//! stdout, logs each decision on stderr, and exits cleanly on SIGINT,
//! SIGTERM (Ctrl-C on Windows) or when stdin closes.
//!
//! Any local process can connect to a loopback port, so the proxies require
//! a fresh per-run secret (in the printed URLs); `--no-proxy-auth` is the
//! explicit opt-out that serves every local client.

use connect_proxy::{
    AllowList, Baseline, Cidr, IpPolicy, Network, ProxyConfig, ProxyCredentials, ProxyPair,
    SystemResolver,
};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;
#[cfg(unix)]
use tokio::signal::unix::{SignalKind, signal};

const USAGE: &str = "usage: egress-proxy [--allow ENTRY]... [--deny ENTRY]... \
[--allow-cidr CIDR]... [--no-baseline] [--network on|off] [--copy-buffer BYTES] [--no-proxy-auth]";

struct Args {
    list: AllowList,
    ip: IpPolicy,
    copy_buffer: Option<usize>,
    auth: bool,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut list = AllowList::builder();
    let mut ip = IpPolicy::new();
    let mut copy_buffer = None;
    let mut auth = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--allow" => {
                list.allow(value("--allow")?);
            }
            "--deny" => {
                list.deny(value("--deny")?);
            }
            "--allow-cidr" => {
                let cidr: Cidr = value("--allow-cidr")?.parse().map_err(|e| format!("{e}"))?;
                ip.allow_cidr(cidr);
            }
            "--no-baseline" => {
                list.baseline(Baseline::Exclude);
            }
            "--network" => {
                let network = match value("--network")?.to_ascii_lowercase().as_str() {
                    "on" => Network::Enabled,
                    "off" => Network::Disabled,
                    other => return Err(format!("--network takes on or off, not {other:?}")),
                };
                list.network(network);
            }
            "--copy-buffer" => {
                let v = value("--copy-buffer")?;
                copy_buffer = Some(v.parse().map_err(|_| format!("bad --copy-buffer {v:?}"))?);
            }
            "--no-proxy-auth" => auth = false,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let list = list.build().map_err(|e| e.to_string())?;
    Ok(Some(Args {
        list,
        ip,
        copy_buffer,
        auth,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("egress-proxy: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("egress-proxy: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("egress-proxy: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), String> {
    let mut config = ProxyConfig::builder();
    config
        .allowlist(args.list)
        .ip_policy(args.ip)
        .resolver(Arc::new(SystemResolver::from_ambient()));
    if let Some(n) = args.copy_buffer {
        config.copy_buffer_bytes(n);
    }
    let credentials = if args.auth {
        let c = ProxyCredentials::generate_from_os_rng().map_err(|e| e.to_string())?;
        config.require_credentials(c.clone());
        Some(c)
    } else {
        None
    };
    let config = config.build().map_err(|e| e.to_string())?;
    let pair = ProxyPair::start(config).await.map_err(|e| e.to_string())?;

    let mut decisions = pair.subscribe_decisions();
    let logger = tokio::spawn(async move {
        while let Some(d) = decisions.recv().await {
            eprintln!("egress-proxy: {d}");
        }
    });

    let (http_url, socks_url) = match &credentials {
        Some(c) => (c.http_url(pair.http_addr()), c.socks_url(pair.socks_addr())),
        None => (
            format!("http://{}", pair.http_addr()),
            format!("socks5h://{}", pair.socks_addr()),
        ),
    };
    // The URLs hold only [A-Za-z0-9._~:/@-]: nothing to escape in JSON.
    let line = format!(
        "{{\"http\":\"{}\",\"socks\":\"{}\",\"httpUrl\":\"{http_url}\",\"socksUrl\":\"{socks_url}\"}}",
        pair.http_addr(),
        pair.socks_addr()
    );
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    drop(out);

    // Stdin closing is a stop signal: a parent that dies takes us with it.
    let (stdin_tx, stdin_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 512];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = stdin_tx.send(());
    });
    #[cfg(unix)]
    let why = {
        let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
            _ = stdin_rx => "stdin closed",
        }
    };
    // Windows has no SIGTERM: Ctrl-C or stdin closing.
    #[cfg(not(unix))]
    let why = tokio::select! {
        r = tokio::signal::ctrl_c() => {
            r.map_err(|e| e.to_string())?;
            "Ctrl-C"
        }
        _ = stdin_rx => "stdin closed",
    };
    eprintln!("egress-proxy: {why}; shutting down");
    pair.shutdown().await;
    let _ = logger.await;
    Ok(())
}
