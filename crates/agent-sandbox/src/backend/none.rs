//! The `none` backend: the command runs on the host, unconfined, with the
//! sanitised environment (R-DISPATCH-2). Chosen only explicitly or by a
//! selection the log names.

use super::{BackendSession, CommandTask, ExecRequest, Launched};
use crate::Error;
use crate::builder::Settings;
use crate::egress::plain_env;
use crate::running::{CommandIo, attach_host_terminal, prepare, run_child};
use std::path::Path;

/// A session is only its environment.
pub(crate) fn launch(settings: &Settings) -> Result<Launched, Error> {
    Ok(Launched {
        session: BackendSession::None,
        env: plain_env(settings)?,
        details: Vec::new(),
    })
}

/// Spawns the command itself.
pub(crate) fn exec(request: ExecRequest<'_>, mut io: CommandIo) -> Result<CommandTask, Error> {
    let (program, args) = request
        .argv
        .split_first()
        .ok_or_else(|| Error::io("starting a command", std::io::Error::other("no program")))?;
    let mut c = tokio::process::Command::new(program);
    c.args(args).current_dir(Path::new(&request.workdir));
    prepare(&mut c, &request);
    if let Some(size) = request.terminal {
        io.terminal = Some(attach_host_terminal(&mut c, size)?);
    }
    let child = c
        .spawn()
        .map_err(|e| Error::io(format!("starting {program:?}"), e))?;
    Ok(Box::pin(run_child(child, io, None, Vec::new())))
}
