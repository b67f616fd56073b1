//! The Seatbelt backend (macOS): `sandbox-exec` with a profile rendered for
//! the spec. A dispatch gets the session's proxies on loopback ports (the
//! sandbox shares the host's loopback, so every client must present the
//! session's credentials) and a profile that lets it reach only them; a
//! terminal gets the fixed terminal profile and the host network. The
//! profile is built and rendered here on any OS (tested on Linux with the
//! seatbelt-profile evaluator); only running it needs macOS. Every deny
//! rule carries the session's tag, and the session's denials come from the
//! system log as `violation` events ([`seatbelt_log`]).

use super::seatbelt_log::{self, SystemLog};
use crate::egress::{Egress, plain_env};
use crate::running::{CommandIo, run_child, spawn_direct};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::settings::Settings;
use crate::violations::Violations;
use crate::{Error, ErrorKind};
use sandbox_core::{SandboxSpec, Surface};
use seatbelt_profile::RenderedProfile;
use std::path::PathBuf;

/// What the Seatbelt backend needs besides the shared settings.
pub(crate) struct Config {
    /// Where session directories are made.
    pub(crate) temp_dir: PathBuf,
    /// The `log` program the session's denials are streamed from.
    pub(crate) log_program: PathBuf,
}

/// A Seatbelt session: the rendered profile (every denial tagged with the
/// session's tag), for a dispatch its egress, and the system log stream of
/// its denials (none when `log` could not start: a note said so).
pub(crate) struct Session {
    profile: RenderedProfile,
    egress: Option<Egress>,
    system_log: Option<SystemLog>,
}

/// Tags `profile`'s denials for this session, renders it and starts the
/// session's log stream.
fn tagged(
    config: &Config,
    settings: &Settings,
    profile: Result<seatbelt_profile::Profile, seatbelt_profile::Error>,
) -> Result<(RenderedProfile, Option<SystemLog>), Error> {
    let tag = seatbelt_log::session_tag();
    let mut profile = profile.map_err(seatbelt_err)?;
    let rendered = profile
        .tag_denials(&tag)
        .and_then(|p| p.render())
        .map_err(seatbelt_err)?;
    let log = seatbelt_log::start_or_note(&config.log_program, &tag, &settings.log);
    Ok((rendered, log))
}

fn seatbelt_err(e: seatbelt_profile::Error) -> Error {
    Error::from(ErrorKind::Seatbelt(e))
}

pub(crate) async fn launch(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
) -> Result<Launched<Session>, Error> {
    let home = settings.home.to_string_lossy().into_owned();
    let host = &*settings.host;
    if settings.surface == Surface::Terminal {
        // The fixed terminal profile takes no extra read rules.
        if !settings.reads.is_empty() {
            return Err(ErrorKind::NotSupported {
                what: "an extra read deny (or a path read again inside one) on the terminal \
                       surface under Seatbelt",
            }
            .into());
        }
        let mut b = seatbelt_profile::TerminalProfileBuilder::new();
        b.home(&home);
        if let Some(w) = &spec.guest_workdir {
            b.workdir(w);
        }
        let (profile, system_log) = tagged(config, settings, b.build(host))?;
        return Ok(Launched {
            session: Session {
                profile,
                egress: None,
                system_log,
            },
            env: plain_env(settings)?,
            details: Vec::new(),
        });
    }
    let (egress, credentials, http, socks) =
        Egress::start_on_loopback(&settings.egress, spec, &config.temp_dir).await?;
    let mut b = seatbelt_profile::DispatchProfileBuilder::new(spec);
    b.home(&home)
        .http_proxy_port(http.port())
        .socks_proxy_port(socks.port())
        .temp_dir(egress.dir().to_string_lossy());
    for s in &settings.unix_sockets {
        b.allow_unix_socket(s.clone());
    }
    for d in &settings.reads.deny {
        b.read_deny(d.clone());
    }
    for r in &settings.reads.again {
        b.allow_read_within_denies(r.clone());
    }
    let (profile, system_log) = tagged(config, settings, b.build(host))?;
    // No bridges: the run reaches the proxies on their own ports, and the
    // CA bundle at its host path.
    let env = egress.env(
        settings,
        spec,
        egress.host_ca_bundle(),
        (http, socks),
        Some(&credentials),
    )?;
    Ok(Launched {
        session: Session {
            profile,
            egress: Some(egress),
            system_log,
        },
        env,
        details: vec![
            ("httpProxy", http.to_string()),
            ("socksProxy", socks.to_string()),
        ],
    })
}

impl Session {
    pub(crate) fn profile(&self) -> &RenderedProfile {
        &self.profile
    }

    pub(crate) fn exec(
        &self,
        request: ExecRequest<'_>,
        mut io: CommandIo,
    ) -> Result<CommandTask, Error> {
        let full = seatbelt_profile::launcher_argv(&self.profile, request.argv.iter().cloned())
            .map_err(seatbelt_err)?;
        let child = spawn_direct(&full, &request, &mut io)?;
        let mut violations = match &self.egress {
            Some(e) => e.violations(None),
            None => Violations {
                proxy: None,
                broker: None,
                guard: None,
                system_log: None,
                guard_pipe: Default::default(),
            },
        };
        violations.system_log = self.system_log.as_ref().map(SystemLog::subscribe);
        Ok(Box::pin(run_child(child, io, Some(violations), Vec::new())))
    }

    pub(crate) async fn destroy(self) {
        if let Some(e) = &self.egress {
            e.shutdown().await;
        }
        if let Some(log) = self.system_log {
            log.stop().await;
        }
    }
}
