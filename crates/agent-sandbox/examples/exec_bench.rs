//! The timing driver of `benches/compare/exec.sh`: `--execs N` sequential
//! runs of `/bin/true` and of `git status` (in a small repository made for
//! the run), each timed from start to its exit with its output read, either
//! in one session of ours or, with `--host`, as plain children of this
//! program (`fork` and `exec` through the standard library, output piped,
//! no shell between). Prints one line of `name=milliseconds` pairs.
//!
//! `cargo run --release -p asbx-agent-sandbox --example exec_bench --
//! [--host | --mechanism bubblewrap|landlock [--per-command]] [--execs N]`
use agent_sandbox::{
    BackendRequest::Explicit, CommandIsolation, ManagerBuilder, NativeMechanism, SandboxBackend,
    SandboxBindMount, SandboxCommand, SandboxSpec, Surface,
};
use std::path::Path;
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

/// Sorts `times` and prints `NAME_p50=.. NAME_p99=..`.
fn report(name: &str, mut times: Vec<f64>) -> String {
    times.sort_by(f64::total_cmp);
    format!("{name}_p50={:.3} {name}_p99={:.3}", percentile(&times, 0.5), percentile(&times, 0.99))
}

/// A repository with one commit and one changed file.
fn make_repo(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let git = |args: &[&str]| -> Result<(), Box<dyn std::error::Error>> {
        let st = std::process::Command::new("git")
            .args(["-c", "user.name=b", "-c", "user.email=b@b"])
            .args(args)
            .current_dir(dir)
            .output()?;
        if !st.status.success() {
            return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&st.stderr)).into());
        }
        Ok(())
    };
    git(&["init", "-q"])?;
    for i in 0..20 {
        std::fs::write(dir.join(format!("f{i}.txt")), format!("{i}\n"))?;
    }
    git(&["add", "."])?;
    git(&["commit", "-q", "-m", "one"])?;
    std::fs::write(dir.join("f0.txt"), "changed\n")?;
    Ok(())
}

enum Mode {
    Host,
    Ours { mechanism: NativeMechanism, isolation: CommandIsolation },
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    agent_sandbox::run_inner_role_if_launched(); // first, before any thread
    let mut mode = Mode::Host;
    let mut execs = 1000usize;
    let mut per_command = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--host" => mode = Mode::Host,
            "--per-command" => per_command = true,
            "--mechanism" => {
                let mechanism = match args.next().as_deref() {
                    Some("bubblewrap") => NativeMechanism::Bubblewrap,
                    Some("landlock") => NativeMechanism::Landlock,
                    m => return Err(format!("unknown mechanism {m:?}").into()),
                };
                mode = Mode::Ours { mechanism, isolation: CommandIsolation::SessionSandbox };
            }
            "--execs" => execs = args.next().ok_or("--execs N")?.parse()?,
            _ => {
                return Err(format!(
                    "usage: exec_bench [--host | --mechanism M [--per-command]] [--execs N]; got {a}"
                )
                .into());
            }
        }
    }
    if let (true, Mode::Ours { isolation, .. }) = (per_command, &mut mode) {
        *isolation = CommandIsolation::FreshSandboxPerCommand;
    }
    let dir = std::env::temp_dir().join(format!("exec-bench-{}", std::process::id()));
    let repo = dir.join("repo");
    make_repo(&repo)?;
    let git = "/usr/bin/git";
    let line = match mode {
        Mode::Host => {
            let run = |prog: &str, args: &[&str]| -> Result<f64, Box<dyn std::error::Error>> {
                let t = Instant::now();
                let out = std::process::Command::new(prog)
                    .args(args)
                    .current_dir(&repo)
                    .stdin(std::process::Stdio::null())
                    .output()?;
                let took = ms(t);
                if !out.status.success() {
                    return Err(format!("{prog} ended {:?}", out.status).into());
                }
                Ok(took)
            };
            let t: Vec<f64> =
                (0..execs).map(|_| run("/bin/true", &[])).collect::<Result<_, _>>()?;
            let g: Vec<f64> =
                (0..execs).map(|_| run(git, &["status", "--short"])).collect::<Result<_, _>>()?;
            format!("{} {}", report("true", t), report("git", g))
        }
        Mode::Ours { mechanism, isolation } => tokio::runtime::Runtime::new()?.block_on(async {
            let home = dir.join("home");
            std::fs::create_dir_all(&home)?;
            let manager = ManagerBuilder::from_ambient()
                .home(&home)
                .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
                .request(Explicit(SandboxBackend::Native), Surface::Dispatch)
                .native_mechanism(mechanism)
                .command_isolation(isolation)
                .inner_roles_from_current_exe()
                .build()?;
            let mut spec = SandboxSpec::new("exec-bench", "bench");
            let r = repo.display().to_string();
            spec.bind_mounts.push(SandboxBindMount::new(r, agent_sandbox::Access::ReadWrite)?);
            let h = manager.launch(spec).await?;
            let run =
                async |prog: &str, args: &[&str]| -> Result<f64, Box<dyn std::error::Error>> {
                    let mut c = SandboxCommand::new(prog);
                    c.args = args.iter().map(Into::into).collect();
                    let t = Instant::now();
                    let out = manager.exec(&h, c).await?.output().await;
                    let took = ms(t);
                    if !out.status.success() {
                        return Err(format!("{prog} ended {:?}", out.status).into());
                    }
                    Ok(took)
                };
            let mut t = Vec::with_capacity(execs);
            for _ in 0..execs {
                t.push(run("/bin/true", &[]).await?);
            }
            let mut g = Vec::with_capacity(execs);
            for _ in 0..execs {
                g.push(run(git, &["status", "--short"]).await?);
            }
            let mut h = h;
            manager.destroy(&mut h).await?;
            Ok::<_, Box<dyn std::error::Error>>(format!(
                "{} {}",
                report("true", t),
                report("git", g)
            ))
        })?,
    };
    let _ = std::fs::remove_dir_all(&dir);
    println!("{line}");
    Ok(())
}
