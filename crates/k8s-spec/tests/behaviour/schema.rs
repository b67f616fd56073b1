//! Every rendered object deserialises into its `k8s-openapi` type and
//! serialises back to the same JSON: a field the type does not know (a
//! misspelt or misplaced one) would be dropped and the two would differ.

use crate::tables;
use k8s_openapi::api::core::v1::{Pod, PodSpec, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde_json::Value;

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(what: &str, v: &Value) {
    let typed: T =
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{what}: {e}\n{v:#}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back, v,
        "{what}: a field was lost or changed on the way through the typed form"
    );
}

/// Checks one run's objects; the agent-sandbox ones are checked against the
/// CRDs, and the pod template inside them as a `PodSpec`.
pub(crate) fn check(objects: &[Value]) {
    for o in objects {
        let name = format!("{} {}", o["kind"], o["metadata"]["name"]);
        match o["kind"].as_str().unwrap() {
            "Pod" => round_trip::<Pod>(&name, o),
            "Secret" => round_trip::<Secret>(&name, o),
            "Service" => round_trip::<Service>(&name, o),
            "NetworkPolicy" => round_trip::<NetworkPolicy>(&name, o),
            "Sandbox" | "SandboxTemplate" => {
                round_trip::<PodSpec>(&name, &o["spec"]["podTemplate"]["spec"]);
                crate::crd::validate(o).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            "SandboxClaim" | "SandboxWarmPool" => {
                crate::crd::validate(o).unwrap_or_else(|e| panic!("{name}: {e}"))
            }
            other => panic!("unexpected kind {other}"),
        }
    }
}

#[test]
fn every_table_row_has_the_typed_shape() {
    let text = std::fs::read_to_string(format!(
        "{}/testdata/render.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let file: toml::Value = toml::from_str(&text).unwrap();
    let mut checked = 0;
    for row in file["case"].as_array().unwrap() {
        let mut row = row.as_table().unwrap().clone();
        for key in ["intent", "kinds", "expect", "has", "lacks", "absent"] {
            row.remove(key);
        }
        let settings: tables::Settings = row.try_into().unwrap();
        let (objects, _) = tables::run(&settings).unwrap();
        check(&objects);
        checked += objects.len();
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn a_misspelt_field_is_caught() {
    let mut pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    });
    round_trip::<Pod>("well formed", &pod);
    pod["spec"]["automountServiceAcountToken"] = Value::Bool(false);
    let typed: Pod = serde_json::from_value(pod.clone()).unwrap();
    assert_ne!(serde_json::to_value(&typed).unwrap(), pod);
}
