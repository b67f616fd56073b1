//! What holds for every rendered run, whatever the spec: the restricted
//! Pod Security Standard, nothing of the secret set mounted, no host
//! namespace, and policies under which the agent reaches only its egress.

use k8s_spec::{LABEL_ROLE, LABEL_SESSION};
use serde_json::Value;

/// The agent's pod spec, wherever the placement put it.
pub(crate) fn agent_pod(objects: &[Value]) -> &Value {
    let agent = objects
        .iter()
        .find(|o| {
            o["metadata"]["labels"][LABEL_ROLE] == "agent"
                && ["Pod", "Sandbox", "SandboxTemplate"]
                    .contains(&o["kind"].as_str().unwrap_or_default())
        })
        .expect("an agent object");
    match agent["kind"].as_str() {
        Some("Pod") => &agent["spec"],
        Some("Sandbox" | "SandboxTemplate") => &agent["spec"]["podTemplate"]["spec"],
        other => panic!("agent object of kind {other:?}"),
    }
}

/// The agent's pod labels.
pub(crate) fn agent_labels(objects: &[Value]) -> Value {
    let agent = objects
        .iter()
        .find(|o| {
            o["metadata"]["labels"][LABEL_ROLE] == "agent"
                && ["Pod", "Sandbox", "SandboxTemplate"]
                    .contains(&o["kind"].as_str().unwrap_or_default())
        })
        .unwrap();
    match agent["kind"].as_str() {
        Some("Pod") => agent["metadata"]["labels"].clone(),
        _ => agent["spec"]["podTemplate"]["metadata"]["labels"].clone(),
    }
}

pub(crate) fn find<'a>(objects: &'a [Value], kind: &str, role: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["labels"][LABEL_ROLE] == role)
        .unwrap_or_else(|| panic!("no {kind} of role {role}"))
}

/// The restricted standard, as the Pod Security admission checks it
/// (baseline and restricted), for one pod spec.
pub(crate) fn restricted(pod: &Value, host_path_opt_out: bool) -> Result<(), String> {
    let err = |m: &str| Err(m.to_owned());
    for ns in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod[ns] != false {
            return err(&format!("{ns} is not false"));
        }
    }
    if pod["automountServiceAccountToken"] != false {
        return err("the service account token is mounted");
    }
    let psc = &pod["securityContext"];
    if psc["runAsNonRoot"] != true || psc["runAsUser"] == 0 {
        return err("the pod may run as root");
    }
    if psc["seccompProfile"]["type"] != "RuntimeDefault" {
        return err("no RuntimeDefault seccomp profile on the pod");
    }
    if !psc["sysctls"].is_null() {
        return err("sysctls are set");
    }
    for v in pod["volumes"].as_array().unwrap() {
        let allowed = [
            "configMap",
            "csi",
            "downwardAPI",
            "emptyDir",
            "ephemeral",
            "persistentVolumeClaim",
            "projected",
            "secret",
        ];
        let ok = v
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k == "name" || allowed.contains(&k.as_str()));
        if !(ok || host_path_opt_out && v.get("hostPath").is_some()) {
            return err(&format!("volume {v} is of a type the standard refuses"));
        }
    }
    let containers = pod["containers"].as_array().unwrap().iter().chain(
        pod["initContainers"]
            .as_array()
            .map(|a| a.as_slice())
            .unwrap_or(&[]),
    );
    for c in containers {
        let sc = &c["securityContext"];
        let name = &c["name"];
        if sc["allowPrivilegeEscalation"] != false || sc["privileged"] != false {
            return err(&format!("{name}: privilege escalation not refused"));
        }
        if sc["capabilities"]["drop"] != serde_json::json!(["ALL"])
            || !sc["capabilities"]["add"].is_null()
        {
            return err(&format!("{name}: capabilities not all dropped"));
        }
        if sc["runAsNonRoot"] != true || sc["runAsUser"] == 0 {
            return err(&format!("{name}: may run as root"));
        }
        if sc["readOnlyRootFilesystem"] != true {
            return err(&format!("{name}: root filesystem writable"));
        }
        if sc["seccompProfile"]["type"] != "RuntimeDefault" {
            return err(&format!("{name}: no RuntimeDefault seccomp"));
        }
        if c["ports"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| !p["hostPort"].is_null()))
        {
            return err(&format!("{name}: a host port"));
        }
        if !sc["procMount"].is_null()
            || !sc["seLinuxOptions"].is_null()
            || !sc["windowsOptions"].is_null()
        {
            return err(&format!("{name}: a baseline-restricted field is set"));
        }
    }
    Ok(())
}

/// Whether `inner` is `outer` or below it.
fn within(inner: &str, outer: &str) -> bool {
    std::path::Path::new(inner).starts_with(outer)
}

/// No mount of the agent lands on the secret set under its home, and no
/// node directory is a secret-set entry.
pub(crate) fn no_secret_mounted(pod: &Value) -> Result<(), String> {
    let home = pod["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "HOME")
        .map(|e| e["value"].as_str().unwrap().to_owned())
        .ok_or("no HOME")?;
    for m in pod["containers"][0]["volumeMounts"].as_array().unwrap() {
        let path = m["mountPath"].as_str().unwrap();
        for c in sandbox_core::defaults::SECRET_READ_DENY {
            let Some(rel) = c.entry.strip_prefix("~/") else {
                continue;
            };
            let secret = format!("{home}/{}", rel.trim_end_matches('*'));
            if within(path, &secret) {
                return Err(format!("{path} mounts {}", c.entry));
            }
        }
    }
    for v in pod["volumes"].as_array().unwrap() {
        if let Some(p) = v["hostPath"]["path"].as_str() {
            for c in sandbox_core::defaults::SECRET_READ_DENY {
                let rel = c.entry.trim_start_matches("~/").trim_end_matches('*');
                if p.contains(&format!("/{rel}")) {
                    return Err(format!("host path {p} reaches {}", c.entry));
                }
            }
        }
    }
    let envs = pod["containers"][0]["env"].as_array().unwrap();
    if envs
        .iter()
        .any(|e| !e["valueFrom"].is_null() && e["name"] != k8s_spec::PROXY_SECRET_ENV)
    {
        return Err("a variable comes from another object".into());
    }
    Ok(())
}

/// Whether a policy peer's pod selector matches `labels` (matchLabels
/// only, which is all the renderer writes; anything else fails).
fn selects(selector: &Value, labels: &Value) -> bool {
    let obj = selector.as_object().unwrap();
    assert!(
        obj.keys().all(|k| k == "matchLabels"),
        "selector {selector}"
    );
    selector["matchLabels"]
        .as_object()
        .unwrap()
        .iter()
        .all(|(k, v)| &labels[k] == v)
}

/// Under the rendered policies, everything the agent pod may reach: each
/// allowed (peer description, port) pair. Any peer that is not a pod
/// selector of the same namespace is returned as such, so a caller sees
/// an ipBlock or a namespace selector.
pub(crate) fn agent_reach(objects: &[Value]) -> Vec<(String, i64)> {
    let labels = agent_labels(objects);
    let mut out = Vec::new();
    let mut isolated = false;
    for p in objects.iter().filter(|o| o["kind"] == "NetworkPolicy") {
        let spec = &p["spec"];
        if !selects(&spec["podSelector"], &labels) {
            continue;
        }
        let types = spec["policyTypes"].as_array().unwrap();
        if types.iter().any(|t| t == "Egress") {
            isolated = true;
        }
        for rule in spec["egress"].as_array().into_iter().flatten() {
            let ports: Vec<i64> = rule["ports"]
                .as_array()
                .map(|ps| ps.iter().map(|p| p["port"].as_i64().unwrap()).collect())
                .unwrap_or_else(|| vec![-1]);
            let peers = rule["to"]
                .as_array()
                .cloned()
                .unwrap_or_else(|| vec![Value::Null]);
            for peer in peers {
                for port in &ports {
                    let desc = match peer.as_object() {
                        Some(o) if o.keys().all(|k| k == "podSelector") => {
                            let target = objects
                                .iter()
                                .filter(|o| o["kind"] == "Pod")
                                .filter(|o| selects(&peer["podSelector"], &o["metadata"]["labels"]))
                                .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
                                .collect::<Vec<_>>()
                                .join(",");
                            format!("pods:{target}")
                        }
                        _ => format!("other:{peer}"),
                    };
                    out.push((desc, *port));
                }
            }
        }
    }
    assert!(isolated, "no policy isolates the agent pod's egress");
    out
}

/// Every invariant of one rendered run.
pub(crate) fn check_all(objects: &[Value], host_path_opt_out: bool) -> Result<(), String> {
    let agent = agent_pod(objects);
    restricted(agent, host_path_opt_out).map_err(|e| format!("agent pod: {e}"))?;
    restricted(&find(objects, "Pod", "egress")["spec"], false)
        .map_err(|e| format!("egress pod: {e}"))?;
    no_secret_mounted(agent)?;
    let egress_name = find(objects, "Pod", "egress")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (http, socks) = {
        let ports = find(objects, "Service", "egress")["spec"]["ports"]
            .as_array()
            .unwrap()
            .clone();
        (
            ports[0]["port"].as_i64().unwrap(),
            ports[1]["port"].as_i64().unwrap(),
        )
    };
    let mut reach = agent_reach(objects);
    reach.sort();
    let mut want = vec![
        (format!("pods:{egress_name}"), http),
        (format!("pods:{egress_name}"), socks),
    ];
    want.sort();
    if reach != want {
        return Err(format!(
            "the agent reaches {reach:?}, not only its egress pod's proxy ports"
        ));
    }
    // Nothing in a session's objects carries another session's label.
    let base = &agent_labels(objects)[LABEL_SESSION];
    if objects
        .iter()
        .any(|o| &o["metadata"]["labels"][LABEL_SESSION] != base)
    {
        return Err("an object of another session".into());
    }
    Ok(())
}
