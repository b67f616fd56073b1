//! A spec, a profile and a workload to the list of objects.

use crate::names::{self, MAX_SESSION_NAME};
use crate::pod::AgentPod;
use crate::profile::{ClusterProfile, Placement};
use crate::workload::{OperatingMode, Workload};
use crate::{Error, ErrorKind, egress, mounts, policy};
use sandbox_core::SandboxSpec;
use sandbox_core::defaults::MANDATORY_WRITE_DENY;
use serde_json::{Value, json};

/// The label naming the session an object belongs to (`sbx-SESSION`).
pub const LABEL_SESSION: &str = "agent-sandbox-session";
/// The label naming a pod's role: `agent` or `egress`.
pub const LABEL_ROLE: &str = "agent-sandbox-role";

/// The API group and version of agent-sandbox's `Sandbox`.
pub const SANDBOX_API: &str = "agents.x-k8s.io/v1beta1";
/// The API group and version of `SandboxTemplate` and `SandboxClaim`.
pub const EXTENSIONS_API: &str = "extensions.agents.x-k8s.io/v1beta1";

/// The names of a session's objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectNames {
    /// `sbx-SESSION`: the session label's value and every name's stem.
    pub base: String,
    /// The agent pod, `Sandbox`, `SandboxTemplate` and `SandboxClaim`, and
    /// the agent's NetworkPolicy: `sbx-SESSION-agent`.
    pub agent: String,
    /// The egress pod, its Service and NetworkPolicy: `sbx-SESSION-egress`.
    pub egress: String,
    /// The Secret holding the proxy secret: `sbx-SESSION-proxy`.
    pub secret: String,
}

impl ObjectNames {
    /// The names for `session_id`, which must be 1 to 40 bytes of
    /// `[a-z0-9-]`, starting and ending with a letter or digit.
    pub fn for_session(session_id: &str) -> Result<ObjectNames, Error> {
        names::dns_label("session id", session_id, MAX_SESSION_NAME)?;
        let base = format!("sbx-{session_id}");
        Ok(ObjectNames {
            agent: format!("{base}-agent"),
            egress: format!("{base}-egress"),
            secret: format!("{base}-proxy"),
            base,
        })
    }
}

fn labels(base: &str, role: &str) -> Value {
    json!({LABEL_SESSION: base, LABEL_ROLE: role})
}

fn metadata(name: &str, profile: &ClusterProfile, base: &str, role: &str) -> Value {
    let mut labels = labels(base, role);
    labels["app.kubernetes.io/managed-by"] = json!("agent-sandbox");
    json!({"name": name, "namespace": profile.namespace, "labels": labels})
}

/// Renders one run as Kubernetes objects, in the order to apply them: the
/// proxy `Secret`, the egress `Service`, the two `NetworkPolicy` objects,
/// the egress `Pod`, then the agent as a `Pod`, a `Sandbox`, or a
/// `SandboxTemplate`, an empty `SandboxWarmPool` of it and a `SandboxClaim`
/// on the pool (per the profile's
/// [`Placement`]).
///
/// Refused, never rendered weaker: an invalid spec, a mount without a
/// volume source, a mount at a reserved place or in the secret set, writable
/// mounts under a runtime that cannot run the name guard (unless the
/// profile opts out of the filename rules), a process limit no pod field
/// can carry, a suspended run outside a `Sandbox`, a lent credential.
pub fn render(
    spec: &SandboxSpec,
    profile: &ClusterProfile,
    workload: &Workload,
) -> Result<Vec<Value>, Error> {
    spec.validate()?;
    workload.check()?;
    let names = ObjectNames::for_session(&spec.session_id)?;
    for entry in &spec.egress_allowlist {
        names::host_entry("allowlist entry", entry)?;
    }
    if workload.operating_mode == OperatingMode::Suspended
        && profile.placement != Placement::Sandbox
    {
        return Err(ErrorKind::SuspendNeedsSandbox.into());
    }
    let plan = mounts::plan(spec, profile)?;
    let agent_labels = labels(&names.base, "agent");
    let egress_labels = labels(&names.base, "egress");
    let agent_spec = AgentPod {
        profile,
        workload,
        plan,
        workdir: spec.guest_workdir.as_deref(),
        egress_service: &names.egress,
        secret_name: &names.secret,
    }
    .spec()?;
    let args = egress::proxy_args(profile, &spec.egress_allowlist, spec.network_enabled);
    let mut out = vec![
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata(&names.secret, profile, &names.base, "egress"),
            "type": "Opaque",
            "stringData": {crate::wire::SECRET_KEY: workload.proxy_secret},
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(&names.egress, profile, &names.base, "egress"),
            "spec": egress::service_spec(profile, &egress_labels),
        }),
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": metadata(&names.agent, profile, &names.base, "agent"),
            "spec": policy::agent_spec(profile, &agent_labels, &egress_labels),
        }),
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": metadata(&names.egress, profile, &names.base, "egress"),
            "spec": policy::egress_spec(profile, &agent_labels, &egress_labels),
        }),
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": metadata(&names.egress, profile, &names.base, "egress"),
            "spec": egress::pod_spec(profile, args, &names.secret),
        }),
    ];
    let meta = metadata(&names.agent, profile, &names.base, "agent");
    let template = json!({"metadata": {"labels": meta["labels"].clone()}, "spec": agent_spec});
    match profile.placement {
        Placement::Pod => {
            let mut spec = template["spec"].clone();
            spec["restartPolicy"] = json!("Never");
            out.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}));
        }
        Placement::Sandbox => {
            let mode = match workload.operating_mode {
                OperatingMode::Running => "Running",
                OperatingMode::Suspended => "Suspended",
            };
            out.push(json!({
                "apiVersion": SANDBOX_API,
                "kind": "Sandbox",
                "metadata": meta,
                "spec": {"operatingMode": mode, "podTemplate": template},
            }));
        }
        Placement::SandboxTemplate => {
            out.push(json!({
                "apiVersion": EXTENSIONS_API,
                "kind": "SandboxTemplate",
                "metadata": meta.clone(),
                // The managed policy would allow the whole Internet beside
                // ours, and policies add up.
                "spec": {"networkPolicyManagement": "Unmanaged", "podTemplate": template},
            }));
            // No warm sandboxes: the claim creates the one it needs from
            // the template, and the pool never starts a second agent pod
            // with this session's labels.
            out.push(json!({
                "apiVersion": EXTENSIONS_API,
                "kind": "SandboxWarmPool",
                "metadata": meta.clone(),
                "spec": {"replicas": 0, "sandboxTemplateRef": {"name": names.agent}},
            }));
            out.push(json!({
                "apiVersion": EXTENSIONS_API,
                "kind": "SandboxClaim",
                "metadata": meta,
                "spec": {"warmPoolRef": {"name": names.agent}},
            }));
        }
    }
    Ok(out)
}

/// [`render`]'s objects as one `List`, for `kubectl apply -f -`.
pub fn render_list(
    spec: &SandboxSpec,
    profile: &ClusterProfile,
    workload: &Workload,
) -> Result<Value, Error> {
    Ok(json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": render(spec, profile, workload)?,
    }))
}

/// The mandatory write-deny entries (R-PATHS-3) that stay writable in the
/// agent pod: each entry under each writable mount's guest path. A volume
/// cannot refuse a name by itself and the renderer cannot see what a claim
/// holds, so these are left to the caller (fill the volume with them
/// read-only, or refuse); empty when no mount is writable.
pub fn unenforced_write_denies(spec: &SandboxSpec) -> Vec<String> {
    let writable = spec
        .mount_accesses()
        .filter(|(m, a)| {
            *a == sandbox_core::Access::ReadWrite
                && !spec.protected_paths.iter().any(|p| p == &m.host_path)
        })
        .map(|(m, _)| m.guest_path.as_str())
        .chain(spec.runner_state_dirs.iter().map(String::as_str));
    let mut out = Vec::new();
    for root in writable {
        for c in MANDATORY_WRITE_DENY {
            out.push(format!("{}/{}", root.trim_end_matches('/'), c.entry));
        }
    }
    out
}
