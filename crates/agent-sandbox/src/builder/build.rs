//! [`ManagerBuilder::build`]: the backend selected from the probe and the
//! settings, the launcher found, the manager made.

use super::*;

impl ManagerBuilder {
    /// Selects the backend and builds the manager. Logs the probe's start-up
    /// line and any downgrade.
    #[tracing::instrument(name = "agent_sandbox.build", skip_all, err(Display))]
    pub fn build(&mut self) -> Result<SandboxManager, Error> {
        let asked = self.asked_mechanism()?;
        let probe = asked.as_ref().unwrap_or(&self.probe);
        let log = crate::settings::traced(self.log.clone().unwrap_or_else(log_to_stderr));
        let name_guard = self.launcher()?;
        // The VM runtime, when asked for: its probe boots a canary, and its
        // verdict is the report's microvm section.
        #[cfg(target_os = "linux")]
        let qemu = self.probe_qemu(name_guard.as_ref())?;
        // The VM runtime's probe line: what it booted, on what, and why not
        // on KVM (R-MICROVM-1).
        #[cfg(target_os = "linux")]
        if let Some(line) = qemu
            .as_ref()
            .and_then(|q| q.microvm.note.clone().or_else(|| q.microvm.reason.clone()))
        {
            log(&line);
        }
        #[cfg(target_os = "linux")]
        let with_qemu = qemu.as_ref().map(|q| {
            let mut p = probe.clone();
            p.microvm = q.microvm.clone();
            p
        });
        #[cfg(target_os = "linux")]
        let probe = with_qemu.as_ref().unwrap_or(probe);
        let native_line = probe.startup_line(self.switch);
        let selection = match select_backend(self.request, self.switch, self.surface, probe) {
            Ok(s) => s,
            Err(e) => {
                log(&native_line);
                return Err(e.into());
            }
        };
        // The one start-up line names the session's backend: a microvm
        // manager's is its runtime's label, and the native probe's line
        // follows as what it is, never as the session's.
        let startup = match selection.backend {
            sandbox_core::SandboxBackend::Microvm if self.switch == SandboxSwitch::On => {
                format!("{}: {}", sandbox_core::probe::LINE_ON, selection.label)
            }
            _ => native_line.clone(),
        };
        log(&startup);
        if startup != native_line {
            log(&format!(
                "native mechanism probed (not this manager's sessions): {}",
                native_line
                    .strip_prefix(sandbox_core::probe::LINE_ON)
                    .map(|l| l.trim_start_matches(": "))
                    .unwrap_or(&native_line)
            ));
        }
        if let Some(dir) = &self.temp_dir {
            let removed = crate::session_dir::remove_left_behind_in(dir);
            if !removed.is_empty() {
                let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
                log(&format!(
                    "removed {} session directories left by host processes that are gone: {}",
                    removed.len(),
                    names.join(" ")
                ));
            }
        }
        if let Some(line) = decide::selection_line(&startup, self.surface, &selection) {
            log(&line);
        }
        let home = self.home.clone().ok_or_else(|| {
            Error::from(ErrorKind::MissingSetting {
                setting: "home",
                why: "every backend anchors the secret set and the write denies at the run's \
                      home directory; set it with ManagerBuilder::home (from_ambient does not \
                      read HOME)",
            })
        })?;
        self.check_microvm(&selection, probe)?;
        let choice = decide::backend_choice(&selection, probe, cfg!(target_os = "linux"))?;
        if self.broker.is_some() && matches!(choice, BackendChoice::None) {
            return Err(ErrorKind::BrokerNeedsSandbox {
                backend: selection.backend,
                why: selection
                    .log_line
                    .clone()
                    .unwrap_or_else(|| selection.label.to_owned()),
            }
            .into());
        }
        let decision = decide::filename_rules(
            self.filename_rules,
            matches!(
                choice,
                BackendChoice::Bubblewrap { .. } | BackendChoice::Landlock
            ),
            name_guard.is_some(),
            &probe.native.filename_rules,
        )?;
        if let Some(line) = &decision.log_line {
            log(line);
        }
        let temp_dir = || {
            self.temp_dir.clone().ok_or_else(|| {
                Error::from(ErrorKind::MissingSetting {
                    setting: "temp_dir",
                    why: "a native session needs a directory for its sockets and CA bundle",
                })
            })
        };
        let (unix_sockets, warnings) = crate::unix_sockets::check(&self.unix_sockets, &*self.host)?;
        for w in &warnings {
            log(&format!("agent-sandbox: {w}"));
        }
        let backend = match choice {
            BackendChoice::None => Backend::None,
            BackendChoice::Unavailable(reason) => Backend::Unavailable(reason),
            #[cfg(target_os = "linux")]
            BackendChoice::Gvisor { runsc, version } => {
                let Some(agent) = name_guard.clone() else {
                    return Err(ErrorKind::MicrovmRuntimeUnavailable {
                        runtime: "gvisor",
                        reason: "the sandbox's agent is the name-guard launcher: call \
                                 ManagerBuilder::inner_roles_from_current_exe (and \
                                 agent_sandbox::run_inner_role_if_launched first in main) or \
                                 ManagerBuilder::name_guard_launcher"
                            .into(),
                    }
                    .into());
                };
                let filename_rules = match self.filename_rules {
                    Some(FilenameRules::DropFilenameGlobDenies) => {
                        log(
                            "filename-glob write denies (.env, *.key, *.pem) are DROPPED under gVisor (opt-out --no-filename-rules): nothing inside it can refuse new names",
                        );
                        FilenameRules::DropFilenameGlobDenies
                    }
                    Some(FilenameRules::EnforcedByNameGuard) => {
                        return Err(ErrorKind::NameGuardUnavailable {
                            reason: "the name guard's seccomp filter cannot be installed inside this gVisor release".into(),
                        }
                        .into());
                    }
                    _ => FilenameRules::Refuse,
                };
                Backend::Microvm(Arc::new(crate::backend::microvm::Runtime::Gvisor(
                    crate::backend::microvm::gvisor::Config {
                        runsc,
                        version,
                        agent,
                        temp_dir: temp_dir()?,
                        filename_rules,
                    },
                )))
            }
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Gvisor { .. } => {
                Backend::Unavailable("gVisor runs only on Linux".to_owned())
            }
            #[cfg(target_os = "linux")]
            BackendChoice::Qemu => {
                // The guest's agent is the launcher, so the guard is always
                // there to run around the guest's file server.
                let filename_rules = match self.filename_rules {
                    Some(FilenameRules::DropFilenameGlobDenies) => {
                        log(
                            "filename-glob write denies (.env, *.key, *.pem) are DROPPED for the QEMU guest (opt-out --no-filename-rules)",
                        );
                        FilenameRules::DropFilenameGlobDenies
                    }
                    Some(FilenameRules::Refuse) => FilenameRules::Refuse,
                    _ => {
                        log(
                            "filename-glob write denies (.env, *.key, *.pem) enforced at creation by name-guard around the guest's file server, on the host",
                        );
                        FilenameRules::EnforcedByNameGuard
                    }
                };
                let config = match &qemu {
                    Some(q) => q.config(temp_dir()?, filename_rules),
                    None => Err("the VM runtime was not probed".to_owned()),
                }
                .map_err(|reason| ErrorKind::MicrovmRuntimeUnavailable {
                    runtime: "qemu",
                    reason,
                })?;
                Backend::Microvm(Arc::new(crate::backend::microvm::Runtime::Qemu(Box::new(
                    config,
                ))))
            }
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Qemu => Backend::Unavailable("QEMU guests run only on Linux".to_owned()),
            BackendChoice::Seatbelt => Backend::Seatbelt(seatbelt::Config {
                temp_dir: temp_dir()?,
                log_program: self.seatbelt_log_program.clone(),
            }),
            #[cfg(target_os = "linux")]
            BackendChoice::Bubblewrap { bwrap, socat } => {
                // Asked for explicitly, the bridges are not a fallback:
                // without socat they cannot be honoured.
                if self.inner_bridge == crate::InnerBridge::Socat && socat.is_none() {
                    return Err(bubblewrap::socat_missing());
                }
                Backend::Bubblewrap(Arc::new(bubblewrap::Config {
                    bwrap,
                    socat,
                    temp_dir: temp_dir()?,
                    filename_rules: decision.rules,
                    // Only where it can run: a launcher the kernel cannot
                    // run would fail every launch.
                    name_guard: name_guard.clone().filter(|_| decision.guard_runs),
                    launcher_set: match name_guard {
                        Some(_) => bubblewrap::LauncherSet::Yes,
                        None => bubblewrap::LauncherSet::No,
                    },
                    inner_bridge: self.inner_bridge,
                }))
            }
            #[cfg(target_os = "linux")]
            BackendChoice::Landlock => {
                let Some(launcher) = name_guard.clone().filter(|_| decision.guard_runs) else {
                    return Err(ErrorKind::MechanismUnavailable {
                        mechanism: NativeMechanism::Landlock.as_str(),
                        reason: "it runs every command under the name guard: call \
                                 ManagerBuilder::inner_roles_from_current_exe (and \
                                 agent_sandbox::run_inner_role_if_launched first in main) or \
                                 ManagerBuilder::name_guard_launcher, on a kernel that runs it"
                            .into(),
                    }
                    .into());
                };
                Backend::Landlock(crate::backend::landlock::Config {
                    temp_dir: temp_dir()?,
                    filename_rules: decision.rules,
                    launcher,
                })
            }
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Landlock => {
                Backend::Unavailable("Landlock runs only on Linux".to_owned())
            }
            // `backend_choice` picks bubblewrap only on Linux.
            #[cfg(not(target_os = "linux"))]
            BackendChoice::Bubblewrap { .. } => {
                Backend::Unavailable("bubblewrap runs only on Linux".to_owned())
            }
        };
        let settings = Settings {
            surface: self.surface,
            isolation: self.isolation,
            home,
            base_env: self.base_env.clone(),
            host: self.host.clone(),
            log,
            audit: self.audit.clone(),
            egress: EgressSettings {
                ip_policy: self.ip_policy.clone(),
                extra_allow: self.extra_allow.clone(),
                deny: self.deny.clone(),
                baseline: self.baseline,
                resolver: self.resolver.clone(),
                broker: self.broker.clone(),
                audit: self
                    .audit
                    .clone()
                    .map(|sink| (sink, selection.label.to_owned())),
            },
            cgroups: self.cgroups.clone(),
            unix_sockets,
            reads: self.reads.clone(),
            startup_line: startup,
            temp_dir: self.temp_dir.clone(),
            tool_dirs: self.tool_dirs.clone(),
            #[cfg(target_os = "linux")]
            repo_records: crate::repo_records::RepoRecords::default(),
        };
        Ok(SandboxManager::new(selection, settings, backend))
    }

    /// The launcher asked for, with the current executable found.
    fn launcher(&self) -> Result<Option<NameGuardLauncher>, Error> {
        Ok(match &self.name_guard {
            None => None,
            Some(LauncherSource::Given(l)) => Some(l.clone()),
            Some(LauncherSource::CurrentExe) => {
                let exe = std::env::current_exe().map_err(|e| {
                    Error::io(
                        "finding this program for ManagerBuilder::inner_roles_from_current_exe",
                        e,
                    )
                })?;
                Some(NameGuardLauncher::multi_call(
                    exe,
                    [crate::NAME_GUARD_MARKER],
                ))
            }
        })
    }

    /// The VM runtime's probe (cached per process and launcher) when a QEMU
    /// runtime was asked for; `None` otherwise. Needs the launcher (the
    /// guest's agent) and a temp dir (the canary's files). Reads the
    /// ambient machine.
    #[cfg(target_os = "linux")]
    fn probe_qemu(
        &self,
        launcher: Option<&NameGuardLauncher>,
    ) -> Result<Option<crate::backend::microvm::qemu::runtime::Probing>, Error> {
        if !self.microvm_runtime.is_some_and(RuntimeAsk::is_qemu) {
            return Ok(None);
        }
        let Some(launcher) = launcher else {
            return Err(ErrorKind::MicrovmRuntimeUnavailable {
                runtime: "qemu",
                reason: "the guest's agent is the name-guard launcher: call \
                         ManagerBuilder::inner_roles_from_current_exe or \
                         ManagerBuilder::name_guard_launcher"
                    .into(),
            }
            .into());
        };
        let Some(temp_dir) = &self.temp_dir else {
            return Err(ErrorKind::MissingSetting {
                setting: "temp_dir",
                why: "the VM runtime's probe writes its guest image and canary there",
            }
            .into());
        };
        Ok(Some(
            crate::backend::microvm::qemu::runtime::probe_cached_ambient(
                launcher,
                temp_dir,
                self.microvm_runtime == Some(RuntimeAsk::Kind(MicrovmRuntimeKind::QemuTcg)),
            ),
        ))
    }

    /// Refuses a selection the microvm settings do not allow: a hardware VM
    /// required where the runtime is not one (or the backend is not
    /// `microvm`), a runtime asked for by kind that the probe did not find.
    fn check_microvm(
        &self,
        selection: &sandbox_core::Selection,
        probe: &ProbeReport,
    ) -> Result<(), Error> {
        let microvm = selection.backend == sandbox_core::SandboxBackend::Microvm;
        if self.hardware_vm == VmRequirement::HardwareVm
            && !(microvm && probe.microvm.is_hardware_vm())
        {
            let found = match (&probe.microvm.note, &probe.microvm.reason) {
                _ if !microvm => format!("not used: the backend is {}", selection.backend),
                (Some(note), _) => note.clone(),
                (None, Some(reason)) => reason.clone(),
                (None, None) => "unknown".to_owned(),
            };
            return Err(ErrorKind::HardwareVmRequired { found }.into());
        }
        if let Some(ask) = self.microvm_runtime
            && (!microvm || !ask.allows(probe.microvm.kind) || !probe.microvm.available)
        {
            let reason = match (&probe.microvm.note, &probe.microvm.reason) {
                _ if !microvm => format!("the backend is {}, not microvm", selection.backend),
                (Some(note), _) => format!("the probe found {note}"),
                (None, Some(reason)) => reason.clone(),
                (None, None) => "the probe found no microvm runtime".to_owned(),
            };
            return Err(ErrorKind::MicrovmRuntimeUnavailable {
                runtime: ask.name(),
                reason,
            }
            .into());
        }
        Ok(())
    }

    /// The probe as an explicit mechanism request makes it: `None` when
    /// nothing was asked or the probe already chose it; the probe with
    /// Landlock offered when Landlock was asked for and can run; an error
    /// when the mechanism asked for cannot run.
    fn asked_mechanism(&self) -> Result<Option<ProbeReport>, Error> {
        let Some(asked) = self.mechanism else {
            return Ok(None);
        };
        if self.probe.native.mechanism == Some(asked) {
            return Ok(None);
        }
        let unavailable = |reason: String| -> Error {
            ErrorKind::MechanismUnavailable {
                mechanism: asked.as_str(),
                reason,
            }
            .into()
        };
        if asked != NativeMechanism::Landlock {
            return Err(unavailable(match self.probe.native.mechanism {
                Some(m) => format!("the probe found {} here", m.as_str()),
                None => self
                    .probe
                    .native
                    .hint
                    .clone()
                    .unwrap_or_else(|| "the probe found no native sandbox".into()),
            }));
        }
        if !cfg!(target_os = "linux") {
            return Err(unavailable("Landlock is a Linux security module".into()));
        }
        if !self.probe.native.filename_rules.is_enforceable() {
            return Err(unavailable("the kernel cannot run the name guard".into()));
        }
        self.host.try_landlock().map_err(unavailable)?;
        let mut probe = self.probe.clone();
        probe.native.available = true;
        probe.native.mechanism = Some(NativeMechanism::Landlock);
        probe.native.note = Some(format!(
            "{}; asked for explicitly; {}",
            sandbox_core::NOTE_LANDLOCK,
            sandbox_core::probe::NOTE_NAME_GUARD
        ));
        probe.native.hint = None;
        probe.native.requires_install = false;
        Ok(Some(probe))
    }
}
