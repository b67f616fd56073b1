//! The `sandbox-exec` command line, and (on macOS) its spawn.

use crate::error::{Error, ErrorKind};
use crate::render::RenderedProfile;
use std::ffi::OsString;

/// Where `sandbox-exec` lives on every macOS.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// The argv that runs `command` under `profile`:
/// `/usr/bin/sandbox-exec -p PROFILE -DKEY=VALUE ... -- COMMAND...`.
///
/// Portable, so it is tested everywhere; an empty `command` is
/// [`ErrorKind::EmptyCommand`]. No shell is involved: each element is one
/// argument.
///
/// ```
/// use seatbelt_profile::{Profile, launcher_argv};
/// let rendered = Profile::new().render().unwrap();
/// let argv = launcher_argv(&rendered, ["/bin/echo", "hi"]).unwrap();
/// assert_eq!(argv[0], "/usr/bin/sandbox-exec");
/// assert_eq!(argv[3], "--");
/// ```
pub fn launcher_argv<I, S>(profile: &RenderedProfile, command: I) -> Result<Vec<OsString>, Error>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let command: Vec<OsString> = command.into_iter().map(Into::into).collect();
    if command.is_empty() {
        return Err(ErrorKind::EmptyCommand.into());
    }
    let mut argv: Vec<OsString> = Vec::with_capacity(command.len() + profile.params().len() + 4);
    argv.push(SANDBOX_EXEC.into());
    argv.push("-p".into());
    argv.push(profile.text().into());
    for (k, v) in profile.params() {
        argv.push(format!("-D{k}={v}").into());
    }
    argv.push("--".into());
    argv.extend(command);
    Ok(argv)
}

/// A [`std::process::Command`] for [`launcher_argv`], not yet started.
/// Portable (building it runs nothing); add the environment, working
/// directory and stdio the run needs, then spawn it on macOS.
pub fn launcher_command<I, S>(
    profile: &RenderedProfile,
    command: I,
) -> Result<std::process::Command, Error>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut argv = launcher_argv(profile, command)?.into_iter();
    let mut cmd = std::process::Command::new(argv.next().unwrap_or_else(|| SANDBOX_EXEC.into()));
    cmd.args(argv);
    Ok(cmd)
}

/// Spawns `command` under `profile` with `sandbox-exec` (macOS only). The
/// child inherits this process's environment and standard streams; use
/// [`launcher_command`] to set them first.
#[cfg(target_os = "macos")]
pub fn spawn<I, S>(profile: &RenderedProfile, command: I) -> std::io::Result<std::process::Child>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    launcher_command(profile, command)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?
        .spawn()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Action, Filter, Operation, Profile, Rule};

    #[test]
    fn argv_carries_params_after_profile_and_before_separator() {
        let mut p = Profile::new();
        p.rule(Rule::new(
            Action::Deny,
            Operation::FileReadAll,
            vec![Filter::Subpath("/Users/a b/.ssh".into())],
        ));
        let r = p.render().unwrap();
        let argv = launcher_argv(&r, ["bash", "-c", "echo $HOME"]).unwrap();
        let argv: Vec<String> = argv.into_iter().map(|s| s.into_string().unwrap()).collect();
        assert_eq!(
            argv,
            [
                SANDBOX_EXEC,
                "-p",
                r.text(),
                "-DDENY_FILE_READ_000=/Users/a b/.ssh",
                "--",
                "bash",
                "-c",
                "echo $HOME"
            ]
        );
        let cmd = launcher_command(&r, ["bash", "-c", "echo $HOME"]).unwrap();
        assert_eq!(cmd.get_program(), SANDBOX_EXEC);
        let args: Vec<&std::ffi::OsStr> = cmd.get_args().collect();
        assert_eq!(
            args,
            argv[1..]
                .iter()
                .map(std::ffi::OsStr::new)
                .collect::<Vec<_>>()
        );
        let none: [&str; 0] = [];
        assert_eq!(
            launcher_argv(&r, none).unwrap_err().kind(),
            &ErrorKind::EmptyCommand
        );
    }
}
