//! The crate's one error type.

use std::fmt;

/// An error from `k8s-spec`: a spec or profile that cannot be rendered with
/// the meaning it has on a single host. [`Error::kind`] says which, with
/// the offending value.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

/// What went wrong, with the offending value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The sandbox spec itself is invalid.
    #[error("sandbox spec: {0}")]
    Spec(#[from] sandbox_core::Error),
    /// A name, image or entry cannot be written into an object.
    #[error("{what} {value:?} cannot be used: {reason}")]
    InvalidValue {
        /// What the value is (`namespace`, `agent image`, `session id`, ...).
        what: &'static str,
        /// The value as given (control characters escaped by `Debug`).
        value: String,
        /// Why it was refused, and what is accepted.
        reason: &'static str,
    },
    /// The profile names no runtime class and did not opt out of the
    /// kernel boundary.
    #[error(
        "the profile names no runtime class, so the pods would share the node's kernel; \
         choose Runtime::Gvisor or Runtime::Kata, or opt out explicitly with \
         KernelBoundary::OptOutSharedHostKernel"
    )]
    NoKernelBoundary,
    /// A bind mount or runner state directory has no volume source in the
    /// profile.
    #[error(
        "{host_path:?} is mounted but the profile says nowhere where it comes from on the \
         cluster; give it a volume source (a PersistentVolumeClaim, an emptyDir filled by an \
         init container, or an explicit host-path opt-out)"
    )]
    NoVolumeSource {
        /// The host path of the mount.
        host_path: String,
    },
    /// A host-path volume would expose a secret of the fixed set.
    #[error(
        "host path {path:?} is or holds {entry} (the fixed secret set); mount a narrower \
         directory"
    )]
    SecretPath {
        /// The host path.
        path: String,
        /// The secret-set entry it reaches.
        entry: &'static str,
    },
    /// A mount's place in the pod collides with one the pod needs, or with
    /// the secret set under the pod's home.
    #[error("the mount at {path:?} cannot be placed: {reason}")]
    ReservedPath {
        /// The guest path.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// The spec needs filename rules, and the runtime cannot run the name
    /// guard (R-DISPATCH-3).
    #[error(
        "the spec has writable mounts, so new .env, *.key and *.pem files must be refused \
         there, and the {runtime} runtime cannot do it: {reason}; use Runtime::Kata, make the \
         mounts read-only, or opt out explicitly with FilenameRules::OptOutUnenforced"
    )]
    FilenameRulesUnenforceable {
        /// The runtime.
        runtime: &'static str,
        /// Why it cannot.
        reason: &'static str,
    },
    /// A process limit was asked for that no pod field can carry.
    #[error(
        "a limit of {requested} processes was asked for, but a pod cannot set one: the node's \
         kubelet does (podPidsLimit); {hint}"
    )]
    PidsLimit {
        /// The processes asked for.
        requested: u32,
        /// What to do.
        hint: String,
    },
    /// A resource limit is out of range.
    #[error("limit {limit} = {value} is out of range: {reason}")]
    InvalidLimit {
        /// `memory` or `cpu`.
        limit: &'static str,
        /// The value given.
        value: u64,
        /// The accepted range.
        reason: &'static str,
    },
    /// The command is empty or cannot be passed.
    #[error("the agent command cannot be used: {reason}")]
    InvalidCommand {
        /// Why.
        reason: &'static str,
    },
    /// A suspended run was asked for without a `Sandbox` to hold it.
    #[error(
        "a suspended run needs Placement::Sandbox (agent-sandbox's operatingMode); a plain pod \
         or a claim cannot be suspended"
    )]
    SuspendNeedsSandbox,
    /// A credential was to be lent to the run.
    #[error(
        "lending a credential is not rendered yet: the broker makes its session CA and phantom \
         token when it starts, and the agent pod would need both ahead of time; run without \
         the credential, or on a single host"
    )]
    CredentialLending,
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

impl From<sandbox_core::Error> for Error {
    fn from(e: sandbox_core::Error) -> Error {
        ErrorKind::Spec(e).into()
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
