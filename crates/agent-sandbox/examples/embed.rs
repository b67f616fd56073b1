//! A host program embedding the sandbox: a task's session in a workspace
//! of a scratch git repository, six commands and how each ended, its
//! commit collected into the repository as a session ref, and the teardown.
//! `cargo run -p asbx-agent-sandbox --example embed`; `cargo test` runs it too.
use agent_sandbox::{BackendRequest::Explicit, CollectOutcome, KillReason, Limits, PtySize};
use agent_sandbox::{ManagerBuilder, SandboxBackend::Native, SandboxCommand, WorkspaceRequest};
use agent_sandbox::{SandboxSpec, Surface};

fn sh(script: &str) -> SandboxCommand {
    let mut c = SandboxCommand::new("/bin/sh");
    c.arg("-c").arg(script);
    c
}
fn check(ok: bool, what: &str) -> Result<(), String> {
    println!("{} {what}", if ok { "ok:" } else { "FAILED:" });
    ok.then_some(()).ok_or(format!("not as expected: {what}"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    agent_sandbox::run_inner_role_if_launched(); // first, before any thread
    let dir = std::env::temp_dir().join(format!("embed-{}", std::process::id()));
    let work = dir.join("work").display().to_string();
    let id = ["-c", "user.name=host", "-c", "user.email=host@example.invalid"];
    std::process::Command::new("git").args(["init", "-q", &work]).status()?;
    std::process::Command::new("git")
        .args(id)
        .args(["-C", &work, "commit", "-q"])
        .args(["--allow-empty", "-m", "start"])
        .status()?;
    let done = tokio::runtime::Runtime::new()?.block_on(async {
        let manager = ManagerBuilder::from_ambient()
            .home(&dir)
            .base_env(std::env::vars_os().collect())
            .request(Explicit(Native), Surface::Dispatch)
            .inner_roles_from_current_exe()
            .build()?;
        // The task works in its own view of the repository, on branch `task`.
        let task = WorkspaceRequest::new(&work, "task")?;
        let spec = SandboxSpec::new("embed", "scratch");
        let (m, mut h) = (&manager, manager.launch_in_workspace(spec, &task).await?);
        let out = m.exec(&h, sh("git -c user.name=a -c user.email=a@b commit -q --allow-empty -m done && git status --short --branch")).await?.output().await;
        check(out.status.success(), "git commit and status work inside")?;
        let out = m.exec(&h, sh("echo key > secret.pem")).await?.output().await;
        check(out.violations.iter().any(|v| v.target.ends_with(".pem")), "secret.pem refused")?;
        let out = m.exec(&h, sh("curl -sS https://blocked.example/")).await?.output().await;
        check(out.violations.iter().any(|v| v.target == "blocked.example:443"), "curl denied")?;
        let mut bash = sh("exec bash -ic tty");
        bash.pty(PtySize::DEFAULT);
        let out = m.exec(&h, bash).await?.output().await;
        check(out.stdout.windows(10).any(|w| w == b"/dev/pts/0"), "bash -i on its own terminal")?;
        let mut slow = sh("sleep 30");
        slow.timeout(std::time::Duration::from_secs(1));
        let status = m.exec(&h, slow).await?.wait().await;
        check(status.kill_reason() == Some(KillReason::Timeout), "a timeout ends a sleep")?;
        let mut hog = sh("head -c 512M /dev/zero | tail -c 400M");
        hog.limits(Limits { memory_bytes: Some(64 << 20), ..Limits::default() });
        let status = m.exec(&h, hog).await?.wait().await;
        check(status.kill_reason() == Some(KillReason::Oom), "a memory limit ends a hog")?;
        let got = m.collect(&h).await?; // through the push rule, nothing else touched
        check(matches!(&got, CollectOutcome::Updated(c) if c.reference == "refs/sessions/embed/task"), "the commit collected")?;
        manager.destroy(&mut h).await?;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    std::fs::remove_dir_all(&dir)?;
    done
}
