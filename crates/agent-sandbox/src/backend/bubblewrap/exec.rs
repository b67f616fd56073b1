//! Starting a command: in the session's warm sandbox, or in a fresh
//! bubblewrap sandbox of the plan (with the name guard in front, the
//! bridges' listeners or socat, a terminal).

use super::*;

impl Session {
    /// A bubblewrap command with the session's environment and `options`
    /// (on the command line or through `--args FD`; keep the returned file
    /// until the spawn returned), then `argv`.
    pub(super) fn bwrap_command(
        &self,
        request: &ExecRequest<'_>,
        options: &[OsString],
        argv: &[OsString],
    ) -> Result<(tokio::process::Command, Option<std::fs::File>), Error> {
        let mut c = tokio::process::Command::new(&self.config.bwrap);
        prepare(&mut c, request);
        if let Some(plan) = &self.overlay_mount {
            plan.mount_before_exec(c.as_std_mut());
        }
        let file = args_file::options_for(&mut c, options, &self.config.temp_dir)?;
        c.args(argv);
        Ok((c, file))
    }

    pub(crate) fn exec(
        &self,
        settings: &Settings,
        mut request: ExecRequest<'_>,
        io: CommandIo,
    ) -> Result<CommandTask, Error> {
        if request.guard_updates.is_none() {
            self.protect_new_repos(settings)?;
        }
        if let Some(warm) = &self.warm {
            let violations = match &self.egress {
                Some(b) => b.egress.violations(None),
                None => crate::violations::Violations::none(),
            };
            return warm.exec(request, io, violations);
        }
        let bwrap = &self.config.bwrap;
        let plan = self.plan();
        // Under the name guard the launcher goes in front of the command and
        // reports each refusal on its own pipe.
        let report = if plan.is_guarded() {
            Some(ReportPipe::new().map_err(|e| Error::io("creating the name-guard pipe", e))?)
        } else {
            None
        };
        if plan.is_guarded() {
            request.guard_notes = Some(self.notes.guard_fd());
        }
        let mut argv = plan.guarded_command_with(
            request.argv.clone(),
            GuardFds {
                report: report.as_ref().map(ReportPipe::write_fd),
                updates: request.guard_updates,
                notify: request.guard_notes,
            },
        );
        if request.terminal.is_some() {
            // The command's first act: take the sandbox's terminal.
            let mut attach: Vec<OsString> = ["/bin/sh", "-c", crate::pty::ATTACH_SCRIPT]
                .into_iter()
                .map(OsString::from)
                .collect();
            attach.push(crate::pty::SANDBOX_SLAVE.into());
            attach.append(&mut argv);
            argv = attach;
        }
        let mut args: Vec<OsString> = plan.args().to_vec();
        // Replace the plan's --chdir with the exec's working directory.
        if let Some(i) = args.iter().position(|a| a == "--chdir")
            && let Some(slot) = args.get_mut(i + 1)
        {
            *slot = request.workdir.clone().into();
        }
        let start_report = |r: ReportPipe| r.start().map_err(report_err);
        let Some(bridged) = &self.egress else {
            // Terminal profile: no proxies, the command runs directly.
            // The sandbox's pid is needed for a terminal, and by a warm
            // session's init (its commands' terminals).
            let steering = if request.terminal.is_some() || request.pass_fd.is_some() {
                Some(netns::Steering::new().map_err(|e| Error::io("creating pipes", e))?)
            } else {
                None
            };
            let options = match &steering {
                Some(st) => with_steering(args, st),
                None => args,
            };
            let (mut c, _args_file) = self.bwrap_command(&request, &options, &argv)?;
            if let Some(r) = &report {
                r.inherit_in(&mut c);
            }
            if let Some(st) = &steering {
                st.inherit_in(&mut c);
            }
            let child = c
                .spawn()
                .map_err(|e| Error::io(format!("starting {}", bwrap.display()), e))?;
            let violations = match report {
                Some(r) => {
                    let (write_end, reader) = start_report(r)?;
                    drop(write_end);
                    Some(crate::violations::Violations {
                        proxy: None,
                        broker: None,
                        guard: request.keep_guard(reader),
                        system_log: None,
                        guard_pipe: Default::default(),
                    })
                }
                None => None,
            };
            return Ok(match steering {
                Some(st) => Box::pin(listeners::run_on_terminal(
                    child,
                    st,
                    request.terminal,
                    violations,
                    io,
                )),
                None => Box::pin(run_child(child, io, violations, Vec::new())),
            });
        };
        if request.terminal.is_some() && self.config.inner_bridge == InnerBridge::Socat {
            return Err(crate::ErrorKind::NotSupported {
                what: "a terminal with the socat bridges (InnerBridge::Socat)",
            }
            .into());
        }
        // The socat bridges, for when the host-side listeners cannot be
        // made (where socat is installed).
        let fallback = match &self.config.socat {
            Some(socat) => {
                let inner = bridged.bridges.inner_command(
                    "/bin/sh",
                    &socat.to_string_lossy(),
                    argv.clone(),
                );
                let (mut fallback, fallback_args_file) =
                    self.bwrap_command(&request, &args, &inner)?;
                if let Some(r) = &report {
                    r.inherit_in(&mut fallback);
                }
                Some((fallback, fallback_args_file))
            }
            None => None,
        };
        let (report_write, guard) = match report {
            Some(r) => {
                let (w, reader) = start_report(r)?;
                (Some(w), request.keep_guard(reader))
            }
            None => (None, None),
        };
        let violations = Some(bridged.egress.violations(guard));
        if self.config.inner_bridge == InnerBridge::Socat {
            let Some((mut fallback, fallback_args_file)) = fallback else {
                return Err(socat_missing());
            };
            let child = fallback
                .spawn()
                .map_err(|e| Error::io(format!("starting {}", bwrap.display()), e))?;
            drop((report_write, fallback_args_file));
            return Ok(Box::pin(run_child(child, io, violations, Vec::new())));
        }
        // Fast path: bubblewrap holds the command until the listeners exist.
        let steering = netns::Steering::new().map_err(|e| Error::io("creating pipes", e))?;
        let fast_args = with_steering(args, &steering);
        let (mut c, _args_file) = self.bwrap_command(&request, &fast_args, &argv)?;
        steering.inherit_in(&mut c);
        if let Some(w) = &report_write {
            crate::process_fds::inherit_fds(&mut c, [rustix::fd::AsRawFd::as_raw_fd(w)]);
        }
        let child = c
            .spawn()
            .map_err(|e| Error::io(format!("starting {}", bwrap.display()), e))?;
        Ok(Box::pin(listeners::run(listeners::Launch {
            child,
            steering,
            fallback,
            report_write,
            violations,
            egress: bridged.egress.clone(),
            log: settings.log.clone(),
            terminal: request.terminal,
            io,
        })))
    }
}
