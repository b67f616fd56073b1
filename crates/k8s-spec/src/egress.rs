//! The session's egress: the proxy pod, its Service, and the Secret that
//! holds the proxies' per-session secret.

use crate::pod::{container_security, pod_base};
use crate::profile::ClusterProfile;
use crate::wire::{SECRET_DIR, SECRET_KEY};
use serde_json::{Value, json};

/// The egress container's arguments: the real `egress-proxy` binary,
/// listening on every address of the pod on the profile's ports.
pub(crate) fn proxy_args(
    profile: &ClusterProfile,
    allow: &[String],
    network_enabled: bool,
) -> Vec<String> {
    let mut args = vec![
        profile.egress_proxy_path.clone(),
        "--listen".into(),
        "0.0.0.0".into(),
        "--http-port".into(),
        profile.http_port.to_string(),
        "--socks-port".into(),
        profile.socks_port.to_string(),
        "--proxy-secret-file".into(),
        format!("{SECRET_DIR}/{SECRET_KEY}"),
        "--network".into(),
        if network_enabled { "on" } else { "off" }.into(),
    ];
    if !profile.baseline {
        args.push("--no-baseline".into());
    }
    for (flag, values) in [
        ("--allow", allow),
        ("--deny", profile.deny.as_slice()),
        ("--allow-cidr", profile.allow_cidrs.as_slice()),
    ] {
        for v in values {
            args.push(format!("{flag}={}", crate::names::literal(v)));
        }
    }
    args
}

/// The egress pod's spec.
pub(crate) fn pod_spec(profile: &ClusterProfile, args: Vec<String>, secret_name: &str) -> Value {
    let mut spec = pod_base(profile);
    spec.insert("enableServiceLinks".into(), json!(false));
    spec.insert(
        "containers".into(),
        json!([{
            "name": "egress-proxy",
            "image": profile.egress_image,
            "command": args,
            // The proxy stops when its input ends; an open stdin keeps it.
            "stdin": true,
            "ports": [
                {"name": "http-proxy", "containerPort": profile.http_port, "protocol": "TCP"},
                {"name": "socks-proxy", "containerPort": profile.socks_port, "protocol": "TCP"},
            ],
            "resources": {
                "limits": {"memory": "256Mi", "cpu": "500m"},
                "requests": {"memory": "256Mi", "cpu": "500m"},
            },
            "securityContext": container_security(profile),
            "volumeMounts": [
                {"name": "proxy-secret", "mountPath": SECRET_DIR, "readOnly": true},
            ],
        }]),
    );
    spec.insert(
        "volumes".into(),
        json!([{
            "name": "proxy-secret",
            // Read by the group the pod runs as (fsGroup), nobody else.
            "secret": {"secretName": secret_name, "defaultMode": 0o440},
        }]),
    );
    Value::Object(spec)
}

/// The Service in front of the egress pod.
pub(crate) fn service_spec(profile: &ClusterProfile, selector: &Value) -> Value {
    json!({
        "type": "ClusterIP",
        "selector": selector,
        "ports": [
            {"name": "http-proxy", "port": profile.http_port, "targetPort": profile.http_port, "protocol": "TCP"},
            {"name": "socks-proxy", "port": profile.socks_port, "targetPort": profile.socks_port, "protocol": "TCP"},
        ],
    })
}
