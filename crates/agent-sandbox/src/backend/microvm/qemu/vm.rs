//! One guest: QEMU's `microvm` machine booting a host kernel with our
//! initramfs, no network card, no disk, one virtio-serial port on a Unix
//! socket in the guest's own directory (the agent's channel), the console
//! into a file there, and QEMU's own seccomp sandbox on.

use super::initramfs::GuestKernel;
use crate::backend::microvm::agent_link::channel::{Channel, Relays, next_message};
pub(crate) use crate::backend::microvm::agent_link::error::VmError;
use sandbox_core::vm_wire::{FrameReader, FromGuest, MAX_FROM_GUEST_LEN, ToGuest};
#[cfg(test)]
use sandbox_core::vm_wire::{VmExec, VmStdio};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// How the guest's CPU runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Accel {
    /// Hardware virtualization (`/dev/kvm`).
    Kvm,
    /// QEMU's emulation (TCG): a kernel boundary, slow.
    Tcg,
}

impl Accel {
    /// The runtime's label (R-MICROVM-1): what isolation this is.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Accel::Kvm => "QEMU microvm on KVM (hardware VM)",
            Accel::Tcg => "QEMU microvm, emulated (TCG): kernel boundary, slow",
        }
    }
}

/// What booting a guest needs.
#[derive(Clone, Debug)]
pub(crate) struct VmConfig {
    pub(crate) qemu: PathBuf,
    /// The `bwrap` of QEMU's jail, besides its own seccomp sandbox: a
    /// bubblewrap sandbox of its own with no network, no other process,
    /// the system's `/usr` read-only, and of the rest only the kernel and
    /// image it boots (read-only) and the guest's own directory;
    /// `/dev/kvm` only for a KVM guest.
    pub(crate) jail: PathBuf,
    pub(crate) kernel: GuestKernel,
    pub(crate) accel: Accel,
    pub(crate) memory_mib: u32,
    /// The host's TSC frequency in kHz, given to the guest kernel (under
    /// emulation about half the boots hang calibrating it otherwise).
    pub(crate) tsc_khz: Option<u64>,
    /// The agent program's leading arguments (a multi-call launcher's
    /// marker), before [`name_guard::VM_AGENT_FLAG`] on its command line.
    pub(crate) agent_args: Vec<String>,
}

/// The host's TSC frequency in kHz, from the first `cpu MHz` of
/// `/proc/cpuinfo`. Reads the ambient machine.
pub(crate) fn tsc_khz_ambient() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = text
        .lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    (mhz.is_finite() && mhz > 0.0).then(|| (mhz * 1000.0).round() as u64)
}

/// A running guest whose agent said hello.
pub(crate) struct Vm {
    qemu: tokio::process::Child,
    channel: std::sync::Arc<Channel>,
    dir: PathBuf,
    /// The guest kernel's release, from the agent's hello.
    pub(crate) release: String,
    /// The next command's id for [`Vm::run`].
    #[cfg(test)]
    next_id: u64,
}

/// What one command did.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct VmOutput {
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    pub(crate) wait_status: i32,
}

#[cfg(test)]
impl VmOutput {
    /// The exit code, or 128 plus the signal that ended it.
    pub(crate) fn exit_code(&self) -> i32 {
        let st = self.wait_status;
        if st & 0x7f == 0 {
            (st >> 8) & 0xff
        } else {
            128 + (st & 0x7f)
        }
    }
}

impl VmConfig {
    /// The program and arguments that start QEMU for a guest whose files
    /// are in `dir`, in its jail; `share`: the file server's socket (in
    /// `dir`) whose share the guest takes as its root.
    pub(crate) fn command(
        &self,
        initrd: &Path,
        dir: &Path,
        share: Option<&Path>,
    ) -> (PathBuf, Vec<String>) {
        let qemu_args = self.args(initrd, dir, share);
        let mut a: Vec<String> = [
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        .map(String::from)
        .to_vec();
        // The top-level links a merged /usr has, or the directories a split
        // one has.
        for top in ["/bin", "/sbin", "/lib", "/lib32", "/lib64"] {
            match std::fs::read_link(top) {
                Ok(to) => a.extend(["--symlink".into(), to.display().to_string(), top.into()]),
                Err(_) => a.extend(["--ro-bind-try".into(), top.into(), top.into()]),
            }
        }
        a.extend(
            [
                "--ro-bind-try",
                "/etc/ld.so.cache",
                "/etc/ld.so.cache",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--tmpfs",
                "/tmp",
            ]
            .map(String::from),
        );
        if self.accel == Accel::Kvm {
            a.extend(["--dev-bind".into(), "/dev/kvm".into(), "/dev/kvm".into()]);
        }
        for ro in [&self.kernel.image, &initrd.to_path_buf(), &self.qemu] {
            let p = ro.display().to_string();
            a.extend(["--ro-bind".into(), p.clone(), p]);
        }
        let d = dir.display().to_string();
        a.extend(["--bind".into(), d.clone(), d, "--".into()]);
        a.push(self.qemu.display().to_string());
        a.extend(qemu_args);
        (self.jail.clone(), a)
    }

    /// QEMU's arguments for a guest whose files are in `dir` (and whose
    /// root is served on `share`).
    pub(crate) fn args(&self, initrd: &Path, dir: &Path, share: Option<&Path>) -> Vec<String> {
        let mut append = String::from("console=ttyS0 quiet panic=-1");
        if let (Accel::Tcg, Some(khz)) = (self.accel, self.tsc_khz) {
            append.push_str(&format!(" tsc_early_khz={khz}"));
        }
        append.push_str(" --");
        for a in &self.agent_args {
            append.push(' ');
            append.push_str(a);
        }
        append.push(' ');
        append.push_str(name_guard_flag());
        let mut machine = String::from("microvm,x-option-roms=off");
        if share.is_some() {
            // The file server maps the guest's memory: it must be shared.
            append.push(' ');
            append.push_str(name_guard::VM_AGENT_ROOT_FLAG);
            machine.push_str(",memory-backend=mem");
        }
        let mut a: Vec<String> = vec![
            "-M".into(),
            machine,
            "-accel".into(),
            match self.accel {
                Accel::Kvm => "kvm",
                Accel::Tcg => "tcg",
            }
            .into(),
        ];
        if self.accel == Accel::Kvm {
            a.extend(["-cpu".into(), "host".into()]);
        }
        a.extend([
            "-m".into(),
            self.memory_mib.to_string(),
            "-smp".into(),
            "1".into(),
            "-nodefaults".into(),
            "-no-user-config".into(),
            "-display".into(),
            "none".into(),
            "-no-reboot".into(),
            "-sandbox".into(),
            "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny".into(),
            "-kernel".into(),
            self.kernel.image.display().to_string(),
            "-initrd".into(),
            initrd.display().to_string(),
            "-append".into(),
            append,
            "-serial".into(),
            format!("file:{}", dir.join("console.log").display()),
            "-chardev".into(),
            format!(
                "socket,id=agent,path={},server=on,wait=off",
                dir.join("agent.sock").display()
            ),
            "-device".into(),
            "virtio-serial-device".into(),
            "-device".into(),
            format!("virtserialport,chardev=agent,name={}", agent_port_name()),
        ]);
        if let Some(socket) = share {
            a.extend([
                "-object".into(),
                format!(
                    "memory-backend-memfd,id=mem,size={}M,share=on",
                    self.memory_mib
                ),
                // vhost-user devices need the modern virtio-mmio transport.
                "-global".into(),
                "virtio-mmio.force-legacy=false".into(),
                "-chardev".into(),
                format!("socket,id=fs,path={}", socket.display()),
                "-device".into(),
                format!(
                    "vhost-user-fs-device,chardev=fs,tag={}",
                    super::fileserver::ROOT_TAG
                ),
            ]);
        }
        a
    }
}

fn name_guard_flag() -> &'static str {
    name_guard::VM_AGENT_FLAG
}

fn agent_port_name() -> &'static str {
    name_guard::VM_AGENT_PORT_NAME
}

/// Ends QEMU and says what it and the guest's console said last.
async fn ended_saying(qemu: &mut tokio::process::Child, dir: &Path) -> String {
    let _ = qemu.start_kill();
    let status = qemu.wait().await.map(|s| s.to_string()).unwrap_or_default();
    let mut said = Vec::new();
    if let Some(err) = qemu.stderr.take() {
        let _ = err.take(600).read_to_end(&mut said).await;
    }
    let said = String::from_utf8_lossy(&said);
    let said = said.trim();
    let mut out = format!("; QEMU {status}");
    if !said.is_empty() {
        out.push_str(&format!(": {}", said.replace('\n', " | ")));
    }
    let console = console_tail(dir);
    if !console.is_empty() {
        out.push_str(&format!("; console: {console}"));
    }
    out
}

/// The last lines of the guest's console that say something, for an
/// error: a panic's stack frames and registers are left out.
fn console_tail(dir: &Path) -> String {
    let text = std::fs::read(dir.join("console.log")).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| {
            let msg = l.split_once("] ").map_or(*l, |(_, m)| m);
            !(msg.starts_with(' ')
                || msg.starts_with('?')
                || msg.contains("+0x")
                || msg.contains("TASK>")
                || msg.starts_with("Call Trace")
                || msg.starts_with("CPU: ")
                || msg.starts_with("Hardware name")
                || msg
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| w.len() <= 4 && w.ends_with(':') && w.starts_with('R')))
        })
        .collect();
    said[said.len().saturating_sub(6)..].join(" | ")
}

impl Vm {
    /// Boots a guest from `initrd` with its files in `dir` (made by the
    /// caller, private), waits up to `wait` for its agent's hello, and has
    /// it listen on each port of `relays` (whose streams the host carries
    /// to the port's target). With `share` (a file server's socket in
    /// `dir`), the guest's root is that share.
    pub(crate) async fn boot(
        cfg: &VmConfig,
        initrd: &Path,
        dir: &Path,
        wait: Duration,
        relays: Relays,
        share: Option<&Path>,
    ) -> Result<Vm, VmError> {
        let (program, args) = cfg.command(initrd, dir, share);
        let mut qemu = tokio::process::Command::new(&program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| VmError(format!("starting {}: {e}", program.display())))?;
        let sock = dir.join("agent.sock");
        let started = tokio::time::Instant::now();
        let booted = tokio::time::timeout(wait, async {
            // QEMU makes the socket once it runs.
            let mut stream = loop {
                if let Ok(s) = tokio::net::UnixStream::connect(&sock).await {
                    break s;
                }
                if let Ok(Some(st)) = qemu.try_wait() {
                    return Err(format!("QEMU ended at once ({st})"));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            let mut frames = FrameReader::new(MAX_FROM_GUEST_LEN);
            match next_message(&mut stream, &mut frames).await? {
                FromGuest::Hello { version, kernel }
                    if version == sandbox_core::vm_wire::VERSION =>
                {
                    Ok((
                        stream,
                        frames,
                        String::from_utf8_lossy(&kernel).into_owned(),
                    ))
                }
                other => Err(format!(
                    "the agent's first message was not its hello: {other:?}"
                )),
            }
        })
        .await;
        match booted {
            Ok(Ok((stream, frames, release))) => {
                let ports: Vec<u16> = relays.keys().copied().collect();
                let channel = std::sync::Arc::new(Channel::start(stream, frames, relays));
                for port in ports {
                    channel.send(&ToGuest::Listen { port })?;
                }
                Ok(Vm {
                    qemu,
                    channel,
                    dir: dir.to_path_buf(),
                    release,
                    #[cfg(test)]
                    next_id: 1,
                })
            }
            Ok(Err(e)) => Err(VmError(format!(
                "{e}{}",
                ended_saying(&mut qemu, dir).await
            ))),
            Err(_) => Err(VmError(format!(
                "the guest's agent did not answer within {:.1} s{}",
                started.elapsed().as_secs_f64(),
                ended_saying(&mut qemu, dir).await
            ))),
        }
    }

    /// The guest's channel, for commands run beside each other.
    pub(crate) fn channel(&self) -> std::sync::Arc<Channel> {
        self.channel.clone()
    }

    /// A pidfd of QEMU's process (or its jail's, which QEMU dies with).
    pub(crate) fn pidfd(&self) -> Option<rustix::fd::OwnedFd> {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.qemu.id()?).ok()?)?;
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    }

    #[cfg(test)]
    /// Runs `argv` in the guest with `env` in `cwd`, no input, and
    /// returns what it wrote and how it ended (one command at a time).
    pub(crate) async fn run(
        &mut self,
        argv: &[&str],
        env: &[&str],
        cwd: &str,
    ) -> Result<VmOutput, VmError> {
        self.run_with(argv, env, cwd, VmStdio::Pipes, None, &[])
            .await
    }

    #[cfg(test)]
    /// [`Vm::run`] on a terminal of `size` (rows, columns), resized to
    /// `resize` when given, then typed `input`.
    pub(crate) async fn run_on_terminal(
        &mut self,
        argv: &[&str],
        env: &[&str],
        size: (u16, u16),
        resize: Option<(u16, u16)>,
        input: &[u8],
    ) -> Result<VmOutput, VmError> {
        let stdio = VmStdio::Terminal {
            rows: size.0,
            cols: size.1,
        };
        self.run_with(argv, env, "/", stdio, resize, input).await
    }

    #[cfg(test)]
    async fn run_with(
        &mut self,
        argv: &[&str],
        env: &[&str],
        cwd: &str,
        stdio: VmStdio,
        resize: Option<(u16, u16)>,
        input: &[u8],
    ) -> Result<VmOutput, VmError> {
        let id = self.next_id;
        self.next_id += 1;
        let exec = ToGuest::Exec(VmExec {
            id,
            argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env: env.iter().map(|a| a.as_bytes().to_vec()).collect(),
            cwd: cwd.as_bytes().to_vec(),
            stdio,
            limits: sandbox_core::vm_wire::VmLimits::default(),
        });
        exec.check()
            .map_err(|e| VmError(format!("a command the agent would refuse: {e}")))?;
        let mut msgs = vec![exec];
        if let Some((rows, cols)) = resize {
            msgs.push(ToGuest::Resize { id, rows, cols });
        }
        for chunk in input.chunks(sandbox_core::vm_wire::MAX_DATA) {
            msgs.push(ToGuest::Stdin {
                id,
                data: chunk.to_vec(),
            });
        }
        if stdio == VmStdio::Pipes {
            // Its input ends.
            msgs.push(ToGuest::Stdin {
                id,
                data: Vec::new(),
            });
        }
        let mut replies = self.channel.command(id);
        for m in &msgs {
            self.channel.send(m)?;
        }
        let mut out = VmOutput::default();
        loop {
            match replies.recv().await {
                Some(FromGuest::Stdout { data, .. }) => out.stdout.extend(data),
                Some(FromGuest::Stderr { data, .. }) => out.stderr.extend(data),
                Some(FromGuest::Failed { errno, .. }) => {
                    return Err(VmError(format!(
                        "{:?} could not start in the guest: {}",
                        argv.first(),
                        std::io::Error::from_raw_os_error(errno)
                    )));
                }
                Some(FromGuest::Ended { wait_status, .. }) => {
                    out.wait_status = wait_status;
                    return Ok(out);
                }
                Some(_) => {}
                None => return Err(VmError("the guest's channel closed".into())),
            }
        }
    }

    /// Asks the guest to power off and waits for QEMU's end (killing it
    /// after `wait`); its directory stays for the caller to remove.
    pub(crate) async fn power_off(mut self, wait: Duration) {
        let _ = self.channel.send(&ToGuest::PowerOff);
        if tokio::time::timeout(wait, self.qemu.wait()).await.is_err() {
            let _ = self.qemu.start_kill();
            let _ = self.qemu.wait().await;
        }
        let _ = std::fs::remove_file(self.dir.join("agent.sock"));
    }
}

/// The next whole message from the guest.
#[cfg(test)]
mod tests {
    use super::*;

    fn config(accel: Accel) -> VmConfig {
        VmConfig {
            qemu: "/usr/bin/qemu-system-x86_64".into(),
            jail: "/usr/bin/bwrap".into(),
            kernel: GuestKernel {
                image: "/boot/vmlinuz-6.1.0-57-cloud-amd64".into(),
                release: "6.1.0-57-cloud-amd64".into(),
                modules: "/lib/modules/6.1.0-57-cloud-amd64".into(),
            },
            accel,
            memory_mib: 256,
            tsc_khz: Some(2_596_134),
            agent_args: Vec::new(),
        }
    }

    fn has(args: &[String], seq: &[&str]) -> bool {
        args.windows(seq.len())
            .any(|w| w.iter().zip(seq).all(|(a, b)| a == b))
    }

    #[test]
    fn qemu_runs_in_a_bubblewrap_jail_that_sees_only_what_it_serves() {
        let (initrd, dir) = (Path::new("/s/initrd"), Path::new("/s"));
        let (p, a) = config(Accel::Tcg).command(initrd, dir, None);
        assert_eq!(p, Path::new("/usr/bin/bwrap"));
        for seq in [
            &["--unshare-all"][..],
            &["--die-with-parent"],
            &["--cap-drop", "ALL"],
            &["--ro-bind", "/usr", "/usr"],
            &[
                "--ro-bind",
                "/boot/vmlinuz-6.1.0-57-cloud-amd64",
                "/boot/vmlinuz-6.1.0-57-cloud-amd64",
            ],
            &["--ro-bind", "/s/initrd", "/s/initrd"],
            &["--bind", "/s", "/s", "--", "/usr/bin/qemu-system-x86_64"],
            &[
                "-sandbox",
                "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
            ],
        ] {
            assert!(has(&a, seq), "{seq:?} in {a:?}");
        }
        // Emulation needs no /dev/kvm; a KVM guest gets it.
        assert!(!a.iter().any(|x| x == "/dev/kvm"));
        assert!(a.iter().any(|x| x.contains("tsc_early_khz=2596134")));
        let (_, a) = config(Accel::Kvm).command(initrd, dir, None);
        assert!(has(&a, &["--dev-bind", "/dev/kvm", "/dev/kvm"]));
        assert!(!a.iter().any(|x| x.contains("tsc_early_khz")));
    }
}
