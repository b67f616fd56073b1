//! The crate's one error type.

use std::fmt;

/// An error from `docker-spec`: a request the hardened profile refuses, a
/// value that cannot be rendered safely, or a failure writing the env file.
/// [`Error::kind`] says which, with the offending value.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `--privileged` was asked for.
    #[error("a privileged container was requested; the hardened profile never runs one")]
    Privileged,
    /// Sharing a host namespace was asked for.
    #[error(
        "sharing the host {namespace} namespace was requested; the hardened profile refuses it"
    )]
    HostNamespace {
        /// `network`, `pid`, `ipc`, `uts`, `user` or `cgroup`.
        namespace: &'static str,
    },
    /// A mount would expose a container engine socket.
    #[error(
        "mount source {path:?} is or contains a container engine socket; \
         mount a narrower directory"
    )]
    EngineSocket {
        /// The mount source as given.
        path: String,
    },
    /// A mount or tmpfs path cannot be used.
    #[error("path {path:?} cannot be used: {reason}")]
    InvalidPath {
        /// The path as given (control characters escaped by `Debug`).
        path: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The image reference is not a plain `name[:tag][@digest]`.
    #[error("image reference {image:?} is invalid: {reason}")]
    InvalidImage {
        /// The reference as given.
        image: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A network name is invalid or names a built-in network.
    #[error(
        "network {name:?} cannot be used: {reason}; give the name of an internal network \
         you created"
    )]
    InvalidNetwork {
        /// The name as given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// An internal network was chosen but the env has no proxy variables.
    #[error(
        "network {name:?} is used without HTTPS_PROXY in the env; the internal network's \
         only way out is the session proxy, so pass the proxy variables"
    )]
    MissingProxyEnv {
        /// The network name.
        name: String,
    },
    /// An environment variable name is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("environment variable name {name:?} is invalid: use [A-Za-z_][A-Za-z0-9_]*")]
    InvalidEnvName {
        /// The name as given.
        name: String,
    },
    /// An environment value cannot be passed (NUL byte, or a newline in a
    /// secret, which the env file cannot hold).
    #[error("value of {name:?} cannot be passed: {reason}")]
    InvalidEnvValue {
        /// The variable's name (the value is never echoed).
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The same variable name was given twice.
    #[error("environment variable {name:?} is given twice")]
    DuplicateEnv {
        /// The name.
        name: String,
    },
    /// The user or group is 0 (root).
    #[error("user {uid}:{gid} is root; give a non-zero numeric uid and gid")]
    RootUser {
        /// The uid.
        uid: u32,
        /// The gid.
        gid: u32,
    },
    /// A resource limit is out of range.
    #[error("limit {limit} = {value} is out of range: {reason}")]
    InvalidLimit {
        /// `pids`, `memory`, `cpus` or `tmpfs size`.
        limit: &'static str,
        /// The value given.
        value: u64,
        /// The accepted range.
        reason: &'static str,
    },
    /// The spec holds secrets, so it must be rendered with an env file.
    #[error("the spec holds secret variables; render it with run_argv_with_env_file")]
    SecretsNeedEnvFile,
    /// The sandbox spec is invalid.
    #[error("sandbox spec: {0}")]
    Spec(#[from] sandbox_core::Error),
    /// Writing the env file failed.
    #[error("writing env file {path:?}: {source}")]
    EnvFile {
        /// The file being written.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl Error {
    /// The kind of error, with its context.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// Consumes the error and returns its kind.
    pub fn into_kind(self) -> ErrorKind {
        self.kind
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}
