//! The timing driver of `benches/compare/microvm.sh`: one session of the
//! chosen backend, the time from `launch` to a warm handle, `--execs N`
//! sequential commands (`/bin/true`, each timed from `exec` to its last
//! event), and for `microvm` on gVisor a `suspend` and a `resume`; then
//! `destroy`. Prints one line of `name=milliseconds` pairs. With
//! `--runtime qemu` the session is a QEMU guest (the probe's canary boots
//! at build, before anything is timed).
//!
//! `cargo run --release -p asbx-agent-sandbox --example microvm_bench --
//! [--backend microvm|native] [--runtime gvisor|qemu] [--execs N]`
use agent_sandbox::{BackendRequest::Explicit, ManagerBuilder, SandboxBackend, SandboxCommand};
use agent_sandbox::{SandboxSpec, Surface};
use std::time::Instant;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    agent_sandbox::run_inner_role_if_launched(); // first, before any thread
    let mut backend = SandboxBackend::Microvm;
    let mut execs = 200usize;
    let mut qemu = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--backend", Some(b)) => backend = SandboxBackend::from_name(Some(&b)),
            ("--execs", Some(n)) => execs = n.parse()?,
            ("--runtime", Some(r)) if r == "qemu" || r == "gvisor" => qemu = r == "qemu",
            _ => {
                return Err(
                    format!(
                        "usage: microvm_bench [--backend B] [--runtime gvisor|qemu] [--execs N]; got {a}"
                    )
                    .into()
                );
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("microvm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let done = tokio::runtime::Runtime::new()?.block_on(async {
        let mut builder = ManagerBuilder::from_ambient();
        builder
            .home(&dir)
            .base_env(vec![("PATH".into(), "/usr/bin:/bin".into())])
            .request(Explicit(backend), Surface::Dispatch)
            .inner_roles_from_current_exe();
        if qemu {
            builder.microvm_runtime_qemu();
        }
        let manager = builder.build()?;
        let spec = SandboxSpec::new("microvm-bench", "bench");
        let t = Instant::now();
        let mut h = manager.launch(spec).await?;
        let launch = ms(t);
        let mut times = Vec::with_capacity(execs);
        for _ in 0..execs {
            let t = Instant::now();
            let status = manager.exec(&h, SandboxCommand::new("/bin/true")).await?.wait().await;
            times.push(ms(t));
            if !status.success() {
                return Err(format!("/bin/true ended {status:?}").into());
            }
        }
        times.sort_by(f64::total_cmp);
        let mut line = format!(
            "backend={} launch={launch:.2} exec_p50={:.2} exec_p99={:.2}",
            backend.as_str(),
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
        // QEMU cannot save a guest with a virtio-fs share attached.
        if backend == SandboxBackend::Microvm && !qemu {
            let t = Instant::now();
            manager.suspend(&mut h).await?;
            let suspend = ms(t);
            let t = Instant::now();
            manager.resume(&mut h).await?;
            let resume = ms(t);
            line.push_str(&format!(" suspend={suspend:.2} resume={resume:.2}"));
        }
        let t = Instant::now();
        manager.destroy(&mut h).await?;
        line.push_str(&format!(" destroy={:.2}", ms(t)));
        println!("{line}");
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    std::fs::remove_dir_all(&dir)?;
    done
}
