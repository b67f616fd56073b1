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
//! Refusals are logged on stderr, one line each: `denied: ACTION TARGET
//! (REASON)`. The real credential is read
//! from the named variable of this process's environment. The proxies listen
//! on loopback, where any local process can connect, so they serve only
//! clients that present this run's secret (carried in `httpUrl` and
//! `socksUrl`): the broker never injects the credential for anyone else.

use agent_sandbox::{
    DEFAULT_BROKER_PORT, broker_intercept_on_ports, credential_for_hosts,
    pem_certificates_from_file, rule_engine_from_file,
};
use agent_sandbox_examples::{
    checked, checked_os, cidr, env_name, header_template, host, host_pattern, port, push_rule_path,
    utf8_path,
};
use clap::Parser;
use connect_proxy::{
    AllowList, Cidr, Host, IpPolicy, ProxyConfig, ProxyCredentials, ProxyPair, SystemResolver,
};
use cred_broker::{Broker, HeaderTemplate, Lease, PushRuleSpec, SessionCa};
use sandbox_core::SandboxViolation;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

const LONG_ABOUT: &str = "\
Runs the session proxy pair (HTTP and SOCKS5) on 127.0.0.1 with the credential broker on the \
--broker hosts, on port 443 and every --broker-port, without a sandbox.

It writes the session CA to --ca-out and prints one JSON line: \
{\"http\":..,\"socks\":..,\"httpUrl\":..,\"socksUrl\":..,\"ca\":..,\"phantom\":..,\"session\":..}. \
Clients send the phantom token; the broker replaces it with the real credential, read from the \
variable --credential-env names in this process's environment, on requests the --rules allow. \
Refusals are logged on stderr as `denied: ACTION TARGET (REASON)`: a refused push names each \
refused ref with its reason and the push rule's patterns.

The proxies listen on loopback, where any local process can connect, so they serve only \
clients that present this run's secret (carried in httpUrl and socksUrl): the broker never \
injects the credential for anyone else.

Pushes are refused unless --push-rule allows them ({session} in the rule is the session id \
of the JSON line).";

const AFTER_HELP: &str = "\
Runs until stdin ends or SIGINT/SIGTERM (Ctrl-C on Windows). With stdin /dev/null or closed \
at start there is no input to end: it says so on stderr and runs until a signal.";

#[derive(Debug, PartialEq, Parser)]
#[command(
    name = "broker-proxy",
    version,
    args_override_self = true,
    about = "The session proxy pair on 127.0.0.1 with the credential broker on the chosen hosts",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP
)]
struct Cli {
    /// The broker's rule file (TOML, or JSON when its name ends in .json) that decides which
    /// requests get the credential.
    #[arg(long, value_name = "FILE")]
    rules: PathBuf,
    /// Where to write the session CA certificate (PEM) that clients must trust.
    #[arg(
        long,
        value_name = "FILE",
        value_parser = checked_os(|p| utf8_path("--ca-out", p))
    )]
    ca_out: String,
    /// A host whose requests get the real credential, such as api.github.com (repeat for more).
    #[arg(
        long = "broker",
        value_name = "HOST",
        required = true,
        value_parser = checked(|v| host("--broker", v))
    )]
    hosts: Vec<String>,
    /// The variable of this process's environment that holds the real credential.
    #[arg(long, value_name = "NAME", value_parser = checked(|v| env_name("--credential-env", v)))]
    credential_env: String,
    /// How the real credential is sent: bearer, token, git-basic, or header:NAME for an API-key
    /// header such as header:x-api-key.
    #[arg(
        long,
        value_name = "TEMPLATE",
        default_value = "bearer",
        value_parser = checked(|v| header_template("--template", v))
    )]
    template: HeaderTemplate,
    /// The TOML push rule git pushes must pass (as agent-run --broker-push-rule); without it every
    /// push is refused.
    #[arg(
        long,
        value_name = "FILE",
        value_parser = checked_os(|p| push_rule_path("--push-rule", Path::new(p)))
    )]
    push_rule: Option<PushRuleSpec>,
    /// Also broker the brokered hosts on PORT besides 443 (repeat for more).
    #[arg(long = "broker-port", value_name = "PORT", value_parser = checked(|v| port("--broker-port", v)))]
    ports: Vec<u16>,
    /// A PEM file of extra root certificates to trust for upstream servers (repeat for more).
    #[arg(long, value_name = "FILE")]
    upstream_ca: Vec<PathBuf>,
    /// A host or pattern the proxies also let through, besides the baseline and the --broker hosts,
    /// such as *.example.com (repeat for more).
    #[arg(long, value_name = "ENTRY", value_parser = checked(|v| host_pattern("--allow", v)))]
    allow: Vec<String>,
    /// An address block the proxies may connect to even when it is private or local, such as
    /// 10.0.0.0/8 (repeat for more).
    #[arg(long = "allow-cidr", value_name = "CIDR", value_parser = checked(|v| cidr("--allow-cidr", v)))]
    cidrs: Vec<Cidr>,
}

fn main() -> ExitCode {
    let o = Cli::parse();
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

async fn run(o: Cli) -> Result<(), String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let engine = rule_engine_from_file(&o.rules).map_err(|e| s(&e))?;
    let env_name = o.credential_env.as_str();
    let value = std::env::var(env_name).map_err(|_| format!("{env_name} is not set"))?;
    let cred =
        credential_for_hosts(env_name, value, o.template.clone(), &o.hosts).map_err(|e| s(&e))?;
    let session = format!("broker-proxy-{}", std::process::id());
    let ca = SessionCa::builder(&session).build().map_err(|e| s(&e))?;
    let lease = Lease::builder(&session, &cred).build().map_err(|e| s(&e))?;
    let mut b = Broker::builder(Arc::new(ca), engine);
    b.grant(cred, lease.clone());
    if let Some(rule) = &o.push_rule {
        b.push_rule(rule.clone());
    }
    for path in &o.upstream_ca {
        for der in pem_certificates_from_file(path).map_err(|e| s(&e))? {
            b.extra_root_der(&der);
        }
    }
    let broker = Arc::new(b.build().map_err(|e| s(&e))?);
    let ca_out = o.ca_out.as_str();
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
            Some(v) = proxy_v.recv() => eprintln!("{}", denial_line(&v)),
            Ok(v) = broker_v.recv() => eprintln!("{}", denial_line(&v)),
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
        eprintln!("{}", denial_line(&v));
    }
    while let Ok(v) = broker_v.try_recv() {
        eprintln!("{}", denial_line(&v));
    }
    Ok(())
}

/// The stderr line for a refusal: `denied: ACTION TARGET`, then the
/// reason in parentheses when there is one.
fn denial_line(v: &SandboxViolation) -> String {
    match v.raw.as_deref().filter(|r| !r.is_empty()) {
        Some(why) => format!("denied: {} {} ({why})", v.action, v.target),
        None => format!("denied: {} {}", v.action, v.target),
    }
}

/// The ports the broker claims: 443 and every `--broker-port`, each once.
fn brokered_ports(extra: &[u16]) -> Vec<u16> {
    let mut ports = vec![DEFAULT_BROKER_PORT];
    for p in extra {
        if !ports.contains(p) {
            ports.push(*p);
        }
    }
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
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    use std::ffi::OsString;
    use std::path::Path;

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

    const PUSH_RULE: &str = "refs = [\"refs/heads/agent/{session}/*\"]\n";

    const TEMPLATE_TAKES: &str = "--template takes bearer, token, git-basic or header:NAME \
        (NAME a header name such as x-api-key, not a framing or routing header)";

    /// The command line as `argv` gives it, `@required` standing for the
    /// four required flags and `@dir` for a directory holding `push.toml`
    /// (a push rule) and `bad.toml` (not one).
    fn parse(dir: &Path, argv: &[&str]) -> Result<Cli, clap::Error> {
        let mut full = vec![OsString::from("broker-proxy")];
        for a in argv {
            match *a {
                "@required" => full.extend(REQUIRED.map(OsString::from)),
                a => full.push(a.replace("@dir", &dir.display().to_string()).into()),
            }
        }
        Cli::try_parse_from(full)
    }

    /// What the four required flags parse to, the rest at their defaults.
    fn required_alone() -> Cli {
        Cli {
            rules: "r.toml".into(),
            ca_out: "ca.pem".into(),
            hosts: vec!["api.example.com".into()],
            credential_env: "REAL".into(),
            template: HeaderTemplate::Bearer,
            push_rule: None,
            ports: vec![],
            upstream_ca: vec![],
            allow: vec![],
            cidrs: vec![],
        }
    }

    use test_support::cli_table::Want::{self, Parsed, Refused};

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
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("push.toml"), PUSH_RULE).unwrap();
        std::fs::write(dir.path().join("bad.toml"), "refs = \"refs/heads/main\"\n").unwrap();
        let cases: &[(&str, &[&str], Want<Cli>)] = &[
            (
                "the four required flags alone leave the rest at their defaults",
                &["@required"],
                Parsed(|_| {}),
            ),
            (
                "each required flag also takes --name=value",
                &[
                    "--rules=r.toml",
                    "--ca-out=ca.pem",
                    "--broker=api.example.com",
                    "--credential-env=REAL",
                ],
                Parsed(|_| {}),
            ),
            (
                "--broker repeats, each host kept as given",
                &[
                    "@required",
                    "--broker",
                    "git.example.org",
                    "--broker=10.0.0.5",
                ],
                Parsed(|c| {
                    c.hosts.push("git.example.org".into());
                    c.hosts.push("10.0.0.5".into());
                }),
            ),
            (
                "--template token",
                &["@required", "--template", "token"],
                Parsed(|c| c.template = HeaderTemplate::Token),
            ),
            (
                "--template=git-basic",
                &["@required", "--template=git-basic"],
                Parsed(|c| c.template = HeaderTemplate::git_basic()),
            ),
            (
                "--template header:NAME for an API-key header",
                &["@required", "--template", "header:x-api-key"],
                Parsed(|c| {
                    c.template = HeaderTemplate::Header {
                        name: "x-api-key".into(),
                    }
                }),
            ),
            (
                "a single-value flag given twice: the last one counts",
                &["@required", "--template", "token", "--credential-env=OTHER"],
                Parsed(|c| {
                    c.template = HeaderTemplate::Token;
                    c.credential_env = "OTHER".into();
                }),
            ),
            (
                "--broker-port repeats in both forms; brokered_ports drops the repeat",
                &[
                    "@required",
                    "--broker-port",
                    "8443",
                    "--broker-port=9443",
                    "--broker-port",
                    "8443",
                ],
                Parsed(|c| c.ports = vec![8443, 9443, 8443]),
            ),
            (
                "--push-rule FILE is read as it is parsed",
                &["@required", "--push-rule", "@dir/push.toml"],
                Parsed(|c| c.push_rule = Some(toml::from_str(PUSH_RULE).unwrap())),
            ),
            (
                "--push-rule=FILE",
                &["@required", "--push-rule=@dir/push.toml"],
                Parsed(|c| c.push_rule = Some(toml::from_str(PUSH_RULE).unwrap())),
            ),
            (
                "--upstream-ca repeats in both forms, in order",
                &["@required", "--upstream-ca", "a.pem", "--upstream-ca=b.pem"],
                Parsed(|c| c.upstream_ca = vec!["a.pem".into(), "b.pem".into()]),
            ),
            (
                "--allow repeats in both forms, patterns kept as given",
                &[
                    "@required",
                    "--allow",
                    "*.example.net",
                    "--allow=pypi.org:443",
                ],
                Parsed(|c| c.allow = vec!["*.example.net".into(), "pypi.org:443".into()]),
            ),
            (
                "--allow-cidr repeats in both forms",
                &[
                    "@required",
                    "--allow-cidr",
                    "10.0.0.0/8",
                    "--allow-cidr=fd00::/8",
                ],
                Parsed(|c| {
                    c.cidrs = vec!["10.0.0.0/8".parse().unwrap(), "fd00::/8".parse().unwrap()]
                }),
            ),
            (
                "nothing given: every required flag is named",
                &[],
                Refused(
                    ErrorKind::MissingRequiredArgument,
                    &[
                        "the following required arguments were not provided",
                        "--rules <FILE>",
                        "--ca-out <FILE>",
                        "--broker <HOST>",
                        "--credential-env <NAME>",
                        "Usage: broker-proxy",
                    ],
                ),
            ),
            (
                "without --rules",
                &[
                    "--ca-out",
                    "c",
                    "--broker",
                    "h.example",
                    "--credential-env",
                    "X",
                ],
                Refused(ErrorKind::MissingRequiredArgument, &["--rules <FILE>"]),
            ),
            (
                "without --ca-out",
                &[
                    "--rules",
                    "r",
                    "--broker",
                    "h.example",
                    "--credential-env",
                    "X",
                ],
                Refused(ErrorKind::MissingRequiredArgument, &["--ca-out <FILE>"]),
            ),
            (
                "without --broker",
                &["--rules", "r", "--ca-out", "c", "--credential-env", "X"],
                Refused(ErrorKind::MissingRequiredArgument, &["--broker <HOST>"]),
            ),
            (
                "without --credential-env",
                &["--rules", "r", "--ca-out", "c", "--broker", "h.example"],
                Refused(
                    ErrorKind::MissingRequiredArgument,
                    &["--credential-env <NAME>"],
                ),
            ),
            (
                "a flag without its value",
                &["@required", "--broker-port"],
                Refused(
                    ErrorKind::InvalidValue,
                    &["a value is required for '--broker-port <PORT>'"],
                ),
            ),
            (
                "--broker-port 0 is no port",
                &["@required", "--broker-port", "0"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--broker-port takes a port number from 1 to 65535, not \"0\""],
                ),
            ),
            (
                "--broker-port=65536 is out of range",
                &["@required", "--broker-port=65536"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--broker-port takes a port number from 1 to 65535, not \"65536\""],
                ),
            ),
            (
                "--template takes the names in lower case",
                &["@required", "--template", "Bearer"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[TEMPLATE_TAKES, "not \"Bearer\""],
                ),
            ),
            (
                "--template header:NAME refuses a routing header",
                &["@required", "--template=header:host"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[TEMPLATE_TAKES, "not \"header:host\""],
                ),
            ),
            (
                "--credential-env takes a variable name",
                &["--credential-env", "REAL-TOKEN", "@required"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--credential-env takes a variable name (letters, digits and _, \
                       not starting with a digit) such as ANTHROPIC_API_KEY, not \"REAL-TOKEN\"",
                    ],
                ),
            ),
            (
                "--broker takes a host, not a URL",
                &["@required", "--broker", "https://api.example.com"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--broker takes a host name or IP address such as api.github.com: \
                       host \"https://api.example.com\" is refused",
                    ],
                ),
            ),
            (
                "--allow refuses a pattern with two wildcards",
                &["@required", "--allow", "*.*.example.com"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--allow takes a host or pattern such as api.example.com, *.example.com \
                       or 10.0.0.5:8443: entry \"*.*.example.com\" has more than one '*'",
                    ],
                ),
            ),
            (
                "--allow-cidr refuses a prefix longer than the address",
                &["@required", "--allow-cidr=10.0.0.0/33"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--allow-cidr takes an address block such as 10.0.0.0/8 or fd00::/8: \
                       CIDR \"10.0.0.0/33\" is refused: the prefix length is longer than the address",
                    ],
                ),
            ),
            (
                "--push-rule names a file that is not a push rule",
                &["@required", "--push-rule", "@dir/bad.toml"],
                Refused(
                    ErrorKind::ValueValidation,
                    &["--push-rule @dir/bad.toml: not a push rule"],
                ),
            ),
            (
                "--push-rule names a file that is not there",
                &["@required", "--push-rule=@dir/missing.toml"],
                Refused(
                    ErrorKind::ValueValidation,
                    &[
                        "--push-rule @dir/missing.toml: ",
                        "give a TOML push rule file",
                    ],
                ),
            ),
            (
                "a misspelt flag gets the nearest one suggested",
                &["@required", "--allow-cider", "10.0.0.0/8"],
                Refused(
                    ErrorKind::UnknownArgument,
                    &[
                        "unexpected argument '--allow-cider'",
                        "a similar argument exists: '--allow-cidr'",
                    ],
                ),
            ),
            (
                "a word that is no flag",
                &["@required", "extra"],
                Refused(ErrorKind::UnknownArgument, &["unexpected argument 'extra'"]),
            ),
            (
                "--help explains every flag and how the run ends",
                &["--help"],
                Refused(
                    ErrorKind::DisplayHelp,
                    &[
                        "--broker-port <PORT>",
                        "Also broker the brokered hosts on PORT besides 443",
                        "--template <TEMPLATE>",
                        "[default: bearer]",
                        "Runs until stdin ends or SIGINT/SIGTERM",
                    ],
                ),
            ),
            (
                "--version names the program",
                &["--version"],
                Refused(
                    ErrorKind::DisplayVersion,
                    &[concat!("broker-proxy ", env!("CARGO_PKG_VERSION"))],
                ),
            ),
        ];
        let at_dir = |s: &str| s.replace("@dir", &dir.path().display().to_string());
        test_support::cli_table::check(
            cases,
            |argv| parse(dir.path(), argv),
            required_alone,
            |p| at_dir(p),
        );
    }

    #[test]
    fn a_denial_line_names_the_action_the_target_and_the_reason() {
        let v = SandboxViolation::new("broker-deny", "git.example:443 /r.git/git-receive-pack");
        assert_eq!(
            denial_line(&v),
            "denied: broker-deny git.example:443 /r.git/git-receive-pack"
        );
        let v = v.with_raw("git pushes are refused: no push rule is configured");
        assert_eq!(
            denial_line(&v),
            "denied: broker-deny git.example:443 /r.git/git-receive-pack \
             (git pushes are refused: no push rule is configured)"
        );
        let v = SandboxViolation::network_outbound("a.example", 80).with_raw("");
        assert_eq!(denial_line(&v), "denied: network-outbound a.example:80");
    }

    #[test]
    fn brokered_ports_are_443_and_each_extra_port_once() {
        assert_eq!(brokered_ports(&[]), [443]);
        assert_eq!(brokered_ports(&[443]), [443]);
        assert_eq!(brokered_ports(&[8443, 9443, 8443, 443]), [443, 8443, 9443]);
    }

    #[cfg(unix)]
    #[test]
    fn paths_that_are_not_utf8_are_arguments() {
        use std::os::unix::ffi::OsStringExt;
        let odd = || OsString::from_vec(vec![b'/', b't', 0xff]);
        let mut argv: Vec<OsString> = [
            "broker-proxy",
            "--ca-out",
            "ca.pem",
            "--broker",
            "h.example",
        ]
        .map(OsString::from)
        .into();
        argv.extend([
            "--credential-env".into(),
            "X".into(),
            "--rules".into(),
            odd(),
        ]);
        argv.extend(["--upstream-ca".into(), odd()]);
        let cli = Cli::try_parse_from(&argv).unwrap();
        assert_eq!(cli.rules, PathBuf::from(odd()));
        assert_eq!(cli.upstream_ca, [PathBuf::from(odd())]);
        // A push rule file that is not there is a refusal naming it.
        let mut with_push = argv.clone();
        with_push.extend(["--push-rule".into(), odd()]);
        let e = Cli::try_parse_from(&with_push).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ValueValidation);
        assert!(e.to_string().contains("--push-rule /t\u{fffd}: "), "{e}");
        // The CA's path is printed in the JSON line, so it must be text.
        let mut with_ca = argv;
        with_ca.extend(["--ca-out".into(), odd()]);
        let e = Cli::try_parse_from(&with_ca).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ValueValidation);
        assert!(
            e.to_string()
                .contains("--ca-out takes a UTF-8 path, not \"/t\u{fffd}\""),
            "{e}"
        );
    }
}
