//! The agent pod's spec: the restricted Pod Security Standard in full, the
//! runtime class, the mounts, the limits and the proxy variables.

use crate::mounts::MountPlan;
use crate::names::{self, literal};
use crate::profile::{ClusterProfile, FilenameRules};
use crate::wire::{PROXY_SECRET_ENV, PROXY_USER, SECRET_KEY};
use crate::workload::Workload;
use crate::{Error, ErrorKind};
use sandbox_core::NameGuardInvocation;
use sandbox_core::defaults::FILENAME_GLOB_DENY;
use serde_json::{Map, Value, json};

/// Size of the memory-backed `/tmp`.
const TMP_SIZE: &str = "64Mi";
/// Size of the agent's home directory.
const HOME_SIZE: &str = "1Gi";
/// Memory limit when the workload sets none.
const DEFAULT_MEMORY: u64 = 2 << 30;

/// The restricted standard's container security context.
pub(crate) fn container_security(profile: &ClusterProfile) -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "privileged": false,
        "readOnlyRootFilesystem": true,
        "runAsNonRoot": true,
        "runAsUser": profile.uid,
        "runAsGroup": profile.gid,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    })
}

/// The restricted standard's pod fields, shared by the agent and egress
/// pods: no host namespaces, no service account token, the runtime class.
pub(crate) fn pod_base(profile: &ClusterProfile) -> Map<String, Value> {
    let mut spec = Map::new();
    if let Some(class) = profile.runtime_class_name() {
        spec.insert("runtimeClassName".into(), json!(class));
    }
    spec.insert("automountServiceAccountToken".into(), json!(false));
    spec.insert("hostNetwork".into(), json!(false));
    spec.insert("hostPID".into(), json!(false));
    spec.insert("hostIPC".into(), json!(false));
    spec.insert(
        "securityContext".into(),
        json!({
            "runAsNonRoot": true,
            "runAsUser": profile.uid,
            "runAsGroup": profile.gid,
            "fsGroup": profile.gid,
            "seccompProfile": {"type": "RuntimeDefault"},
        }),
    );
    spec
}

/// The proxy variables, as env-guard writes them on one host, pointing at
/// the egress Service through its service-link variable.
fn proxy_env(service_host_var: &str, profile: &ClusterProfile, secret_name: &str) -> Vec<Value> {
    let userinfo = format!("{PROXY_USER}:$({PROXY_SECRET_ENV})");
    let host = format!("$({service_host_var})");
    let http = format!("http://{userinfo}@{host}:{}", profile.http_port);
    let socks = format!("socks5h://{userinfo}@{host}:{}", profile.socks_port);
    let ssh = format!(
        "ssh -o \"ProxyCommand=ncat --proxy-type socks5 --proxy {host}:{} --proxy-auth {userinfo} %h %p\"",
        profile.socks_port
    );
    let mut env = vec![json!({
        "name": PROXY_SECRET_ENV,
        "valueFrom": {"secretKeyRef": {"name": secret_name, "key": SECRET_KEY}},
    })];
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("http_proxy", &http),
        ("HTTPS_PROXY", &http),
        ("https_proxy", &http),
        ("ALL_PROXY", &socks),
        ("all_proxy", &socks),
        ("NO_PROXY", &String::new()),
        ("no_proxy", &String::new()),
        ("GIT_SSH_COMMAND", &ssh),
    ] {
        env.push(json!({"name": name, "value": value}));
    }
    env
}

/// What the agent pod needs from the renderer.
pub(crate) struct AgentPod<'a> {
    pub(crate) profile: &'a ClusterProfile,
    pub(crate) workload: &'a Workload,
    pub(crate) plan: MountPlan,
    pub(crate) workdir: Option<&'a str>,
    pub(crate) egress_service: &'a str,
    pub(crate) secret_name: &'a str,
}

impl AgentPod<'_> {
    /// The pod spec.
    pub(crate) fn spec(self) -> Result<Value, Error> {
        let profile = self.profile;
        let command = self.command()?;
        let resources = self.resources()?;
        let mut env = proxy_env(
            &names::service_host_var(self.egress_service),
            profile,
            self.secret_name,
        );
        env.push(json!({"name": "HOME", "value": literal(&profile.home)}));
        for (name, value) in &self.workload.env {
            env.push(json!({"name": name, "value": literal(value)}));
        }
        let mut mounts = vec![
            json!({"name": "tmp", "mountPath": "/tmp"}),
            json!({"name": "home", "mountPath": profile.home}),
        ];
        mounts.extend(self.plan.mounts.iter().cloned());
        let mut volumes = vec![
            json!({"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": TMP_SIZE}}),
            json!({"name": "home", "emptyDir": {"sizeLimit": HOME_SIZE}}),
        ];
        volumes.extend(self.plan.volumes.iter().cloned());
        let mut container = json!({
            "name": "agent",
            "image": profile.agent_image,
            "command": command,
            "env": env,
            "resources": resources,
            "securityContext": container_security(profile),
            "volumeMounts": mounts,
        });
        if let Some(dir) = self.workdir {
            container["workingDir"] = json!(dir);
        }
        let init: Vec<Value> = self
            .plan
            .fillers
            .iter()
            .enumerate()
            .map(|(i, f)| {
                json!({
                    "name": format!("fill-{i}"),
                    "image": f.image,
                    "command": f.command.iter().map(|a| literal(a)).collect::<Vec<_>>(),
                    "env": container["env"].clone(),
                    "resources": container["resources"].clone(),
                    "securityContext": container_security(profile),
                    "volumeMounts": [
                        {"name": "tmp", "mountPath": "/tmp"},
                        {"name": "home", "mountPath": profile.home},
                        {"name": f.volume, "mountPath": f.guest_path},
                    ],
                })
            })
            .collect();
        let mut spec = pod_base(profile);
        // The proxy URLs name the egress Service through its service-link
        // variable; the pod has no DNS (no resolver answers on loopback).
        spec.insert("enableServiceLinks".into(), json!(true));
        spec.insert("dnsPolicy".into(), json!("None"));
        spec.insert("dnsConfig".into(), json!({"nameservers": ["127.0.0.1"]}));
        if !init.is_empty() {
            spec.insert("initContainers".into(), Value::Array(init));
        }
        spec.insert("containers".into(), json!([container]));
        spec.insert("volumes".into(), Value::Array(volumes));
        Ok(Value::Object(spec))
    }

    /// The container's command: under the name guard when the mounts are
    /// writable and the rules are enforced; refused where the runtime
    /// cannot run the guard.
    fn command(&self) -> Result<Vec<String>, Error> {
        let profile = self.profile;
        let cmd: Vec<String> = self.workload.command.iter().map(|a| literal(a)).collect();
        if !self.plan.writable || profile.filename_rules == FilenameRules::OptOutUnenforced {
            return Ok(cmd);
        }
        if let Err(reason) = profile.runtime.name_guard() {
            return Err(ErrorKind::FilenameRulesUnenforceable {
                runtime: profile.runtime.as_str(),
                reason,
            }
            .into());
        }
        let inv = NameGuardInvocation::new(FILENAME_GLOB_DENY.iter().map(|c| c.entry), cmd);
        inv.check()?;
        let mut out = vec![literal(&profile.name_guard_path)];
        out.extend(
            inv.to_args()
                .into_iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        Ok(out)
    }

    /// Memory and CPU as both request and limit (a guaranteed pod); a
    /// process limit only where the node's is at least as strict.
    fn resources(&self) -> Result<Value, Error> {
        let limits = self.workload.limits;
        if let Some(n) = limits.max_processes {
            match self.profile.node_pids_limit {
                Some(node) if node <= n => {}
                Some(node) => {
                    return Err(ErrorKind::PidsLimit {
                        requested: n,
                        hint: format!(
                            "the profile says the nodes allow {node}, more than asked; render \
                             without the limit or on nodes with a stricter podPidsLimit"
                        ),
                    }
                    .into());
                }
                None => {
                    return Err(ErrorKind::PidsLimit {
                        requested: n,
                        hint: "say the nodes' limit in the profile (node_pids_limit) if it is \
                               at least as strict, or render without the limit"
                            .into(),
                    }
                    .into());
                }
            }
        }
        let mut amounts = Map::new();
        amounts.insert(
            "memory".into(),
            json!(limits.memory_bytes.unwrap_or(DEFAULT_MEMORY).to_string()),
        );
        if let Some(m) = limits.cpu_millis {
            amounts.insert("cpu".into(), json!(format!("{m}m")));
        }
        Ok(json!({"limits": amounts.clone(), "requests": amounts}))
    }
}
