//! The `none` backend: the command runs on the host, unconfined, with the
//! sanitised environment (R-DISPATCH-2). Chosen only explicitly or by a
//! selection the log names.

use crate::Error;
use crate::egress::plain_env;
use crate::running::{CommandIo, run_child, spawn_direct};
use crate::seam::{CommandTask, ExecRequest, Launched};
use crate::settings::Settings;

/// A session is only its environment.
pub(crate) fn launch(settings: &Settings) -> Result<Launched<()>, Error> {
    Ok(Launched {
        session: (),
        env: plain_env(settings)?,
        details: Vec::new(),
    })
}

/// Spawns the command itself.
pub(crate) fn exec(request: ExecRequest<'_>, mut io: CommandIo) -> Result<CommandTask, Error> {
    let child = spawn_direct(&request.argv, &request, &mut io)?;
    Ok(Box::pin(run_child(child, io, None, Vec::new())))
}
