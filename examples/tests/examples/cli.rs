//! Every example binary with a clap command line: `--help` and `--version`
//! print on stdout and exit 0, a usage error prints on stderr and exits 2.

use std::process::{Command, Stdio};

const BINS: [(&str, &str); 8] = [
    ("broker-proxy", env!("CARGO_BIN_EXE_broker-proxy")),
    ("docker-argv", env!("CARGO_BIN_EXE_docker-argv")),
    ("egress-proxy", env!("CARGO_BIN_EXE_egress-proxy")),
    ("env-scrub", env!("CARGO_BIN_EXE_env-scrub")),
    ("graphql-classify", env!("CARGO_BIN_EXE_graphql-classify")),
    ("k8s-render", env!("CARGO_BIN_EXE_k8s-render")),
    ("sandbox-probe", env!("CARGO_BIN_EXE_sandbox-probe")),
    ("seatbelt-render", env!("CARGO_BIN_EXE_seatbelt-render")),
];

fn run(bin: &str, arg: &str) -> std::process::Output {
    Command::new(bin)
        .arg(arg)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn help_and_version_exit_0_on_stdout_and_a_usage_error_exits_2_on_stderr() {
    for (name, bin) in BINS {
        let o = run(bin, "--help");
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{name} --help");
        assert!(out.contains(&format!("Usage: {name}")), "{name}: {out}");
        assert!(o.stderr.is_empty(), "{name} --help wrote on stderr");

        let o = run(bin, "--version");
        assert_eq!(o.status.code(), Some(0), "{name} --version");
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            format!("{name} {}\n", env!("CARGO_PKG_VERSION"))
        );

        let o = run(bin, "--no-such-flag");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains("unexpected argument '--no-such-flag'")
                && err.contains("For more information, try '--help'."),
            "{name}: {err}"
        );
        assert!(
            o.stdout.is_empty(),
            "{name} printed on stdout on a usage error"
        );
    }
}
