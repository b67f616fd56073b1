//! The filename rules beside everyday installs: below a directory that
//! package managers own (`site-packages`, `node_modules`, ...) the globs
//! (`.env`, `*.key`, `*.pem`) do not hold, so a virtualenv (pip vendors
//! certifi's `cacert.pem`) and a package's fixtures install; anywhere else
//! in the worktree they hold as before, a file made there leaves only by a
//! copy made under the rules, and a host that empties the list gets the
//! globs everywhere. Under bubblewrap and under Landlock.

use super::native::run;
use agent_sandbox::{ManagerBuilder, NameGuardLauncher, SandboxManager};
use sandbox_core::{Access, NativeMechanism, SandboxBindMount, SandboxSpec};
use std::path::{Path, PathBuf};

const GUARD: &str = env!("CARGO_BIN_EXE_agent-sandbox-name-guard");

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("facade-tooldirs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    for sub in ["ws", "home", "sessions"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    Dir(d)
}

fn manager(
    d: &Path,
    mechanism: NativeMechanism,
    configure: impl FnOnce(&mut ManagerBuilder),
) -> SandboxManager {
    let mut b = crate::builder();
    b.home(d.join("home").display().to_string())
        .temp_dir(d.join("sessions").display().to_string())
        .native_mechanism(mechanism)
        .name_guard_launcher(NameGuardLauncher::new(GUARD))
        .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
    configure(&mut b);
    b.build().unwrap()
}

fn spec(d: &Path, id: &str) -> SandboxSpec {
    let ws = d.join("ws").display().to_string();
    let mut spec = SandboxSpec::new(id, "w");
    spec.bind_mounts
        .push(SandboxBindMount::new(&ws, Access::ReadWrite).unwrap());
    spec.guest_workdir = Some(ws);
    spec
}

const SCRIPT: &str = "\
mkdir -p v/lib/python3/site-packages/certifi node_modules/pkg/test \
  && echo ca > v/lib/python3/site-packages/certifi/cacert.pem && echo CACERT \
  && echo k > node_modules/pkg/test/server.key && echo FIXTURE-KEY; \
echo x > .env 2>/dev/null && echo DOTENV; echo k > deploy.key 2>/dev/null && echo DEPLOY-KEY; \
echo k > my-site-packages.pem 2>/dev/null && echo LOOKALIKE; \
mv node_modules/pkg/test/server.key stolen.key 2>/dev/null && echo STOLEN-FILE; \
mv node_modules/pkg ./pkg 2>/dev/null; test -e pkg/test/server.key && echo STOLEN-TREE; \
mv node_modules nm 2>/dev/null; test -e nm/pkg/test/server.key && echo RENAMED-TOOL-DIR; \
true";

async fn case(tag: &str, mechanism: NativeMechanism) {
    let d = dir(tag);
    let m = manager(&d.0, mechanism, |_| {});
    let mut h = m.launch(spec(&d.0, &format!("tool-{tag}"))).await.unwrap();
    let r = run(&m, &h, SCRIPT).await;
    for made in ["CACERT", "FIXTURE-KEY"] {
        assert!(
            r.stdout.contains(made),
            "{made}: {}\n{}",
            r.stdout,
            r.stderr
        );
    }
    for refused in [
        "DOTENV",
        "DEPLOY-KEY",
        "LOOKALIKE",
        "STOLEN-FILE",
        "STOLEN-TREE",
        "RENAMED-TOOL-DIR",
    ] {
        assert!(!r.stdout.contains(refused), "{refused}: {}", r.stdout);
    }
    let ws = d.0.join("ws");
    assert!(
        ws.join("v/lib/python3/site-packages/certifi/cacert.pem")
            .exists()
    );
    for gone in [
        ".env",
        "deploy.key",
        "stolen.key",
        "pkg/test/server.key",
        "nm/pkg/test/server.key",
    ] {
        assert!(!ws.join(gone).exists(), "{gone} was made");
    }
    for v in [".env", "deploy.key"] {
        assert!(
            r.violations
                .iter()
                .any(|x| x.starts_with("file-write-create") && x.ends_with(v)),
            "{v}: {:?}",
            r.violations
        );
    }
    // A real virtualenv, pip and its certifi included.
    let venv = test_support::require(
        std::process::Command::new("python3")
            .args(["-c", "import ensurepip, venv"])
            .status()
            .is_ok_and(|s| s.success()),
        "python3's venv and ensurepip",
        "apt-get install python3-venv",
    );
    if venv {
        let r = run(
            &m,
            &h,
            "python3 -m venv env && env/bin/python -m pip --version && echo VENV",
        )
        .await;
        assert!(r.stdout.contains("VENV"), "{}\n{}", r.stdout, r.stderr);
        let found = walk_find(&ws.join("env"), "cacert.pem");
        assert!(found, "pip's certifi bundle was not installed");
    }
    m.destroy(&mut h).await.unwrap();

    // A host that empties the list: the globs hold everywhere.
    let strict = manager(&d.0, mechanism, |b| {
        b.tool_owned_dirs(Vec::<String>::new());
    });
    let mut h = strict
        .launch(spec(&d.0, &format!("tool-strict-{tag}")))
        .await
        .unwrap();
    let r = run(
        &strict,
        &h,
        "mkdir -p s/site-packages && echo ca > s/site-packages/x.pem 2>/dev/null && echo MADE; true",
    )
    .await;
    assert!(!r.stdout.contains("MADE"), "{}", r.stdout);
    strict.destroy(&mut h).await.unwrap();
}

fn walk_find(dir: &Path, name: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        e.file_name() == name || (e.file_type().is_ok_and(|t| t.is_dir()) && walk_find(&p, name))
    })
}

#[tokio::test]
async fn under_bubblewrap_tools_install_their_own_pem_files_and_the_rules_hold_elsewhere() {
    if !super::native::native_available() {
        return;
    }
    case("bwrap", NativeMechanism::Bubblewrap).await;
}

#[tokio::test]
async fn under_landlock_tools_install_their_own_pem_files_and_the_rules_hold_elsewhere() {
    if !super::landlock::landlock_available() {
        return;
    }
    case("landlock", NativeMechanism::Landlock).await;
}
