//! `egress-proxy [--allow ENTRY]... [--deny ENTRY]... [--allow-cidr CIDR]...
//! [--no-baseline] [--network on|off] [--copy-buffer BYTES] [--no-proxy-auth]
//! [--listen ADDR] [--http-port PORT] [--socks-port PORT]
//! [--proxy-secret-file FILE]`
//!
//! Starts one HTTP + SOCKS5 proxy pair on 127.0.0.1 (or `--listen ADDR`,
//! on fixed ports when given, as in a cluster's egress pod) with the host's
//! resolver, prints `{"http":"127.0.0.1:P","socks":"127.0.0.1:Q",
//! "httpUrl":"http://session:SECRET@...","socksUrl":"socks5h://..."}` on
//! stdout, logs each decision on stderr, and exits cleanly on SIGINT,
//! SIGTERM (Ctrl-C on Windows) or when stdin closes.
//!
//! Any local process can connect to a loopback port, so the proxies require
//! a fresh per-run secret (in the printed URLs), or the one in
//! `--proxy-secret-file` (user `session`); `--no-proxy-auth` is the
//! explicit opt-out that serves every local client.

use agent_sandbox_examples::{ArgError, checked, cidr, host_pattern, port};
use clap::Parser;
use connect_proxy::{
    AllowList, Baseline, Cidr, IpPolicy, Network, ProxyConfig, ProxyCredentials, ProxyKind,
    ProxyPair, ProxyService, SystemResolver,
};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
#[cfg(unix)]
use tokio::signal::unix::{SignalKind, signal};

const LONG_ABOUT: &str = "\
Starts one HTTP + SOCKS5 proxy pair on 127.0.0.1 with the host's resolver and prints \
{\"http\":\"127.0.0.1:P\",\"socks\":\"127.0.0.1:Q\",\"httpUrl\":\"http://session:SECRET@...\",\
\"socksUrl\":\"socks5h://...\"} on stdout. Each decision is logged on stderr.

A host passes when an --allow entry or the baseline (LLM providers, git hosting, package \
registries, GitHub) matches it and neither the fixed denylist nor a --deny entry does; \
everything else is refused. Addresses are limited to public unicast ones unless an \
--allow-cidr block grants more.

Any local process can connect to a loopback port, so the proxies require a fresh per-run \
secret (in the printed URLs), or the one in --proxy-secret-file; --no-proxy-auth is the \
explicit opt-out that serves every local client.

--listen with --http-port and --socks-port serves other addresses on fixed ports, as the \
egress pod of a cluster does (with the session's secret from a file): whoever reaches them \
can use the proxies, so keep them behind the secret and a network policy.";

const AFTER_HELP: &str = "Runs until SIGINT, SIGTERM (Ctrl-C on Windows) or stdin closes.";

#[derive(Debug, PartialEq, Parser)]
#[command(
    name = "egress-proxy",
    version,
    args_override_self = true,
    about = "One HTTP + SOCKS5 egress proxy pair on 127.0.0.1 that lets through only the allowed hosts",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    /// A host or pattern to let through, such as api.example.com or *.example.com (repeat for
    /// more).
    #[arg(long, value_name = "ENTRY", value_parser = checked(|v| host_pattern("--allow", v)))]
    allow: Vec<String>,
    /// A host or pattern to refuse even where an --allow entry or the baseline matches it (repeat
    /// for more).
    #[arg(long, value_name = "ENTRY", value_parser = checked(|v| host_pattern("--deny", v)))]
    deny: Vec<String>,
    /// An address block the proxies may connect to even when it is private or local, such as
    /// 10.0.0.0/8 (repeat for more).
    #[arg(long = "allow-cidr", value_name = "CIDR", value_parser = checked(|v| cidr("--allow-cidr", v)))]
    cidrs: Vec<Cidr>,
    /// Leave out the baseline allowlist, so that only the --allow entries pass.
    #[arg(long)]
    no_baseline: bool,
    /// Whether the session reaches the network at all: on, or off to refuse every connection (any
    /// case).
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = checked(network))]
    network: Network,
    /// The size in bytes, from 1024 to 4194304, a connection's copy buffer grows to in each
    /// direction (default 262144).
    #[arg(long, value_name = "BYTES", value_parser = checked(copy_buffer))]
    copy_buffer: Option<usize>,
    /// Serve every local client, without the per-run secret the proxies otherwise require.
    #[arg(long, conflicts_with = "proxy_secret_file")]
    no_proxy_auth: bool,
    /// The address to listen on (default 127.0.0.1), such as 0.0.0.0 in a cluster's egress pod.
    #[arg(long, value_name = "ADDR", value_parser = checked(listen))]
    listen: Option<IpAddr>,
    /// The HTTP proxy's port (default: any free one).
    #[arg(long, value_name = "PORT", value_parser = checked(|v| port("--http-port", v)))]
    http_port: Option<u16>,
    /// The SOCKS5 proxy's port (default: any free one).
    #[arg(long, value_name = "PORT", value_parser = checked(|v| port("--socks-port", v)))]
    socks_port: Option<u16>,
    /// Require the secret in this file (user session; one line of [A-Za-z0-9._~-]) instead of a
    /// fresh one.
    #[arg(long, value_name = "FILE")]
    proxy_secret_file: Option<PathBuf>,
}

/// A numeric IP address to listen on.
fn listen(value: &str) -> Result<IpAddr, ArgError> {
    value.parse().map_err(|_| {
        ArgError::bad_value(
            "--listen",
            value,
            "a numeric IP address, such as 127.0.0.1 or 0.0.0.0",
        )
    })
}

/// `on` or `off`, in any case.
fn network(value: &str) -> Result<Network, ArgError> {
    match value.to_ascii_lowercase().as_str() {
        "on" => Ok(Network::Enabled),
        "off" => Ok(Network::Disabled),
        _ => Err(ArgError::bad_value("--network", value, "on or off")),
    }
}

/// A copy buffer size the proxy configuration accepts.
fn copy_buffer(value: &str) -> Result<usize, ArgError> {
    let bad = || {
        ArgError::bad_value(
            "--copy-buffer",
            value,
            "a number of bytes from 1024 to 4194304, such as 65536",
        )
    };
    let n: usize = value.parse().map_err(|_| bad())?;
    // The configuration's own check decides the range.
    ProxyConfig::builder()
        .copy_buffer_bytes(n)
        .build()
        .map(|_| n)
        .map_err(|_| bad())
}

/// Whether the proxies require credentials, and which.
enum Auth {
    /// A fresh secret for this run.
    Fresh,
    /// The secret in a file.
    File(PathBuf),
    /// None (`--no-proxy-auth`).
    Off,
}

struct Args {
    list: AllowList,
    ip: IpPolicy,
    copy_buffer: Option<usize>,
    auth: Auth,
    listen: IpAddr,
    http_port: u16,
    socks_port: u16,
}

impl Cli {
    /// The allowlist and address policy the flags describe.
    fn into_args(self) -> Result<Args, String> {
        let mut list = AllowList::builder();
        list.allow_all(self.allow).network(self.network);
        for entry in self.deny {
            list.deny(entry);
        }
        if self.no_baseline {
            list.baseline(Baseline::Exclude);
        }
        let mut ip = IpPolicy::new();
        for c in self.cidrs {
            ip.allow_cidr(c);
        }
        Ok(Args {
            list: list.build().map_err(|e| e.to_string())?,
            ip,
            copy_buffer: self.copy_buffer,
            auth: match (self.no_proxy_auth, self.proxy_secret_file) {
                (true, _) => Auth::Off,
                (false, Some(file)) => Auth::File(file),
                (false, None) => Auth::Fresh,
            },
            listen: self.listen.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            http_port: self.http_port.unwrap_or(0),
            socks_port: self.socks_port.unwrap_or(0),
        })
    }
}

fn main() -> ExitCode {
    let args = match Cli::parse().into_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("egress-proxy: {e}");
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
    let credentials = match &args.auth {
        Auth::Fresh => Some(ProxyCredentials::generate_from_os_rng().map_err(|e| e.to_string())?),
        Auth::File(path) => Some(secret_from_file(path)?),
        Auth::Off => None,
    };
    if let Some(c) = &credentials {
        config.require_credentials(c.clone());
    }
    let config = config.build().map_err(|e| e.to_string())?;
    let pair = Served::start(config, args.listen, args.http_port, args.socks_port).await?;

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

/// Longest proxy secret file read.
const MAX_SECRET_FILE: u64 = 4096;

/// The credentials `session:SECRET`, the secret being the file's one line.
fn secret_from_file(path: &std::path::Path) -> Result<ProxyCredentials, String> {
    let shown = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| format!("--proxy-secret-file {shown}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_SECRET_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("--proxy-secret-file {shown}: {e}"))?;
    if text.len() as u64 > MAX_SECRET_FILE {
        return Err(format!(
            "--proxy-secret-file {shown}: longer than {MAX_SECRET_FILE} bytes"
        ));
    }
    let secret = text.strip_suffix('\n').unwrap_or(&text);
    ProxyCredentials::new(connect_proxy::SESSION_PROXY_USER, secret)
        .map_err(|e| format!("--proxy-secret-file {shown}: {e}"))
}

/// The proxies on loopback ports of their own, or on the listeners the
/// flags name.
enum Served {
    Pair(ProxyPair),
    Listeners {
        service: ProxyService,
        http: SocketAddr,
        socks: SocketAddr,
    },
}

impl Served {
    async fn start(
        config: ProxyConfig,
        listen: IpAddr,
        http_port: u16,
        socks_port: u16,
    ) -> Result<Served, String> {
        if listen == IpAddr::V4(Ipv4Addr::LOCALHOST) && http_port == 0 && socks_port == 0 {
            return ProxyPair::start(config)
                .await
                .map(Served::Pair)
                .map_err(|e| e.to_string());
        }
        let bind = |port: u16| async move {
            let addr = SocketAddr::new(listen, port);
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| format!("cannot listen on {addr}: {e}"))
        };
        let (http_l, socks_l) = (bind(http_port).await?, bind(socks_port).await?);
        let http = http_l.local_addr().map_err(|e| e.to_string())?;
        let socks = socks_l.local_addr().map_err(|e| e.to_string())?;
        let service = ProxyService::start(config);
        let _ = service.serve_tcp(ProxyKind::Http, http_l);
        let _ = service.serve_tcp(ProxyKind::Socks5, socks_l);
        Ok(Served::Listeners {
            service,
            http,
            socks,
        })
    }

    fn http_addr(&self) -> SocketAddr {
        match self {
            Served::Pair(p) => p.http_addr(),
            Served::Listeners { http, .. } => *http,
        }
    }

    fn socks_addr(&self) -> SocketAddr {
        match self {
            Served::Pair(p) => p.socks_addr(),
            Served::Listeners { socks, .. } => *socks,
        }
    }

    fn subscribe_decisions(&self) -> connect_proxy::Subscription<connect_proxy::Decision> {
        match self {
            Served::Pair(p) => p.subscribe_decisions(),
            Served::Listeners { service, .. } => service.subscribe_decisions(),
        }
    }

    async fn shutdown(self) {
        match self {
            Served::Pair(p) => p.shutdown().await,
            Served::Listeners { service, .. } => service.shutdown().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    use connect_proxy::{DenyReason, Verdict};
    #[cfg(unix)]
    use std::ffi::OsString;

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("egress-proxy").chain(argv.iter().copied()))
    }

    /// What no flags at all parse to.
    fn defaults() -> Cli {
        Cli {
            allow: vec![],
            deny: vec![],
            cidrs: vec![],
            no_baseline: false,
            network: Network::Enabled,
            copy_buffer: None,
            no_proxy_auth: false,
            listen: None,
            http_port: None,
            socks_port: None,
            proxy_secret_file: None,
        }
    }

    use test_support::cli_table::Want::{self, Parsed, Refused};

    const ALLOW_TAKES: &str =
        "takes a host or pattern such as api.example.com, *.example.com or 10.0.0.5:8443: ";

    #[test]
    fn the_command_is_well_formed_and_every_flag_says_what_it_does() {
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        for arg in cmd.get_arguments() {
            assert!(arg.get_help().is_some(), "{} has no help", arg.get_id());
        }
    }

    #[test]
    fn every_flag_in_each_form_and_every_refusal() {
        let cases: &[(&str, &[&str], Want<Cli>)] = &[
            ("no flags: baseline, network on, auth", &[], Parsed(|_| {})),
            (
                "--allow repeats in both forms, entries kept as given",
                &["--allow", "*.example.com", "--allow=10.0.0.5:8443"],
                Parsed(|c| c.allow = vec!["*.example.com".into(), "10.0.0.5:8443".into()]),
            ),
            (
                "--deny repeats in both forms",
                &["--deny", "evil.example.com", "--deny=*.example.org"],
                Parsed(|c| c.deny = vec!["evil.example.com".into(), "*.example.org".into()]),
            ),
            (
                "--allow-cidr repeats in both forms",
                &["--allow-cidr", "10.0.0.0/8", "--allow-cidr=fd00::/8"],
                Parsed(|c| {
                    c.cidrs = vec!["10.0.0.0/8".parse().unwrap(), "fd00::/8".parse().unwrap()]
                }),
            ),
            (
                "--no-baseline",
                &["--no-baseline"],
                Parsed(|c| c.no_baseline = true),
            ),
            (
                "--network off",
                &["--network", "off"],
                Parsed(|c| c.network = Network::Disabled),
            ),
            (
                "--network=ON in any case",
                &["--network=ON"],
                Parsed(|c| c.network = Network::Enabled),
            ),
            (
                "--network given twice: the last one counts",
                &["--network", "on", "--network", "Off"],
                Parsed(|c| c.network = Network::Disabled),
            ),
            (
                "--copy-buffer BYTES at the bottom of its range",
                &["--copy-buffer", "1024"],
                Parsed(|c| c.copy_buffer = Some(1024)),
            ),
            (
                "--copy-buffer=BYTES at the top of its range",
                &["--copy-buffer=4194304"],
                Parsed(|c| c.copy_buffer = Some(4 << 20)),
            ),
            (
                "--no-proxy-auth",
                &["--no-proxy-auth"],
                Parsed(|c| c.no_proxy_auth = true),
            ),
            (
                "--listen, --http-port, --socks-port and --proxy-secret-file, for a cluster's egress pod",
                &[
                    "--listen",
                    "0.0.0.0",
                    "--http-port=3128",
                    "--socks-port",
                    "1080",
                    "--proxy-secret-file",
                    "/run/s",
                ],
                Parsed(|c| {
                    c.listen = Some("0.0.0.0".parse().unwrap());
                    c.http_port = Some(3128);
                    c.socks_port = Some(1080);
                    c.proxy_secret_file = Some("/run/s".into());
                }),
            ),
            (
                "--listen takes a numeric address",
                &["--listen", "localhost"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--listen takes a numeric IP address, such as 127.0.0.1 or 0.0.0.0, not \"localhost\"",
                    ],
                ),
            ),
            (
                "--http-port refuses port 0",
                &["--http-port", "0"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--http-port takes a port number from 1 to 65535"],
                ),
            ),
            (
                "--no-proxy-auth and --proxy-secret-file contradict each other",
                &["--no-proxy-auth", "--proxy-secret-file", "/run/s"],
                Refused(
                    ErrorKind::ArgumentConflict,
                    &["--no-proxy-auth", "--proxy-secret-file"],
                ),
            ),
            (
                "--allow refuses a URL",
                &["--allow", "https://api.example.com"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--allow ", ALLOW_TAKES, "has a scheme; give the host only"],
                ),
            ),
            (
                "--deny refuses a bare wildcard",
                &["--deny=*"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--deny ", ALLOW_TAKES, "is a bare '*'"],
                ),
            ),
            (
                "--allow-cidr refuses what is no address",
                &["--allow-cidr", "intranet"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--allow-cidr takes an address block such as 10.0.0.0/8 or fd00::/8: \
                       CIDR \"intranet\" is refused: the address is not an IPv4 or IPv6 literal",
                    ],
                ),
            ),
            (
                "--network takes on or off only",
                &["--network", "maybe"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--network takes on or off, not \"maybe\""],
                ),
            ),
            (
                "--copy-buffer takes a number",
                &["--copy-buffer", "64k"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--copy-buffer takes a number of bytes from 1024 to 4194304, such as \
                       65536, not \"64k\"",
                    ],
                ),
            ),
            (
                "--copy-buffer below the range",
                &["--copy-buffer=1023"],
                Refused(ErrorKind::ValueValidation, &["not \"1023\""]),
            ),
            (
                "--copy-buffer above the range",
                &["--copy-buffer", "4194305"],
                Refused(ErrorKind::ValueValidation, &["not \"4194305\""]),
            ),
            (
                "a flag without its value",
                &["--allow"],
                Refused(
                    ErrorKind::InvalidValue,
                    &["a value is required for '--allow <ENTRY>'"],
                ),
            ),
            (
                "a switch takes no value",
                &["--no-baseline=yes"],
                Refused(ErrorKind::TooManyValues, &["--no-baseline"]),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["--no-proxy-ath"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--no-proxy-ath'",
                        "a similar argument exists: '--no-proxy-auth'",
                    ],
                ),
            ),
            (
                "a word that is no flag",
                &["example.com"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &["unexpected argument 'example.com'"],
                ),
            ),
            (
                "--help explains the flags and the per-run secret",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &[
                        "--no-proxy-auth",
                        "--copy-buffer <BYTES>",
                        "[default: on]",
                        "--no-proxy-auth is the explicit opt-out",
                    ],
                ),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("egress-proxy ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
        ];
        test_support::cli_table::check(cases, parse, defaults, |p| p.to_owned());
    }

    #[test]
    fn the_flags_make_the_list_and_policy_they_name() {
        let args = |argv: &[&str]| parse(argv).unwrap().into_args().unwrap();
        let a = args(&[]);
        assert_eq!(a.list.decide_str("api.anthropic.com", 443), Verdict::Allow);
        assert_eq!(
            a.list.decide_str("example.com", 443),
            Verdict::Deny(DenyReason::NotAllowed)
        );
        assert!(matches!(a.auth, Auth::Fresh));
        assert_eq!(a.copy_buffer, None);
        assert_eq!(
            (a.listen.to_string(), a.http_port, a.socks_port),
            ("127.0.0.1".into(), 0, 0)
        );
        let a = args(&[
            "--no-baseline",
            "--allow",
            "*.example.com",
            "--deny",
            "bad.example.com",
            "--copy-buffer",
            "65536",
            "--no-proxy-auth",
        ]);
        assert_eq!(a.list.decide_str("ok.example.com", 443), Verdict::Allow);
        assert_eq!(
            a.list.decide_str("bad.example.com", 443),
            Verdict::Deny(DenyReason::Denylisted)
        );
        assert_eq!(
            a.list.decide_str("api.anthropic.com", 443),
            Verdict::Deny(DenyReason::NotAllowed)
        );
        assert!(matches!(a.auth, Auth::Off));
        assert_eq!(a.copy_buffer, Some(65536));
        let a = args(&[
            "--listen",
            "0.0.0.0",
            "--http-port",
            "3128",
            "--socks-port=1080",
            "--proxy-secret-file",
            "/run/s",
        ]);
        assert!(matches!(&a.auth, Auth::File(p) if p.as_os_str() == "/run/s"));
        assert_eq!(
            (a.listen.to_string(), a.http_port, a.socks_port),
            ("0.0.0.0".into(), 3128, 1080)
        );
        let a = args(&["--network", "off", "--allow", "example.com"]);
        assert_eq!(
            a.list.decide_str("example.com", 443),
            Verdict::Deny(DenyReason::NetworkDisabled)
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_value_that_is_not_utf8_is_refused_not_a_panic() {
        use std::os::unix::ffi::OsStringExt;
        let argv = [
            OsString::from("egress-proxy"),
            "--allow".into(),
            OsString::from_vec(vec![b'/', b't', 0xff]),
        ];
        let e = Cli::try_parse_from(argv).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidUtf8, "{e}");
        assert!(e.to_string().contains("--allow takes UTF-8 text"), "{e}");
    }
}
