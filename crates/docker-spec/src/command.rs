//! A `docker` `Command` with a scrubbed environment.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// Builds a [`Command`] that runs the docker CLI with only the variables
/// named here: nothing is inherited, so an ambient `DOCKER_HOST`,
/// `DOCKER_CONTEXT`, `DOCKER_CONFIG` or credential never reaches it.
#[derive(Clone, Debug)]
pub struct DockerCommand {
    program: PathBuf,
    path_var: OsString,
    host: Option<String>,
    config_dir: Option<PathBuf>,
    home: Option<PathBuf>,
}

impl DockerCommand {
    /// Runs `program` (for example `docker` or `/usr/bin/docker`) with
    /// `PATH=/usr/local/bin:/usr/bin:/bin` and nothing else.
    pub fn new(program: impl Into<PathBuf>) -> DockerCommand {
        DockerCommand {
            program: program.into(),
            path_var: OsString::from("/usr/local/bin:/usr/bin:/bin"),
            host: None,
            config_dir: None,
            home: None,
        }
    }

    /// Sets `PATH` for finding the CLI and its plugins.
    pub fn path_var(&mut self, path: impl Into<OsString>) -> &mut Self {
        self.path_var = path.into();
        self
    }

    /// Talks to the engine on this Unix socket (`DOCKER_HOST=unix://PATH`).
    /// Without it the CLI uses its built-in default socket.
    pub fn engine_socket(&mut self, socket: impl Into<PathBuf>) -> &mut Self {
        let socket: PathBuf = socket.into();
        self.host = Some(format!("unix://{}", socket.display()));
        self
    }

    /// Uses this CLI configuration directory (`DOCKER_CONFIG`).
    pub fn config_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.config_dir = Some(dir.into());
        self
    }

    /// Sets `HOME` for the CLI.
    pub fn home(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.home = Some(dir.into());
        self
    }

    /// A `Command` running the CLI with `argv` (for example from
    /// [`crate::ContainerSpec::run_argv`]) and the scrubbed environment.
    pub fn command<I, S>(&self, argv: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let mut cmd = Command::new(&self.program);
        cmd.env_clear().env("PATH", &self.path_var);
        if let Some(host) = &self.host {
            cmd.env("DOCKER_HOST", host);
        }
        if let Some(dir) = &self.config_dir {
            cmd.env("DOCKER_CONFIG", dir);
        }
        if let Some(home) = &self.home {
            cmd.env("HOME", home);
        }
        cmd.args(argv.into_iter().map(Into::into));
        cmd
    }
}
