//! Git run on the host for a workspace: against the registered checkout
//! (trusted, the host's own) and against the private repository a
//! collection builds. Never in a session's layer: what a session wrote
//! there (config, hooks, attributes) is never read by a host git.
//!
//! Every run starts from an empty environment: the ambient `PATH` (to find
//! git), no system or global configuration, no prompts, the C locale. A
//! setting a run needs is given with `-c`.

use crate::{Error, ErrorKind};
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Most bytes of a git's stdout kept (refs listings, ids, a report).
const MAX_STDOUT: usize = 64 << 20;
/// Most bytes of a git's stderr quoted in an error.
const MAX_STDERR_QUOTED: usize = 600;

/// A git to run with a clean environment, for one repository.
pub(crate) struct HostGit {
    /// `--git-dir` of every run.
    git_dir: PathBuf,
    /// The `safe.directory` the run trusts (the repository it was made for).
    safe: PathBuf,
}

/// What a git run gave back.
pub(crate) struct GitOutput {
    pub(crate) status: std::process::ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

impl GitOutput {
    /// The stdout as trimmed text.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).trim().to_owned()
    }
}

impl HostGit {
    /// A git for the repository whose git directory is `git_dir`; `safe`
    /// is the path git checks ownership of (the checkout, or the git
    /// directory of a bare repository).
    pub(crate) fn new(git_dir: impl Into<PathBuf>, safe: impl Into<PathBuf>) -> HostGit {
        HostGit {
            git_dir: git_dir.into(),
            safe: safe.into(),
        }
    }

    fn command(&self, config: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.env_clear();
        // The ambient PATH: only to find git itself.
        if let Some(path) = std::env::var_os("PATH") {
            c.env("PATH", path);
        }
        c.env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C");
        let mut safe = OsStr::new("safe.directory=").to_owned();
        safe.push(self.safe.as_os_str());
        c.arg("-c").arg(safe);
        c.args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ]);
        for kv in config {
            c.arg("-c").arg(kv);
        }
        c.arg("--git-dir").arg(&self.git_dir);
        c
    }

    /// Runs `git ARGS` with `config` set, `stdin` written in full (or
    /// `/dev/null`), `stdout` captured or sent to `into`.
    pub(crate) fn run(
        &self,
        config: &[&str],
        args: &[&OsStr],
        stdin: Option<&[u8]>,
        into: Option<&Path>,
    ) -> Result<GitOutput, Error> {
        let mut c = self.command(config);
        c.args(args);
        c.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        match into {
            Some(path) => {
                let f = std::fs::File::create(path)
                    .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
                c.stdout(f);
            }
            None => {
                c.stdout(Stdio::piped());
            }
        }
        c.stderr(Stdio::piped());
        let what = describe(args);
        let mut child = c.spawn().map_err(|e| {
            Error::from(ErrorKind::WorkspaceGit {
                command: what.clone(),
                said: format!("git could not be started: {e}"),
            })
        })?;
        // The input goes in from a thread of its own while the output is
        // read, so neither side can fill its pipe and wait on the other.
        let writer = match (stdin, child.stdin.take()) {
            (Some(bytes), Some(mut pipe)) => {
                let bytes = bytes.to_vec();
                Some(std::thread::spawn(move || {
                    // A git that stops reading early says why on stderr.
                    let _ = pipe.write_all(&bytes);
                }))
            }
            _ => None,
        };
        let out = child
            .wait_with_output()
            .map_err(|e| Error::io(format!("waiting for git {what}"), e))?;
        if let Some(w) = writer {
            let _ = w.join();
        }
        if out.stdout.len() > MAX_STDOUT {
            return Err(ErrorKind::WorkspaceGit {
                command: what,
                said: format!("more than {MAX_STDOUT} bytes of output"),
            }
            .into());
        }
        Ok(GitOutput {
            status: out.status,
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }

    /// Runs `git ARGS` and fails unless it succeeded; its stdout.
    pub(crate) fn ok(&self, args: &[&OsStr]) -> Result<GitOutput, Error> {
        let out = self.run(&[], args, None, None)?;
        if !out.status.success() {
            return Err(failed(args, &out));
        }
        Ok(out)
    }
}

/// The error for a git run that failed.
pub(crate) fn failed(args: &[&OsStr], out: &GitOutput) -> Error {
    ErrorKind::WorkspaceGit {
        command: describe(args),
        said: quote_stderr(&out.stderr, out.status),
    }
    .into()
}

fn describe(args: &[&OsStr]) -> String {
    let words: Vec<String> = args
        .iter()
        .take(4)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    words.join(" ")
}

fn quote_stderr(stderr: &[u8], status: std::process::ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let mut said: String = text
        .chars()
        .take(MAX_STDERR_QUOTED)
        .map(|c| if c.is_control() && c != '\n' { '?' } else { c })
        .collect();
    if said.is_empty() {
        said = format!("{status}");
    }
    said
}

/// `s` as an `OsStr` argument.
pub(crate) fn arg(s: &str) -> &OsStr {
    OsStr::new(s)
}
