//! The timing driver of `benches/compare/workspace.sh`, on a repository the
//! script made (`--repo PATH`, a main checkout with a commit): for one
//! backend (`--backend bubblewrap|landlock|gvisor|qemu`), `--runs N` times
//! each, in one run side by side:
//! - `host_status`: the first `git status` in the checkout itself (its
//!   index refreshed before, as a user's is);
//! - `worktree`: `git worktree add` of a new branch, then its first
//!   `git status`; `copy`: `cp -a --reflink=auto` of the checkout, then its
//!   first `git status`;
//! - ours: `plain` (a session launched without a workspace), `ws` (launched
//!   in a workspace), `create` (`ws` less `plain`: what the workspace adds
//!   to a launch), `ws_status` (its first `git status`, inside), `fork` (a
//!   fork launched, less `plain`);
//! - `collect100`: collecting a branch of 100 new commits (`--commits N`
//!   for another number; the name stays).
//!
//! Prints one line of `name=milliseconds` medians.
//!
//! `cargo run --release -p asbx-agent-sandbox --example workspace_bench --
//! --repo PATH --backend bubblewrap [--runs N]`
use agent_sandbox::{BackendRequest::Explicit, FilenameRules, ManagerBuilder, NativeMechanism};
use agent_sandbox::{CollectOutcome, SandboxBackend, SandboxCommand, SandboxSpec, Surface};
use agent_sandbox::{SandboxManager, WorkspaceRequest};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs a host command, failing on a non-zero exit; its time.
fn host(dir: &Path, prog: &str, args: &[&str]) -> Res<f64> {
    let t = Instant::now();
    let out = Command::new(prog).args(args).current_dir(dir).output()?;
    let took = ms(t);
    if !out.status.success() {
        return Err(format!("{prog} {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(took)
}

fn manager(backend: &str, home: &Path) -> Res<SandboxManager> {
    let mut b = ManagerBuilder::from_ambient();
    b.home(home)
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
        .inner_roles_from_current_exe();
    match backend {
        "bubblewrap" | "landlock" => {
            let m = if backend == "landlock" {
                NativeMechanism::Landlock
            } else {
                NativeMechanism::Bubblewrap
            };
            b.request(Explicit(SandboxBackend::Native), Surface::Dispatch).native_mechanism(m);
        }
        "gvisor" => {
            b.request(Explicit(SandboxBackend::Microvm), Surface::Dispatch)
                .filename_rules(FilenameRules::DropFilenameGlobDenies);
        }
        "qemu" => {
            b.request(Explicit(SandboxBackend::Microvm), Surface::Dispatch).microvm_runtime_qemu();
        }
        other => return Err(format!("unknown backend {other:?}").into()),
    }
    Ok(b.build()?)
}

fn sh(script: &str) -> SandboxCommand {
    let mut c = SandboxCommand::new("/bin/sh");
    c.arg("-c").arg(script);
    c
}

/// Runs `script` in the session; its time.
async fn inside(m: &SandboxManager, h: &agent_sandbox::SandboxHandle, script: &str) -> Res<f64> {
    let t = Instant::now();
    let out = m.exec(h, sh(script)).await?.output().await;
    let took = ms(t);
    if !out.status.success() {
        return Err(format!("{script}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(took)
}

fn main() -> Res<()> {
    agent_sandbox::run_inner_role_if_launched(); // first, before any thread
    let (mut repo, mut backend, mut runs) = (None, String::from("bubblewrap"), 3usize);
    let mut commits = 100usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--repo" => repo = args.next().map(PathBuf::from),
            "--backend" => backend = args.next().ok_or("--backend NAME")?,
            "--runs" => runs = args.next().ok_or("--runs N")?.parse()?,
            "--commits" => commits = args.next().ok_or("--commits N")?.parse()?,
            _ => {
                return Err(format!(
                    "usage: workspace_bench --repo PATH [--backend B] [--runs N]; got {a}"
                )
                .into());
            }
        }
    }
    let repo = repo.ok_or("--repo PATH")?;
    let scratch = std::env::temp_dir().join(format!("workspace-bench-{}", std::process::id()));
    std::fs::create_dir_all(scratch.join("home"))?;
    let line = measure(&repo, &backend, (runs, commits), &scratch);
    let _ = Command::new("git").arg("-C").arg(&repo).args(["worktree", "prune"]).status();
    let _ = std::fs::remove_dir_all(&scratch);
    println!("{}", line?);
    Ok(())
}

fn measure(
    repo: &Path,
    backend: &str,
    (runs, commits): (usize, usize),
    scratch: &Path,
) -> Res<String> {
    let mut f: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut push = |name, v| f.push((name, v));
    host(repo, "git", &["status", "--short"])?; // the user's refreshed index
    push(
        "host_status",
        (0..runs).map(|_| host(repo, "git", &["status", "--short"])).collect::<Res<_>>()?,
    );
    let (mut wt, mut cp) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let dir = scratch.join(format!("wt{i}"));
        let d = dir.display().to_string();
        let add =
            host(repo, "git", &["worktree", "add", "-q", "-b", &format!("bench-wt-{i}"), &d])?;
        wt.push(add + host(&dir, "git", &["status", "--short"])?);
        host(repo, "git", &["worktree", "remove", "--force", &d])?;
        host(repo, "git", &["branch", "-q", "-D", &format!("bench-wt-{i}")])?;
        let copy = scratch.join(format!("cp{i}"));
        let c = copy.display().to_string();
        let took = host(scratch, "cp", &["-a", "--reflink=auto", &repo.display().to_string(), &c])?;
        cp.push(took + host(&copy, "git", &["status", "--short"])?);
        std::fs::remove_dir_all(&copy)?;
    }
    push("worktree", wt);
    push("copy", cp);
    let ours = tokio::runtime::Runtime::new()?.block_on(async {
        let m = manager(backend, &scratch.join("home"))?;
        let (mut plain, mut ws, mut status, mut fork, mut collect) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in 0..runs {
            let t = Instant::now();
            let mut h = m.launch(SandboxSpec::new(format!("plain-{i}"), "b")).await?;
            plain.push(ms(t));
            m.destroy(&mut h).await?;
            let req = WorkspaceRequest::new(repo, &format!("bench-{i}"))?;
            let t = Instant::now();
            let mut h =
                m.launch_in_workspace(SandboxSpec::new(format!("ws-{i}"), "b"), &req).await?;
            ws.push(ms(t));
            status.push(inside(&m, &h, "git status --short >/dev/null").await?);
            let t = Instant::now();
            let mut child = m.launch_fork(&h, SandboxSpec::new(format!("fork-{i}"), "b")).await?;
            fork.push(ms(t));
            m.destroy(&mut child).await?;
            if i == 0 {
                inside(
                    &m,
                    &h,
                    &format!(
                        "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a \
                         GIT_COMMITTER_EMAIL=a@b; i=0; while [ $i -lt {commits} ]; do \
                         i=$((i+1)); echo $i > bench-commit; git add bench-commit; \
                         git commit -qm c$i; done"
                    ),
                )
                .await?;
                let t = Instant::now();
                let got = m.collect(&h).await?;
                collect.push(ms(t));
                if !matches!(got, CollectOutcome::Updated(_)) {
                    return Err("the 100 commits were not collected".into());
                }
            }
            m.destroy(&mut h).await?;
        }
        Ok::<_, Box<dyn std::error::Error>>((plain, ws, status, fork, collect))
    })?;
    let (plain, ws, status, fork, collect) = ours;
    let p = median(plain.clone());
    push("plain", plain);
    push("create", ws.iter().map(|w| w - p).collect());
    push("ws", ws);
    push("ws_status", status);
    push("fork", fork.iter().map(|w| w - p).collect());
    push("collect100", collect);
    // The collected refs stay out of the next run's way.
    let refs = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["for-each-ref", "--format=delete %(refname)", "refs/sessions"])
        .output()?;
    let mut del = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["update-ref", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = del.stdin.take() {
        std::io::Write::write_all(&mut stdin, &refs.stdout)?;
    }
    del.wait()?;
    Ok(f.into_iter().map(|(n, v)| format!("{n}={:.1}", median(v))).collect::<Vec<_>>().join(" "))
}
