//! Rendering a `ContainerSpec` as `docker run` argv.

use crate::{ContainerSpec, EnvFile, Error, ErrorKind, Network};
use std::ffi::OsString;
use std::path::Path;

impl ContainerSpec {
    /// The `docker run` argv (without the `docker` program itself), every
    /// flag in `--flag=value` form. Fails with
    /// [`ErrorKind::SecretsNeedEnvFile`] when the spec holds secrets.
    pub fn run_argv(&self) -> Result<Vec<OsString>, Error> {
        if !self.secret_env.is_empty() {
            return Err(ErrorKind::SecretsNeedEnvFile.into());
        }
        Ok(self.render(None))
    }

    /// Like [`run_argv`](Self::run_argv), but writes the secret variables
    /// to a new env file (mode 0600) in `dir` and passes it with
    /// `--env-file=PATH`. The file is removed when the returned
    /// [`EnvFile`] is dropped, so keep it until `docker` has started the
    /// container. Without secrets no file is written.
    pub fn run_argv_with_env_file(
        &self,
        dir: &Path,
    ) -> Result<(Vec<OsString>, Option<EnvFile>), Error> {
        if self.secret_env.is_empty() {
            return Ok((self.render(None), None));
        }
        let file = EnvFile::write(dir, &self.secret_env)?;
        Ok((self.render(Some(file.path())), Some(file)))
    }

    fn render(&self, env_file: Option<&Path>) -> Vec<OsString> {
        let mut argv: Vec<OsString> = [
            "run",
            "--rm",
            "--init",
            "--read-only",
            "--cap-drop=ALL",
            "--security-opt=no-new-privileges",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        let mut flag = |s: String| argv.push(OsString::from(s));
        flag(format!("--pids-limit={}", self.limits.pids));
        flag(format!("--memory={}", self.limits.memory_bytes));
        flag(format!("--memory-swap={}", self.limits.memory_bytes));
        if let Some(cpus) = self.limits.cpus_value() {
            flag(format!("--cpus={cpus}"));
        }
        flag(format!("--user={}:{}", self.user.uid, self.user.gid));
        flag(match &self.network {
            Network::None => "--network=none".to_owned(),
            Network::Internal(name) => format!("--network={}", name.as_str()),
        });
        for t in &self.tmpfs {
            flag(format!("--tmpfs={}", t.tmpfs_value()));
        }
        for m in &self.mounts {
            flag(format!("--mount={}", m.mount_value()));
        }
        for (name, value) in &self.env {
            flag(format!("--env={name}={value}"));
        }
        if let Some(dir) = &self.workdir {
            flag(format!("--workdir={dir}"));
        }
        if let Some(path) = env_file {
            let mut f = OsString::from("--env-file=");
            f.push(path);
            argv.push(f);
        }
        argv.push(OsString::from(self.image.as_str()));
        argv.extend(self.command.iter().cloned());
        argv
    }
}
