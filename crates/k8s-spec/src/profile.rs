//! The cluster profile: where and how a session's objects run.

use crate::names;
use crate::{Error, ErrorKind};

/// The container runtime the pods run under, as a `runtimeClassName`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Runtime {
    /// gVisor (`runsc`): a user-space kernel. It has no seccomp user
    /// notification in the releases we know, so it cannot run the name
    /// guard.
    Gvisor,
    /// Kata Containers: a VM per pod, with a guest kernel of its own.
    Kata,
    /// No runtime class: the cluster's default runtime (runc), which
    /// shares the node's kernel. Refused unless the profile says
    /// [`KernelBoundary::OptOutSharedHostKernel`].
    ClusterDefault,
}

impl Runtime {
    /// The runtime's name in messages and the default `runtimeClassName`
    /// (`gvisor`, `kata`; none for the cluster default).
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Gvisor => "gvisor",
            Runtime::Kata => "kata",
            Runtime::ClusterDefault => "cluster-default",
        }
    }

    /// Whether the name guard (seccomp user notification) runs inside a pod
    /// of this runtime, and if not, why.
    pub fn name_guard(self) -> Result<(), &'static str> {
        match self {
            Runtime::Gvisor => Err(
                "gVisor has no seccomp user notification in the releases we know \
                 (name-guard-exec cannot install its filter there)",
            ),
            Runtime::Kata | Runtime::ClusterDefault => Ok(()),
        }
    }
}

/// Whether the pods must run behind a kernel boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelBoundary {
    /// A runtime class is required (the default).
    #[default]
    Required,
    /// The explicit opt-out: [`Runtime::ClusterDefault`] is accepted and
    /// the pods share the node's kernel.
    OptOutSharedHostKernel,
}

/// Whether a spec with writable mounts must have the filename rules (no
/// new `.env`, `*.key`, `*.pem`) enforced (R-DISPATCH-3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilenameRules {
    /// Enforced by running the agent command under `name-guard-exec`;
    /// refused where the runtime cannot (the default).
    #[default]
    Enforced,
    /// The explicit opt-out: the rules are not enforced.
    OptOutUnenforced,
}

/// Where a bind mount's content comes from on the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VolumeSource {
    /// An existing `PersistentVolumeClaim` of the namespace.
    PersistentVolumeClaim {
        /// The claim's name.
        claim: String,
    },
    /// An `emptyDir` that an init container fills before the agent starts
    /// (for example a `git clone` through the session's egress).
    EmptyDirFilledBy {
        /// The init container's image.
        image: String,
        /// Its command; it sees the directory, writable, at the mount's
        /// guest path.
        command: Vec<String>,
    },
    /// The explicit opt-out: a directory of the node (`hostPath`). The pod
    /// then fails the restricted Pod Security Standard.
    OptOutHostPath {
        /// The node's directory.
        path: String,
    },
}

/// How the agent pod is placed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Placement {
    /// A plain `Pod` (the default).
    #[default]
    Pod,
    /// An agent-sandbox `Sandbox` (`agents.x-k8s.io/v1beta1`) holding the
    /// pod template.
    Sandbox,
    /// An agent-sandbox `SandboxTemplate` with its network policy
    /// unmanaged, a `SandboxWarmPool` of it without warm sandboxes, and a
    /// `SandboxClaim` on the pool, which creates the sandbox from the
    /// template (`extensions.agents.x-k8s.io/v1beta1`).
    SandboxTemplate,
}

/// A validated cluster profile. Build it with [`ClusterProfile::builder`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterProfile {
    pub(crate) namespace: String,
    pub(crate) agent_image: String,
    pub(crate) egress_image: String,
    pub(crate) runtime: Runtime,
    pub(crate) runtime_class_name: Option<String>,
    pub(crate) placement: Placement,
    pub(crate) volumes: Vec<(String, VolumeSource)>,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) home: String,
    pub(crate) http_port: u16,
    pub(crate) socks_port: u16,
    pub(crate) name_guard_path: String,
    pub(crate) egress_proxy_path: String,
    pub(crate) deny: Vec<String>,
    pub(crate) allow_cidrs: Vec<String>,
    pub(crate) baseline: bool,
    pub(crate) node_pids_limit: Option<u32>,
    pub(crate) filename_rules: FilenameRules,
}

impl ClusterProfile {
    /// A builder with the defaults: namespace `default`, images
    /// `agent-sandbox/agent:latest` and `agent-sandbox/egress:latest`,
    /// [`Runtime::Gvisor`], [`Placement::Pod`], user `1000:1000`, home
    /// `/home/agent`, proxy ports 3128 (HTTP) and 1080 (SOCKS5), the
    /// baseline allowlist, binaries in `/usr/local/bin`.
    pub fn builder() -> ClusterProfileBuilder {
        ClusterProfileBuilder {
            namespace: "default".into(),
            agent_image: "agent-sandbox/agent:latest".into(),
            egress_image: "agent-sandbox/egress:latest".into(),
            runtime: Runtime::Gvisor,
            runtime_class_name: None,
            kernel_boundary: KernelBoundary::Required,
            placement: Placement::Pod,
            volumes: Vec::new(),
            uid: 1000,
            gid: 1000,
            home: "/home/agent".into(),
            http_port: 3128,
            socks_port: 1080,
            name_guard_path: "/usr/local/bin/name-guard-exec".into(),
            egress_proxy_path: "/usr/local/bin/egress-proxy".into(),
            deny: Vec::new(),
            allow_cidrs: Vec::new(),
            baseline: true,
            node_pids_limit: None,
            filename_rules: FilenameRules::Enforced,
        }
    }

    /// The namespace every object is rendered into.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The runtime.
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }

    /// The `runtimeClassName` written into the pods, if any.
    pub fn runtime_class_name(&self) -> Option<&str> {
        match self.runtime {
            Runtime::ClusterDefault => None,
            r => Some(self.runtime_class_name.as_deref().unwrap_or(r.as_str())),
        }
    }

    /// The placement of the agent pod.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The HTTP and SOCKS5 proxy ports of the egress pod.
    pub fn proxy_ports(&self) -> (u16, u16) {
        (self.http_port, self.socks_port)
    }

    /// The volume source of a bind mount's host path, if the profile names
    /// one.
    pub fn volume(&self, host_path: &str) -> Option<&VolumeSource> {
        self.volumes
            .iter()
            .find(|(p, _)| p == host_path)
            .map(|(_, v)| v)
    }
}

/// Builds a [`ClusterProfile`]. Setters take `&mut self` and record what
/// they are given; [`build`](Self::build) validates everything.
#[derive(Clone, Debug)]
pub struct ClusterProfileBuilder {
    namespace: String,
    agent_image: String,
    egress_image: String,
    runtime: Runtime,
    runtime_class_name: Option<String>,
    kernel_boundary: KernelBoundary,
    placement: Placement,
    volumes: Vec<(String, VolumeSource)>,
    uid: u32,
    gid: u32,
    home: String,
    http_port: u16,
    socks_port: u16,
    name_guard_path: String,
    egress_proxy_path: String,
    deny: Vec<String>,
    allow_cidrs: Vec<String>,
    baseline: bool,
    node_pids_limit: Option<u32>,
    filename_rules: FilenameRules,
}

impl ClusterProfileBuilder {
    /// The namespace (an RFC 1123 label).
    pub fn namespace(&mut self, namespace: impl Into<String>) -> &mut Self {
        self.namespace = namespace.into();
        self
    }

    /// The agent container's image.
    pub fn agent_image(&mut self, image: impl Into<String>) -> &mut Self {
        self.agent_image = image.into();
        self
    }

    /// The egress pod's image (holding the `egress-proxy` binary).
    pub fn egress_image(&mut self, image: impl Into<String>) -> &mut Self {
        self.egress_image = image.into();
        self
    }

    /// The runtime (default [`Runtime::Gvisor`]).
    pub fn runtime(&mut self, runtime: Runtime) -> &mut Self {
        self.runtime = runtime;
        self
    }

    /// The cluster's name of the runtime class, when it is not the
    /// runtime's own (`kata-qemu`, `gvisor-ptrace`, ...).
    pub fn runtime_class_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.runtime_class_name = Some(name.into());
        self
    }

    /// Whether a kernel boundary is required (default
    /// [`KernelBoundary::Required`]).
    pub fn kernel_boundary(&mut self, boundary: KernelBoundary) -> &mut Self {
        self.kernel_boundary = boundary;
        self
    }

    /// The placement (default [`Placement::Pod`]).
    pub fn placement(&mut self, placement: Placement) -> &mut Self {
        self.placement = placement;
        self
    }

    /// Where the bind mount (or runner state directory) of `host_path`
    /// comes from on the cluster.
    pub fn volume(&mut self, host_path: impl Into<String>, source: VolumeSource) -> &mut Self {
        self.volumes.push((host_path.into(), source));
        self
    }

    /// The numeric user and group of every container (non-zero).
    pub fn user(&mut self, uid: u32, gid: u32) -> &mut Self {
        self.uid = uid;
        self.gid = gid;
        self
    }

    /// The agent's home directory inside the pod (an empty, writable
    /// directory; default `/home/agent`).
    pub fn home(&mut self, home: impl Into<String>) -> &mut Self {
        self.home = home.into();
        self
    }

    /// The egress pod's proxy ports (non-zero, distinct).
    pub fn proxy_ports(&mut self, http: u16, socks: u16) -> &mut Self {
        self.http_port = http;
        self.socks_port = socks;
        self
    }

    /// Where `name-guard-exec` is in the agent image.
    pub fn name_guard_path(&mut self, path: impl Into<String>) -> &mut Self {
        self.name_guard_path = path.into();
        self
    }

    /// Where `egress-proxy` is in the egress image.
    pub fn egress_proxy_path(&mut self, path: impl Into<String>) -> &mut Self {
        self.egress_proxy_path = path.into();
        self
    }

    /// A host or pattern the egress proxy refuses even where the spec or
    /// the baseline allows it.
    pub fn deny(&mut self, entry: impl Into<String>) -> &mut Self {
        self.deny.push(entry.into());
        self
    }

    /// An address block the egress proxy may reach even though it is
    /// private or local. The egress pod's NetworkPolicy still refuses
    /// private, link-local and metadata ranges.
    pub fn allow_cidr(&mut self, cidr: impl Into<String>) -> &mut Self {
        self.allow_cidrs.push(cidr.into());
        self
    }

    /// Leave out the proxy's baseline allowlist: only the spec's entries
    /// pass.
    pub fn no_baseline(&mut self) -> &mut Self {
        self.baseline = false;
        self
    }

    /// The nodes' kubelet `podPidsLimit`, when the cluster sets one: a run
    /// asking for a process limit is rendered only when this is at least as
    /// strict.
    pub fn node_pids_limit(&mut self, limit: u32) -> &mut Self {
        self.node_pids_limit = Some(limit);
        self
    }

    /// Whether the filename rules are enforced (default
    /// [`FilenameRules::Enforced`]).
    pub fn filename_rules(&mut self, rules: FilenameRules) -> &mut Self {
        self.filename_rules = rules;
        self
    }

    /// Validates and returns the profile, or the first error.
    pub fn build(&self) -> Result<ClusterProfile, Error> {
        names::dns_label("namespace", &self.namespace, 63)?;
        names::image("agent image", &self.agent_image)?;
        names::image("egress image", &self.egress_image)?;
        if let Some(name) = &self.runtime_class_name {
            names::dns_subdomain("runtime class name", name)?;
        }
        if self.runtime == Runtime::ClusterDefault
            && self.kernel_boundary != KernelBoundary::OptOutSharedHostKernel
        {
            return Err(ErrorKind::NoKernelBoundary.into());
        }
        if self.uid == 0 || self.gid == 0 {
            return Err(ErrorKind::InvalidValue {
                what: "user",
                value: format!("{}:{}", self.uid, self.gid),
                reason: "root is refused; give a non-zero uid and gid",
            }
            .into());
        }
        if self.http_port == 0 || self.socks_port == 0 || self.http_port == self.socks_port {
            return Err(ErrorKind::InvalidValue {
                what: "proxy ports",
                value: format!("{}/{}", self.http_port, self.socks_port),
                reason: "give two distinct non-zero ports",
            }
            .into());
        }
        for (what, path) in [
            ("home", &self.home),
            ("name guard path", &self.name_guard_path),
            ("egress proxy path", &self.egress_proxy_path),
        ] {
            crate::pod_paths::guest_path(what, path)?;
        }
        if self.home == "/" || self.home == "/tmp" {
            return Err(ErrorKind::ReservedPath {
                path: self.home.clone(),
                reason: "the home directory cannot be / or /tmp",
            }
            .into());
        }
        for e in &self.deny {
            names::host_entry("deny entry", e)?;
        }
        for c in &self.allow_cidrs {
            names::cidr(c)?;
        }
        for (host_path, source) in &self.volumes {
            check_source(host_path, source)?;
        }
        Ok(ClusterProfile {
            namespace: self.namespace.clone(),
            agent_image: self.agent_image.clone(),
            egress_image: self.egress_image.clone(),
            runtime: self.runtime,
            runtime_class_name: self.runtime_class_name.clone(),
            placement: self.placement,
            volumes: self.volumes.clone(),
            uid: self.uid,
            gid: self.gid,
            home: self.home.clone(),
            http_port: self.http_port,
            socks_port: self.socks_port,
            name_guard_path: self.name_guard_path.clone(),
            egress_proxy_path: self.egress_proxy_path.clone(),
            deny: self.deny.clone(),
            allow_cidrs: self.allow_cidrs.clone(),
            baseline: self.baseline,
            node_pids_limit: self.node_pids_limit,
            filename_rules: self.filename_rules,
        })
    }
}

fn check_source(host_path: &str, source: &VolumeSource) -> Result<(), Error> {
    crate::pod_paths::guest_path("mount host path", host_path)?;
    match source {
        VolumeSource::PersistentVolumeClaim { claim } => {
            names::dns_subdomain("PersistentVolumeClaim name", claim)
        }
        VolumeSource::EmptyDirFilledBy { image, command } => {
            names::image("init container image", image)?;
            if command.is_empty() {
                return Err(ErrorKind::InvalidCommand {
                    reason: "an emptyDir's init container needs a command",
                }
                .into());
            }
            for a in command {
                names::plain_value("init container argument", a)?;
            }
            Ok(())
        }
        VolumeSource::OptOutHostPath { path } => {
            crate::pod_paths::guest_path("host path", path)?;
            crate::pod_paths::secret_host_path(path)
        }
    }
}
