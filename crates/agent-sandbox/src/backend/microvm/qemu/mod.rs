//! The `microvm` backend's VM runtime (R-MICROVM-1, R-MICROVM-2): QEMU's
//! `microvm` machine with a kernel installed on the host and an initramfs
//! built from the host's files, whose `/init` is our agent
//! ([`name_guard::VM_AGENT_FLAG`]), speaking [`sandbox_core::vm_wire`] over
//! one virtio-serial port. No network card and no disk: nothing leaves the
//! guest but through the channel.
//!
//! The probe boots a canary guest and waits for its agent's hello; opening
//! `/dev/kvm` proves nothing (a nested paravirtual KVM may boot no stock
//! kernel). KVM is tried first where `/dev/kvm` opens, with a short wait;
//! otherwise, or when its guest does not answer, QEMU's emulation (TCG),
//! which is a kernel boundary but slow and never counts as a hardware VM.
//!
//! What is here: the guest image, the boot, commands run in the guest with
//! their output and exit, and the probe. Not yet: the session's mounts,
//! egress through the proxies, the name guard inside, terminals,
//! suspend and resume; until they are, no session runs on this runtime.

mod cpio;
pub(crate) mod fileserver;
pub(crate) mod initramfs;
pub(crate) mod probe;
pub(crate) mod runtime;
pub(crate) mod session;
pub(crate) mod vm;

use super::agent_link::channel::Relays;
use initramfs::GuestKernel;
use probe::{Canary, Probe, ProbeFacts};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vm::{Accel, Vm, VmConfig, VmError};

/// How long the KVM canary may take before emulation is tried (a working
/// KVM boots a guest in well under a second).
const KVM_CANARY_WAIT: Duration = Duration::from_secs(5);
/// How long an emulated guest may take to answer (about 2 s here).
pub(crate) const TCG_BOOT_WAIT: Duration = Duration::from_secs(60);
/// Memory of a guest, at least.
const GUEST_MIB: u32 = 256;

/// Memory for a guest booting an image of `image_bytes`: the kernel keeps
/// the image while it unpacks it into its root, so a large agent program
/// (a host program built with debug information) needs room for both.
pub(crate) fn guest_mib(image_bytes: u64) -> u32 {
    let image_mib = u32::try_from(image_bytes.div_ceil(1 << 20)).unwrap_or(u32::MAX / 4);
    GUEST_MIB.max(image_mib.saturating_mul(3).saturating_add(256))
}

/// A runtime the probe found working: how to boot it, and the image.
#[derive(Debug)]
pub(crate) struct Probed {
    pub(crate) config: VmConfig,
    /// The canary's image (gone with the probe's directory).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "sessions boot an image of their manager's own")
    )]
    pub(crate) initrd: PathBuf,
    /// The guest kernel's release, from the canary's hello.
    pub(crate) release: String,
}

/// The guest image for `agent` (the launcher program) written into `dir`
/// as `initrd`, with the host's static busybox when it has one.
pub(crate) fn write_initrd(
    kernel: &GuestKernel,
    agent: &Path,
    dir: &Path,
) -> Result<PathBuf, String> {
    let busybox = Path::new("/bin/busybox");
    let image = initramfs::build(kernel, agent, busybox.is_file().then_some(busybox))?;
    let path = dir.join("initrd");
    std::fs::write(&path, image).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// Boots a canary guest with `qemu` (when found) and the newest host
/// kernel, KVM first where `/dev/kvm` opens, else emulation: the first
/// whose agent answers is the runtime. Files go to `dir` (private, the
/// caller's). The conclusion and its line come from [`probe::decide`].
/// Reads the ambient machine.
pub(crate) async fn probe_ambient(
    qemu: Option<&Path>,
    jail: &Path,
    agent: &Path,
    agent_args: &[String],
    dir: &Path,
    emulated_only: bool,
) -> (Probe, Option<Probed>) {
    let kernel = GuestKernel::find_ambient();
    let kvm_opens = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    let mut facts = ProbeFacts {
        qemu: qemu.is_some(),
        kernel: kernel
            .as_ref()
            .map(|k| k.release.clone())
            .map_err(Clone::clone),
        kvm_opens,
        kvm: Canary::NotTried,
        tcg: Canary::NotTried,
    };
    let (Some(qemu), Ok(kernel)) = (qemu, kernel) else {
        return (probe::decide(&facts), None);
    };
    let initrd = match write_initrd(&kernel, agent, dir) {
        Ok(i) => i,
        Err(e) => {
            facts.kernel = Err(format!("the guest image could not be built: {e}"));
            return (probe::decide(&facts), None);
        }
    };
    let tries: &[(Accel, Duration)] = if kvm_opens && !emulated_only {
        &[(Accel::Kvm, KVM_CANARY_WAIT), (Accel::Tcg, TCG_BOOT_WAIT)]
    } else {
        &[(Accel::Tcg, TCG_BOOT_WAIT)]
    };
    for &(accel, wait) in tries {
        let config = VmConfig {
            qemu: qemu.to_path_buf(),
            jail: jail.to_path_buf(),
            kernel: kernel.clone(),
            accel,
            memory_mib: guest_mib(std::fs::metadata(&initrd).map_or(0, |m| m.len())),
            tsc_khz: vm::tsc_khz_ambient(),
            agent_args: agent_args.to_vec(),
        };
        let started = Instant::now();
        let canary = match Vm::boot(&config, &initrd, dir, wait, Relays::new(), None).await {
            Ok(vm) => {
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let release = vm.release.clone();
                vm.power_off(Duration::from_secs(5)).await;
                let probed = Probed {
                    config,
                    initrd: initrd.clone(),
                    release,
                };
                match accel {
                    Accel::Kvm => facts.kvm = Canary::Answered { ms },
                    Accel::Tcg => facts.tcg = Canary::Answered { ms },
                }
                return (probe::decide(&facts), Some(probed));
            }
            Err(VmError(why)) => Canary::Failed { why },
        };
        match accel {
            Accel::Kvm => facts.kvm = canary,
            Accel::Tcg => facts.tcg = canary,
        }
    }
    (probe::decide(&facts), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launcher program cargo built beside this test binary.
    fn launcher() -> Option<PathBuf> {
        let exe = std::env::current_exe().ok()?;
        let p = exe.parent()?.parent()?.join("agent-sandbox-name-guard");
        test_support::require(
            p.is_file(),
            "the launcher program beside the tests",
            "cargo build -p asbx-agent-sandbox --bin agent-sandbox-name-guard (cargo test builds it with the integration tests)",
        )
        .then_some(p)
    }

    /// QEMU, the launcher, bubblewrap, a guest kernel and busybox, or the
    /// test fails with the install line (or, under the documented skip,
    /// `None`).
    fn host_tools() -> Option<(PathBuf, PathBuf, PathBuf)> {
        let install =
            "apt-get install qemu-system-x86 linux-image-cloud-amd64 busybox-static bubblewrap";
        let qemu = test_support::tool("qemu-system-x86_64", install)?;
        let agent = launcher()?;
        let bwrap = test_support::tool("bwrap", install)?;
        test_support::require(
            GuestKernel::find_ambient().is_ok() && Path::new("/bin/busybox").is_file(),
            "a kernel in /boot with its modules, and a static busybox",
            install,
        )
        .then_some((qemu, agent, bwrap))
    }

    fn host_release() -> String {
        rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned()
    }

    #[tokio::test]
    async fn a_guest_boots_and_runs_commands_behind_its_own_kernel() {
        let Some((qemu, agent, bwrap)) = host_tools() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let jail = bwrap;
        let (probe, probed) =
            probe_ambient(Some(&qemu), &jail, &agent, &[], dir.path(), false).await;
        eprintln!("{}", probe.line());
        let probed = probed.unwrap();
        // QEMU ran in its jail: another network namespace, and none of
        // the host's files but what it serves.
        let jailed = |dir: &Path| -> Option<u32> {
            let sock = dir.join("agent.sock").display().to_string();
            std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
                let pid: u32 = e.file_name().to_str()?.parse().ok()?;
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let cmd = String::from_utf8_lossy(&cmd);
                (cmd.starts_with(&*qemu.display().to_string()) && cmd.contains(&sock))
                    .then_some(pid)
            })
        };
        // The guest's kernel is not the host's.
        assert_ne!(probed.release, host_release());
        // A service on the host's loopback: the guest reaches it only
        // through the port the host relays (as a session's proxy).
        let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let service_addr = service.local_addr().unwrap();
        let heard = std::thread::spawn(move || {
            use std::io::{Read as _, Write as _};
            let (mut c, _) = service.accept().unwrap();
            let mut line = [0u8; 5];
            c.read_exact(&mut line).unwrap();
            c.write_all(b"pong\n").unwrap();
            line
        });
        // And one on a Unix socket, as a session's proxies listen.
        let sock = dir.path().join("proxy.sock");
        let unix_service = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let unix_heard = std::thread::spawn(move || {
            use std::io::{Read as _, Write as _};
            let (mut c, _) = unix_service.accept().unwrap();
            c.write_all(b"hello from the proxy\n").unwrap();
            let mut got = Vec::new();
            c.read_to_end(&mut got).unwrap();
            got
        });
        let relays = Relays::from([
            (
                3128,
                crate::backend::microvm::agent_link::channel::RelayTarget::Tcp(service_addr),
            ),
            (
                1080,
                crate::backend::microvm::agent_link::channel::RelayTarget::Unix(sock),
            ),
        ]);
        let mut vm = Vm::boot(
            &probed.config,
            &probed.initrd,
            dir.path(),
            TCG_BOOT_WAIT,
            relays,
            None,
        )
        .await
        .unwrap();
        let env = ["PATH=/bin"];
        let out = vm.run(&["/bin/uname", "-r"], &env, "/").await.unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), probed.release);
        assert_eq!(out.exit_code(), 0);
        // Output, error output and the exit code, each its own.
        let out = vm
            .run(
                &["/bin/sh", "-c", "echo out; echo err >&2; exit 7"],
                &env,
                "/tmp",
            )
            .await
            .unwrap();
        assert_eq!(
            (out.stdout.as_slice(), out.stderr.as_slice()),
            (&b"out\n"[..], &b"err\n"[..])
        );
        assert_eq!(out.exit_code(), 7);
        // Only the guest's processes (those with a command line: the rest
        // are its kernel's threads), no network interface but loopback, no
        // disk: nothing of the host is there.
        let script = "for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' < $p/cmdline 2>/dev/null); \
                      [ -n \"$c\" ] && echo \"process: $c\"; done; ls /sys/class/net; ls /sys/block";
        let out = vm.run(&["/bin/sh", "-c", script], &env, "/").await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let processes: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("process: "))
            .collect();
        assert!(
            processes.len() <= 4 && processes.iter().any(|p| p.contains("--vm-agent")),
            "{text}"
        );
        let rest: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("process: "))
            .collect();
        assert_eq!(rest, ["lo"], "{text}");
        // A terminal in the guest: its own pts and its size; then a resize,
        // and the shell reading what is typed.
        let out = vm
            .run_on_terminal(
                &["/bin/sh", "-c", "stty size; tty"],
                &env,
                (24, 80),
                None,
                b"",
            )
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
        assert_eq!(text, "24 80\n/dev/pts/0\n");
        let out = vm
            .run_on_terminal(
                &["/bin/sh", "-c", "read line; stty size; echo got $line"],
                &env,
                (24, 80),
                Some((30, 100)),
                b"typed\n",
            )
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
        assert!(text.ends_with("30 100\ngot typed\n"), "{text:?}");
        assert_eq!(out.exit_code(), 0);
        let pid = jailed(dir.path()).expect("QEMU's process");
        let ns = |p: &str| std::fs::read_link(format!("{p}/ns/net")).unwrap();
        assert_ne!(ns(&format!("/proc/{pid}")), ns("/proc/self"));
        let root = format!("/proc/{pid}/root");
        assert!(Path::new(&root).join("usr/bin").is_dir());
        for hidden in ["etc/shadow", "home", "root", "var"] {
            assert!(
                !Path::new(&root).join(hidden).exists(),
                "{hidden} is in QEMU's jail"
            );
        }
        // Egress: through the relayed port only. The host's own loopback
        // port is not the guest's, and nothing else routes anywhere.
        let port = service_addr.port();
        let script = format!(
            "(echo ping; sleep 1) | nc 127.0.0.1 3128; \
             if echo x | nc 127.0.0.1 {port} 2>/dev/null; then echo host-loopback-reached; fi; \
             if echo x | nc 10.0.2.2 {port} 2>/dev/null; then echo host-reached; fi; \
             if echo x | nc 169.254.169.254 80 2>/dev/null; then echo metadata-reached; fi; \
             echo done"
        );
        let out = vm
            .run(&["/bin/sh", "-c", &script], &env, "/")
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "pong\ndone\n");
        assert_eq!(&heard.join().unwrap(), b"ping\n");
        let out = vm
            .run(
                &[
                    "/bin/sh",
                    "-c",
                    "(echo via-unix; sleep 1) | nc 127.0.0.1 1080",
                ],
                &env,
                "/",
            )
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "hello from the proxy\n"
        );
        assert_eq!(unix_heard.join().unwrap(), b"via-unix\n");
        // A program that does not exist fails to start, and says why.
        let err = vm.run(&["/nonexistent"], &env, "/").await.unwrap_err();
        assert!(err.0.contains("No such file"), "{err}");
        let started = Instant::now();
        vm.power_off(Duration::from_secs(10)).await;
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_guest_takes_its_root_from_the_host_share_with_its_access() {
        use crate::backend::microvm::layout::{Layout, Mount, MountKind};
        use sandbox_core::Access::{ReadOnly, ReadWrite};
        let Some((qemu, agent, bwrap)) = host_tools() else {
            return;
        };
        let Some(virtiofsd) = fileserver::find_virtiofsd_ambient() else {
            panic!("no virtiofsd: apt-get install qemu-system-common");
        };
        let dir = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("a.txt"), "from the host\n").unwrap();
        std::fs::create_dir(work.path().join("locked")).unwrap();
        let jail = bwrap.clone();
        let (probe, probed) =
            probe_ambient(Some(&qemu), &jail, &agent, &[], dir.path(), false).await;
        let probed = probed.unwrap_or_else(|| panic!("{}", probe.line()));
        let m = |d: &str, kind, access| Mount {
            destination: d.into(),
            kind,
            access,
        };
        let w = work.path().display().to_string();
        let mut layout = Layout {
            mounts: vec![
                m("/usr", MountKind::Bind("/usr".into()), ReadOnly),
                m("/w", MountKind::Bind(w.clone()), ReadWrite),
                m(
                    "/w/locked",
                    MountKind::Bind(format!("{w}/locked")),
                    ReadOnly,
                ),
                m("/tmp", MountKind::Tmpfs, ReadWrite),
                m("/proc", MountKind::Proc, ReadWrite),
                m("/dev", MountKind::Dev, ReadWrite),
            ],
            ..Layout::default()
        };
        for top in ["/bin", "/lib", "/lib64", "/sbin"] {
            if let Ok(to) = std::fs::read_link(top) {
                layout
                    .root_symlinks
                    .push((to.display().to_string(), top.into()));
            }
        }
        let rootless = !rustix::process::geteuid().is_root();
        let fs = fileserver::FileServer::start(
            &bwrap,
            |fd| {
                fileserver::virtiofsd_args(&virtiofsd, fd)
                    .into_iter()
                    .map(Into::into)
                    .collect()
            },
            &layout,
            dir.path(),
            rootless,
            None,
        )
        .unwrap();
        let mut vm = Vm::boot(
            &probed.config,
            &probed.initrd,
            dir.path(),
            TCG_BOOT_WAIT,
            Relays::new(),
            Some(&fs.socket),
        )
        .await
        .unwrap();
        let env = ["PATH=/usr/bin:/bin"];
        let script = "cat /w/a.txt; echo made > /w/new.txt && echo wrote-w; \
                      if echo x > /usr/evil 2>/dev/null; then echo wrote-usr; fi; \
                      if echo x > /w/locked/evil 2>/dev/null; then echo wrote-locked; fi; \
                      ls /; git --version | cut -d' ' -f1-2; uname -r";
        let out = vm
            .run(&["/bin/sh", "-c", script], &env, "/w")
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.starts_with("from the host\nwrote-w\n"), "{text}");
        assert!(
            !text.contains("wrote-usr") && !text.contains("wrote-locked"),
            "{text}"
        );
        let top: Vec<&str> = text
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with("git"))
            .collect();
        assert_eq!(
            top,
            [
                "bin", "dev", "lib", "lib64", "proc", "sbin", "tmp", "usr", "w"
            ],
            "{text}"
        );
        assert!(text.contains("git version"), "{text}");
        assert!(text.trim_end().ends_with(&probed.release), "{text}");
        assert_eq!(
            std::fs::read_to_string(work.path().join("new.txt")).unwrap(),
            "made\n"
        );
        assert!(!Path::new("/usr/evil").exists());
        // The file server serves with no capability but those that make
        // files as their owners, an empty bounding set, no new privileges
        // and its own seccomp filter.
        let jail = fs.pid().expect("the file server's jail");
        let parent_of = |pid: &str| -> Option<u32> {
            let st = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            st.lines()
                .find_map(|l| l.strip_prefix("PPid:"))?
                .trim()
                .parse()
                .ok()
        };
        let status = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .find_map(|e| {
                let name = e.file_name().to_str()?.to_owned();
                let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
                let cmd = String::from_utf8_lossy(&cmd);
                // The jail's own virtiofsd: below the jail's bubblewrap.
                let mut p = name.clone();
                let mut below = false;
                for _ in 0..8 {
                    match parent_of(&p) {
                        Some(pp) if pp == jail => {
                            below = true;
                            break;
                        }
                        Some(pp) if pp > 1 => p = pp.to_string(),
                        _ => break,
                    }
                }
                (cmd.starts_with(&*virtiofsd.display().to_string()) && below)
                    .then(|| std::fs::read_to_string(e.path().join("status")).ok())?
            })
            .expect("the file server's process");
        for line in [
            "CapEff:\t00000000000000d9",
            "CapBnd:\t0000000000000000",
            "NoNewPrivs:\t1",
            "Seccomp:\t2",
        ] {
            assert!(status.contains(line), "{line} in {status}");
        }
        vm.power_off(Duration::from_secs(10)).await;
        fs.stop().await;
    }
}
