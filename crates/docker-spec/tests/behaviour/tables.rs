//! Loads `testdata/argv.toml` and `testdata/bad-inputs.toml`.

use docker_spec::{
    ContainerSpec, ContainerSpecBuilder, Error, ErrorKind, HostNamespace, ImageRef, Limits,
    Network, NetworkName, Privileged, Tmpfs, User,
};
use sandbox_core::{Access, SandboxSpec};
use serde::Deserialize;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Settings {
    pub image: Option<String>,
    pub sandbox: Option<String>,
    pub network: Option<String>,
    pub mounts: Vec<(String, String, String)>,
    pub env: Vec<(String, String)>,
    pub secrets: Vec<(String, String)>,
    pub user: Option<(u32, u32)>,
    pub limits: Option<LimitsRow>,
    pub tmpfs: Vec<(String, u64)>,
    pub workdir: Option<String>,
    pub privileged: bool,
    pub host_namespaces: Vec<String>,
    pub command: Vec<String>,
    pub env_file: bool,
}

#[derive(Deserialize)]
pub(crate) struct LimitsRow {
    pids: u32,
    memory: u64,
    milli_cpus: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArgvCase {
    intent: String,
    #[serde(flatten)]
    settings: Settings,
    #[serde(default)]
    argv: Option<Vec<String>>,
    #[serde(default)]
    contains: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorCase {
    intent: String,
    #[serde(flatten)]
    settings: Settings,
    error: String,
}

#[derive(Deserialize)]
struct File<T> {
    case: Vec<T>,
}

fn load<T: for<'de> Deserialize<'de>>(name: &str) -> Vec<T> {
    let path = format!("{}/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    toml::from_str::<File<T>>(&text)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .case
}

/// Builds the spec a table row describes.
pub(crate) fn build(s: &Settings) -> Result<ContainerSpecBuilder, Error> {
    let image = ImageRef::new(s.image.clone().unwrap_or_else(|| "alpine:3".to_owned()))?;
    let network = match s.network.as_deref() {
        None | Some("none") => Network::None,
        Some(name) => Network::Internal(NetworkName::new(name)?),
    };
    let mut b = match &s.sandbox {
        Some(json) => {
            let spec: SandboxSpec = serde_json::from_str(json).unwrap();
            ContainerSpec::from_sandbox(&spec, image, network)?
        }
        None => {
            let mut b = ContainerSpec::builder(image);
            b.network(network);
            b
        }
    };
    for (src, dst, access) in &s.mounts {
        let access = match access.as_str() {
            "ro" => Access::ReadOnly,
            "rw" => Access::ReadWrite,
            other => panic!("access {other}"),
        };
        b.mount(src, dst, access);
    }
    b.envs(s.env.iter().cloned());
    for (n, v) in &s.secrets {
        b.secret_env(n.clone(), v.clone());
    }
    if let Some((uid, gid)) = s.user {
        b.user(User { uid, gid });
    }
    if let Some(l) = &s.limits {
        b.limits(Limits {
            pids: l.pids,
            memory_bytes: l.memory,
            milli_cpus: l.milli_cpus,
        });
    }
    for (target, size) in &s.tmpfs {
        b.tmpfs(Tmpfs::new(target.clone(), *size)?);
    }
    if let Some(dir) = &s.workdir {
        b.workdir(dir.clone());
    }
    if s.privileged {
        b.privileged(Privileged::Yes);
    }
    for ns in &s.host_namespaces {
        b.host_namespace(match ns.as_str() {
            "pid" => HostNamespace::Pid,
            "network" => HostNamespace::Network,
            "ipc" => HostNamespace::Ipc,
            other => panic!("namespace {other}"),
        });
    }
    b.command(s.command.iter());
    Ok(b)
}

fn kind_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Privileged => "Privileged",
        ErrorKind::HostNamespace { .. } => "HostNamespace",
        ErrorKind::EngineSocket { .. } => "EngineSocket",
        ErrorKind::InvalidPath { .. } => "InvalidPath",
        ErrorKind::InvalidImage { .. } => "InvalidImage",
        ErrorKind::InvalidNetwork { .. } => "InvalidNetwork",
        ErrorKind::MissingProxyEnv { .. } => "MissingProxyEnv",
        ErrorKind::InvalidEnvName { .. } => "InvalidEnvName",
        ErrorKind::InvalidEnvValue { .. } => "InvalidEnvValue",
        ErrorKind::DuplicateEnv { .. } => "DuplicateEnv",
        ErrorKind::RootUser { .. } => "RootUser",
        ErrorKind::InvalidLimit { .. } => "InvalidLimit",
        ErrorKind::SecretsNeedEnvFile => "SecretsNeedEnvFile",
        ErrorKind::Spec(_) => "Spec",
        ErrorKind::EnvFile { .. } => "EnvFile",
        _ => "unknown",
    }
}

const HARDENED: &[&str] = &[
    "run",
    "--rm",
    "--init",
    "--read-only",
    "--cap-drop=ALL",
    "--security-opt=no-new-privileges",
];

#[test]
fn argv_table() {
    let cases: Vec<ArgvCase> = load("argv.toml");
    assert!(cases.len() >= 10);
    let dir = tempfile::tempdir().unwrap();
    for case in cases {
        let intent = &case.intent;
        let spec = build(&case.settings)
            .and_then(|b| b.build())
            .unwrap_or_else(|e| panic!("{intent}: {e}"));
        let (argv, env_file) = if case.settings.env_file {
            spec.run_argv_with_env_file(dir.path()).unwrap()
        } else {
            (spec.run_argv().unwrap(), None)
        };
        let argv: Vec<String> = argv.into_iter().map(|a| a.into_string().unwrap()).collect();
        if let Some(want) = &case.argv {
            assert_eq!(&argv, want, "{intent}");
        }
        assert_eq!(&argv[..HARDENED.len()], HARDENED, "{intent}");
        for prefix in [
            "--pids-limit=",
            "--memory=",
            "--memory-swap=",
            "--user=",
            "--network=",
            "--tmpfs=",
        ] {
            assert!(
                argv.iter().any(|a| a.starts_with(prefix)),
                "{intent}: {prefix}"
            );
        }
        for a in &argv {
            assert!(
                !(a == "-v"
                    || a.starts_with("--volume")
                    || a.starts_with("--privileged")
                    || a == "-e"
                    || a == "--env"
                    || a.starts_with("--net=host")
                    || a.starts_with("--pid") && !a.starts_with("--pids-limit=")),
                "{intent}: forbidden {a}"
            );
            if let Some(kv) = a.strip_prefix("--env=") {
                assert!(kv.contains('='), "{intent}: bare env {a}");
            }
        }
        // Every option before the image is `--flag` or `--flag=value`, and
        // only the fixed switches come without a value.
        for a in argv[1..].iter().take_while(|a| a.starts_with('-')) {
            assert!(
                a.contains('=') || ["--rm", "--init", "--read-only"].contains(&a.as_str()),
                "{intent}: not --flag=value: {a}"
            );
        }
        for want in &case.contains {
            assert!(argv.contains(want), "{intent}: missing {want}\n{argv:#?}");
        }
        for not in &case.absent {
            assert!(!argv.contains(not), "{intent}: unexpected {not}");
        }
        if let Some(file) = env_file {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let meta = std::fs::metadata(file.path()).unwrap();
                assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{intent}");
            }
            let flag = format!("--env-file={}", file.path().display());
            assert!(argv.contains(&flag), "{intent}");
            let text = std::fs::read_to_string(file.path()).unwrap();
            for (n, v) in &case.settings.secrets {
                assert!(text.lines().any(|l| l == format!("{n}={v}")), "{intent}");
                assert!(
                    !argv.iter().any(|a| a.contains(v.as_str())),
                    "{intent}: secret in argv"
                );
            }
            let path = file.path().to_owned();
            drop(file);
            assert!(!path.exists(), "{intent}: env file left behind");
        }
    }
}

#[test]
fn bad_input_table() {
    let cases: Vec<ErrorCase> = load("bad-inputs.toml");
    assert!(cases.len() >= 20);
    for case in cases {
        let result = build(&case.settings)
            .and_then(|b| b.build())
            .and_then(|spec| spec.run_argv());
        let err = result
            .err()
            .unwrap_or_else(|| panic!("{}: accepted", case.intent));
        assert_eq!(kind_name(err.kind()), case.error, "{}: {err}", case.intent);
        assert!(err.to_string().len() > 10, "{}", case.intent);
    }
}

#[test]
fn docker_command_runs_with_only_the_variables_it_names() {
    // `env` stands in for the docker CLI: it prints what the CLI would see.
    let Some(env) = test_support::tool("env", "apt-get install coreutils") else {
        return;
    };
    let out = docker_spec::DockerCommand::new(env)
        .engine_socket("/run/fake/engine.sock")
        .config_dir("/tmp/cfg")
        .command(Vec::<String>::new())
        .output()
        .unwrap();
    let mut seen: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            "DOCKER_CONFIG=/tmp/cfg",
            "DOCKER_HOST=unix:///run/fake/engine.sock",
            "PATH=/usr/local/bin:/usr/bin:/bin",
        ]
    );
}
