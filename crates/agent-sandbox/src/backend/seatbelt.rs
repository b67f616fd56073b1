//! The Seatbelt backend (macOS): `sandbox-exec` with a profile rendered for
//! the spec. A dispatch gets the session's proxies on loopback ports (the
//! sandbox shares the host's loopback, so every client must present the
//! session's credentials) and a profile that lets it reach only them; a
//! terminal gets the fixed terminal profile and the host network. The
//! profile is built and rendered here on any OS (tested on Linux with the
//! seatbelt-profile evaluator); only running it needs macOS.

use super::{BackendSession, CommandTask, ExecRequest, Launched};
use crate::builder::Settings;
use crate::egress::{Egress, Listen, plain_env};
use crate::running::{CommandIo, run_child, spawn_direct};
use crate::{Error, ErrorKind};
use connect_proxy::ProxyCredentials;
use sandbox_core::{SandboxSpec, Surface};
use seatbelt_profile::RenderedProfile;
use std::path::PathBuf;

/// What the Seatbelt backend needs besides the shared settings.
pub(crate) struct Config {
    /// Where session directories are made.
    pub(crate) temp_dir: PathBuf,
}

/// A Seatbelt session: the rendered profile and, for a dispatch, its egress.
pub(crate) struct Session {
    profile: RenderedProfile,
    egress: Option<Egress>,
}

fn seatbelt_err(e: seatbelt_profile::Error) -> Error {
    Error::from(ErrorKind::Seatbelt(e))
}

pub(crate) async fn launch(
    config: &Config,
    settings: &Settings,
    spec: &SandboxSpec,
) -> Result<Launched, Error> {
    let home = settings.home.to_string_lossy().into_owned();
    let host = &*settings.host;
    if settings.surface == Surface::Terminal {
        let mut b = seatbelt_profile::TerminalProfileBuilder::new();
        b.home(&home);
        if let Some(w) = &spec.guest_workdir {
            b.workdir(w);
        }
        let profile = b
            .build(host)
            .and_then(|p| p.render())
            .map_err(seatbelt_err)?;
        return Ok(Launched {
            session: BackendSession::Seatbelt(Box::new(Session {
                profile,
                egress: None,
            })),
            env: plain_env(settings)?,
            details: Vec::new(),
        });
    }
    let credentials = ProxyCredentials::generate_from_os_rng()?;
    let egress = Egress::start(
        &settings.egress,
        spec,
        &config.temp_dir,
        Listen::Loopback,
        Some(&credentials),
    )
    .await?;
    let Some((http, socks)) = egress.loopback_addrs() else {
        return Err(Error::io(
            "starting the proxies",
            std::io::Error::other("no loopback listeners"),
        ));
    };
    let mut b = seatbelt_profile::DispatchProfileBuilder::new(spec);
    b.home(&home)
        .http_proxy_port(http.port())
        .socks_proxy_port(socks.port())
        .temp_dir(egress.dir().to_string_lossy());
    let profile = b
        .build(host)
        .and_then(|p| p.render())
        .map_err(seatbelt_err)?;
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
        session: BackendSession::Seatbelt(Box::new(Session {
            profile,
            egress: Some(egress),
        })),
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
        let violations = self.egress.as_ref().map(|e| e.violations(None));
        Ok(Box::pin(run_child(child, io, violations, Vec::new())))
    }

    pub(crate) async fn destroy(self) {
        if let Some(e) = &self.egress {
            e.shutdown().await;
        }
    }
}
