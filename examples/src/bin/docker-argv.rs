//! `docker-argv --image REF [--network NAME] [-- COMMAND...] < spec.json`
//!
//! Reads a SandboxSpec as JSON on stdin and prints the hardened
//! `docker run` argv, one element per line. With `--network NAME` a spec
//! whose network is enabled uses that internal network (pass the proxy
//! variables with `--env NAME=VALUE`); otherwise `--network=none`.
//!
//! The argv protects the mandatory write-deny set (`.git/hooks`,
//! `.git/config`, shell rc files, ...) inside writable binds: it reads this
//! host (the entries that exist, `$HOME`, and the git repositories nested
//! in the writable binds, at most 4 levels down) and binds each existing
//! entry read-only. Entries it cannot protect (missing, or reached through
//! a symlink) are listed on stderr.
//!
//! ```sh
//! echo '{"sessionId":"s","bindMounts":[{"hostPath":"/srv/a,b"}],"mode":"review"}' \
//!   | cargo run -q -p agent-sandbox-examples --bin docker-argv -- --image alpine:3 -- id
//! ```

use docker_spec::{ContainerSpec, ImageRef, Network, NetworkName};
use sandbox_core::{Access, AmbientHost, HostView, SandboxSpec};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: docker-argv --image REF [--network NAME] [--env NAME=VALUE]... \
    [-- COMMAND...] < spec.json";

/// Largest spec accepted on stdin.
const MAX_SPEC_BYTES: u64 = 1 << 20;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("docker-argv: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let (mut image, mut network, mut env, mut command) = (None, Network::None, vec![], vec![]);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--image" => image = Some(ImageRef::new(value()?).map_err(|e| e.to_string())?),
            "--network" => {
                let name = NetworkName::new(value()?).map_err(|e| e.to_string())?;
                network = Network::Internal(name);
            }
            "--env" => {
                let pair = value()?;
                let (n, v) = pair
                    .split_once('=')
                    .ok_or(format!("--env {pair:?}: use NAME=VALUE"))?;
                env.push((n.to_owned(), v.to_owned()));
            }
            "--" => command.extend(args.by_ref()),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let image = image.ok_or("--image is required")?;
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_SPEC_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("reading stdin: {e}"))?;
    let spec: SandboxSpec = serde_json::from_str(&text).map_err(|e| format!("spec JSON: {e}"))?;
    let host = AmbientHost::from_ambient();
    let home = host
        .var_os("HOME")
        .map(PathBuf::from)
        .ok_or("HOME is not set; the mandatory write-deny set is anchored there")?;
    let writable: Vec<String> = spec
        .mount_accesses()
        .filter(|(_, a)| *a == Access::ReadWrite)
        .map(|(m, _)| m.host_path.clone())
        .chain(spec.runner_state_dirs.iter().cloned())
        .collect();
    let nested = bwrap_spec::discover_git_repos_on_host(&writable);
    let spec = ContainerSpec::from_sandbox_on_host(&spec, image, network, &home, &nested, &host)
        .map_err(|e| e.to_string())?
        .envs(env)
        .command(command)
        .build()
        .map_err(|e| e.to_string())?;
    for path in spec.unprotected_missing_paths() {
        eprintln!("docker-argv: unprotected (missing, the container can create it): {path}");
    }
    for path in spec.unprotected_symlinked_paths() {
        eprintln!("docker-argv: unprotected (reached through a symlink): {path}");
    }
    let globs = spec.filename_globs_unenforced();
    if !globs.is_empty() {
        eprintln!(
            "docker-argv: not enforced in a container (a bind cannot refuse new names): {}",
            globs.join(" ")
        );
    }
    let argv = spec.run_argv().map_err(|e| e.to_string())?;
    for arg in argv {
        println!("{}", arg.to_string_lossy());
    }
    Ok(())
}
