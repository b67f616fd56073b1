//! A sandbox spec as Kubernetes objects (R-CLUSTER-1): the same meaning as
//! on a single host, for runs placed on a cluster.
//!
//! [`render`] takes a [`sandbox_core::SandboxSpec`], a [`ClusterProfile`]
//! (namespace, images, runtime class, where each bind mount comes from,
//! placement) and a [`Workload`] (the command, its limits, the session's
//! proxy secret) and returns the objects, as JSON values in the order to
//! apply them ([`render_list`] wraps them in one `List` for
//! `kubectl apply -f -`). The crate is pure: it talks to no cluster and
//! reads nothing from the host.
//!
//! - **The agent pod**, as a plain `Pod`, an agent-sandbox `Sandbox`
//!   (`agents.x-k8s.io/v1beta1`, `operatingMode: Suspended` for a suspended
//!   session) or a `SandboxTemplate` with `networkPolicyManagement:
//!   Unmanaged`, an empty `SandboxWarmPool` of it and a `SandboxClaim` on
//!   the pool. It meets the restricted Pod
//!   Security Standard in full: non-root numeric user, no privilege
//!   escalation, every capability dropped, `RuntimeDefault` seccomp,
//!   read-only root filesystem; `automountServiceAccountToken: false`; no
//!   host network, PID or IPC. Its `runtimeClassName` is the profile's
//!   ([`Runtime::Gvisor`] or [`Runtime::Kata`]); the cluster's default
//!   runtime is refused unless the profile says
//!   [`KernelBoundary::OptOutSharedHostKernel`]. `/tmp` is a small
//!   memory-backed directory and the home an empty one; nothing else is
//!   writable but the mounts the spec makes writable.
//! - **Mounts**: each bind mount (and runner state directory) becomes the
//!   volume the profile names for its host path ([`VolumeSource`]): a
//!   `PersistentVolumeClaim`, an `emptyDir` an init container fills, or a
//!   node directory only through [`VolumeSource::OptOutHostPath`] (which
//!   fails the restricted standard, and never reaches a home or the secret
//!   set by name). The mode's read-only rule holds on every mount
//!   (`review`, `plan`, `orchestrate`); a protected path inside a writable
//!   mount is mounted again read-only over it (a `subPath` mount). No mount
//!   may land on the secret set under the agent's home.
//! - **Filename rules** (R-DISPATCH-3): when a mount is writable, the agent
//!   command runs under `name-guard-exec --deny .env --deny '*.key' --deny
//!   '*.pem'`, where the runtime can run it (Kata, runc). gVisor cannot
//!   (no seccomp user notification in the releases we know): such a spec is
//!   refused with the reason unless the profile says
//!   [`FilenameRules::OptOutUnenforced`]. Only the container's own process
//!   tree is guarded: a command started with `kubectl exec` is not.
//! - **The egress**: a pod running the workspace's `egress-proxy` with the
//!   spec's allowlist (listening on the pod's addresses, requiring the
//!   session's secret from the session's `Secret`), a `Service` in front of
//!   it, and two `NetworkPolicy` objects: the agent pod reaches only the
//!   egress pod's two proxy ports (no DNS: it names hosts to the proxies,
//!   CONNECT and SOCKS5 by name), and the egress pod takes connections only
//!   from the agent pod and reaches only public addresses (private,
//!   shared, loopback, link-local and metadata ranges excepted, see
//!   [`EXCEPT_V4`] and [`EXCEPT_V6`]) and the cluster DNS. The proxy's own
//!   address policy still decides per connection.
//! - **The agent's environment**: the proxy variables env-guard writes on
//!   one host (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` and lower-case
//!   forms, empty `NO_PROXY`, an ncat `GIT_SSH_COMMAND`), pointing at the
//!   egress Service through its service-link variable
//!   (`SBX_…_EGRESS_SERVICE_HOST`, so the Service must exist before the
//!   pod: apply the list in order) with the session's secret from the
//!   Secret (`$(SESSION_PROXY_SECRET)`). Every `$` of a command argument or
//!   value is doubled, so the kubelet expands nothing of them.
//! - **Limits**: memory (default 2 GiB) and CPU as the container's request
//!   and limit. A process limit has no pod field: it is rendered only when
//!   the profile says the nodes' `podPidsLimit` is at least as strict.
//!
//! What is not rendered, and refused rather than weakened: lending a
//! credential through the broker ([`ErrorKind::CredentialLending`]: the
//! broker makes its CA and phantom token at start, and the agent pod would
//! need them ahead of time). The mandatory write-deny set inside writable
//! volumes is not enforced by a volume; [`unenforced_write_denies`] lists
//! it for the caller.
//!
//! # Example
//!
//! ```
//! use k8s_spec::{ClusterProfile, VolumeSource, Workload, render};
//! use sandbox_core::{Mode, SandboxSpec};
//!
//! let spec: SandboxSpec = serde_json::from_str(
//!     r#"{"sessionId":"s1","mode":"review","bindMounts":[{"hostPath":"/srv/wt","guestPath":"/work"}],
//!         "egressAllowlist":["api.example.com"]}"#,
//! ).unwrap();
//! let mut profile = ClusterProfile::builder();
//! profile.namespace("agents").volume(
//!     "/srv/wt",
//!     VolumeSource::PersistentVolumeClaim { claim: "sbx-s1-workspace".into() },
//! );
//! let objects = render(&spec, &profile.build().unwrap(), &Workload::new(["make", "test"], "s3cret")).unwrap();
//! let kinds: Vec<_> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
//! assert_eq!(kinds, ["Secret", "Service", "NetworkPolicy", "NetworkPolicy", "Pod", "Pod"]);
//! let agent = &objects[5]["spec"];
//! assert_eq!(agent["runtimeClassName"], "gvisor");
//! assert_eq!(agent["automountServiceAccountToken"], false);
//! // Review mode: the workspace is read-only, so no filename rules are needed.
//! assert_eq!(agent["containers"][0]["volumeMounts"][2]["readOnly"], true);
//! assert_eq!(agent["containers"][0]["command"], serde_json::json!(["make", "test"]));
//! ```
//!
//! # Input safety
//!
//! - Session ids: 1 to [`MAX_SESSION_NAME`] bytes of `[a-z0-9-]`, starting
//!   and ending with a letter or digit (they name the objects). Namespaces
//!   and claim names: RFC 1123 labels and subdomains.
//! - Images: 1 to [`MAX_IMAGE_LEN`] bytes of `[A-Za-z0-9._/:@-]`, starting
//!   with a letter or digit.
//! - Paths: absolute, at most 4096 bytes, no NUL, `.` or `..` component,
//!   not `/`. Command arguments and environment values: at most
//!   [`MAX_VALUE_LEN`] bytes, no NUL, at most 4096 arguments; environment
//!   names `[A-Za-z_][A-Za-z0-9_]*`; the proxy secret 1 to 255 bytes of
//!   `[A-Za-z0-9._~-]`.
//! - Allowlist and deny entries: 1 to 261 bytes without whitespace or
//!   control characters, not starting with `-` (the proxy checks their
//!   form); address blocks `ADDRESS/LEN`.
//! - Limits: memory 6 MiB to 1 TiB, CPU 1 to 1 024 000 thousandths.
//!
//! Every value reaches the objects through `serde_json`, never through
//! text.
//!
//! # Crate features
//!
//! This crate has no optional features.

mod egress;
mod error;
mod mounts;
mod names;
mod pod;
mod pod_paths;
mod policy;
mod profile;
mod render;
mod wire;
mod workload;

pub use error::{Error, ErrorKind};
pub use names::{MAX_IMAGE_LEN, MAX_SESSION_NAME, MAX_VALUE_LEN};
pub use policy::{EXCEPT_V4, EXCEPT_V6};
pub use profile::{
    ClusterProfile, ClusterProfileBuilder, FilenameRules, KernelBoundary, Placement, Runtime,
    VolumeSource,
};
pub use render::{
    EXTENSIONS_API, LABEL_ROLE, LABEL_SESSION, ObjectNames, SANDBOX_API, render, render_list,
    unenforced_write_denies,
};
pub use wire::{PROXY_SECRET_ENV, PROXY_USER};
pub use wire::{SECRET_DIR, SECRET_KEY};
pub use workload::{LentCredential, OperatingMode, Workload};
